"""Joining a run: :func:`initialize` (JAX's distributed runtime with fail-fast timeouts), the excepthook that ends a
failing rank at once, and quiet C++ logs."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

from ..launch import note_fault, split_native_stdout
from ._detect import ClusterSpec, _int, detect

#: Defaults of :func:`initialize` (seconds; JAX's own are 300 / 100 / 300). The environment variables
#: ``XFFT_INIT_TIMEOUT``, ``XFFT_HEARTBEAT_TIMEOUT`` and ``XFFT_SHUTDOWN_TIMEOUT`` override them.
INITIALIZATION_TIMEOUT_S = 120
HEARTBEAT_TIMEOUT_S = 10
SHUTDOWN_TIMEOUT_S = 60

_SPEC: ClusterSpec | None = None


def _rank_tag() -> str:
    spec = _SPEC
    if spec is None or not spec.multi_process:
        return "[xfft]"
    return f"[xfft rank {spec.process_id}/{spec.num_processes}]"


def note_own_fault() -> None:
    """Note in :func:`xfft.launch.launch`'s fault log that this rank is failing now (so the launcher names it,
    not a peer that dies of its failure and exits first); nothing outside a multi-process run."""
    if _SPEC is not None and _SPEC.multi_process:
        note_fault(_SPEC.process_id)


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
            note_own_fault()  # (xfft.launch names the rank that failed first)
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
        # Gloo's C++ threads print their connection lines on stdout, piece by piece: under xfft.launch they
        # get a pipe of their own, so they cannot land inside the program's lines.
        split_native_stdout()
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

