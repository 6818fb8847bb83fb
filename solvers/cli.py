"""Command line: ``python -m solvers run navier-stokes --ic taylor-green ...`` and ``python -m solvers list``.

Exit status: 0 done; 1 a snapshot could not be written (disk full, permissions; on every rank); 2 bad input
(reported before any compute, one line naming the flag); 3 blow-up (NaN/inf; the last good checkpoint is kept);
130 interrupted. The library's messages name :class:`~solvers.RunConfig` fields and parameters (``t_end``); this
module prints them with its flags (``--t-end``), from one table (:data:`FLAGS`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
import warnings
from collections.abc import Sequence

EXIT_SNAPSHOT, EXIT_BAD_INPUT, EXIT_BLOW_UP = 1, 2, 3
PROG = "python -m solvers"
#: the largest --cpu-devices (4096 virtual devices start in about 10 s and take 0.6 GB; a typo must not take more)
MAX_CPU_DEVICES = 4096

#: RunConfig field -> the flag that sets it: library messages name fields, the command line prints flags
FLAGS = {
    "ic": "--ic", "n": "--n", "box_length": "--box-length", "t_end": "--t-end",
    "out": "--out", "mesh": "--mesh", "dtype": "--dtype", "integrator": "--integrator", "dt": "--dt",
    "cfl": "--cfl", "dt_max": "--dt-max", "dealias": "--dealias", "backend": "--backend", "params": "--param",
    "diag_every": "--diag-every", "checkpoint_every": "--checkpoint-every", "keep": "--keep", "resume": "--resume",
    "overwrite": "--overwrite", "max_steps": "--max-steps", "snapshot_every": "--snapshot-every",
    "snapshot_times": "--snapshot-times", "snapshot_dtype": "--snapshot-dtype",
}
#: declared parameters that have a flag of their own (the others: --param NAME=...)
PARAM_FLAGS = {"nu": "--nu or --re", "seed": "--seed", "k0": "--k0", "energy": "--energy",
               "forcing_epsilon": "--forcing-epsilon"}


def with_flags(e: BaseException) -> str:
    """The message of a library error with its fields and parameters named by their flags: the first use of each
    field in ``e.fields`` outside quotes (``t_end must be positive`` -> ``--t-end must be positive``), and
    ``parameter NAME`` for each name in ``e.params`` (-> ``parameter NAME (--param NAME=...)``)."""
    parts = re.split(r"('[^']*')", str(e))  # quoted values (paths, names) are never rewritten
    for name in getattr(e, "fields", ()):
        pattern = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])")
        for i in range(0, len(parts), 2):
            parts[i], hit = pattern.subn(FLAGS.get(name, name), parts[i], count=1)
            if hit:
                break
    for name in getattr(e, "params", ()):
        flag = PARAM_FLAGS.get(name, f"--param {name}=...")
        for i in range(0, len(parts), 2):
            parts[i] = re.sub(rf"\bparameter {re.escape(name)}(?!\w)", f"parameter {name} ({flag})", parts[i])
    return "".join(parts)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``python -m solvers run: error: argument --n: ...``)."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _integer(low: int, high: int | None = None):
    """An argparse type: an integer ``>= low`` (and ``<= high``)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}" + (f" and <= {high}" if high else "")
                                             + f", got {value}")
        return value
    return parse


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Spectral PDE solvers on sharded JAX meshes.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print the equations, initial conditions and integrators on offer")
    r = sub.add_parser("run", help="run a simulation", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                       epilog="Example: python -m solvers run navier-stokes --ic taylor-green --n 64 --re 1600 "
                              "--t-end 2 --out runs/tgv")
    r.add_argument("equation", help="equation name (see `list`), or MODULE:CLASS for your own Equation subclass "
                                    "(MODULE importable from the current directory)")
    r.add_argument("--ic", default=None, help="initial condition (see `list`; default: the equation's first)")
    r.add_argument("--n", type=int, nargs="+", default=[64], metavar="N",
                   help="grid points: one size (a cube/square) or one per axis (NX NY NZ; 2D: NX NY)")
    r.add_argument("--box-length", type=float, nargs="+", default=None, metavar="L",
                   help="box side(s): one value or one per axis (LX LY LZ)")
    visc = r.add_mutually_exclusive_group()
    visc.add_argument("--re", type=float, default=None, help="Reynolds number: sets the parameter nu = 1 / Re")
    visc.add_argument("--nu", default=None, help="kinematic viscosity (the parameter nu)")
    r.add_argument("--t-end", type=float, default=1.0, help="final time")
    r.add_argument("--out", default=None, help="output directory (default runs/EQUATION-IC)")
    r.add_argument("--mesh", default="slab", help="decomposition: slab, pencil, or auto (the faster measured by "
                   "xfft.autotune, cached per machine kind and grid; the choice and timings go into run.json)")
    r.add_argument("--dtype", default="float32", help="float32 or float64 (64-bit mode is turned on)")
    r.add_argument("--integrator", default=None, help="time integrator (see `list`; default: the equation's own)")
    step = r.add_mutually_exclusive_group()
    step.add_argument("--dt", type=float, default=None, help="fixed time step (default: CFL-adaptive)")
    step.add_argument("--cfl", type=float, default=0.5, help="CFL number of the adaptive time step")
    r.add_argument("--dt-max", type=float, default=0.1, help="largest adaptive time step")
    r.add_argument("--dealias", default="2/3", help="2/3 (truncation), 3/2 (padding) or none")
    r.add_argument("--backend", default="native", help="xfft backend for every transform")
    for flag, what in (("--seed", "random initial conditions' seed"), ("--k0", "random initial conditions' "
                       "spectral peak"), ("--energy", "random initial conditions' energy"),
                       ("--forcing-epsilon", "Navier-Stokes linear forcing power (0: decaying)")):
        r.add_argument(flag, default=None, help=f"{what}: sets the parameter {flag[2:].replace('-', '_')}")
    r.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="equation or initial-condition parameter (repeatable; see `list`)")
    r.add_argument("--diag-every", type=int, default=10, help="diagnostics CSV row every N steps")
    r.add_argument("--checkpoint-every", type=int, default=0, help="checkpoint every N steps (0: only at the end)")
    r.add_argument("--keep", type=int, default=2, help="checkpoints kept")
    r.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    r.add_argument("--overwrite", action="store_true", help="discard a previous run in --out")
    r.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (counted from 0)")
    r.add_argument("--snapshot-every", type=int, default=0, help="snapshot every N steps (0: none)")
    r.add_argument("--snapshot-times", default=None, metavar="T1,T2,...", help="snapshots at these times")
    r.add_argument("--snapshot-dtype", default="float32", help="float32 or float64 snapshot fields")
    r.add_argument("--cpu-devices", type=_integer(1, MAX_CPU_DEVICES), default=8,
                   help="virtual CPU devices when there is no accelerator and nothing else configured them")
    r.add_argument("--dry-run", action="store_true",
                   help="check everything and print the resolved configuration, the mesh and the memory per "
                        "device; compute and write nothing")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--no-plots", action="store_true", help="no PNG plots")
    return p


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


