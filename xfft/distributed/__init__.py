"""Multi-process runs: one :func:`initialize` for every launcher, fail-fast defaults, process-local data.

Call :func:`initialize` once, before any other JAX call, in every process of a run. It finds the run's
shape from (first match wins, field by field):

1. explicit arguments;
2. ``XFFT_COORDINATOR_ADDRESS``, ``XFFT_NUM_PROCESSES``, ``XFFT_PROCESS_ID``, ``XFFT_LOCAL_DEVICE_IDS``,
   ``XFFT_CPU_DEVICES`` (set by ``python -m xfft.launch``) and JAX's ``JAX_COORDINATOR_ADDRESS``;
3. Slurm (inside ``srun``): ``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``, the step's first node (its
   ``NodeAddr`` from ``scontrol`` when the node name does not resolve), a port derived from the job and step
   ids (``XFFT_COORDINATOR_PORT`` overrides);
4. Open MPI (inside ``mpirun``): ``OMPI_COMM_WORLD_RANK``/``SIZE``;
5. otherwise a single process: nothing to connect, :func:`initialize` only applies the CPU device count.

Fail-fast defaults replace JAX's (a raising rank hangs the others for 300 s, a killed rank is noticed after
100 s): short heartbeat and shutdown timeouts, and an ``excepthook`` that prints the traceback and ends the
process with ``os._exit(1)`` so that launchers (``srun --kill-on-bad-exit``, ``xfft.launch``) stop the rest
at once. :class:`Watchdog` ends a rank that stops making progress (stuck in a collective, deadlocked).

Global arrays are built from per-process data (:func:`global_array`, :func:`from_process_local`) so that no
device ever holds the global array; :func:`gather` and :func:`print0` are debugging helpers for small arrays.

Logs: Gloo, the CPU collectives library, prints a ``[Gloo] Rank 0 is connected to 3 peer ranks...`` line on
stdout from C++ for every communicator of a multi-process CPU run (no log-level variable turns it off:
``TF_CPP_MIN_LOG_LEVEL``/``GLOG_minloglevel`` do not); ``python -m xfft.launch`` drops those lines unless
``--verbose`` or ``XFFT_VERBOSE=1``, and under it :func:`initialize` gives them a pipe apart from Python's
``sys.stdout`` (:func:`xfft.launch.split_native_stdout`), so they never land inside a line the program prints.

One module per job: :mod:`._detect` (which launcher, which rank), :mod:`._init` (``initialize`` and the
fail-fast hooks), :mod:`._watchdog`, :mod:`._arrays` (building and gathering global arrays).
"""

from ._arrays import assert_same as assert_same
from ._arrays import from_process_local as from_process_local
from ._arrays import gather as gather
from ._arrays import global_array as global_array
from ._arrays import print0 as print0
from ._detect import ClusterSpec as ClusterSpec
from ._detect import detect as detect
from ._init import HEARTBEAT_TIMEOUT_S as HEARTBEAT_TIMEOUT_S
from ._init import INITIALIZATION_TIMEOUT_S as INITIALIZATION_TIMEOUT_S
from ._init import SHUTDOWN_TIMEOUT_S as SHUTDOWN_TIMEOUT_S
from ._init import initialize as initialize
from ._init import install_excepthook as install_excepthook
from ._watchdog import Watchdog as Watchdog

__all__ = [
    "ClusterSpec",
    "Watchdog",
    "assert_same",
    "detect",
    "from_process_local",
    "gather",
    "global_array",
    "initialize",
    "install_excepthook",
    "print0",
]
