"""The figures of a particle run: its phase space and its density's power spectrum, as panels of
:class:`solvers.Plots` (``PlotSpec(panels=...)``: what ``python -m solvers run vlasov-poisson`` and
``comoving-nbody`` draw) or on any matplotlib ``Axes`` of yours."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from .analysis import power_spectrum
from .equation import place_particles

__all__ = ["PhaseSpace", "PowerSpectrum", "plot_phase_space", "plot_power_spectra"]


def plot_phase_space(ax, x, v, weights=None, *, box: float | None = None, xlabel: str = "position $x_1$",
                     ylabel: str = "velocity $v_1$", title: str = "phase space") -> None:
    """Particles as dots at ``(x, v)``, coloured by their weights where these differ (a weighted quiet start: the
    weight is the distribution function the particle carries), black otherwise.

    Args:
      ax: a matplotlib ``Axes``. x, v: one position and one velocity coordinate per particle. weights: the
        particles' weights, or None. box: the box's length along ``x`` (the horizontal range; None: the data's).
      xlabel, ylabel, title: the labels.

    Raises:
      ValueError: ``x``, ``v`` and ``weights`` of different lengths.
    """
    x, v = np.ravel(np.asarray(x)), np.ravel(np.asarray(v))
    w = None if weights is None else np.ravel(np.asarray(weights))
    if v.size != x.size or (w is not None and w.size != x.size):
        raise ValueError(f"plot_phase_space: x, v and weights must hold one value per particle, got {x.size}, "
                         f"{v.size} and {None if w is None else w.size}")
    size = float(np.clip(4e4 / max(x.size, 1), 0.3, 6.0))  # dots that fill the plane without hiding it
    if w is not None and np.ptp(w) > 1e-6 * np.max(np.abs(w)):
        order = np.argsort(w)  # the heaviest drawn last, on top
        m = ax.scatter(x[order], v[order], c=w[order], s=size, cmap="viridis", linewidths=0)
        ax.figure.colorbar(m, ax=ax, shrink=0.8, label="weight")
    else:
        ax.scatter(x, v, s=size, c="k", alpha=0.6, linewidths=0)
    if box is not None:
        ax.set_xlim(0, box)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)


def plot_power_spectra(ax, spectra: Sequence[tuple[str, Any, Any]], *, linear: tuple[str, Any, Any] | None = None,
                       xlabel: str = "k", title: str = "power spectrum") -> None:
    """Power spectra ``P(k)`` on log axes, each ``(label, k, P)``; ``linear``: a prediction drawn dashed (e.g. the
    first spectrum grown by linear theory). Shells whose power is below ``1e-12`` of the largest (round-off: the
    harmonics of a single plane wave) are left out."""
    curves = [(label, np.asarray(k), np.asarray(p), f"C{i}o-") for i, (label, k, p) in enumerate(spectra)]
    if linear is not None:
        curves.append((linear[0], np.asarray(linear[1]), np.asarray(linear[2]), "k--"))
    top = max((float(np.max(p)) for _, _, p, _ in curves if p.size), default=0.0)
    for label, k, p, style in curves:
        keep = p > 1e-12 * top
        ax.loglog(k[keep], p[keep], style, ms=3, label=label)
    ax.set(xlabel=xlabel, ylabel="P(k)", title=title)
    ax.legend(fontsize=8)


def _check_file(owner: str, file) -> None:
    if not isinstance(file, str) or not file.endswith(".png") or "/" in file:
        raise ValueError(f"{owner}: file must be a PNG file name (no directory), got {file!r}")


@partial(jax.jit, static_argnums=(3, 4, 5))
def _subsample(positions, velocities, weights, axis: int, stride: int, mesh):
    """Every ``stride``-th particle of each device's share (its own: only the sample is gathered), coordinate
    ``axis``, replicated over ``mesh`` (None: one device)."""
    devices = 1 if mesh is None else mesh.size
    replicated = None if devices == 1 else NamedSharding(mesh, PartitionSpec())

    def take(a):
        return place_particles(a.reshape(devices, -1)[:, ::stride].reshape(-1), replicated)

    w = None if weights is None else take(weights)
    return take(positions[:, axis]), take(velocities[:, axis]), w


@partial(jax.jit, static_argnums=0)
def _contrast(mesh, positions, weights):
    """``mesh.contrast`` as one program, compiled once per mesh (the first and the last state share it)."""
    return mesh.contrast(positions, weights)


@dataclass(frozen=True)
class PhaseSpace:
    """A run's phase space along one axis at its end: a panel of :class:`solvers.PlotSpec`.

    Args:
      axis: the coordinate drawn (position against velocity along it). points: at most this many particles
        drawn (an even subsample of each device's share; only the sample leaves its device).
      position_label, velocity_label: the axes' labels. file: the PNG's name.

    Raises:
      ValueError: ``axis`` or ``points`` not an integer in range, ``file`` not a PNG file name.
    """

    axis: int = 0
    points: int = 20000
    position_label: str = "position $x_1$"
    velocity_label: str = "velocity $v_1$"
    file: str = "phase_space.png"

    def __post_init__(self):
        for name in ("axis", "points"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "axis" else 1):
                raise ValueError(f"PhaseSpace: {name} must be an integer >= {0 if name == 'axis' else 1}, got "
                                 f"{value!r}")
        _check_file("PhaseSpace", self.file)

    def sample(self, equation, state) -> dict[str, np.ndarray]:
        """The sample of ``state``'s particles (host arrays ``x``, ``v``, ``w``), and the box along the axis.

        Raises:
          ValueError: :attr:`axis` is not an axis of the particles' space."""
        n, ndim = state.positions.shape
        if self.axis >= ndim:
            raise ValueError(f"PhaseSpace: axis {self.axis} is not an axis of the {ndim}D particles' space")
        stride = max(1, math.ceil(n / max(self.points, 1)))
        x, v, w = jax.device_get(_subsample(state.positions, state.velocities, state.weights, self.axis, stride,
                                            equation.grid.mesh))
        return {"x": np.asarray(x), "v": np.asarray(v), "w": None if w is None else np.asarray(w),
                "box": float(equation.grid.box_length[self.axis])}

    def draw(self, ax, samples: Sequence[tuple[float, dict]], time_label: str = "t") -> None:
        """The last sample's phase space (``samples``: ``(t, sample)`` of the run's first and last state)."""
        t, s = samples[-1]
        plot_phase_space(ax, s["x"], s["v"], s["w"], box=s["box"], xlabel=self.position_label,
                         ylabel=self.velocity_label, title=f"phase space, {time_label} = {t:.3g}")


@dataclass(frozen=True)
class PowerSpectrum:
    """The density contrast's power spectrum at a run's start and end, with the start grown by linear theory:
    a panel of :class:`solvers.PlotSpec` for a 2D or 3D particle run.

    Args:
      growth: the linear growth factor ``D(t)`` (Einstein-de Sitter: ``D(a) = a``): the dashed line is
        ``(D(t1) / D(t0))^2 P(k, t0)``; None: no line. file: the PNG's name.

    Raises:
      TypeError: ``growth`` not callable. ValueError: ``file`` not a PNG file name.
    """

    growth: Callable[[float], float] | None = None
    file: str = "power_spectrum.png"

    def __post_init__(self):
        if self.growth is not None and not callable(self.growth):
            raise TypeError(f"PowerSpectrum: growth must be a function D(t) or None, got {self.growth!r}")
        _check_file("PowerSpectrum", self.file)

    def sample(self, equation, state) -> dict[str, np.ndarray]:
        """``k`` and ``P`` of the density contrast of ``state`` (:func:`~solvers.particles.power_spectrum`)."""
        delta = _contrast(equation.mesh, state.positions, state.weights)
        k, p = power_spectrum(delta, equation.grid.box_length)
        return {"k": k, "p": p}

    def draw(self, ax, samples: Sequence[tuple[float, dict]], time_label: str = "t") -> None:
        """The first and last spectra and, with ``growth``, the first grown to the last time."""
        (t0, s0), (t1, s1) = samples[0], samples[-1]
        linear = None
        if self.growth is not None:
            g = (self.growth(t1) / self.growth(t0)) ** 2
            linear = (f"{time_label} = {t0:.3g} grown by linear theory (x {g:.3g})", s0["k"], s0["p"] * g)
        plot_power_spectra(ax, [(f"{time_label} = {t0:.3g}", s0["k"], s0["p"]),
                                (f"{time_label} = {t1:.3g}", s1["k"], s1["p"])], linear=linear)

