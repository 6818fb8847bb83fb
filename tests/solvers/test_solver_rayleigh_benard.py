"""Rayleigh-Benard: free-slip linear growth rates vs the closed-form dispersion relation, the onset
Ra_c = 27 pi^4 / 4 at k_c = pi / sqrt(2), saturated rolls with heat-flux balance, the bounded long runs (the
blow-up of 0.2), the energy bound; no-slip onset and rolls; parameter validation and legacy checkpoints."""

import csv
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xfft
from solvers import (
    ETDRK4,
    IFRK4,
    REGISTRY,
    ConfigError,
    RayleighBenardFreeSlip,
    RayleighBenardNoSlip,
    RunConfig,
    SpectralGrid,
    rollout,
    run,
)
from solvers.equations.rayleigh_benard import (
    K_CRITICAL,
    K_CRITICAL_NO_SLIP,
    RA_CRITICAL,
    RA_CRITICAL_NO_SLIP,
    RayleighBenard,
    growth_rate,
)

SPEC = REGISTRY["rayleigh-benard"]  # the job's spec: default box, energy bound (free-slip and no-slip variants)

#: Malkus-Veronis rolls' Rayleigh number: the runs of the job on 8 x 8 below share that equation (one program)
RA_MV = 1.05 * RA_CRITICAL

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


def _rates(eq: RayleighBenard, index: list[tuple[int, ...]], t: float, steps: int, run=None) -> np.ndarray:
    """The growth rates of the modes ``index`` over ``t`` in ``steps`` IFRK4 steps; ``run``: a rollout of them on
    an equation of the same grid, given ``eq``'s Ra and Pr as parameters (one compiled program for every Ra, Pr)."""
    s0 = _eigenmodes(eq, [tuple(2 * math.pi * n / L for n, L in zip(i, eq.grid.box_length[1:])) for i in index])
    if run is None:
        s1 = IFRK4(eq).advance(s0, 0.0, t / steps, steps)
    else:
        assert run.steps == steps and run.dt == t / steps
        s1 = run(s0, params={"Ra": eq.Ra, "Pr": eq.Pr})
    a0, a1 = np.asarray(s0)[eq.dim], np.asarray(s1)[eq.dim]
    return np.array([math.log(abs(a1[(1,) + i]) / abs(a0[(1,) + i])) / t for i in index])


def test_growth_rates_and_onset_2d():
    """Modes k = n k_c / 2 (n = 1..4) in one box; the onset from the solver's rates at Ra = 655 and 660 (one
    device: 1200 small steps are latency on 8; the sharded free-slip steps are the 3D pencil test's)."""
    grid = RayleighBenardFreeSlip.make_grid((8, 16), None, lengths=(4 * math.pi / K_CRITICAL,), dtype=jnp.float64)
    modes = [(n,) for n in (1, 2, 3, 4)]
    ks = [n * K_CRITICAL / 2 for n in (1, 2, 3, 4)]
    at_kc = {}
    # every case in 400 steps (the stiffest, Pr = 7, needs them; the others take them too, to share one program)
    run = rollout(RayleighBenardFreeSlip(grid), "ifrk4", dt=0.1 / 400, steps=400)
    for Ra, Pr in ((655.0, 1.0), (660.0, 1.0), (2500.0, 7.0)):
        got = _rates(RayleighBenardFreeSlip(grid, Ra=Ra, Pr=Pr), modes, 0.1, 400, run)
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
    grid = RayleighBenardFreeSlip.make_grid((8, 8, 8), meshes["pencil"], lengths=(L, L), dtype=jnp.float64)
    eq = RayleighBenardFreeSlip(grid, Ra=1500.0, Pr=2.0)
    got = _rates(eq, [(1, 1), (1, 0)], 0.1, 100)
    exact = [growth_rate(K_CRITICAL, 1500.0, 2.0), growth_rate(2 * math.pi / L, 1500.0, 2.0)]
    np.testing.assert_allclose(got, exact, rtol=2e-6)


