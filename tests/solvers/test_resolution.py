"""The resolution monitor: the ``resolution`` diagnostic against exact fractions, and runs that stay resolved or
leave their resolution.

* ``diagnostics.resolution`` of ``cos(x) + a cos(m x)`` is ``a^2 / (1 + a^2)`` when mode ``m`` lies in the outer
  band (the top third of the kept wavenumbers) and 0 otherwise, on one device, a slab and a pencil, for real and
  complex fields; on an anisotropic grid each axis is measured against its own cutoff.
* The Schroedinger-Poisson collapse of the README (``gaussian-collapse``, G = 1, eps = 2, dt = 0.01) on 32^3:
  measured (2026-11-23) 2.8e-6 at t = 0.5, where the energy agrees with the 64^3 and 128^3 runs (-12.426), and
  7.9e-3 at t = 0.6, where it is -9.30 against -11.618 on 64^3 and 128^3. Stopped at t = 0.5 it stays silent; run
  to t = 0.7 it warns once, naming the diagnostic, the value, the threshold and ``--n``, and ``run.json`` says so.
"""

import json
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers import RunConfig, SpectralGrid, run
from solvers import diagnostics as D
from solvers.outputs import ResolutionMonitor, ResolutionWarning


def _fractions(grid: SpectralGrid):
    """``(m, a) ->`` the resolution of ``cos(x) + a cos(m x)`` (x along axis 0) on ``grid``, by the grid's rule and
    by ``"none"``: one compiled program for every ``m`` and ``a``."""
    x = grid.coordinates()[0]
    dtype = grid.cdtype if grid.complex_fields else grid.dtype

    @jax.jit
    def both(x, m, a):
        f_hat = grid.forward((jnp.cos(x) + a * jnp.cos(m * x)).astype(dtype))
        return D.resolution(grid, f_hat), D.resolution(grid, f_hat, rule="none")

    def fractions(m: int, a: float) -> tuple[float, float]:
        with jax.set_mesh(grid.mesh):
            return tuple(float(v) for v in both(x, float(m), a))

    return fractions


# each mesh once, real and complex fields both (the complex ones on one device and on a pencil)
@pytest.mark.parametrize("kind, complex_fields", [("single", True), ("slab", False), ("pencil", True)])
def test_fraction_of_two_modes(meshes, kind, complex_fields):
    """``a^2 / (1 + a^2)`` for a mode in the outer band (2/3 rule on 32 points: kept |m| <= 10, band |m| > 6.67)."""
    grid = SpectralGrid(32, meshes[kind], dtype=jnp.float64, complex_fields=complex_fields)
    fractions = _fractions(grid)
    a = 0.3
    for m, want in ((7, a * a / (1 + a * a)), (10, a * a / (1 + a * a)), (6, 0.0), (2, 0.0)):
        got = fractions(m, a)[0]
        assert abs(got - want) < 1e-12, (m, got, want)
    # "none" (split-step keeps every mode): kept |m| <= 16, band |m| > 10.67
    assert fractions(10, a)[1] < 1e-12
    assert abs(fractions(11, a)[1] - a * a / (1 + a * a)) < 1e-12


def test_each_axis_against_its_own_cutoff(meshes):
    """On a 64 x 16 grid (kept |m_x| <= 21, |m_y| <= 5) mode (0, 4) is outer (4/5 > 2/3), (12, 0) is not (12/21)."""
    grid = SpectralGrid((64, 16), meshes["slab"], ndim=2, dtype=jnp.float64)
    band = np.asarray(jax.jit(lambda: D.outer_band(grid) + 0 * grid.k2())())
    kx, ky = (np.rint(np.asarray(k)).astype(int).ravel() for k in grid.k_full)
    assert band[list(kx).index(0), list(ky).index(4)] == 1 and band[list(kx).index(12), list(ky).index(0)] == 0
    assert band[list(kx).index(15), list(ky).index(0)] == 1 and band[list(kx).index(-10), list(ky).index(1)] == 0
    assert band[list(kx).index(-13), list(ky).index(2)] == 1  # (13/21)^2 + (2/5)^2 = 0.54 > (2/3)^2
    assert float(D.resolution(grid, jnp.zeros(grid.spectral_shape, grid.cdtype))) == 0.0  # a zero field


