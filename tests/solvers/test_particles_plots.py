"""The figures of a particle run (:class:`solvers.particles.PhaseSpace`, :class:`solvers.particles.PowerSpectrum`):
what they take of a sharded state, and what they draw, read back from the matplotlib axes."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import solvers
import xfft
from solvers.particles import (
    ComovingNBody,
    PhaseSpace,
    PowerSpectrum,
    VlasovPoisson,
    periodic_grid,
    plot_phase_space,
    power_spectrum,
)


def _axes():
    fig = Figure()
    FigureCanvasAgg(fig)
    return fig.add_subplot()


@pytest.mark.parametrize("axis_types", ["explicit", "auto"])
def test_the_phase_space_is_each_devices_share_strided_and_coloured_by_weight(axis_types):
    """4096 weighted particles on 8 devices, 512 points asked: every 8th particle of each device's share (of the
    positions, velocities and weights, bit for bit), drawn as dots coloured by weight (heaviest on top), the box
    as the horizontal range, the time in the title."""
    mesh = xfft.make_mesh("slab", axis_types=axis_types)
    eq = VlasovPoisson(periodic_grid(32, 4 * math.pi, mesh), particles=4096)
    y = eq.initial_state("landau", alpha=0.01)
    s = PhaseSpace(points=512).sample(eq, y)
    x, v, w = (np.asarray(a) for a in (y.positions[:, 0], y.velocities[:, 0], y.weights))
    for got, full in ((s["x"], x), (s["v"], v), (s["w"], w)):
        np.testing.assert_array_equal(got, full.reshape(8, -1)[:, ::8].reshape(-1))
    assert s["box"] == pytest.approx(4 * math.pi)
    ax = _axes()
    PhaseSpace().draw(ax, [(0.0, s), (2.5, s)], time_label="t")
    (dots,) = ax.collections
    order = np.argsort(s["w"])
    np.testing.assert_array_equal(dots.get_offsets(), np.column_stack([s["x"][order], s["v"][order]]))
    np.testing.assert_allclose(dots.get_array(), s["w"][order])
    assert ax.get_title() == "phase space, t = 2.5" and ax.get_xlim() == pytest.approx((0, 4 * math.pi))
    assert len(ax.figure.axes) == 2  # the weight's colour bar


def test_a_power_spectrum_panel_draws_the_start_grown_by_linear_theory():
    """A comoving run's panel: the spectrum of the painted contrast (as ``power_spectrum`` gives it), the first and
    last drawn as measured and the first times ``(D(a1) / D(a0))^2 = 16`` dashed, labelled with its factor; shells
    below 1e-12 of the largest power (a plane wave's round-off harmonics) are left out."""
    mesh = xfft.make_mesh("pencil")
    eq = ComovingNBody(periodic_grid((16, 16, 16), 1.0, mesh, dtype=jnp.float64))
    y0 = eq.initial_state("gaussian", a0=0.1, sigma=0.005, seed=3)
    panel = PowerSpectrum(growth=ComovingNBody.growth_factor)
    s0 = panel.sample(eq, y0)
    k, p = power_spectrum(eq.mesh.contrast(y0.positions), 1.0)
    np.testing.assert_allclose(s0["k"], k, rtol=1e-12)
    np.testing.assert_allclose(s0["p"], p, rtol=1e-12)
    ax = _axes()
    panel.draw(ax, [(0.1, s0), (0.4, s0)], time_label="a")
    first, last, linear = ax.get_lines()
    assert [ln.get_label() for ln in ax.get_lines()] == ["a = 0.1", "a = 0.4", "a = 0.1 grown by linear theory (x 16)"]
    np.testing.assert_allclose(linear.get_ydata(), 16 * s0["p"], rtol=1e-12)
    np.testing.assert_allclose(first.get_ydata(), s0["p"], rtol=1e-12)
    wave = {"k": np.array([1.0, 2.0, 3.0]), "p": np.array([1.0, 1e-30, 1e-3])}
    ax = _axes()
    PowerSpectrum().draw(ax, [(0.1, wave), (0.2, wave)])
    assert len(ax.get_lines()) == 2  # no linear-theory line without a growth factor
    np.testing.assert_array_equal(ax.get_lines()[0].get_xdata(), [1.0, 3.0])


def test_the_command_line_draws_phase_space_and_power_spectrum_against_the_scale_factor(tmp_path, capsys):
    """``python -m solvers run comoving-nbody`` (2D, in this process) writes the phase space and the power spectrum
    beside the energy and the density, and its time is the scale factor ``a`` (the plots, the closing line,
    ``run.json``); a plasma run writes its phase space (no power spectrum: no growth to compare with)."""
    import json

    from solvers.cli import main
    from solvers.job import REGISTRY

    out = tmp_path / "nb"
    assert main(["run", "comoving-nbody", "--n", "16", "8", "--ic", "gaussian", "--t-end", "0.2", "--dtype",
                 "float64", "--out", str(out), "--no-progress"]) == 0
    assert "done: 10 steps to a = 0.2," in capsys.readouterr().out
    assert json.loads((out / "run.json").read_text())["time"] == "a"
    for png in ("energy.png", "density.png", "phase_space.png", "power_spectrum.png", "summary.png"):
        assert (out / png).stat().st_size > 10_000, png
    spec = REGISTRY["comoving-nbody"].plot
    assert spec.time_label == "a" and [type(p) for p in spec.panels] == [PhaseSpace, PowerSpectrum]
    assert [type(p) for p in REGISTRY["vlasov-poisson"].plot.panels] == [PhaseSpace]



def test_panels_refuse_bad_arguments_naming_them(tmp_path):
    with pytest.raises(ValueError, match="PhaseSpace: axis must be an integer >= 0"):
        PhaseSpace(axis=-1)
    with pytest.raises(ValueError, match="PhaseSpace: points must be an integer >= 1"):
        PhaseSpace(points=0)
    with pytest.raises(ValueError, match="PhaseSpace: file must be a PNG file name"):
        PhaseSpace(file="out/phase.png")
    with pytest.raises(TypeError, match="PowerSpectrum: growth must be a function"):
        PowerSpectrum(growth=2.0)
    with pytest.raises(ValueError, match="plot_phase_space: x, v and weights must hold one value per particle"):
        plot_phase_space(_axes(), np.zeros(4), np.zeros(3))
    with pytest.raises(TypeError, match="Plots: a panel of PlotSpec.panels needs file, sample and draw"):
        solvers.Plots(tmp_path, solvers.PlotSpec("delta", panels=("phase space",)))
    eq = VlasovPoisson(periodic_grid(32, 4 * math.pi, xfft.make_mesh("slab")), particles=1024)
    with pytest.raises(ValueError, match="PhaseSpace: axis 1 is not an axis of the 1D particles' space"):
        PhaseSpace(axis=1).sample(eq, eq.initial_state("landau"))
