"""Run outputs: orbax-checkpoint checkpoints, diagnostics CSV files, matplotlib PNG plots and field snapshots
(HDF5 + XDMF, see :mod:`solvers._snapshots`; h5py and xarray are imported only when snapshots are used)."""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from ._snapshot_read import load_snapshot as load_snapshot
from ._snapshot_read import open_snapshots as open_snapshots
from ._snapshots import SnapshotError as SnapshotError
from ._snapshots import SnapshotWriter as SnapshotWriter


class Checkpoints:
    """Step-numbered checkpoints of a state pytree plus JSON metadata, written with orbax-checkpoint.

    orbax writes each step into a temporary directory and renames it when complete, so a checkpoint is either
    all there or absent (an interrupted write is never picked up as the latest). Every process takes part in
    ``save``/``restore``; arrays are written shard by shard and can be restored onto any mesh or process
    count by passing the target shardings.

    Args:
      directory: where the step directories go (created).
      keep: number of most recent checkpoints to keep (None: all).
    """

    def __init__(self, directory: str | os.PathLike, keep: int | None = 2):
        self.directory = Path(directory).absolute()
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, enable_async_checkpointing=False, create=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def save(self, step: int, state: Any, meta: dict) -> None:
        """Write ``state`` and ``meta`` as checkpoint ``step`` (blocks until it is committed)."""
        self._manager.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave({"state": state}),
                                                         meta=ocp.args.JsonSave(meta)), force=True)
        self._manager.wait_until_finished()

    def read_meta(self, step: int) -> dict:
        return dict(self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())).meta)

    def restore(self, step: int, like: Any) -> tuple[Any, dict]:
        """Restore checkpoint ``step`` with the shapes, dtypes and shardings of ``like`` (arrays or
        ``jax.ShapeDtypeStruct``): the mesh may differ from the one that wrote it."""
        target = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding), like)
        out = self._manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore({"state": target}), meta=ocp.args.JsonRestore()))
        return out.state["state"], dict(out.meta)

    def close(self) -> None:
        self._manager.close()


class CsvLog:
    """An append-only CSV file with a fixed header; floats are written exactly (shortest round-trip repr)."""

    def __init__(self, path: str | os.PathLike, columns: Sequence[str]):
        self.path = Path(path)
        self.columns = list(columns)

    def write(self, row: dict) -> None:
        new = not self.path.exists()
        with open(self.path, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(self.columns)
            w.writerow([_fmt(row.get(c, "")) for c in self.columns])

    def truncate_after(self, step: int) -> None:
        """Drop rows with ``step`` greater than ``step`` (a resumed run rewrites them identically)."""
        if not self.path.exists():
            return
        rows = read_csv(self.path)
        self.path.unlink()
        for r in rows:
            if int(float(r["step"])) <= step:
                self.write(r)


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (np.integer, int)):
        return str(int(v))
    return str(v)


def read_csv(path: str | os.PathLike) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_json(path: str | os.PathLike, data: dict) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


# ----- plots (matplotlib object API: no pyplot state, no display needed) --------------------------------
def _figure(ncols: int = 1, width: float = 5.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]


def plot_history(ax, rows: list[dict], energy_label: str = "energy E") -> None:
    """Energy vs time, with the dissipation (as ``2 nu Z`` and as ``-dE/dt``) where the rows have it; the title
    names what is drawn, ``energy_label`` what the ``energy`` column is (the equation's ``energy_label``:
    ``"kinetic energy E"``, ``"free energy F"``, ...)."""
    t = np.array([float(r["t"]) for r in rows])
    e = np.array([float(r["energy"]) for r in rows])
    ax.plot(t, e, "C0-", label=energy_label)
    ax.set_xlabel("t")
    ax.set_ylabel(energy_label, color="C0")
    dissipation = "dissipation" in rows[0] and len(t) > 1
    if dissipation:
        ax2 = ax.twinx()
        ax2.plot(t, [float(r["dissipation"]) for r in rows], "C3-", label=r"$\varepsilon = 2\nu Z$")
        if len(t) > 2:
            ax2.plot(t, -np.gradient(e, t), "k:", label=r"$-dE/dt$")
        ax2.set_ylabel("dissipation", color="C3")
        ax2.legend(loc="center right", fontsize=8)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title("energy and dissipation" if dissipation else "energy")


