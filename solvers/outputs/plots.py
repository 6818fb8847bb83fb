"""Plots of a run with matplotlib's object API (no pyplot state, no display): the drawing functions and the output
that draws a run's (:class:`Plots`, :class:`PlotSpec`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .base import Event, Output, Row, RunInfo, writable_directory
from .csv import read_csv
from .statistics_plot import plot_statistics as plot_statistics

__all__ = ["PlotSpec", "Plots", "plane", "plane_layout", "plot_history", "plot_slice", "plot_spectrum",
           "plot_statistics", "write_plots"]


def _figure(ncols: int = 1, width: float = 5.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]


def plot_history(ax, rows: list[dict], energy_label: str = "energy E", extra: Sequence[str] = (),
                 extra_log: bool = False, time_label: str = "t") -> None:
    """Energy vs time, with the dissipation (as ``2 nu Z`` and as ``-dE/dt``) where the rows have it; the title
    names what is drawn, ``energy_label`` what the ``energy`` column is (``"kinetic energy E"``, ``"free energy
    F"``, ...). ``extra``: other columns drawn on a second axis instead of the dissipation (log scale where
    ``extra_log``: e.g. a perturbation energy growing beneath a laminar one, or Nusselt numbers). ``time_label``:
    the horizontal axis's label (what the ``t`` column is: ``"scale factor a"`` for a comoving run)."""
    t = np.array([float(r["t"]) for r in rows])
    e = np.array([float(r["energy"]) for r in rows])
    ax.plot(t, e, "C0-", label=energy_label)
    ax.set_xlabel(time_label)
    ax.set_ylabel(energy_label, color="C0")
    extra = [c for c in extra if c in rows[0]]
    if extra and len(t) > 1:
        ax2 = ax.twinx()
        for i, c in enumerate(extra):
            ax2.plot(t, [abs(float(r[c])) if extra_log else float(r[c]) for r in rows], f"C{i + 3}-", label=c)
        if extra_log:
            ax2.set_yscale("log")
        ax2.set_ylabel(", ".join(extra), color="C3")
        ax2.legend(loc="center right", fontsize=8)
        ax.legend(loc="upper right", fontsize=8)
        ax.set_title(f"energy and {extra[0].replace('_', ' ')}" if len(extra) == 1 else "energy and " +
                     extra[0].split("_")[0])
        return
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
    """Draw a 2D slice ``field[i, j]`` (``i`` along the horizontal axis, ``j`` along the vertical one), or the
    line of a 1D field.

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
    if field.ndim == 1:  # a 1D run: the field along its axis
        ax.plot(np.arange(field.size) / field.size, field, "C0-")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("x / L")
        return
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
                slope: float | None = None, energy_label: str = "energy E", extra: Sequence[str] = (),
                extra_log: bool = False, time_label: str = "t",
                panels: Sequence[tuple[str, Callable]] = ()) -> list[Path]:
    """Write ``energy.png`` (the ``energy`` column, labelled ``energy_label``), ``spectrum.png`` (with a
    ``k^slope`` guide if given), the slice ``field_file``, the ``panels`` and ``summary.png`` (all of them) into
    ``out``.

    ``field`` is a plane: ``(label, array)``, or ``(label, array, axes)`` with the slice's axis names and true
    coordinates (see :func:`plot_slice`); None: no slice. ``extra``/``extra_log``/``time_label``: see
    :func:`plot_history`. ``panels``: more figures, ``(file name, draw(ax))`` each. Empty ``history`` or
    ``spectra`` (an equation without a spectrum) draw no panel.
    """
    out = Path(out)
    written = []
    extra_panels, panels = list(panels), []
    if history:
        panels.append(("energy.png",
                       lambda ax: plot_history(ax, history, energy_label, extra, extra_log, time_label)))
    if spectra:
        panels.append(("spectrum.png", lambda ax: plot_spectrum(ax, spectra, dk, slope)))
    if field is not None and np.all(np.isfinite(field[1])):
        panels.append((field_file, lambda ax: plot_slice(ax, field[1], field[0], *field[2:3])))
    panels += extra_panels
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




@dataclass(frozen=True)
class PlotSpec:
    """What a run's plots show.

    Args:
      field: the physical field drawn (a key of the equation's ``physical_fields``); None: no field panel.
      label: the field panel's title (3D: the plane is added).
      file: the field panel's file name.
      normal, index: 3D grids: the plane normal to grid axis ``normal`` at ``index`` (None: the middle).
      axes: ``(horizontal, vertical)`` grid axes, drawn on their true coordinates (e.g. Chebyshev points); None:
        the unit square, the plane's first axis horizontal.
      energy_label: what the ``energy`` column is (``"kinetic energy E"``, ``"free energy F"``, ...).
      spectrum_slope: the exponent of a power-law guide on the spectrum plot (None: no guide).
      history, history_log: diagnostics drawn beside the energy on a second axis (log scale), e.g. the perturbation
        energy of a wall flow whose laminar part dominates, or the Nusselt numbers of convection.
      time_label: what the run's time is, on the history's axis and in the summary's title (``"a"``: a comoving
        run's scale factor).
      panels: more figures, each an object with ``file`` (its PNG's name), ``sample(equation, state)`` (what it
        needs of a state, as host data: called on every process with the first and the last state of the run, so
        it may run a compiled program over the mesh) and ``draw(ax, samples, time_label)`` (``samples``: the
        ``(t, data)`` of the first and the last state; the lead process draws), e.g. the phase space and the power
        spectrum of a particle run (:class:`solvers.particles.PhaseSpace`, :class:`solvers.particles.PowerSpectrum`).
    """

    field: str | None = None
    label: str = ""
    file: str = "field.png"
    normal: int = -1
    index: int | None = None
    axes: tuple[int, int] | None = None
    energy_label: str = "energy E"
    spectrum_slope: float | None = None
    history: tuple[str, ...] = ()
    history_log: bool = False
    time_label: str = "t"
    panels: tuple = ()


def plane_layout(grid, spec: PlotSpec) -> tuple[int | None, int, bool, str, PlotAxes | None]:
    """Where ``spec``'s plane lies on ``grid``: the normal axis (None in 2D) and its index, whether the plane is
    transposed to put ``spec.axes`` in order, its label and its axes for :func:`plot_slice`.

    Raises:
      ValueError: ``spec.axes`` that are not the plane's two axes.
    """
    remaining = list(range(grid.ndim))
    label = spec.label or spec.field or ""
    axis, index = None, 0
    if grid.ndim == 3:
        axis = spec.normal % 3
        index = grid.shape[axis] // 2 if spec.index is None else int(spec.index)
        remaining.remove(axis)
        label += f", plane {grid.axis_names[axis]} = {grid.bases[axis].points()[index]:.3g}"
    if spec.axes is None:
        return axis, index, False, label, None
    h, v = spec.axes
    if sorted((h, v)) != remaining:
        raise ValueError(f"PlotSpec: axes {spec.axes} must be the plane's two axes {tuple(remaining)}")
    axes = {"horizontal": (grid.axis_names[h], grid.bases[h].points()),
            "vertical": (grid.axis_names[v], grid.bases[v].points())}
    return axis, index, (h, v) != tuple(remaining), label, axes


def plane(grid, field, spec: PlotSpec):
    """The plane ``spec`` asks for of a physical ``field``, replicated (traceable: computed on the devices)."""
    axis, index, transpose, _, _ = plane_layout(grid, spec)
    if axis is not None:
        field = _take(field, index, axis)
    return grid.replicate(field.T if transpose else field)


def _take(field: jax.Array, index: int, axis: int) -> jax.Array:
    """``field``'s plane ``index`` along ``axis``. Along an axis an Explicit mesh shards (one that may not split
    the plane's neighbours evenly, e.g. 32 points of a 30^3 run on 8 devices) as a one-hot sum: each device
    reduces its own block, no field is gathered."""
    spec = getattr(jax.typeof(field).sharding, "spec", None)
    if spec is None or axis >= len(spec) or spec[axis] is None:
        return jax.lax.index_in_dim(field, index, axis=axis, keepdims=False)
    shape = [1] * field.ndim
    shape[axis] = field.shape[axis]
    onehot = (jnp.arange(field.shape[axis]) == index).astype(field.dtype).reshape(shape)
    return jnp.sum(field * onehot, axis=axis)


class Plots(Output):
    """Draws ``energy.png`` (the energy history), ``spectrum.png`` (where the equation has a spectrum), the field
    panel of ``spec`` and ``summary.png`` into ``directory`` when the run finishes.

    The history comes from the run's rows (``every`` steps), or from ``diagnostics.csv``/``spectra.csv`` in
    ``directory`` where those exist (a resumed run's earlier rows are there). The field's plane is one compiled
    program; every process takes part in it, the lead process draws.

    Args:
      directory: where the PNG files go (created). spec: a :class:`PlotSpec`. title: the summary's title (the time
        is added). every: rows for the history every this many steps.

    Attributes:
      written: the files written.

    Raises:
      ValueError: ``every`` not a positive integer. TypeError: a panel of ``spec.panels`` without ``file``,
        ``sample`` or ``draw``.
    """

    wants_spectrum = True

    def __init__(self, directory: str | os.PathLike, spec: PlotSpec | None = None, title: str = "", every: int = 10):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"Plots: every must be an integer >= 1, got {every!r}")
        self.directory = writable_directory(directory, "Plots")
        self.spec = spec or PlotSpec()
        for panel in self.spec.panels:
            missing = [a for a in ("file", "sample", "draw") if not hasattr(panel, a)]
            if missing:
                raise TypeError(f"Plots: a panel of PlotSpec.panels needs file, sample and draw; {panel!r} has no "
                                f"{', '.join(missing)}")
        self.title, self.row_every = title, every
        self.history: list[dict] = []
        self.spectra: list[dict] = []
        self.written: list[Path] = []
        self.lead = True
        self.equation = None
        self.first: list = []

    def start(self, run: RunInfo, event: Event) -> None:
        self.equation, self.lead = run.equation, run.lead
        self.first = [(event.t, p.sample(self.equation, event.state)) for p in self.spec.panels]

    def on_rows(self, rows: list[Row]) -> None:
        for r in rows:
            self.history.append({"step": r.step, "t": r.t, **r.values})
            if r.spectrum is not None:
                self.spectra.append({"step": r.step, "t": r.t, **{f"E_{j}": x for j, x in enumerate(r.spectrum)}})

    def finish(self, event: Event) -> None:
        grid = self.equation.grid
        field = None
        if self.spec.field is not None:
            name, spec = self.spec.field, self.spec

            def draw(s):
                return plane(grid, self.equation.physical_fields(s)[name], spec)

            values = np.asarray(jax.device_get(jax.jit(draw)(event.state)))  # every process: a collective
            _, _, _, label, axes = plane_layout(grid, spec)
            field = (label, values) + ((axes,) if axes is not None else ())
        last = [(event.t, p.sample(self.equation, event.state)) for p in self.spec.panels]
        if not self.lead:
            return
        history, spectra = self.history, self.spectra
        if (self.directory / "diagnostics.csv").exists():
            history = read_csv(self.directory / "diagnostics.csv")
            spectra = read_csv(self.directory / "spectra.csv") if (self.directory / "spectra.csv").exists() else []
        when = f"{self.spec.time_label}={event.t:.3g}"
        title = f"{self.title}, {when}" if self.title else when
        panels = [(p.file, partial(p.draw, samples=[first, now], time_label=self.spec.time_label))
                  for p, first, now in zip(self.spec.panels, self.first, last)]
        self.written = write_plots(self.directory, history, spectra, field, dk=getattr(grid, "dk", 1.0),
                                   title=title, field_file=self.spec.file, slope=self.spec.spectrum_slope,
                                   energy_label=self.spec.energy_label, extra=self.spec.history,
                                   extra_log=self.spec.history_log, time_label=self.spec.time_label,
                                   panels=panels)
