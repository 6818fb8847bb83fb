"""Local multi-process launcher: ``python -m xfft.launch -n 4 --devices-per-process 2 script.py [args]``.

Runs N copies of a script on this machine, the way ``srun`` would on a cluster, for laptops, notebooks and
CI: it picks a free coordinator port, starts the processes with the ``XFFT_*`` variables that
:func:`xfft.distributed.initialize` reads, prefixes every output line with ``[rank i]``, and fails fast:
the first process that exits non-zero (or dies from a signal) ends all the others and the launcher exits
with that process's code, naming its rank. A hard deadline (``--timeout``) ends a run that hangs.

Output is passed through as it comes, not line by line only: a partial line (a ``tqdm`` progress bar redrawn
with carriage returns) appears at once, prefixed, and a line of another rank never lands inside it. Gloo's
connection chatter (``[Gloo] Rank 0 is connected to 3 peer ranks...``, printed by the C++ library on stdout for
every communicator of multi-process CPU runs, with no logging switch of its own) is dropped unless
``--verbose`` or ``XFFT_VERBOSE=1``. Gloo's threads write that message one piece at a time, unsynchronised, so
on a shared stdout its pieces can land inside the program's own lines; each rank therefore gets a second pipe
for what native code writes to stdout (``XFFT_NATIVE_STDOUT_FD``), and :func:`xfft.distributed.initialize`
moves file descriptor 1 onto it and Python's ``sys.stdout`` off it (:func:`split_native_stdout`): the
program's lines and Gloo's never share a pipe. (Scripts that do not call ``initialize`` keep one stdout; the
filter then removes the pieces it recognises.)

GPUs: ``--platform gpu --devices-per-process k`` gives rank r the GPUs ``[r k, (r + 1) k)``;
``--ranks-per-gpu R`` lets R consecutive ranks share them (NCCL 2.30 and later allow several ranks per GPU), so
the multi-process NCCL path runs on a machine with one GPU: ``python -m xfft.launch -n 2 --platform gpu
--ranks-per-gpu 2 slurm/xfft_check.py``.

Exit codes: 0 when every rank exits 0; the first failing rank's code (``128 + signal`` for a signal);
124 when the deadline passes; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import queue
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

from ._launch_faults import ENV_FAULT_LOG, cause, faults
from ._launch_faults import note_fault as note_fault  # (xfft.distributed's fail-fast hook calls it)
from ._launch_output import _end_open_line, _Pump

__all__ = ["free_port", "launch", "main", "rank_env", "split_native_stdout", "verbose_from_env"]

TIMEOUT_EXIT = 124
INTERRUPT_EXIT = 130
ENV_VERBOSE = "XFFT_VERBOSE"
#: ``"fd:pid"``: the file descriptor, in a rank, of its pipe for native code's stdout, and the launcher's process
#: id (see :func:`split_native_stdout`)
ENV_NATIVE_FD = "XFFT_NATIVE_STDOUT_FD"
#: seconds the launcher gathers further failures after the first, before it names the cause
CAUSE_WINDOW_S = 1.0



def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def rank_env(rank: int, nprocs: int, coordinator: str, devices_per_process: int | None, platform: str,
             base: Mapping[str, str] | None = None, ranks_per_gpu: int = 1) -> dict[str, str]:
    """Environment of rank ``rank``: ``base`` plus the ``XFFT_*`` variables for :func:`xfft.distributed.initialize`.

    On ``platform="cpu"`` each process gets ``devices_per_process`` CPU devices (``XFFT_CPU_DEVICES`` and the
    matching ``--xla_force_host_platform_device_count`` for scripts that call ``jax.distributed`` directly);
    on ``"gpu"`` it gets the GPUs ``[g * k, (g + 1) * k)`` (``XFFT_LOCAL_DEVICE_IDS``) with ``g = rank //
    ranks_per_gpu``: with ``ranks_per_gpu`` R > 1, R consecutive ranks share their GPUs (NCCL 2.30 and later
    allow several ranks per GPU), and each rank's JAX takes ``0.9 / R`` of the GPU's memory
    (``XLA_PYTHON_CLIENT_MEM_FRACTION``, unless ``base`` sets it or turns preallocation off) instead of JAX's
    75%, which only one process could have.
    """
    _check_ranks_per_gpu(ranks_per_gpu, platform, devices_per_process)
    env = dict(os.environ if base is None else base)
    env.update(XFFT_COORDINATOR_ADDRESS=coordinator, XFFT_NUM_PROCESSES=str(nprocs), XFFT_PROCESS_ID=str(rank),
               XFFT_LAUNCHED="1", PYTHONUNBUFFERED="1")
    if platform == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
        if devices_per_process is not None:
            env["XFFT_CPU_DEVICES"] = str(devices_per_process)
            flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "", env.get("XLA_FLAGS", "")).split()
            env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count={devices_per_process}"])
    elif platform == "gpu" and devices_per_process is not None:
        group = rank // ranks_per_gpu
        ids = range(group * devices_per_process, (group + 1) * devices_per_process)
        env["XFFT_LOCAL_DEVICE_IDS"] = ",".join(map(str, ids))
        if ranks_per_gpu > 1 and "XLA_PYTHON_CLIENT_MEM_FRACTION" not in env and \
                env.get("XLA_PYTHON_CLIENT_PREALLOCATE", "").lower() not in ("false", "0"):
            env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{0.9 / ranks_per_gpu:.4g}"
    return env


def _check_ranks_per_gpu(ranks_per_gpu: object, platform: str, devices_per_process: int | None) -> None:
    """ValueError naming ``ranks_per_gpu`` unless it is a positive int (above 1 only on ``platform="gpu"`` with a
    ``devices_per_process``: the GPUs the ranks share)."""
    if isinstance(ranks_per_gpu, bool) or not isinstance(ranks_per_gpu, int) or ranks_per_gpu < 1:
        raise ValueError(f"ranks_per_gpu must be a positive int, got {ranks_per_gpu!r}")
    if ranks_per_gpu > 1 and (platform != "gpu" or devices_per_process is None):
        raise ValueError(f"ranks_per_gpu={ranks_per_gpu} needs platform='gpu' and a devices_per_process (the GPUs "
                         f"the ranks share), got platform={platform!r}, devices_per_process={devices_per_process!r}")


def split_native_stdout() -> bool:
    """In a rank started by :func:`launch`: give native code's stdout (file descriptor 1, where Gloo's C++
    threads write) the rank's second pipe (``XFFT_NATIVE_STDOUT_FD``), and keep Python's ``sys.stdout`` on the
    original pipe through a duplicate of it. The launcher reads both and drops Gloo's lines from the second, so
    no piece of Gloo's message can land inside a line the program prints.

    :func:`xfft.distributed.initialize` calls it before Gloo starts; elsewhere it does nothing: not launched by
    :func:`launch`, called twice, or in a process the launcher did not start itself (a rank's own subprocess
    inherits the variable, but the descriptor number is not its pipe there: the launcher's process id must be
    this process's parent, and the descriptor a pipe). Subprocesses of the rank inherit file descriptor 1, so
    their output goes through the launcher's Gloo filter too.

    Returns:
      True when stdout was split.
    """
    value = os.environ.pop(ENV_NATIVE_FD, None)
    try:
        fd, launcher = (int(v) for v in (value or "").split(":"))
        if launcher != os.getppid() or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
    except (ValueError, OSError):
        return False
    old = sys.stdout
    with contextlib.suppress(AttributeError, ValueError, OSError):
        old.flush()
    python_fd = os.dup(1)
    os.dup2(fd, 1)
    os.close(fd)
    # As ``python -u`` makes it: unbuffered, every write passed through (progress bars stay live).
    sys.stdout = io.TextIOWrapper(io.FileIO(python_fd, "w"), encoding=getattr(old, "encoding", None) or "utf-8",
                                  errors=getattr(old, "errors", None) or "strict",
                                  line_buffering=bool(getattr(old, "line_buffering", False)), write_through=True)
    return True


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _exit_status(code: int) -> int:
    return 128 + (-code) if code < 0 else code


def verbose_from_env(env: Mapping[str, str] | None = None) -> bool:
    """True when ``XFFT_VERBOSE`` asks for the runtime's chatter (``1``, ``true``, ``yes`` or ``on``)."""
    value = (os.environ if env is None else env).get(ENV_VERBOSE, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def launch(script: str, args: Sequence[str] = (), *, nprocs: int = 2, devices_per_process: int | None = 1,
           timeout: float = 600.0, module: bool = False, platform: str = "cpu", python: str | None = None,
           env: Mapping[str, str] | None = None, grace_s: float = 1.0, stdout: IO[str] | None = None,
           stderr: IO[str] | None = None, verbose: bool | None = None, ranks_per_gpu: int = 1) -> int:
    """Run ``nprocs`` processes of ``script`` on this machine and return the run's exit code.

    Args:
      script: path of a Python script (or a module name with ``module=True``).
      args: arguments passed to every process.
      nprocs: number of processes.
      devices_per_process: CPU devices per process (``platform="cpu"``) or GPUs per process (``"gpu"``);
        None leaves the device setup to the environment.
      timeout: hard deadline in seconds for the whole run; then every process is killed (exit code 124).
      module: run ``python -m script`` instead of a file.
      platform: ``"cpu"`` (sets ``JAX_PLATFORMS=cpu``), ``"gpu"`` or ``"any"`` (leave platform alone).
      python: interpreter (default: this one).
      env: base environment (default: ``os.environ``).
      grace_s: seconds between SIGTERM and SIGKILL when stopping the other ranks.
      stdout, stderr: where the prefixed output goes (default: the current ``sys.stdout``/``sys.stderr``,
        so it works in notebooks). It is passed through as it arrives, partial lines included.
      verbose: keep Gloo's connection chatter (default: ``XFFT_VERBOSE`` of ``env``; off).
      ranks_per_gpu: ranks that share each GPU (``platform="gpu"``; see :func:`rank_env`), for example 2 to
        run the multi-process NCCL path on a machine with one GPU.

    Returns:
      0 if every rank exited 0; else the first failing rank's exit status (``128 + signal`` for a
      signal), 124 on timeout, 130 if interrupted.

    Raises:
      TypeError, ValueError: bad arguments (for example a script that does not exist).
    """
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"nprocs must be a positive int, got {nprocs!r}")
    if devices_per_process is not None and (isinstance(devices_per_process, bool)
                                            or not isinstance(devices_per_process, int) or devices_per_process < 1):
        raise ValueError(f"devices_per_process must be a positive int or None, got {devices_per_process!r}")
    _check_ranks_per_gpu(ranks_per_gpu, platform, devices_per_process)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if platform not in ("cpu", "gpu", "any"):
        raise ValueError(f"platform must be 'cpu', 'gpu' or 'any', got {platform!r}")
    if not isinstance(script, str) or not script:
        raise TypeError(f"script must be a non-empty string, got {script!r}")
    if not module and not os.path.isfile(script):
        raise ValueError(f"script {script!r} does not exist (use module=True / -m for a module)")
    if isinstance(args, str):
        raise TypeError("args must be a sequence of strings, not one string")
    err = stderr if stderr is not None else sys.stderr
    quiet = not (verbose_from_env(os.environ if env is None else env) if verbose is None else verbose)
    open_lines: dict = {}  # id(target stream) -> the _Pump whose partial line is on it

    def say(msg: str) -> None:
        with lock:
            _end_open_line(err, open_lines)
            err.write(f"xfft.launch: {msg}\n")
            err.flush()

    cmd = [python or sys.executable, "-u"] + (["-m", script] if module else [script]) + [str(a) for a in args]
    coordinator = f"127.0.0.1:{free_port()}"
    lock = threading.Lock()
    events: queue.Queue[tuple[int, int, float]] = queue.Queue()
    procs: list[subprocess.Popen] = []
    pumps: list[threading.Thread] = []
    start = time.monotonic()
    fd, fault_log = tempfile.mkstemp(prefix="xfft-launch-faults-")  # where failing ranks note when (note_fault)
    os.close(fd)

    def waiter(rank: int, proc: subprocess.Popen) -> None:
        code = proc.wait()
        events.put((rank, code, time.monotonic()))

    try:
        for rank in range(nprocs):
            native_r, native_w = os.pipe()  # native code's stdout, apart from Python's (split_native_stdout)
            try:
                proc_env = rank_env(rank, nprocs, coordinator, devices_per_process, platform, env, ranks_per_gpu)
                proc_env[ENV_NATIVE_FD] = f"{native_w}:{os.getpid()}"
                proc_env[ENV_FAULT_LOG] = fault_log
                proc = subprocess.Popen(cmd, env=proc_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, start_new_session=True, pass_fds=(native_w,))
            except BaseException:
                os.close(native_r)
                raise
            finally:
                os.close(native_w)
            procs.append(proc)
            native = os.fdopen(native_r, "rb", buffering=0)
            for stream, out, name in ((proc.stdout, stdout, "stdout"), (native, stdout, "stdout"),
                                      (proc.stderr, stderr, "stderr")):
                pump = _Pump(rank, out, name, lock, open_lines, quiet)
                t = threading.Thread(target=pump.run, args=(stream,), daemon=True)
                t.start()
                pumps.append(t)
            threading.Thread(target=waiter, args=(rank, proc), daemon=True).start()

        status, done = 0, 0
        while done < nprocs:
            remaining = start + timeout - time.monotonic()
            try:
                rank, code, t = events.get(timeout=max(0.0, remaining))
            except queue.Empty:
                alive = [r for r, p in enumerate(procs) if p.poll() is None]
                say(f"timeout: ranks {alive} still running after the {timeout:g} s deadline; killing all ranks")
                status = TIMEOUT_EXIT
                break
            done += 1
            if code != 0:
                # Ranks that die together are seen out of order (each exit is timed by a thread of this
                # process): gather the failures of the next moment, then name the cause.
                failed = [(t, rank, code)]
                until = time.monotonic() + CAUSE_WINDOW_S
                while done < nprocs and time.monotonic() < until:
                    try:
                        r2, c2, t2 = events.get(timeout=max(0.0, until - time.monotonic()))
                    except queue.Empty:
                        break
                    done += 1
                    if c2 != 0:
                        failed.append((t2, r2, c2))
                noted = faults(fault_log)
                first_noted = min(noted, key=noted.get) if noted else None
                if first_noted is not None and first_noted not in {r for _, r, _ in failed}:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        procs[first_noted].wait(timeout=2)  # (failing, but its exit is slower than its victims')
                    if procs[first_noted].poll() not in (None, 0):
                        failed.append((time.monotonic(), first_noted, procs[first_noted].returncode))
                t, rank, code = cause(failed, noted)
                others = [r for r, p in enumerate(procs) if p.poll() is None]
                say(f"rank {rank} {_describe(code)} after {t - start:.1f} s; stopping ranks {others}")
                status = _exit_status(code)
                break
    except KeyboardInterrupt:
        say("interrupted; killing all ranks")
        status = INTERRUPT_EXIT
    finally:
        running = [p for p in procs if p.poll() is None]
        for p in running:
            _kill_group(p, signal.SIGTERM)
        end = time.monotonic() + grace_s
        for p in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.0, end - time.monotonic()))
        for p in procs:
            if p.poll() is None:
                _kill_group(p, signal.SIGKILL)
            # Descendants in the process group (a rank's own subprocesses) go too.
            _kill_group(p, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        for t in pumps:
            t.join(timeout=2)
        with contextlib.suppress(OSError):
            os.unlink(fault_log)
    if status == 0:
        say(f"all {nprocs} ranks exited 0 in {time.monotonic() - start:.1f} s")
    elif status not in (TIMEOUT_EXIT, INTERRUPT_EXIT):
        say(f"FAILED: rank {rank} {_describe(code)}")
    return status


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m xfft.launch",
        description="Run N processes of a JAX script on this machine (like srun), with fail-fast and a deadline.",
        epilog="Example: python -m xfft.launch -n 4 --devices-per-process 2 slurm/xfft_check.py",
    )
    p.add_argument("-n", "--nprocs", type=int, default=2, help="number of processes (default 2)")
    p.add_argument("--devices-per-process", type=int, default=1,
                   help="CPU devices (or GPUs with --platform gpu) per process (default 1)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="hard deadline in seconds for the whole run (default 600); exit code 124")
    p.add_argument("--platform", choices=("cpu", "gpu", "any"), default="cpu",
                   help="cpu (default: JAX_PLATFORMS=cpu), gpu, or any (leave the platform alone)")
    p.add_argument("--ranks-per-gpu", type=int, default=1,
                   help="with --platform gpu: this many consecutive ranks share each GPU (NCCL 2.30 and later), "
                        "each with 0.9/R of its memory (default 1)")
    p.add_argument("-m", dest="module", action="store_true", help="run a module (python -m) instead of a script")
    p.add_argument("--verbose", action="store_true",
                   help=f"keep the runtime's chatter (Gloo's connection lines); also {ENV_VERBOSE}=1")
    p.add_argument("script", help="script path (or module name with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (see the module docstring)."""
    ns = _parser().parse_args(argv)
    with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
        # A SIGTERM to the launcher (scheduler, CI timeout) must take the ranks down with it.
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        return launch(ns.script, ns.args, nprocs=ns.nprocs, devices_per_process=ns.devices_per_process,
                      timeout=ns.timeout, module=ns.module, platform=ns.platform, verbose=ns.verbose or None,
                      ranks_per_gpu=ns.ranks_per_gpu)
    except (TypeError, ValueError) as e:
        print(f"xfft.launch: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