def plot_spectrum(ax, spectra: list[dict], dk: float = 1.0, slope: float | None = None) -> None:
    """E(k) at up to 5 output times, with a ``k^slope`` guide where the equation declares one."""
    picks = spectra if len(spectra) <= 5 else [spectra[int(i)] for i in np.linspace(0, len(spectra) - 1, 5)]
    top = 0.0
    for r in picks:
        vals = np.array([float(v) for c, v in r.items() if c.startswith("E_")])
        k = np.arange(vals.size) * dk
        ok = (k > 0) & (vals > 0)
        if ok.any():
            ax.loglog(k[ok], vals[ok], label=f"t = {float(r['t']):.3g}")
            top = max(top, vals[ok].max())
    kk = np.array([2.0, max(3.0, k[ok].max() / 2 if ok.any() else 8.0)]) * dk
    if top > 0 and slope is not None:
        ax.loglog(kk, 0.5 * top * (kk / kk[0]) ** slope, "k--", label=f"$k^{{{_fraction(slope)}}}$")
    if top > 0:
        ax.set_ylim(bottom=top * 1e-12)
    ax.set_xlabel("k")
    ax.set_ylabel("E(k)")
    ax.legend(fontsize=8)
    ax.set_title("energy spectrum")


def _fraction(x: float) -> str:
    from fractions import Fraction

    return str(Fraction(x).limit_denominator(12))


PlotAxes = Mapping[str, tuple[str, Sequence[float]]]


def plot_slice(ax, field: np.ndarray, label: str, axes: PlotAxes | None = None) -> None:
    """Draw a 2D slice ``field[i, j]`` (``i`` along the horizontal axis, ``j`` along the vertical one).

    Args:
      ax: a matplotlib ``Axes``.
      field: the slice, shape ``(n_horizontal, n_vertical)``.
      label: the title.
      axes: ``{"horizontal": (name, coords), "vertical": (name, coords)}``: each axis's name (the axis label)
        and the true coordinates of the field's points along it (non-uniform allowed: Chebyshev points); the
        field is drawn on them (``pcolormesh``, cells centred on the points). None: the unit square, labelled
        ``x / L`` and ``y / L`` (equations whose ``plot_field`` returns no coordinates).

    Raises:
      ValueError: ``axes`` without both keys, or coordinates that do not match the field's shape.
    """
    field = np.asarray(field)
    if axes is None:
        im = ax.imshow(field.T, origin="lower", cmap="inferno", extent=(0, 1, 0, 1))
        names = ("x / L", "y / L")
    else:
        if set(axes) != {"horizontal", "vertical"}:
            raise ValueError(f"plot_slice: axes must have the keys 'horizontal' and 'vertical', got {sorted(axes)}")
        (hname, h), (vname, v) = ((n, np.asarray(c, float)) for n, c in (axes["horizontal"], axes["vertical"]))
        if field.ndim != 2 or field.shape != (h.size, v.size):
            raise ValueError(f"plot_slice: axes give {h.size} horizontal x {v.size} vertical points, but the field "
                             f"has shape {field.shape}")
        im = ax.pcolormesh(h, v, field.T, cmap="inferno", shading="nearest")
        names = (hname, vname)
        ratio = np.ptp(v) / np.ptp(h) if h.size > 1 and v.size > 1 and np.ptp(h) > 0 else 0.0
        if 1 / 3 <= ratio <= 3:  # the true shape of the plane, unless it would be a sliver
            ax.set_aspect("equal")
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title(label, fontsize=9)
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])


def write_plots(out: str | os.PathLike, history: list[dict], spectra: list[dict], field: tuple | None,
                dk: float = 1.0, title: str = "", field_file: str = "vorticity.png",
                slope: float | None = None, energy_label: str = "energy E") -> list[Path]:
    """Write ``energy.png`` (the ``energy`` column, labelled ``energy_label``), ``spectrum.png`` (with a
    ``k^slope`` guide if given), the slice ``field_file`` and ``summary.png`` (all three) into ``out``.

    ``field`` is what :meth:`~solvers.Equation.plot_field` returns: ``(label, array)``, or ``(label, array,
    axes)`` with the slice's axis names and true coordinates (see :func:`plot_slice`); None: no slice. Empty
    ``history`` or ``spectra`` (an equation without a spectrum) draw no panel.
    """
    out = Path(out)
    written = []
    panels = []
    if history:
        panels.append(("energy.png", lambda ax: plot_history(ax, history, energy_label)))
    if spectra:
        panels.append(("spectrum.png", lambda ax: plot_spectrum(ax, spectra, dk, slope)))
    if field is not None and np.all(np.isfinite(field[1])):
        panels.append((field_file, lambda ax: plot_slice(ax, field[1], field[0], *field[2:3])))
    for name, draw in panels:
        fig, (ax,) = _figure()
        draw(ax)
        fig.savefig(out / name, dpi=110)
        written.append(out / name)
    if panels:
        fig, axes = _figure(len(panels), 4.6)
        for ax, (_, draw) in zip(axes, panels):
            draw(ax)
        if title:
            fig.suptitle(title, fontsize=10)
        fig.savefig(out / "summary.png", dpi=110)
        written.append(out / "summary.png")
    return written


def finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False
