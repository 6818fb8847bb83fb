"""The figure of averaged profiles (``statistics.png`` of :class:`~solvers.outputs.Statistics`): each profile with
a band of two standard errors (from the ``<name>_se`` columns), drawn with matplotlib's object API."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

__all__ = ["figure", "plot_statistics"]

#: the half-width of the error bands, in standard errors
BAND = 2


def _band(ax, x, columns: Mapping[str, np.ndarray], name: str, label: str, color: str, scale: float = 1.0,
          along: str = "x", style: str = "-") -> None:
    """Draw ``columns[name] * scale`` against ``x`` (``along="y"``: ``x`` is the vertical axis), with the band
    ``± BAND`` standard errors where ``columns`` has a finite ``<name>_se``; the band's label says what it is."""
    f = np.asarray(columns[name], float) * scale
    se = np.asarray(columns.get(f"{name}_se", np.full_like(f, np.nan)), float) * abs(scale)
    if along == "x":
        ax.plot(x, f, style, color=color, label=label)
    else:
        ax.plot(f, x, style, color=color, label=label)
    ok = np.isfinite(se) & np.isfinite(f)
    if ok.any():
        lo, hi = np.where(ok, f - BAND * se, f), np.where(ok, f + BAND * se, f)
        fill = ax.fill_between if along == "x" else ax.fill_betweenx
        fill(x, lo, hi, color=color, alpha=0.3, linewidth=0, label=f"{label} ± {BAND} s.e.")


def _legend(ax) -> None:
    """A legend of the lines only (the bands are named in the title)."""
    lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
    if lines:
        ax.legend(handles=lines, fontsize=8)


def figure(columns: Mapping[str, np.ndarray], scalars: Mapping[str, float]):
    """The figure of averaged profiles.

    Args:
      columns: name -> profile, the wall-normal coordinate first (as :class:`~solvers.outputs.Statistics` writes
        them); ``<name>_se`` columns give the bands.
      scalars: ``samples``, ``batches``, ``u_tau``, ``re_tau``, ``nusselt_volume`` where known.

    Returns:
      a matplotlib ``Figure`` of two panels: with wall units (``y_plus`` and a positive ``u_tau``), ``U_plus``
      against ``y_plus`` (lower half, log axis) with the viscous sublayer and the log law, and the rms velocities
      and ``-uv_plus`` (no ``w`` line in 2D); for convection (``T``), ``T`` and ``T_rms`` against the height; else
      each field's mean and rms against the coordinate.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .wall_units import KAPPA, B

    fig = Figure(figsize=(9.2, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    a1, a2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    coord = next(iter(columns))
    y = np.asarray(columns[coord], float)
    batches = int(scalars.get("batches", 0))
    bands = f"bands ± {BAND} s.e. ({batches} batches)" if batches >= 2 else "no error bands: fewer than 2 batches"
    n = f"{int(scalars.get('samples', 0))} samples, {bands}"
    if "y_plus" in columns and scalars.get("u_tau", 0) > 0:
        lower = (y <= 0.5 * (y[0] + y[-1])) & (np.asarray(columns["y_plus"]) > 0)
        yp = np.asarray(columns["y_plus"], float)[lower]
        low = {k: np.asarray(v)[lower] for k, v in columns.items()}
        a1.set_xscale("log")
        _band(a1, yp, low, "U_plus", "U+", "C0", style=".-")
        sub = yp[yp < 15]
        a1.plot(sub, sub, "k:", label="U+ = y+")
        log = yp[yp > 20]
        if log.size:
            a1.plot(log, np.log(log) / KAPPA + B, "k--", label=f"ln(y+)/{KAPPA} + {B}")
        a1.set_xlabel("y+")
        a1.set_ylabel("U+")
        a1.set_title(f"mean velocity, Re_tau = {scalars.get('re_tau', float('nan')):.4g}\n{n}", fontsize=9)
        for k, c in (("u_rms_plus", "C0"), ("v_rms_plus", "C1"), ("w_rms_plus", "C2")):
            if k in low:
                _band(a2, yp, low, k, k[0] + "_rms+", c)
        _band(a2, yp, low, "uv_plus", "-<u'v'>+", "C3", scale=-1.0)
        a2.set_xscale("log")
        a2.set_xlabel("y+")
        a2.set_ylabel("rms / u_tau,  -<u'v'> / u_tau^2")
        a2.set_title("rms velocities and Reynolds stress (wall units)", fontsize=9)
    elif "T" in columns:
        _band(a1, y, columns, "T", "<T>", "C0", along="y", style=".-")
        a1.set_xlabel("<T>")
        nu = scalars.get("nusselt_volume", float("nan"))
        a1.set_title(f"mean temperature, Nu = {nu:.5g}\n{n}", fontsize=9)
        _band(a2, y, columns, "T_rms", "T rms", "C3", along="y", style=".-")
        a2.set_xlabel("T rms")
        a2.set_title("temperature fluctuations", fontsize=9)
        for ax in (a1, a2):
            ax.set_ylabel(coord)
    else:
        means = [k[: -len("_mean")] for k in columns if k.endswith("_mean")]
        for i, k in enumerate(means):
            _band(a1, y, columns, f"{k}_mean", f"<{k}>", f"C{i}")
            _band(a2, y, columns, f"{k}_rms", f"{k} rms", f"C{i}")
        for ax in (a1, a2):
            ax.set_xlabel(coord)
        a1.set_title(f"means\n{n}", fontsize=9)
        a2.set_title("rms", fontsize=9)
    for ax in (a1, a2):
        _legend(ax)
    return fig


def plot_statistics(path: str | os.PathLike, columns: Mapping[str, np.ndarray], scalars: Mapping[str, float]) -> Path:
    """Draw averaged profiles into ``path`` (written atomically): two panels, each profile with a band of two
    standard errors where its ``<name>_se`` column is finite; with wall units, ``U_plus`` against ``y_plus`` (lower
    half, log axis) with the viscous sublayer and the log law, and the rms velocities and ``-uv_plus`` (no ``w``
    line in 2D); for convection, ``T`` and ``T_rms`` against the height; else each field's mean and rms.

    Args:
      path: the PNG file.
      columns: name -> profile, the wall-normal coordinate first (as :class:`~solvers.outputs.Statistics` writes
        them).
      scalars: ``samples``, ``batches``, ``u_tau``, ``re_tau``, ``nusselt_volume`` where known.

    Returns:
      ``path``.
    """
    path = Path(path)
    tmp = path.with_suffix(".tmp.png")
    figure(columns, scalars).savefig(tmp, dpi=110)
    os.replace(tmp, path)
    return path