def test_rolls_saturate_to_malkus_veronis_with_heat_flux_balance(tmp_path):
    """Ra = 1.05 Ra_c, Pr = 1, one critical wavelength, through the main job (solvers.run): steady rolls whose
    Nusselt number matches the weakly nonlinear result for free-slip rolls, Nu - 1 = 2 (1 - Ra_c / Ra) + O(eps^2)
    (Malkus & Veronis 1958, J. Fluid Mech. 4, 225), and whose heat flux through the bottom plate, the top plate
    and the volume agree."""
    Ra = RA_MV
    cfg = RunConfig(equation="rayleigh-benard", ic="single-mode", n=8, t_end=15.0, dt=0.02, dtype="float64",
                    integrator="etdrk4", out=str(tmp_path), progress=False, plots=False, diag_every=100,
                    params={"Ra": Ra, "Pr": 1.0, "amplitude": 0.16})  # ~ the saturated amplitude
    summary = run(cfg, mesh=_one_device())  # 750 small steps: latency on 8
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
            run(RunConfig(equation="rayleigh-benard", ic="single-mode", n=8, out=str(tmp_path), params=bad))
    with pytest.raises(ConfigError, match="^n: "):
        run(RunConfig(equation="rayleigh-benard", n=(8, 8, 8, 8), out=str(tmp_path)))
    grid = RayleighBenardFreeSlip.make_grid((8, 8), meshes["slab"], lengths=(2.0,), dtype=jnp.float64)
    with pytest.raises(ValueError, match="Ra"):
        RayleighBenardFreeSlip(grid, Ra=0.0)
    periodic = SpectralGrid((8, 8), meshes["slab"], ndim=2, box_length=(1.0, 2.0), dtype=jnp.float64)
    with pytest.raises(ValueError, match=r"grid axis 0 must be Cosine on \[0, 1\] .* got Fourier; build the grid "
                                         r"with RayleighBenardFreeSlip.make_grid"):
        RayleighBenardFreeSlip(periodic)  # (a grid is never replaced)
    assert SPEC.default_box(3, {}) == (1.0, 2 * math.pi / K_CRITICAL, 2 * math.pi / K_CRITICAL)


# ----- the blow-up of version 0.2 (issue 16, item 0) ------------------------------------------------------
def _physical_energy(eq) -> float:
    """``<|u|^2> / 2`` of the physical fields on the grid points (what a user sees)."""
    def fields(s):
        return eq.grid.backward(s[: eq.dim - 1]), eq.sines.backward(s[eq.dim - 1])
    return fields


@pytest.mark.parametrize("shape,Ra,ic,dt,t_end", [((16, 32), 2000.0, "single-mode", 1e-2, 20.0),
                                                   ((8, 8, 8), 5000.0, "random", 4e-3, 3.0)])
def test_free_slip_runs_stay_bounded_with_the_energy_of_the_physical_fields(shape, Ra, ic, dt, t_end):
    """The README's 2D run (Ra = 2000, 16 x 32) to t = 20 and a 3D random start (Ra = 5000) to t = 3: in 0.2
    their energy reached 4.9e34 and 3.3e12 (an anti-Hermitian part of the spectrum, invisible in the physical
    fields, grew at the conduction state's growth rate). Now the 2D run holds its steady rolls (E = 113.97495,
    plate and volume Nusselt numbers equal to 1e-6 at this resolution), the energy of the state equals the energy
    of the physical fields to 1e-12, and the 3D run stays below the physical bound. (The 2D run at dt 1e-2, not
    the README's 2e-3, and the 3D one on 8 x 8 horizontal points, not 16 x 16: the blow-up grew at a rate in time,
    not per step or per mode, and the steady rolls of ETDRK4, a fixed point of the step, do not depend on dt:
    measured, E and Nu the same to 1e-15 at dt 5e-3 and 1e-2, E 3.7e-6 above 113.97495; at 2e-2 the 2D run
    settles elsewhere and the 3D one blows up, which is why the 3D run keeps 4e-3.)"""
    L = 2 * math.pi / K_CRITICAL
    grid = RayleighBenardFreeSlip.make_grid(shape, None, lengths=(L,) * (len(shape) - 1), dtype=jnp.float64)
    eq = RayleighBenardFreeSlip(grid, Ra=Ra, Pr=1.0)
    s = ETDRK4(eq).advance(eq.initial_state(ic, **({"seed": 1} if ic == "random" else {})), 0.0, dt,
                           int(round(t_end / dt)))
    # the fields and every diagnostic in one compiled program (eager calls would compile op by op)
    (u, vert), energy, nu, plates = jax.device_get(jax.jit(lambda s: (
        _physical_energy(eq)(s), eq.energy(s), eq.nusselt(s), eq.plate_nusselt(s)))(s))
    u, vert, energy = np.asarray(u), np.asarray(vert), float(energy)
    physical = 0.5 * (np.sum(np.mean(u ** 2, axis=tuple(range(1, u.ndim)))) + np.mean(vert ** 2))
    assert abs(energy / physical - 1) < 1e-12
    assert energy < SPEC.variant({}).energy_bound(eq, 0.0) / 4
    if len(shape) == 2:
        assert abs(energy - 113.97495) < 1e-4
        nu, (bottom, top) = float(nu), (float(v) for v in plates)
        assert abs(bottom - top) < 1e-12 and abs(nu / bottom - 1) < 1e-5  # measured 8.8e-7


