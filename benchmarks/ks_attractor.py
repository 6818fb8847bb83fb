"""The Kuramoto-Sivashinsky table of the own-equation guide: a statistic of the attractor at several resolutions.

The equation is the guide's own code (the ``# ks_equation.py`` block of ``docs/guide/own-equation.md``, read from
the page), run by :func:`solvers.simulate` with ETDRK4 on the 32 pi box from its ``cosines`` initial condition. A
chaotic run's state at one instant is not converged in anything; what converges is an average over the attractor.
The statistic is the mean square gradient ``<|grad u|^2>`` (the ``grad2`` diagnostic, twice the rate at which the
mean of ``u`` falls), sampled once per time unit and averaged over ``t_start < t <= t_end``, after the transient.
Its standard error is the spread of ``batches`` batch means over ``sqrt(batches - 1)`` (batches of 50 time units,
many correlation times long). A run that blows up is reported with its time instead.

    python benchmarks/ks_attractor.py                      # every row of the table (the 256² row takes longest)
    python benchmarks/ks_attractor.py --rows 64:0.25 128:0.25 --dtypes float32

prints the table's header and one Markdown row per grid and step: the statistic in float32 and in float64, and the
largest ``resolution`` of the float64 run with the time it first passed the warning threshold.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import types
import warnings
from pathlib import Path

import jax
import numpy as np

import solvers
import xfft
from solvers.diagnostics import RESOLUTION_THRESHOLD

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "own-equation.md"
ROWS = ("64:0.25", "96:0.25", "128:0.25", "256:0.25", "128:0.1")
HEADER = ("| grid, dt | ⟨\\|∇u\\|²⟩, float32 | float64 | largest `resolution` (float64) |\n"
          "| --- | --- | --- | --- |")


def load_equation(page: Path = PAGE) -> types.ModuleType:
    """The guide's ``ks_equation.py`` block of ``page``, as a module.

    Raises:
      ValueError: the page has no block that starts with ``# ks_equation.py``.
    """
    m = re.search(r"```python\n# ks_equation\.py\n(.*?)```", page.read_text(), re.S)
    if m is None:
        raise ValueError(f"page: {page} has no ```python block that starts with '# ks_equation.py'")
    module = types.ModuleType("ks_equation")
    exec(compile(m.group(1), f"{page}:ks_equation.py", "exec"), module.__dict__)  # noqa: S102 (the docs' code)
    return module


def measure(ks: types.ModuleType, n: int, dt: float, dtype: str, t_start: float = 200.0, t_end: float = 600.0,
            batches: int = 8, devices: int = 1) -> dict:
    """One run of the guide's equation on ``n x n`` points of the 32 pi box with step ``dt``.

    Args:
      ks: the module of :func:`load_equation`. n: points per axis. dt: the fixed step (1 / dt an integer).
      dtype: ``"float32"`` or ``"float64"``. t_start, t_end: the averaging window. batches: batch means in it.
      devices: the first ``devices`` devices form a slab mesh.

    Returns:
      ``{"mean", "se"}`` of ``grad2`` over the window, ``"blowup"`` (the time a blown-up run stopped, else None),
      ``"resolution"`` (its largest value) and ``"warned"`` (the first sampled time above the threshold, or None).
    """
    every = round(1 / dt)
    grid = solvers.SpectralGrid((n, n), xfft.make_mesh("slab", devices=jax.devices()[:devices]),
                                box_length=32 * math.pi, dtype=np.dtype(dtype))
    rows: list[tuple[float, float, float]] = []
    keep = solvers.Callback(lambda r: rows.append((r.t, r.values["grad2"], r.values["resolution"])), every=every)
    blowup = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", solvers.ResolutionWarning)
        try:
            solvers.simulate(ks.KuramotoSivashinsky(grid), "etdrk4", t_end=t_end, controller=solvers.FixedStep(dt),
                             outputs=[keep])
        except solvers.BlowUpError as e:
            blowup = float(re.search(r"\(t = ([0-9.]+)\)", str(e)).group(1))
    t, g2, res = (np.array(c) for c in zip(*rows))
    over = t[res > RESOLUTION_THRESHOLD]
    out = {"blowup": blowup, "resolution": float(np.nanmax(res)), "warned": float(over[0]) if over.size else None,
           "mean": None, "se": None}
    if blowup is None:
        x = g2[(t > t_start) & (t <= t_end + dt / 2)]
        b = x.reshape(batches, -1).mean(axis=1)
        out.update(mean=float(x.mean()), se=float(b.std(ddof=1) / math.sqrt(batches)))
    return out


def cell(r: dict) -> str:
    """The table's text for one run: ``5.133 ± 0.013``, or ``blows up at t = 76.5``."""
    if r["blowup"] is not None:
        return f"blows up at t = {r['blowup']:g}"
    return f"{r['mean']:.3f} ± {r['se']:.3f}"


def resolution_cell(r: dict) -> str:
    """The largest ``resolution`` and when it first passed the threshold."""
    warned = f", warns at t = {r['warned']:g}" if r["warned"] is not None else ""
    return f"{r['resolution']:.1e}{warned}"


def _row(text: str) -> tuple[int, float]:
    """``N:DT`` as ``(n, dt)``: an even ``n >= 4`` and a ``dt > 0`` whose inverse is a whole number."""
    try:
        n, dt = text.split(":")
        n, dt = int(n), float(dt)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N:DT such as 128:0.25, got {text!r}") from None
    if n < 4 or n % 2 or dt <= 0 or abs(1 / dt - round(1 / dt)) > 1e-9:
        raise argparse.ArgumentTypeError(f"N must be even and >= 4 and 1 / DT a whole number, got {text!r}")
    return n, dt


def main(argv: list[str] | None = None) -> None:
    """Print the table's header and its rows."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", nargs="+", type=_row, default=[_row(r) for r in ROWS],
                   help=f"N:DT pairs ({' '.join(ROWS)})")
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    p.add_argument("--t-start", type=float, default=200.0, help="the window's start (%(default)s)")
    p.add_argument("--t-end", type=float, default=600.0, help="the window's end (%(default)s)")
    p.add_argument("--batches", type=int, default=8, help="batch means in the window (%(default)s)")
    p.add_argument("--devices", type=int, default=1, help="devices of the slab mesh (%(default)s)")
    args = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    ks = load_equation()
    print(HEADER)
    for n, dt in args.rows:
        res = {d: measure(ks, n, dt, d, args.t_start, args.t_end, args.batches, args.devices)
               for d in args.dtypes}
        cells = [cell(res[d]) if d in res else "" for d in ("float32", "float64")]
        last = res.get("float64", res[args.dtypes[-1]])
        print(f"| {n}², {dt} | {cells[0]} | {cells[1]} | {resolution_cell(last)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