def _config(ns: argparse.Namespace):
    """The :class:`~solvers.RunConfig` of the command line; flags that set parameters go into ``params``.

    Raises:
      ValueError: a malformed ``--param``, ``--re``, ``--snapshot-times`` (the CLI exits with status 2).
    """
    from ._config import RunConfig

    params: dict[str, str | float] = {}
    for item in ns.param:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        params[key.strip()] = value.strip()
    if ns.re is not None:
        if not (math.isfinite(ns.re) and ns.re > 0):
            raise ValueError(f"--re must be positive (it sets nu = 1/Re), got {ns.re}")
        ns.nu = 1.0 / ns.re
    for key in ("nu", "seed", "k0", "energy", "forcing_epsilon"):
        value = getattr(ns, key)
        if value is not None:
            if key in params:
                raise ValueError(f"--{key.replace('_', '-')} and --param {key} both given; give one")
            params[key] = value
    times: tuple[float, ...] = ()
    if ns.snapshot_times is not None:
        try:
            times = tuple(float(v) for v in ns.snapshot_times.split(",") if v.strip())
        except ValueError:
            raise ValueError(f"--snapshot-times expects comma-separated times (T1,T2,...), got "
                             f"{ns.snapshot_times!r}") from None
        if not times:
            raise ValueError("--snapshot-times expects at least one time (T1,T2,...)")
    return RunConfig(
        equation=ns.equation, ic=ns.ic, n=tuple(ns.n), t_end=ns.t_end, params=params, out=ns.out, mesh=ns.mesh,
        dtype=ns.dtype, integrator=ns.integrator, dt=ns.dt, cfl=ns.cfl, dt_max=ns.dt_max, dealias=ns.dealias,
        backend=ns.backend, box_length=None if ns.box_length is None else tuple(ns.box_length),
        diag_every=ns.diag_every,
        checkpoint_every=ns.checkpoint_every, keep=ns.keep, resume=ns.resume, overwrite=ns.overwrite,
        max_steps=ns.max_steps, progress=not ns.no_progress, plots=not ns.no_plots,
        snapshot_every=ns.snapshot_every, snapshot_times=times, snapshot_dtype=ns.snapshot_dtype)


