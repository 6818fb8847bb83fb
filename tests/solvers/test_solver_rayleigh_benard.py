"""Rayleigh-Benard (free-slip): linear growth rates vs the closed-form dispersion relation, the onset
Ra_c = 27 pi^4 / 4 at k_c = pi / sqrt(2), saturated rolls with heat-flux balance, parameter validation."""

import csv
import math

import jax.numpy as jnp
import numpy as np
import pytest

from solvers import IFRK4, RunConfig, SpectralGrid, simulate
from solvers._run import ConfigError
from solvers.equations.rayleigh_benard import K_CRITICAL, RA_CRITICAL, RayleighBenard, growth_rate

EPS = 1e-8  # amplitude small enough that the quadratic terms are below round-off relative to the linear ones


def _eigenmodes(eq: RayleighBenard, ks: list[tuple[float, ...]]):
    """Sum of growing eigenmodes ``theta = EPS cos(k.x) sin(pi z)``, ``w = (s + K^2) theta``, ``u`` from continuity."""
    def fields(z, *h):
        out = [0 * z for _ in range(eq.dim + 1)]
        for k in ks:
            kk = math.hypot(*k)
            s = growth_rate(kk, eq.Ra, eq.Pr)
            W = (s + kk * kk + math.pi ** 2) * EPS
            phase = sum(ki * hi for ki, hi in zip(k, h))
            for i, ki in enumerate(k):  # u_h = -(pi / |k|^2) W k sin(k.x) cos(pi z)
                out[i] = out[i] - math.pi * ki / kk ** 2 * W * jnp.sin(phase) * jnp.cos(math.pi * z)
            out[-2] = out[-2] + W * jnp.cos(phase) * jnp.sin(math.pi * z)
            out[-1] = out[-1] + EPS * jnp.cos(phase) * jnp.sin(math.pi * z)
        return tuple(out)
    return eq.from_physical(fields)


def _rates(eq: RayleighBenard, index: list[tuple[int, ...]], t: float, steps: int) -> np.ndarray:
    s0 = _eigenmodes(eq, [tuple(2 * math.pi * n / L for n, L in zip(i, eq.grid.box_length[1:])) for i in index])
    s1 = IFRK4(eq).advance(s0, 0.0, t / steps, steps)
    a0, a1 = np.asarray(s0)[eq.dim], np.asarray(s1)[eq.dim]
    return np.array([math.log(abs(a1[(1,) + i]) / abs(a0[(1,) + i])) / t for i in index])


def test_growth_rates_and_onset_2d(meshes):
    """Modes k = n k_c / 2 (n = 1..4) in one box; the onset from the solver's rates at Ra = 655 and 660."""
    grid = SpectralGrid((8, 16), meshes["slab"], ndim=2, box_length=(1.0, 4 * math.pi / K_CRITICAL), dtype=jnp.float64)
    modes = [(n,) for n in (1, 2, 3, 4)]
    ks = [n * K_CRITICAL / 2 for n in (1, 2, 3, 4)]
    at_kc = {}
    for Ra, Pr, steps in ((655.0, 1.0, 100), (660.0, 1.0, 100), (2500.0, 7.0, 400)):
        got = _rates(RayleighBenard(grid, Ra=Ra, Pr=Pr), modes, 0.1, steps)
        exact = np.array([growth_rate(k, Ra, Pr) for k in ks])
        np.testing.assert_allclose(got, exact, rtol=2e-6, atol=1e-6)
        at_kc[Ra] = got[1]
        if Ra < 1000:
            assert got[1] == max(got)  # near onset k_c grows fastest (of these k)
    # the solver's growth rate at k_c changes sign between 655 and 660: interpolate the onset
    assert at_kc[655.0] < 0 < at_kc[660.0]
    ra_c = 655.0 + 5.0 * -at_kc[655.0] / (at_kc[660.0] - at_kc[655.0])
    assert abs(ra_c / RA_CRITICAL - 1) < 1e-5, ra_c