def test_monitor_warns_once_and_ignores_the_initial_row():
    """Step 0 (a noise initial condition) is recorded, not warned about; the first later row above the threshold
    warns once; the summary names it."""
    mon = ResolutionMonitor(threshold=1e-3)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        mon.observe({"resolution": 0.67}, 0, 0.0)
        mon.observe({"resolution": 1e-4}, 10, 0.1)
        mon.observe({"resolution": 5e-3}, 20, 0.2)
        mon.observe({"resolution": 9e-3}, 30, 0.3)
        mon.observe({"resolution": math.nan}, 40, 0.4)
    assert [type(w.message) for w in got] == [ResolutionWarning]
    text = str(got[0].message)
    assert "'resolution' = 0.005" in text and "step 20" in text and "threshold 0.001" in text and "--n" in text
    s = mon.summary()
    assert s["initial"] == 0.67 and s["max"] == 9e-3 and s["max_step"] == 30 and not s["resolved"]
    assert s["first_passed"] == {"value": 5e-3, "step": 20, "t": 0.2}
    assert ResolutionMonitor().summary() is None  # an equation without the diagnostic
    with pytest.raises(ValueError, match="threshold"):
        ResolutionMonitor(threshold=0.0)


def _collapse(tmp_path, t_end: float) -> tuple[dict, list]:
    cfg = RunConfig(equation="schrodinger-poisson", ic="gaussian-collapse", n=32, dt=0.01, t_end=t_end,
                    params={"G": 1.0, "eps": 2.0}, out=str(tmp_path), progress=False, plots=False)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        run(cfg)
    return json.loads((tmp_path / "run.json").read_text()), [w for w in got if w.category is ResolutionWarning]


def test_resolved_collapse_is_silent(tmp_path):
    """The README's collapse stopped at t = 0.5 on 32^3: resolved (2.8e-6 measured), no warning."""
    summary, warned = _collapse(tmp_path, 0.5)
    res = summary["resolution"]
    assert not warned and res["resolved"] and res["first_passed"] is None
    assert res["max"] < 1e-4 and res["threshold"] == D.RESOLUTION_THRESHOLD
    assert abs(summary["final"]["energy"] / -12.4266 - 1) < 1e-3  # the 64^3 and 128^3 runs' energy at t = 0.5


def test_collapse_below_the_grid_warns(tmp_path):
    """The same to t = 0.7: at t = 0.6 the collapse reaches the grid scale (7.9e-3 measured); one warning, and
    ``run.json`` records where the threshold was passed."""
    summary, warned = _collapse(tmp_path, 0.7)
    res = summary["resolution"]
    assert len(warned) == 1 and "--n" in str(warned[0].message)
    assert not res["resolved"] and res["first_passed"]["t"] == pytest.approx(0.6)
    assert res["first_passed"]["value"] > D.RESOLUTION_THRESHOLD and res["max"] >= res["first_passed"]["value"]


def test_command_line_shows_the_warning_as_one_line(tmp_path, capsys):
    """``python -m solvers run``: the warning is one stderr line naming the run's own fix, not Python's two-line
    format with a source line inside the progress bar."""
    from solvers.cli import main

    assert main(["run", "schrodinger-poisson", "--ic", "gaussian-collapse", "--n", "32", "--dt", "0.01",
                 "--t-end", "0.7", "--param", "G=1", "--param", "eps=2", "--out", str(tmp_path), "--no-plots"]) == 0
    text = capsys.readouterr().err
    err = [line for line in text.splitlines() if "warning" in line]
    assert len(err) == 1 and err[0].startswith("python -m solvers: warning: ResolutionWarning: under-resolved"), err
    assert "monitor.observe" not in text and "_run.py" not in text, text
