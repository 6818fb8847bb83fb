"""The examples as a user runs them: ``--help`` works, the no-slip convection written from public parts equals the
built-in equation to 1e-10, and the double-diffusive equation the package does not ship sets in where the published
onset says (``Ra - Rs / tau = 1707.762`` at ``k = 3.117``, Chandrasekhar 1961)."""

import importlib.util
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import solvers

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.py")))
def test_help(name, capsys):
    with pytest.raises(SystemExit) as e:
        _load(name).main(["--help"])
    assert e.value.code == 0 and "usage" in capsys.readouterr().out


def test_convection_example_equals_the_built_in_equation(capsys):
    ex = _load("convection_no_slip")
    nu = ex.main(["--t-end", "1"])  # the defaults' grid and step; Nu is steady to 1e-9 by t = 1.5
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"Nu = {nu:.12f}"
    grid = solvers.RayleighBenardNoSlip.make_grid((21, 24), lengths=(2 * math.pi / 3.1163,), dtype=jnp.float64)
    eq = solvers.RayleighBenardNoSlip(grid, Ra=5000.0, Pr=1.0, amplitude=0.2)
    sol = solvers.simulate(eq, "imex", t_end=1.0, y0=eq.initial_state("single-mode"),
                           controller=solvers.FixedStep(0.01))
    builtin = float(jax.jit(eq.nusselt)(sol.state))
    assert abs(nu - builtin) < 1e-10
    assert abs(nu - 2.1104457) < 1e-6  # steady rolls (33 x 48 points: 2.11044530)


def test_double_diffusive_fingers_set_in_at_the_published_onset():
    dd = _load("double_diffusive")
    Ra, tau = -1000.0, 1 / 3  # temperature stably stratified: only the salt drives the fingers
    eq = dd.DoubleDiffusive(dd.grid(17, 8), Ra=Ra, Rs=-1000.0, Pr=7.0, tau=tau)
    below, above = dd.growth_rates(eq, [{"Rs": tau * (Ra - 1707.762 * f)} for f in (1 - 1e-3, 1 + 1e-3)])
    assert below < 0 < above
    assert abs(below + above) < 0.02 * above  # the crossing is midway: the onset to about 1e-5 of Ra_c


def test_heat_robin_example_matches_the_exact_solution(capsys):
    """Fixed temperature below, a Robin condition above (the mixed tau solve): the run equals the exact steady
    profile plus its decaying mode (``mu`` from the transcendental top condition) to 1e-10. What is left is the
    scheme's third-order time error (measured: 5.1e-10 at dt = 2e-3, 6.3e-11 at 1e-3), not the boundary rows'."""
    ex = _load("heat_robin")
    mu = ex.first_root(2.0, 1.0)
    assert abs(2.0 * math.sin(mu) + mu * math.cos(mu)) < 1e-14 and math.pi / 2 < mu < math.pi
    error = ex.main(["--dt", "1e-3"])
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"max |T - T_exact| at t = 0.2: {error:.3e}"
    assert error < 1e-10


def test_two_stream_says_where_it_saturates_and_refuses_a_run_too_short_for_its_fit(capsys):
    """The closing line names the first maximum of ``|E_k|`` (or says the run ended still growing); a run that
    ends before ``|E_k|`` has grown through the fitted window is refused, exit status 2, naming ``--t-end``."""
    ex = _load("two_stream")
    assert ex.saturation([0, 1, 2, 3, 4], [1e-3, 0.1, 0.3, 0.2, 0.25]) == "|E_k| stops growing at 0.300 (t = 2.0)"
    assert "still growing at the end" in ex.saturation([0, 1, 2], [1e-3, 1e-2, 0.1])
    with pytest.raises(SystemExit) as e:
        ex.main(["--particles", "1024", "--cells", "32", "--t-end", "10"])
    assert e.value.code == 2
    assert "--t-end 10: |E_k| reached" in capsys.readouterr().err


def test_landau_refuses_a_window_too_short_for_its_fit(capsys):
    with pytest.raises(SystemExit) as e:
        _load("landau_damping").main(["--particles", "1024", "--beams", "32", "--cells", "32", "--t-end", "5"])
    assert e.value.code == 2
    assert "--fit-from 4 to --t-end 5" in capsys.readouterr().err


def test_zeldovich_plot_draws_the_particles_on_the_exact_curve_around_the_pancake(tmp_path):
    """``--plot``: the particles' momenta against their positions, the positions shifted to put the pancake (at
    0 = 1) in the middle, and the exact curve; at a = 0.3 the particles lie on it."""
    import numpy as np

    from solvers.particles import zeldovich_plane_wave

    ex = _load("zeldovich")
    ex.main(["--cells", "16", "--a-end", "0.3", "--da", "0.05", "--plot", str(tmp_path / "z.png")])
    assert (tmp_path / "z.png").stat().st_size > 10_000
    q = (np.arange(16) + 0.5) / 16
    x, p = zeldovich_plane_wave(q, 0.3, 1.0, 2 * math.pi)
    fig = ex.plot(tmp_path / "again.png", x % 1.0, p, 0.3)
    dots, exact = fig.axes[0].get_lines()
    np.testing.assert_allclose(dots.get_xdata(), (x + 0.5) % 1.0 - 0.5)
    assert np.all(np.abs(dots.get_xdata()) <= 0.5)
    xs, ps = exact.get_xdata(), exact.get_ydata()
    np.testing.assert_allclose(np.interp(dots.get_xdata(), xs, ps), p, atol=1e-4 * np.max(np.abs(p)))
