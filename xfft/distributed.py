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
"""

from __future__ import annotations

import faulthandler
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

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

#: Defaults of :func:`initialize` (seconds; JAX's own are 300 / 100 / 300). The environment variables
#: ``XFFT_INIT_TIMEOUT``, ``XFFT_HEARTBEAT_TIMEOUT`` and ``XFFT_SHUTDOWN_TIMEOUT`` override them.
INITIALIZATION_TIMEOUT_S = 120
HEARTBEAT_TIMEOUT_S = 10
SHUTDOWN_TIMEOUT_S = 60

_PORT_BASE = 65536 - 4096  # coordinator ports derived from job ids live in [61440, 65535], as in JAX


@dataclass(frozen=True)
class ClusterSpec:
    """How this process takes part in a run, as found by :func:`detect`.

    Attributes:
      method: where the values came from: ``"explicit"`` (arguments or ``XFFT_*``/``JAX_*`` variables),
        ``"slurm"``, ``"ompi"`` or ``"single"``.
      num_processes: number of processes in the run.
      process_id: this process's rank, ``0 <= process_id < num_processes``.
      coordinator_address: ``host:port`` of process 0's coordinator (None for a single process).
      local_device_ids: accelerator ids this process uses, or None for all it can see.
      local_rank: rank among the processes on this node (None if unknown).
      local_size: number of processes on this node (None if unknown).
      cpu_devices: CPU devices to create in this process (None: JAX's default).
    """

    method: str
    num_processes: int
    process_id: int
    coordinator_address: str | None = None
    local_device_ids: tuple[int, ...] | None = None
    local_rank: int | None = None
    local_size: int | None = None
    cpu_devices: int | None = None

    @property
    def multi_process(self) -> bool:
        """True when the run has more than one process (``jax.distributed`` must be initialized)."""
        return self.num_processes > 1


_SPEC: ClusterSpec | None = None


# --------------------------------------------------------------------------------------------- detection
def _int(value: Any, name: str, minimum: int = 0) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _device_ids(value: Any, name: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p for p in value.replace(" ", "").split(",") if p]
        return tuple(_int(p, name) for p in parts) or None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (_int(value, name),)
    if isinstance(value, Sequence):
        return tuple(_int(v, name) for v in value)
    raise TypeError(f"{name} must be an int, a sequence of ints or a comma-separated string, got {value!r}")


def _check_address(address: str, name: str) -> str:
    if not isinstance(address, str):
        raise TypeError(f"{name} must be a 'host:port' string, got {type(address).__name__}")
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{name} must look like 'host:port' (for example '10.0.0.1:12345'), got {address!r}")
    return address


def _first_host(nodelist: str) -> str:
    """First host name of a Slurm host list (``'n[01-04,07],gpu2'`` -> ``'n01'``), without ``scontrol``."""
    depth, item = 0, []
    for ch in nodelist.strip():
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            break
        item.append(ch)
    return re.sub(r"\[([^\]]*)\]", lambda m: re.split(r"[,-]", m.group(1))[0], "".join(item))


def _tasks_on_node(tasks_per_node: str, node_id: int) -> int | None:
    """Entry ``node_id`` of a Slurm tasks-per-node string such as ``'2(x3),1'``."""
    counts: list[int] = []
    for part in tasks_per_node.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            return None
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    return counts[node_id] if 0 <= node_id < len(counts) else None


def _resolvable(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return True


def _slurm_node_addr(node: str) -> str | None:
    """``NodeAddr`` of a Slurm node from ``scontrol`` (node names need not be DNS names)."""
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        return None
    try:
        out = subprocess.run([scontrol, "show", "node", "-o", node], capture_output=True, text=True,
                             timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"\bNodeAddr=(\S+)", out)
    return m.group(1) if m else None


def _coordinator_host(node: str, resolve: bool) -> str:
    """A host name or address for ``node`` that every process can connect to.

    Slurm node names are often DNS names, but one-host test clusters and some sites use names that only
    Slurm knows (``NodeName=n1 NodeAddr=10.1.2.3``); then the ``NodeAddr`` is used.
    """
    if not resolve or _resolvable(node):
        return node
    addr = _slurm_node_addr(node)
    if addr and _resolvable(addr):
        return addr
    raise RuntimeError(
        f"cannot resolve the Slurm node name {node!r} (first node of the step) to an address, and scontrol "
        f"gave no usable NodeAddr ({addr!r}); set XFFT_COORDINATOR_ADDRESS=host:port to an address of {node} "
        "that every process can reach"
    )


def _visible_accelerators(env: Mapping[str, str]) -> int | None:
    for var in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        if var in env:
            return len([d for d in env[var].split(",") if d.strip()])
    gpus = env.get("SLURM_GPUS_ON_NODE", "")
    return int(gpus) if gpus.isdigit() else None


def _auto_local_device_ids(local_rank: int | None, local_size: int | None,
                           env: Mapping[str, str]) -> tuple[int, ...] | None:
    """Accelerators of this process when a cluster launched it and nobody said which.

    JAX's own default is ``[local_rank]`` (one GPU per process). That is wrong in two common cases, which
    this fixes: one process per node (it must use *all* the node's GPUs: None), and Slurm/MPI binding that
    already narrowed ``CUDA_VISIBLE_DEVICES`` to this task's GPUs (ids restart at 0: None). When several
    processes share a node and see ``k`` GPUs, each takes a contiguous block of ``k / local_size`` of them.
    """
    if local_rank is None or local_size is None or local_size <= 1:
        return None
    k = _visible_accelerators(env)
    if k is None:
        return (local_rank,)
    if k <= 1:
        return None
    if k % local_size:
        raise ValueError(
            f"{local_size} processes on this node see {k} accelerators, which they cannot share evenly; "
            "pass local_device_ids=... (or set XFFT_LOCAL_DEVICE_IDS) to say which ones each process uses"
        )
    m = k // local_size
    return tuple(range(local_rank * m, (local_rank + 1) * m))


def _slurm(env: Mapping[str, str], resolve: bool, address: bool) -> dict[str, Any] | None:
    if "SLURM_JOB_ID" not in env or "SLURM_PROCID" not in env:
        return None
    nodelist = env.get("SLURM_STEP_NODELIST")
    tasks = env.get("SLURM_STEP_NUM_TASKS")
    if nodelist is None or tasks is None:
        # The batch script itself (not an srun step): it is one process, whatever --ntasks says.
        return None
    num = _int(tasks, "SLURM_STEP_NUM_TASKS", 1)
    out: dict[str, Any] = {"method": "slurm", "num_processes": num,
                           "process_id": _int(env["SLURM_PROCID"], "SLURM_PROCID")}
    if "SLURM_LOCALID" in env:
        out["local_rank"] = _int(env["SLURM_LOCALID"], "SLURM_LOCALID")
    per_node = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")
    if per_node and env.get("SLURM_NODEID", "").isdigit():
        out["local_size"] = _tasks_on_node(per_node, int(env["SLURM_NODEID"]))
    if num > 1 and address:
        port = env.get("XFFT_COORDINATOR_PORT") or env.get("JAX_COORDINATOR_PORT")
        if port is None:
            # Per job *and* step, so two srun steps of one job running side by side do not collide.
            job, step = int(env["SLURM_JOB_ID"]), int(env.get("SLURM_STEP_ID", "0") or 0)
            port = str(_PORT_BASE + (job + 613 * step) % 4096)
        host = _coordinator_host(_first_host(nodelist), resolve)
        out["coordinator_address"] = f"{host}:{_int(port, 'coordinator port', 1)}"
    return out


def _ompi(env: Mapping[str, str], address: bool) -> dict[str, Any] | None:
    if "OMPI_COMM_WORLD_SIZE" not in env or "OMPI_COMM_WORLD_RANK" not in env:
        return None
    num = _int(env["OMPI_COMM_WORLD_SIZE"], "OMPI_COMM_WORLD_SIZE", 1)
    out: dict[str, Any] = {"method": "ompi", "num_processes": num,
                           "process_id": _int(env["OMPI_COMM_WORLD_RANK"], "OMPI_COMM_WORLD_RANK")}
    if "OMPI_COMM_WORLD_LOCAL_RANK" in env:
        out["local_rank"] = _int(env["OMPI_COMM_WORLD_LOCAL_RANK"], "OMPI_COMM_WORLD_LOCAL_RANK")
    if "OMPI_COMM_WORLD_LOCAL_SIZE" in env:
        out["local_size"] = _int(env["OMPI_COMM_WORLD_LOCAL_SIZE"], "OMPI_COMM_WORLD_LOCAL_SIZE", 1)
    uri = env.get("OMPI_MCA_orte_hnp_uri")
    if num > 1 and uri and address:
        # Open MPI <= 4: the launcher's address is in the HNP URI (as JAX's own detection does).
        m = re.search(r"tcp://(.+?)[,:]|tcp6://\[(.+?)[,\]]", uri)
        if m is None:
            raise RuntimeError(f"cannot parse the coordinator host from OMPI_MCA_orte_hnp_uri={uri!r}")
        host = next(g for g in m.groups() if g is not None)
        port = env.get("XFFT_COORDINATOR_PORT") or env.get("JAX_COORDINATOR_PORT") or str(
            _PORT_BASE + (int(uri.split(".", 1)[0]) // 4096) % 4096)
        out["coordinator_address"] = f"{host}:{port}"
    return out


def detect(env: Mapping[str, str] | None = None, *, coordinator_address: str | None = None,
           num_processes: int | None = None, process_id: int | None = None,
           local_device_ids: int | Sequence[int] | None = None, cpu_devices: int | None = None,
           resolve: bool = True) -> ClusterSpec:
    """Work out this process's place in the run without connecting to anything.

    Args:
      env: environment to read (default ``os.environ``).
      coordinator_address, num_processes, process_id, local_device_ids, cpu_devices: explicit values; each
        one given wins over the environment.
      resolve: check that a Slurm node name resolves and otherwise ask ``scontrol`` for its ``NodeAddr``.

    Returns:
      A :class:`ClusterSpec`.

    Raises:
      TypeError: an argument of the wrong type.
      ValueError: inconsistent or incomplete values (for example a process id without a process count, or
        a multi-process run without a coordinator address), with the variable to set.
      RuntimeError: the coordinator host cannot be resolved.
    """
    env = os.environ if env is None else env
    explicit = {
        "coordinator_address": coordinator_address if coordinator_address is not None else (
            env.get("XFFT_COORDINATOR_ADDRESS") or env.get("JAX_COORDINATOR_ADDRESS") or None),
        "num_processes": num_processes if num_processes is not None else env.get("XFFT_NUM_PROCESSES"),
        "process_id": process_id if process_id is not None else env.get("XFFT_PROCESS_ID"),
    }
    ids = _device_ids(local_device_ids, "local_device_ids") if local_device_ids is not None else (
        _device_ids(env.get("XFFT_LOCAL_DEVICE_IDS") or env.get("JAX_LOCAL_DEVICE_IDS"), "XFFT_LOCAL_DEVICE_IDS"))
    cpus = cpu_devices if cpu_devices is not None else env.get("XFFT_CPU_DEVICES") or None
    cpus = None if cpus is None else _int(cpus, "cpu_devices", 1)

    found: dict[str, Any] = {}
    if explicit["num_processes"] is None or explicit["process_id"] is None:
        want = explicit["coordinator_address"] is None
        found = _slurm(env, resolve, want) or _ompi(env, want) or {}
    method = found.get("method", "explicit")
    vals = {k: (v if v is not None else found.get(k)) for k, v in explicit.items()}
    if vals["num_processes"] is None and vals["process_id"] is None:
        if (coordinator_address is not None or env.get("XFFT_COORDINATOR_ADDRESS")) and not found:
            raise ValueError("a coordinator address is set (argument or XFFT_COORDINATOR_ADDRESS) but not the "
                             "process count and id: pass num_processes= and process_id= or set "
                             "XFFT_NUM_PROCESSES and XFFT_PROCESS_ID")
        return ClusterSpec("single", 1, 0, None, ids, cpu_devices=cpus)
    if vals["num_processes"] is None or vals["process_id"] is None:
        missing = "num_processes (XFFT_NUM_PROCESSES)" if vals["num_processes"] is None else \
            "process_id (XFFT_PROCESS_ID)"
        raise ValueError(f"incomplete multi-process settings: {missing} is not set and no Slurm or Open MPI "
                         "launcher was detected")
    num = _int(vals["num_processes"], "num_processes", 1)
    pid = _int(vals["process_id"], "process_id", 0)
    if pid >= num:
        raise ValueError(f"process_id must be < num_processes, got process_id={pid}, num_processes={num}")
    address = vals["coordinator_address"]
    if num > 1:
        if address is None:
            raise ValueError(
                f"{num} processes need a coordinator address: pass coordinator_address='host:port' or set "
                "XFFT_COORDINATOR_ADDRESS (Open MPI 5 does not publish one; Slurm and Open MPI 4 do)")
        address = _check_address(address, "coordinator_address")
    local_rank, local_size = found.get("local_rank"), found.get("local_size")
    if ids is None and method in ("slurm", "ompi"):
        ids = _auto_local_device_ids(local_rank, local_size, env)
    return ClusterSpec(method, num, pid, address if num > 1 else None, ids, local_rank, local_size, cpus)


# ----------------------------------------------------------------------------------------- initialization
def _rank_tag() -> str:
    spec = _SPEC
    if spec is None or not spec.multi_process:
        return "[xfft]"
    return f"[xfft rank {spec.process_id}/{spec.num_processes}]"


def install_excepthook(exit_code: int = 1) -> None:
    """Make an uncaught exception end this process at once with ``exit_code`` (``os._exit``).

    Normal interpreter exit runs ``jax.distributed``'s shutdown barrier, which waits for every other rank;
    with one rank dead in an exception the others sit in their next collective until a timeout. Exiting
    hard lets the launcher (``srun --kill-on-bad-exit``, ``xfft.launch``) stop the run within a second.
    The traceback is printed first, prefixed with the rank.
    """
    exit_code = _int(exit_code, "exit_code", 1)

    def hook(etype, value, tb) -> None:
        try:
            sys.stdout.flush()
            msg = "".join(traceback.format_exception(etype, value, tb))
            sys.stderr.write(f"{_rank_tag()} uncaught {etype.__name__}; exiting with code {exit_code} so the "
                             f"other ranks stop too\n{msg}")
            sys.stderr.flush()
        finally:
            os._exit(130 if issubclass(etype, KeyboardInterrupt) else exit_code)

    sys.excepthook = hook


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: int | Sequence[int] | None = None, *,
               cpu_devices: int | None = None, initialization_timeout_s: int | None = None,
               heartbeat_timeout_s: int | None = None, shutdown_timeout_s: int | None = None,
               fail_fast: bool = True) -> ClusterSpec:
    """Join the run this process belongs to (Slurm, Open MPI, ``xfft.launch``, explicit) or do nothing.

    Call it once per process before any other JAX call; with no arguments it detects the launcher (see
    :func:`detect`). A second call returns the first call's result.

    Args:
      coordinator_address: ``'host:port'`` of process 0 (default: detected or ``XFFT_COORDINATOR_ADDRESS``).
      num_processes: number of processes (default: detected or ``XFFT_NUM_PROCESSES``).
      process_id: this process's rank (default: detected or ``XFFT_PROCESS_ID``).
      local_device_ids: GPUs this process uses (default: one per process when several share a node and no
        binding narrowed the visible GPUs, *all* local GPUs with one process per node).
      cpu_devices: number of CPU devices for this process (default ``XFFT_CPU_DEVICES`` or JAX's default).
      initialization_timeout_s: how long to wait for every process to connect (default 120 s or
        ``XFFT_INIT_TIMEOUT``).
      heartbeat_timeout_s: a process that sends no heartbeat for this long is declared dead and the whole
        run stops (default 10 s or ``XFFT_HEARTBEAT_TIMEOUT``; JAX's is 100 s).
      shutdown_timeout_s: how long a finishing process waits at exit for the others to finish too (default
        60 s or ``XFFT_SHUTDOWN_TIMEOUT``; JAX's is 300 s). Past it the waiting process aborts, so work that
        only some ranks do after the last collective (rank 0 writing files) must take less than this.
      fail_fast: install :func:`install_excepthook` so an uncaught exception ends the process at once.

    Returns:
      The :class:`ClusterSpec` in effect.

    Raises:
      TypeError, ValueError: bad arguments or incomplete settings (see :func:`detect`).
      RuntimeError: JAX was already used in this process (devices exist), so it is too late to connect.
    """
    global _SPEC
    if _SPEC is not None:
        return _SPEC
    timeouts = {}
    for name, v, var, default in [
            ("initialization_timeout_s", initialization_timeout_s, "XFFT_INIT_TIMEOUT", INITIALIZATION_TIMEOUT_S),
            ("heartbeat_timeout_s", heartbeat_timeout_s, "XFFT_HEARTBEAT_TIMEOUT", HEARTBEAT_TIMEOUT_S),
            ("shutdown_timeout_s", shutdown_timeout_s, "XFFT_SHUTDOWN_TIMEOUT", SHUTDOWN_TIMEOUT_S)]:
        timeouts[name] = _int(v if v is not None else os.environ.get(var, default),
                              name if v is not None else var, 1)
    spec = detect(coordinator_address=coordinator_address, num_processes=num_processes, process_id=process_id,
                  local_device_ids=local_device_ids, cpu_devices=cpu_devices)
    import jax
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        if not spec.multi_process and spec.cpu_devices in (None, len(jax.devices("cpu"))):
            _SPEC = spec
            return spec
        raise RuntimeError(
            "xfft.distributed.initialize() must run before any JAX computation (jax.devices(), creating an "
            "array, ...): JAX's devices already exist in this process, so it can no longer join a "
            f"{spec.num_processes}-process run or change its CPU device count")
    if spec.cpu_devices is not None:
        jax.config.update("jax_num_cpu_devices", spec.cpu_devices)
    if spec.multi_process:
        jax.distributed.initialize(
            coordinator_address=spec.coordinator_address, num_processes=spec.num_processes,
            process_id=spec.process_id,
            local_device_ids=list(spec.local_device_ids) if spec.local_device_ids is not None else None,
            cluster_detection_method="deactivate", initialization_timeout=timeouts["initialization_timeout_s"],
            heartbeat_timeout_seconds=timeouts["heartbeat_timeout_s"],
            shutdown_timeout_seconds=timeouts["shutdown_timeout_s"])
        if fail_fast:
            install_excepthook()
    _SPEC = spec
    return spec


# ---------------------------------------------------------------------------------------------- watchdog
class Watchdog:
    """End this process if :meth:`kick` is not called for ``timeout_s`` seconds (a stuck rank).

    A rank that is alive but stuck (a deadlock, a collective that another rank never joins) is invisible to
    heartbeats. Kick the watchdog once per step; when a step takes too long it prints which rank stalled and
    every thread's stack, then calls ``os._exit(exit_code)`` so the launcher stops the whole run::

        with Watchdog(120) as dog:
            for step in range(n):
                state = advance(state)
                dog.kick()

    Args:
      timeout_s: seconds allowed between kicks (and from :meth:`start` to the first kick).
      exit_code: process exit status when it fires (default 124, like ``timeout``).

    Raises:
      ValueError: ``timeout_s`` is not positive.
    """

    def __init__(self, timeout_s: float, *, exit_code: int = 124) -> None:
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
            raise TypeError(f"timeout_s must be a number of seconds, got {timeout_s!r}")
        if not timeout_s > 0 or math.isinf(timeout_s):
            raise ValueError(f"timeout_s must be positive and finite, got {timeout_s}")
        self.timeout_s = float(timeout_s)
        self.exit_code = _int(exit_code, "exit_code", 1)
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.kicks = 0

    def start(self) -> Watchdog:
        """Start watching (the first period starts now). Returns ``self``."""
        if self._thread is None:
            self._last = time.monotonic()
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="xfft-watchdog", daemon=True)
            self._thread.start()
        return self

    def kick(self) -> None:
        """Record progress: the next ``timeout_s`` seconds start now."""
        self._last = time.monotonic()
        self.kicks += 1

    def stop(self) -> None:
        """Stop watching (the process is no longer ended)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _watch(self) -> None:
        while not self._stop.wait(min(1.0, self.timeout_s / 4)):
            idle = time.monotonic() - self._last
            if idle > self.timeout_s:
                try:
                    sys.stdout.flush()
                    sys.stderr.write(f"{_rank_tag()} watchdog: no progress for {idle:.1f} s (limit "
                                     f"{self.timeout_s:g} s, {self.kicks} kicks so far); this rank is stuck. "
                                     f"Stacks of all threads follow; exiting with code {self.exit_code}\n")
                    sys.stderr.flush()
                    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                    sys.stderr.flush()
                finally:
                    os._exit(self.exit_code)


# ------------------------------------------------------------------------------------------ global arrays
_SEQ: dict[str, int] = {}


def assert_same(value: Any, what: str, timeout_s: float = 60.0) -> None:
    """Check that every process passes an equal ``value`` (compared by ``repr``); a no-op for one process.

    Uses the coordinator's key-value store, never an XLA collective, so processes that disagree on a shape
    get a clear error instead of a hang or mismatched collectives. Every process must call it in the same
    order with the same ``what``.

    Args:
      value: anything with a deterministic ``repr`` (shapes, dtypes, specs).
      what: a short description used in the key and the error message.
      timeout_s: how long to wait for the other processes to arrive.

    Raises:
      ValueError: the processes disagree (the message lists each process's value).
      RuntimeError: another process did not arrive within ``timeout_s``.
    """
    import jax
    from jax._src import distributed as jdist

    if not isinstance(what, str) or not what:
        raise TypeError(f"what must be a non-empty string, got {what!r}")
    client = jdist.global_state.client
    n = jax.process_count()
    if n == 1 or client is None:
        return
    me = jax.process_index()
    seq = _SEQ[what] = _SEQ.get(what, 0) + 1
    key = f"xfft/assert_same/{what}/{seq}"
    mine = repr(value)
    client.key_value_set(f"{key}/{me}", mine)
    values = {}
    deadline = time.monotonic() + timeout_s
    for p in range(n):
        if p == me:
            values[p] = mine
            continue
        try:
            values[p] = client.blocking_key_value_get(f"{key}/{p}", max(1, int(1000 * (deadline - time.monotonic()))))
        except Exception as e:  # XlaRuntimeError(DEADLINE_EXCEEDED) or a dead coordinator
            raise RuntimeError(f"process {p} did not reach the check of {what} (call {seq}) within {timeout_s:g} "
                               f"s; processes must make the same calls in the same order ({e})") from None
    try:
        # Nobody raises (and exits) before everyone has read every value: each rank gets the same error.
        client.wait_at_barrier(f"{key}/read", max(1, int(1000 * (deadline - time.monotonic()))))
    except Exception as e:
        raise RuntimeError(f"not every process finished the check of {what} (call {seq}) within {timeout_s:g} s "
                           f"({e})") from None
    if len(set(values.values())) > 1:
        # The coordination service lives in process 0: if it raised (and exited) as soon as its own barrier
        # returned, the others' barrier replies could be lost ("Socket closed") and they would report that instead
        # of this error. So every other process acknowledges first, and process 0 waits for the acknowledgements.
        if me == 0:
            for p in range(1, n):
                try:
                    client.blocking_key_value_get(f"{key}/ack/{p}", 10_000)
                except Exception:  # a process that died meanwhile: report the disagreement anyway
                    break
        else:
            client.key_value_set(f"{key}/ack/{me}", "1")
        groups: dict[str, list[int]] = {}
        for p, v in values.items():
            groups.setdefault(v, []).append(p)
        detail = "; ".join(f"process{'es' if len(ps) > 1 else ''} {','.join(map(str, ps))}: {v}"
                           for v, ps in groups.items())
        raise ValueError(f"processes disagree on {what}: {detail}. Every process must build the same global "
                         "array (same shape, dtype and sharding)")


def _norm_index(index: tuple, shape: tuple[int, ...]) -> tuple[slice, ...]:
    out = []
    for s, n in zip(tuple(index) + (slice(None),) * (len(shape) - len(tuple(index))), shape):
        start, stop, _ = s.indices(n)
        out.append(slice(start, stop))
    return tuple(out)


def global_array(shape: Sequence[int], sharding: Any, fn: Callable[[tuple[slice, ...]], Any],
                 dtype: Any = None) -> Any:
    """Build a global ``jax.Array`` block by block: each process computes only its devices' blocks.

    Args:
      shape: global shape.
      sharding: a ``jax.sharding.Sharding`` (e.g. :func:`xfft.real_sharding`), spanning any processes.
      fn: ``fn(index) -> array``: the block at ``index``, a tuple of ``slice`` with concrete ``start`` and
        ``stop`` (one per axis); the result may broadcast to the block's shape (e.g. ``np.mgrid``/``ogrid``).
      dtype: dtype of the result (default: ``fn``'s).

    Returns:
      A ``jax.Array`` of ``shape`` with ``sharding``. No device and no process ever holds the whole array.

    Raises:
      TypeError: bad ``sharding`` or ``fn``.
      ValueError: bad shape, a block of the wrong shape, or processes passing different shapes/dtypes/
        shardings (checked with :func:`assert_same`, so it cannot hang).
    """
    import jax

    try:
        shape = tuple(_int(n, "shape entry", 0) for n in shape)
    except TypeError:
        raise TypeError(f"shape must be a sequence of ints, got {shape!r}") from None
    if not isinstance(sharding, jax.sharding.Sharding):
        raise TypeError(f"sharding must be a jax.sharding.Sharding, got {type(sharding).__name__}")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    dt = None if dtype is None else np.dtype(dtype)
    assert_same((shape, str(dt), str(getattr(sharding, "spec", sharding)),
                 tuple(getattr(getattr(sharding, "mesh", None), "shape", {}).items())),
                "global_array(shape, dtype, sharding)")

    def block(index):
        idx = _norm_index(index, shape)
        want = tuple(s.stop - s.start for s in idx)
        b = np.asarray(fn(idx), dtype=dt)
        try:
            b = np.broadcast_to(b, want)
        except ValueError:
            raise ValueError(f"fn returned a block of shape {b.shape} for index {idx}, expected {want}") from None
        return np.ascontiguousarray(b)

    return jax.make_array_from_callback(shape, sharding, block)


def from_process_local(local_data: Any, sharding: Any, global_shape: Sequence[int] | None = None) -> Any:
    """Assemble a global array from each process's contiguous part (``jax.make_array_from_process_local_data``).

    Args:
      local_data: this process's part of the global array (numpy), laid out as ``sharding`` assigns it.
      sharding: a ``jax.sharding.Sharding`` spanning the processes.
      global_shape: the global shape (default: inferred by JAX from the local shapes).

    Returns:
      The global ``jax.Array``.

    Raises:
      ValueError: processes disagree on the global shape, dtype or sharding (no hang).
    """
    import jax

    if not isinstance(sharding, jax.sharding.Sharding):
        raise TypeError(f"sharding must be a jax.sharding.Sharding, got {type(sharding).__name__}")
    local = np.asarray(local_data)
    gshape = None if global_shape is None else tuple(_int(n, "global_shape entry", 0) for n in global_shape)
    assert_same((gshape, str(local.dtype), str(getattr(sharding, "spec", sharding))),
                "from_process_local(global_shape, dtype, sharding)")
    return jax.make_array_from_process_local_data(sharding, local, gshape)


def gather(x: Any, max_bytes: int = 1 << 28) -> np.ndarray:
    """The full value of a (small) global array on every process, as numpy, for checks and debugging.

    Args:
      x: a global ``jax.Array`` (any sharding, any processes) or anything ``numpy.asarray`` accepts.
      max_bytes: refuse arrays larger than this (gathering defeats the point of sharding).

    Returns:
      ``numpy.ndarray`` with the global value (a process-local array is returned as it is).

    Raises:
      ValueError: the array is larger than ``max_bytes``.
    """
    import jax
    from jax.experimental import multihost_utils

    if isinstance(x, jax.Array):
        nbytes = x.size * x.dtype.itemsize
        if nbytes > max_bytes:
            raise ValueError(f"gather() is for small arrays: {tuple(x.shape)} {x.dtype} is {nbytes} bytes "
                             f"(> max_bytes={max_bytes})")
        if not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


def print0(*args: Any, **kwargs: Any) -> None:
    """``print`` on process 0 only (flushed), for logs that should appear once per run."""
    import jax

    if jax.process_index() == 0:
        kwargs.setdefault("flush", True)
        print(*args, **kwargs)