def _describe(p) -> str:
    flag = f", {p.flag}" if p.flag else ""
    return f"{p.name}={p.default!r} ({p.allowed()}{flag}){': ' + p.help if p.help else ''}"


def _needs_dt(equation) -> bool:
    """True if runs of ``equation`` (a registered name, ``"module:Class"`` or a class) must give a fixed ``--dt``.

    The driver's own fact: a run without ``dt`` steps adaptively by the CFL rate ``max_rate`` and is refused when
    ``max_rate`` returns None. This builds the equation with its defaults on a small one-device grid exactly as a
    run does (:func:`~solvers._run.build`) and asks ``max_rate`` for the shape of its result (``jax.eval_shape``:
    nothing is computed).
    """
    import jax

    import xfft

    from ._config import RunConfig, equation_class, resolve
    from ._run import build

    cls, _ = equation_class(equation)
    cfg = RunConfig(equation=cls, n=16, dt=1.0)
    grid, eq, _, _ = build(cfg, resolve(cfg), xfft.make_mesh((1,), devices=jax.devices()[:1]))
    with jax.set_mesh(grid.mesh):
        return jax.eval_shape(eq.max_rate, eq.abstract_state()) is None


def _list() -> str:
    from ._grid import DEALIAS
    from ._params import as_initial_condition
    from .equations import EQUATIONS, SOLVERS
    from .integrators import INTEGRATORS

    lines = ["equations (python -m solvers run NAME, or MODULE:CLASS for your own):"]
    for name, cls in EQUATIONS.items():
        step = "--dt DT (required: no CFL rate)" if _needs_dt(cls) else "--cfl C (adaptive, the default) or --dt DT"
        lines.append(f"  {name:<20} {cls.description}")
        lines.append(f"  {'':<20} grids: {'/'.join(map(str, cls.ndims))}D; default integrator: "
                     f"{cls.default_integrator}; time step: {step}")
        for p in cls.parameters:
            lines.append(f"  {'':<22}--param {_describe(p)}")
        for i, (ic, spec) in enumerate(cls.initial_conditions.items()):
            spec = as_initial_condition(spec)
            lines.append(f"  {'':<20} --ic {ic}{' (default)' if i == 0 else ''}"
                         f"{': ' + spec.help if spec.help else ''}")
            for p in spec.params:
                lines.append(f"  {'':<24}--param {_describe(p)}")
    lines.append("steady solvers (Python API):")
    for name, cls in SOLVERS.items():
        lines.append(f"  {name:<20} {cls.description}")
    lines.append("integrators (--integrator):")
    for name, cls in INTEGRATORS.items():
        lines.append(f"  {name:<20} order {cls.order}: {cls.description}")
    lines.append("time step: --dt DT (fixed) or --cfl C (adaptive, default 0.5; equations with a CFL rate, max_rate)")
    lines.append(f"dealiasing (--dealias): {', '.join(DEALIAS)}")
    lines.append("meshes (--mesh): slab, pencil, auto (measured)")
    return "\n".join(lines)