def test_growth_rate_3d_pencil(meshes):
    """An oblique 3D mode (k_x = k_y) on a pencil mesh grows at the rate of |k|."""
    L = 2 * math.sqrt(2) * math.pi / K_CRITICAL  # |k| = k_c for mode (1, 1)
    grid = SpectralGrid((8, 8, 8), meshes["pencil"], ndim=3, box_length=(1.0, L, L), dtype=jnp.float64)
    eq = RayleighBenard(grid, Ra=1500.0, Pr=2.0)
    got = _rates(eq, [(1, 1), (1, 0)], 0.1, 100)
    exact = [growth_rate(K_CRITICAL, 1500.0, 2.0), growth_rate(2 * math.pi / L, 1500.0, 2.0)]
    np.testing.assert_allclose(got, exact, rtol=2e-6)


def test_rolls_saturate_to_malkus_veronis_with_heat_flux_balance(tmp_path):
    """Ra = 1.05 Ra_c, Pr = 1, one critical wavelength, through the CLI driver (simulate): steady rolls whose
    Nusselt number matches the weakly nonlinear result for free-slip rolls, Nu - 1 = 2 (1 - Ra_c / Ra) + O(eps^2)
    (Malkus & Veronis 1958, J. Fluid Mech. 4, 225), and whose heat flux through the bottom plate, the top plate
    and the volume agree."""
    Ra = 1.05 * RA_CRITICAL
    cfg = RunConfig(equation="rayleigh-benard", ic="single-mode", n=8, t_end=15.0, dt=0.02, dtype="float64",
                    integrator="etdrk4", out=str(tmp_path), progress=False, plots=False, diag_every=100,
                    params={"Ra": Ra, "Pr": 1.0, "amplitude": 0.16})  # ~ the saturated amplitude
    summary = simulate(cfg)
    rows = list(csv.DictReader(open(tmp_path / "diagnostics.csv")))
    last, prev = ({k: float(v) for k, v in r.items()} for r in (rows[-1], rows[-2]))
    nu, bottom, top = last["nusselt"], last["nusselt_bottom"], last["nusselt_top"]
    assert summary["t"] == 15.0
    assert abs(last["energy"] / prev["energy"] - 1) < 1e-4  # steady to 1e-4 per unit time (slow relaxation near onset)
    assert abs(bottom - top) < 1e-12 and abs(nu - bottom) < 1e-5
    # measured 1.0082: the O(eps) relative correction of the leading-order theory (1.0033 at eps = 0.02)
    assert abs((nu - 1) / (2 * (1 - RA_CRITICAL / Ra)) - 1) < 0.015


def test_parameters_are_validated(tmp_path, meshes):
    """Bad ``--param`` values are a ConfigError naming the parameter (the CLI's exit status 2, one line); the
    constructor checks the same declarations; the default box is depth 1 by one critical wavelength."""
    for bad, name in (({"Ra": -1.0}, "Ra"), ({"Pr": "water"}, "Pr"), ({"Rayleigh": 1.0}, "Rayleigh"),
                      ({"amplitude": -0.1}, "amplitude")):
        with pytest.raises(ConfigError, match=name):
            simulate(RunConfig(equation="rayleigh-benard", ic="single-mode", n=8, out=str(tmp_path), params=bad))
    with pytest.raises(ConfigError, match="--n"):
        simulate(RunConfig(equation="rayleigh-benard", n=(8, 8, 8, 8), out=str(tmp_path)))
    grid = SpectralGrid((8, 8), meshes["slab"], ndim=2, box_length=(1.0, 2.0), dtype=jnp.float64)
    with pytest.raises(ValueError, match="Ra"):
        RayleighBenard(grid, Ra=0.0)
    with pytest.raises(ValueError, match="depth"):
        RayleighBenard(SpectralGrid((8, 8), meshes["slab"], ndim=2, box_length=2.0, dtype=jnp.float64))
    assert RayleighBenard.default_box_length(3) == (1.0, 2 * math.pi / K_CRITICAL, 2 * math.pi / K_CRITICAL)
