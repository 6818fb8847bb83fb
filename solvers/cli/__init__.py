"""Command line: ``python -m solvers run navier-stokes --ic taylor-green ...`` and ``python -m solvers list``.

The command line only builds a :class:`~solvers.RunConfig` from the flags given, resolves it once into a
:class:`~solvers.job.Plan` (:func:`~solvers.job.resolve`) and hands the plan to the dry run
(:func:`~solvers.dry_run`) or the main job (:func:`~solvers.run`). Exit status:
0 done; 1 a snapshot could not be written (disk full, permissions; on every rank); 2 bad input (reported before any
compute, one line naming the flag); 3 blow-up (NaN/inf; the last good checkpoint is kept); 130 interrupted.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Sequence

from .flags import config, with_flags
from .listing import listing, print_dry_run
from .parser import EXIT_BAD_INPUT, PROG, parser

__all__ = ["EXIT_BAD_INPUT", "EXIT_BLOW_UP", "EXIT_SNAPSHOT", "main", "with_flags"]

EXIT_SNAPSHOT, EXIT_BLOW_UP = 1, 3


def _setup_devices(cpu_devices: int) -> None:
    """Join a multi-process run if the environment says so, else default to ``cpu_devices`` CPU devices.

    Must run before JAX creates its backends. Nothing is changed when the user or a launcher configured the
    devices (``XLA_FLAGS`` device count, ``JAX_NUM_CPU_DEVICES``, ``XFFT_CPU_DEVICES``).
    """
    try:
        from xfft import distributed
    except ImportError:
        distributed = None
    if distributed is not None:
        spec = distributed.detect(resolve=False)
        if spec.multi_process or spec.cpu_devices is not None:
            distributed.initialize()
            return
    elif any(int(os.environ.get(v, "1") or 1) > 1 for v in ("SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE")):
        import jax

        jax.distributed.initialize()
        return
    configured = ("xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
                  or os.environ.get("JAX_NUM_CPU_DEVICES") or os.environ.get("XFFT_CPU_DEVICES"))
    if not configured:
        import jax

        try:
            jax.config.update("jax_num_cpu_devices", cpu_devices)
        except RuntimeError:
            pass  # backends already up (called from a live Python session): keep what is there


@contextlib.contextmanager
def _warnings_as_lines():
    """While a run goes: its warnings one line each (``python -m solvers: warning: ...``), above the progress bar
    rather than inside it and without the source line that Python's default format adds."""
    from tqdm import tqdm

    def show(message, category, filename, lineno, file=None, line=None):
        tqdm.write(f"{PROG}: warning: {category.__name__}: {message}", file=file or sys.stderr)

    old = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = old


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m solvers`` and the ``xfft-solve`` console script; returns the exit status (a
    malformed command line too: 2, after one line on stderr)."""
    try:
        ns = parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a malformed flag (2, one line printed by _Parser.error)
        return e.code if isinstance(e.code, int) else EXIT_BAD_INPUT
    if ns.command == "list":
        print(listing())
        return 0
    if os.getcwd() not in sys.path and "" not in sys.path:  # MODULE:NAME from the current directory, as python -m
        sys.path.insert(0, os.getcwd())
    try:
        _setup_devices(ns.cpu_devices)
        import jax

        from ..job import dry_run, enable_compilation_cache, resolve

        if not ns.no_compile_cache and not ns.dry_run:  # before the first program
            enable_compilation_cache()
        # the one resolution of the run: preset, defaults, checks; 64-bit mode on before any JAX array if float64
        plan = resolve(config(ns), enable_x64=True)
        if ns.dry_run:
            info = dry_run(plan)
    except ValueError as e:
        print(f"{PROG}: error: {with_flags(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if ns.dry_run:
        if jax.process_index() == 0:
            print_dry_run(info)
        return 0

    from ..job import ConfigError, run
    from ..outputs import SnapshotError
    from ..simulation import BlowUpError

    try:
        with _warnings_as_lines():
            summary = run(plan, compile_cache=False)  # (the cache is on already, unless --no-compile-cache)
    except ConfigError as e:
        print(f"{PROG}: error: {with_flags(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BlowUpError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_BLOW_UP
    except SnapshotError as e:  # a failed snapshot write, raised on every rank
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_SNAPSHOT
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; resume with --resume from the last checkpoint", file=sys.stderr)
        return 130
    if jax.process_index() == 0:
        final = summary.get("final") or {}
        e = f", E = {final['energy']:.8g}" if "energy" in final else ""
        if summary.get("stopped"):
            print(f"{PROG}: {summary['stopped']}", flush=True)
        print(f"done: {summary['steps']} steps to {summary.get('time', 't')} = {summary['t']:.6g}{e} on "
              f"{summary['devices']} devices {summary['mesh']} in {summary['wall_s']:.1f} s; outputs in "
              f"{summary['config']['out']}", flush=True)
    return 0