def _one_device():
    """A mesh of one device: the job's runs on 8 x 8 here are about the job and the physics, not the distribution
    (and on one mesh, with the same equation, they share their compiled programs)."""
    return xfft.make_mesh((1,), devices=jax.devices()[:1])


def test_energy_past_the_physical_bound_stops_the_run(tmp_path):
    """The blow-up check also stops a run whose energy passes the equation's physical bound (the ``energy_bound``
    of its RunSpec; not only NaN/inf), naming it; the CLI exits with 3 as for NaN."""
    from solvers import BlowUpError

    free = dataclasses.replace(SPEC.variants["free-slip"], energy_bound=lambda eq, initial: 1e-9)
    spec = dataclasses.replace(SPEC, variants={**SPEC.variants, "free-slip": free})
    cfg = RunConfig(equation=spec, n=(8, 8), t_end=1.0, dt=0.01, dtype="float64", out=str(tmp_path),
                    progress=False, plots=False, params={"Ra": RA_MV, "Pr": 1.0, "amplitude": 1.0})
    with pytest.raises(BlowUpError, match="passed the bound 1e-09"):
        run(cfg, mesh=_one_device())  # (the program of the legacy-checkpoint test's runs)


# ----- no-slip plates (issue 16) ---------------------------------------------------------------------------
def _no_slip_rates(factors: tuple[float, ...], nz: int = 17) -> dict[float, float]:
    """Growth rates of the kinetic energy's square root of the k = 3.117 roll between rigid plates at
    ``Ra = Ra_c f`` (2D, one critical wavelength, a 1e-8 perturbation: linear), from t = 0.5 to 1 (the faster modes
    have decayed). One compiled program for every Ra: the rollout takes Ra as a traced parameter and keeps the
    states at t = 0.5 and 1 (steps 250 and 500 of 2e-3), whose energies it computes in the same program."""
    L = 2 * math.pi / K_CRITICAL_NO_SLIP
    grid = RayleighBenardNoSlip.make_grid((nz, 8), None, lengths=(L,), dtype=jnp.float64)
    eq = RayleighBenardNoSlip(grid, Ra=RA_CRITICAL_NO_SLIP, Pr=1.0, amplitude=1e-8)
    s0 = eq.initial_state("single-mode")  # the same state at every Ra (the amplitude sets it)
    run = rollout(eq, "imex", dt=2e-3, steps=500, save_every=250)

    @jax.jit
    def energies(s0, Ra):
        both = run(s0, params={"Ra": Ra})
        return jax.vmap(eq.energy)(both)

    out = {}
    with jax.set_mesh(grid.mesh):
        for f in factors:
            e1, e2 = (float(e) for e in energies(s0, RA_CRITICAL_NO_SLIP * f))
            out[f] = math.log(e2 / e1) / 2 / 0.5
    return out