def _print_dry_run(info: dict) -> None:
    """The resolved configuration, the mesh and the memory estimate, one ``key: value`` line each."""
    cfg = info["config"]
    params = ", ".join(f"{k}={v!r}" for k, v in cfg["params"].items()) or "none"
    step = f"dt {cfg['dt']:g}" if cfg["dt"] is not None else f"cfl {cfg['cfl']:g} (dt_max {cfg['dt_max']:g})"
    lines = {
        "equation": cfg["equation"], "ic": cfg["ic"], "integrator": cfg["integrator"], "parameters": params,
        "grid": "x".join(map(str, cfg["n"])) + f", box {' x '.join(f'{v:.6g}' for v in cfg['box_length'])}"
                + (f" (modes; held on {'x'.join(map(str, info['points']))} points, which the mesh splits)"
                   if info["points"] != cfg["n"] else ""),
        "dtype": cfg["dtype"], "dealias": cfg["dealias"], "time": f"t_end {cfg['t_end']:g}, {step}"
                                                                  + (f", max_steps {cfg['max_steps']}"
                                                                     if cfg["max_steps"] is not None else ""),
        "mesh": ("auto: timed when the run starts; checked here on " if cfg["mesh"] == "auto" else "")
                + f"{info['mesh']} ({info['devices']} {info['platform']} devices, {info['processes']} "
                f"process{'es' if info['processes'] > 1 else ''})",
        "memory": info["memory"], "backend": cfg["backend"],
        "outputs": f"{cfg['out']} (diagnostics every {cfg['diag_every']} steps, checkpoints "
                   + (f"every {cfg['checkpoint_every']} steps" if cfg["checkpoint_every"] else "at the end")
                   + f", keep {cfg['keep']}"
                   + (", resume" if cfg["resume"] else ", overwrite" if cfg["overwrite"] else "") + ")",
    }
    width = max(map(len, lines))
    print("dry run: nothing computed or written")
    for key, value in lines.items():
        print(f"  {key + ':':<{width + 1}} {value}")


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
        ns = _parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a malformed flag (2, one line printed by _Parser.error)
        return e.code if isinstance(e.code, int) else EXIT_BAD_INPUT
    if ns.command == "list":
        print(_list())
        return 0
    prog = PROG
    try:
        _setup_devices(ns.cpu_devices)
        if ns.dtype == "float64":
            import jax

            jax.config.update("jax_enable_x64", True)
        cfg = _config(ns)
        from ._run import dry_run, validate

        if ns.dry_run:
            info = dry_run(cfg)
        else:
            validate(cfg)
    except ValueError as e:
        print(f"{prog}: error: {with_flags(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    import jax

    if ns.dry_run:
        if jax.process_index() == 0:
            _print_dry_run(info)
        return 0

    from ._run import BlowUpError, ConfigError, simulate
    from ._snapshots import SnapshotError

    try:
        with _warnings_as_lines():
            summary = simulate(cfg)
    except ConfigError as e:
        print(f"{prog}: error: {with_flags(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BlowUpError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_BLOW_UP
    except SnapshotError as e:  # a failed snapshot write, raised on every rank
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_SNAPSHOT
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; resume with --resume from the last checkpoint", file=sys.stderr)
        return 130
    if jax.process_index() == 0:
        final = summary.get("final") or {}
        e = f", E = {final['energy']:.8g}" if "energy" in final else ""
        print(f"done: {summary['steps']} steps to t = {summary['t']:.6g}{e} on {summary['devices']} devices "
              f"{summary['mesh']} in {summary['wall_s']:.1f} s; outputs in {summary['config']['out']}", flush=True)
    return 0
