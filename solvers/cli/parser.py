"""The command line's arguments (argparse); errors are one line and exit with status 2."""

from __future__ import annotations

import argparse

EXIT_BAD_INPUT = 2
PROG = "python -m solvers"
#: the largest --cpu-devices (4096 virtual devices start in about 10 s and take 0.6 GB; a typo must not take more)
MAX_CPU_DEVICES = 4096

N_HELP = ("grid points: one size (a cube or square) or one per axis. Periodic equations: NX NY [NZ], even sizes >= 4. "
          "Wall-bounded equations put the wall-normal axis first: channel and couette NY NX [NZ], rayleigh-benard NZ "
          "NX [NY]; the wall-normal axis takes any n >= 5 Chebyshev points (free-slip convection: n >= 4 cells), the "
          "periodic axes even sizes >= 4. A size the mesh cannot split keeps its modes on the next sizes it can.")


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


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default unless its help states it already or it has none."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


def parser() -> argparse.ArgumentParser:
    """The parser of `python -m solvers list` and `python -m solvers run ...`."""
    p = _Parser(prog=PROG, description="Spectral PDE solvers on sharded JAX meshes.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print the equations, initial conditions and integrators on offer")
    r = sub.add_parser("run", help="run a simulation", formatter_class=_Help,
                       epilog="Example: python -m solvers run navier-stokes --ic taylor-green --n 64 --re 1600 "
                              "--t-end 2 --out runs/tgv")
    r.add_argument("equation", help="equation name (see `list`), or MODULE:NAME for your own Equation subclass or "
                                    "RunSpec (MODULE importable from the current directory)")
    r.add_argument("--ic", default=None, help="initial condition (see `list`; default: the equation's first)")
    r.add_argument("--n", type=int, nargs="+", default=None, metavar="N",
                   help=N_HELP + " (default: 64, or the preset's)")
    r.add_argument("--box-length", type=float, nargs="+", default=None, metavar="L",
                   help="box side(s): one value or one per axis, in the order of --n (default: the equation's box)")
    visc = r.add_mutually_exclusive_group()
    visc.add_argument("--re", type=float, default=None,
                      help="Reynolds number: the parameter Re, or nu = 1 / Re where the equation declares nu with "
                           "Re as its reciprocal (see `list`)")
    visc.add_argument("--nu", type=float, default=None,
                      help="kinematic viscosity: the parameter nu, or Re = 1 / nu where the equation declares Re with "
                           "nu as its reciprocal (see `list`)")
    r.add_argument("--t-end", type=float, default=None, help="final time (default: 1, or the preset's)")
    r.add_argument("--out", default=None, help="output directory (default runs/EQUATION-IC)")
    r.add_argument("--mesh", default="slab", help="decomposition: slab, pencil, or auto (the faster measured by "
                   "xfft.autotune, cached per machine kind and grid; the choice and timings go into run.json)")
    r.add_argument("--dtype", default=None,
                   help="float32 or float64 (64-bit mode is turned on) (default: float32, or the preset's)")
    r.add_argument("--integrator", default=None, help="time integrator (see `list`; default: the equation's own)")
    step = r.add_mutually_exclusive_group()
    step.add_argument("--dt", type=float, default=None, help="fixed time step (default: CFL-adaptive)")
    step.add_argument("--cfl", type=float, default=None,
                      help="CFL number of the adaptive time step (default: 0.5, or the preset's)")
    step.add_argument("--controller", default=None, metavar="MODULE:NAME",
                      help="a time-step controller of your own (solvers.Controller: an object with init and "
                      "choose, or a class made without arguments) in place of --dt/--cfl; --resume needs the same")
    r.add_argument("--dt-max", type=float, default=None,
                   help="largest adaptive time step (default: 0.1, or the preset's)")
    r.add_argument("--dealias", default="2/3", help="2/3 (truncation), 3/2 (padding) or none")
    r.add_argument("--backend", default="native", help="xfft backend for every transform")
    for flag, what in (("--seed", "random initial conditions' seed"), ("--k0", "random initial conditions' "
                       "spectral peak"), ("--energy", "random initial conditions' energy"),
                       ("--forcing-epsilon", "Navier-Stokes linear forcing power (0: decaying)")):
        r.add_argument(flag, default=None, help=f"{what}: sets the parameter {flag[2:].replace('-', '_')}")
    r.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="equation or initial-condition parameter (repeatable; see `list`)")
    r.add_argument("--diag-every", type=int, default=10, help="diagnostics CSV row every N steps")
    r.add_argument("--checkpoint-every", type=int, default=None,
                   help="checkpoint every N steps (0: only at the end) (default: 0, or the preset's)")
    r.add_argument("--keep", type=int, default=2, help="checkpoints kept")
    r.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    r.add_argument("--overwrite", action="store_true", help="discard a previous run in --out")
    r.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (counted from 0)")
    r.add_argument("--snapshot-every", type=int, default=0, help="snapshot every N steps (0: none)")
    r.add_argument("--snapshot-times", default=None, metavar="T1,T2,...", help="snapshots at these times")
    r.add_argument("--snapshot-dtype", default="float32", help="float32 or float64 snapshot fields")
    r.add_argument("--stats-every", type=int, default=None, metavar="N",
                   help="wall-bounded equations: plane- and time-averaged profiles sampled every N steps (0: none), "
                        "written to statistics.csv/.h5/.png with standard errors from batch means (default: 0, or "
                        "the preset's)")
    r.add_argument("--stats-start", type=float, default=None, metavar="T",
                   help="the time statistics start from (the transient before it is left out; before --t-end, "
                        "with --stats-every) (default: 0, or the preset's)")
    r.add_argument("--preset", default=None,
                   help="a preset of the equation (see `list`): grid, box, parameters, initial condition, time "
                        "and statistics of a known case (e.g. channel --preset re-tau-180); flags you give win")
    r.add_argument("--cpu-devices", type=_integer(1, MAX_CPU_DEVICES), default=8,
                   help="virtual CPU devices when there is no accelerator and nothing else configured them")
    r.add_argument("--dry-run", action="store_true",
                   help="check everything and print the resolved configuration, the mesh and the memory per "
                        "device; compute and write nothing")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--no-plots", action="store_true", help="no PNG plots")
    r.add_argument("--no-compile-cache", action="store_true",
                   help="do not use JAX's persistent compilation cache (default: on, in $XDG_CACHE_HOME/xfft/jax or "
                        "~/.cache/xfft/jax; XFFT_CACHE_DIR moves it, XFFT_COMPILATION_CACHE=0 turns it off)")
    return p