def test_no_slip_onset_is_bracketed_by_the_solvers_growth_rates():
    """Rigid plates: the solver's growth rates at k_c = 3.117 change sign between Ra_c (1 - 1e-3) and
    Ra_c (1 + 1e-3), Ra_c = 1707.762 (Chandrasekhar 1961), and equal the linear-stability eigenvalues of
    :mod:`solvers.stability.rayleigh_benard` (an independent Chebyshev eigen-solver) to 1e-5 (measured: -0.013001
    and +0.012995 against -0.013001 and +0.012996)."""
    from solvers.stability import rayleigh_benard as linear

    rates = _no_slip_rates((1 - 1e-3, 1 + 1e-3))
    assert rates[1 - 1e-3] < 0 < rates[1 + 1e-3], rates
    for f, r in rates.items():
        assert abs(r - linear.growth_rate(K_CRITICAL_NO_SLIP, RA_CRITICAL_NO_SLIP * f, 1.0)) < 1e-5, (f, r)


def test_no_slip_rolls_with_heat_flux_balance(tmp_path):
    """Ra = 2500 between rigid plates through the main job: steady rolls whose Nusselt numbers at the bottom plate,
    the top plate and in the volume agree (the heat flux balance; spectral convergence measured: 7.8e-7 apart at
    17 points, 1.8e-10 at 25), Nu = 1.474208 (converged to 7 digits between 25 and 33 points)."""
    cfg = RunConfig(equation="rayleigh-benard", ic="single-mode", n=(25, 16), t_end=3.0, dt=0.01,
                    dtype="float64", out=str(tmp_path), progress=False, plots=False, diag_every=100,
                    params={"Ra": 2500.0, "Pr": 1.0, "amplitude": 0.1, "walls": "no-slip"})
    # one device: the 300 steps of a 25x16 cell are all latency on 8 devices (about 10x slower). (Measured: steady
    # from t = 2, the energy the same to 1e-14 and Nu to 1e-15 at every unit of time from t = 2 to 12.)
    summary = run(cfg, mesh=_one_device())
    assert summary["config"]["integrator"] == "imex"
    rows = list(csv.DictReader(open(tmp_path / "diagnostics.csv")))
    last, prev = ({k: float(v) for k, v in r.items()} for r in (rows[-1], rows[-2]))
    assert abs(last["energy"] / prev["energy"] - 1) < 1e-6  # steady (t = 2 and 3)
    nu, bottom, top = last["nusselt"], last["nusselt_bottom"], last["nusselt_top"]
    assert abs(bottom - top) < 1e-12 and abs(nu - bottom) < 1e-8 * nu, (nu, bottom, top)
    assert abs(nu - 1.474208) < 1e-6


def test_walls_parameter_and_legacy_checkpoints(tmp_path):
    """``walls`` is validated like every parameter; a free-slip checkpoint written before ``walls`` existed
    (its settings lack it) resumes as free-slip; a no-slip run refuses an explicit integrator that cannot
    advance it."""
    with pytest.raises(ConfigError, match="walls"):
        run(RunConfig(equation="rayleigh-benard", n=8, out=str(tmp_path), params={"walls": "rigid"}))
    with pytest.raises(ConfigError, match="^integrator etdrk4 cannot advance rayleigh-benard"):
        run(RunConfig(equation="rayleigh-benard", n=(9, 8), out=str(tmp_path / "e"), integrator="etdrk4",
                           params={"walls": "no-slip"}, progress=False, plots=False))
    base = dict(equation="rayleigh-benard", n=(8, 8), dt=0.01, dtype="float64", progress=False, plots=False,
                out=str(tmp_path / "r"), params={"Ra": RA_MV, "Pr": 1.0})  # (the Malkus-Veronis run's program)
    run(RunConfig(t_end=0.05, **base), mesh=_one_device())
    from solvers import io
    ck = io.Checkpoints(tmp_path / "r" / "checkpoints")
    step = ck.latest_step()
    meta = ck.read_meta(step)
    meta["config"]["params"].pop("walls")
    grid = RayleighBenardFreeSlip.make_grid((8, 8), xfft.make_mesh("slab"), lengths=(2 * math.pi / K_CRITICAL,),
                                            dtype=jnp.float64)
    state, _ = ck.restore(step, RayleighBenardFreeSlip(grid).abstract_state())
    ck._manager.delete(step)
    ck.save(step, state, meta)  # rewritten without `walls`, as version 0.2 wrote it
    ck.close()
    summary = run(RunConfig(t_end=0.1, resume=True, **base), mesh=_one_device())
    assert summary["steps_this_run"] == 5 and summary["physics"]["params"]["walls"] == "free-slip"
