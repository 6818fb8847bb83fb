"""Comoving particle-mesh N-body through ``simulate`` on the 8-device pencil mesh: the Zel'dovich pancake is exact
until shell crossing, and a small random field's large-scale power grows as ``a^2`` (Einstein-de Sitter), also
painted and read out through halos."""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
import xfft
from solvers.particles import ComovingNBody, Leapfrog, periodic_grid, power_spectrum, zeldovich_plane_wave


def test_zeldovich_pancake_is_exact_before_shell_crossing():
    """A plane wave from a = 0.1 to 0.5 (shell crossing at a = 1): positions within 0.5% of the largest
    displacement and momenta within 1% of the largest (TSC on 64 cells per wavelength; measured 0.28% and 0.51%),
    nothing moves across the wave."""
    mesh = xfft.make_mesh("pencil")
    grid = periodic_grid((64, 8, 8), (1.0, 0.25, 0.25), mesh, dtype=jnp.float64)
    eq = ComovingNBody(grid, kernel="tsc")
    a0, a1 = 0.1, 0.5
    y0 = eq.initial_state("plane-wave", a0=a0, amplitude=1.0)
    sol = solvers.simulate(eq, Leapfrog, t0=a0, t_end=a1, y0=y0, controller=solvers.FixedStep(0.02))
    assert sol.t == pytest.approx(a1, abs=1e-12) and sol.step == 20
    x, p = np.asarray(sol.state.positions), np.asarray(sol.state.velocities)
    q = np.asarray(y0.positions)[:, 0] - np.asarray(y0.velocities)[:, 0] / math.sqrt(a0)  # x - a0 psi
    xe, pe = zeldovich_plane_wave(q, a1, 1.0, 2 * math.pi)
    dx = (x[:, 0] - xe + 0.5) % 1.0 - 0.5
    assert np.max(np.abs(dx)) < 5e-3 * np.max(np.abs(xe - q))
    assert np.max(np.abs(p[:, 0] - pe)) < 1e-2 * np.max(np.abs(pe))
    assert np.max(np.abs(p[:, 1:])) < 1e-12


@pytest.fixture(scope="module")
def growth(tmp_path_factory):
    """A Gaussian field of rms contrast 0.005 at a = 0.1 run to a = 0.4 on 16^3 particles and cells (TSC, the
    window deconvolved) on the pencil mesh, checkpointed every 5 steps: the grid, the equation, the initial and the
    final state, and the checkpoints' directory."""
    mesh = xfft.make_mesh("pencil")
    grid = periodic_grid((16, 16, 16), 1.0, mesh, dtype=jnp.float64)
    eq = ComovingNBody(grid)
    y0 = eq.initial_state("gaussian", a0=0.1, sigma=0.005, index=-1.0, seed=1)
    ck = tmp_path_factory.mktemp("pm") / "ck"
    sol = solvers.simulate(eq, Leapfrog, t0=0.1, t_end=0.4, y0=y0, controller=solvers.FixedStep(0.03),
                           outputs=[solvers.Checkpoint(ck, every=5)])
    return grid, eq, y0, sol.state, ck


def test_a_3d_run_resumes_from_its_checkpoint_to_the_bit(growth):
    """The particles are stored as they are (not as spectra), and the run resumed from step 5 on the same mesh ends
    on the same particles to the bit."""
    grid, eq, y0, y1, ck = growth
    y, meta = solvers.outputs.Checkpoints(ck).restore(5, eq)
    assert meta["step"] == 5 and y.positions.shape == (16**3, 3)
    again = solvers.simulate(eq, Leapfrog, t0=meta["t"], t_end=0.4, y0=y, step0=5, controller=solvers.FixedStep(0.03))
    for a, b in zip(jax.tree.leaves(y1), jax.tree.leaves(again.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_linear_growth_of_the_power_spectrum(growth):
    """The power of the largest-scale shell (|k| < 1.5 k_f) grows by (a / a0)^2 = 16 within 3% (measured -1%);
    without the deconvolution the mesh's smoothing slows it to 14.6 (TSC)."""
    grid, eq, y0, y1, _ = growth
    a0, a1 = 0.1, 0.4
    k0, p0 = power_spectrum(eq.mesh.contrast(y0.positions), 1.0)
    k1, p1 = power_spectrum(eq.mesh.contrast(y1.positions), 1.0)
    np.testing.assert_allclose(k0, k1)
    assert k1[0] < 1.5 * 2 * math.pi
    assert p1[0] / p0[0] == pytest.approx((a1 / a0) ** 2, rel=0.03)
    with pytest.raises(ValueError, match="particles must be prod"):
        ComovingNBody(grid, particles=16**3 * 2)


def test_the_contrast_grows_as_linear_theory_on_every_scale(growth):
    """The default kernel (TSC, its window deconvolved): the rms contrast grows by ``a1 / a0 = 4`` within 5%
    (measured 3.93) and the mesh's corner mode stays at round-off. With CIC the deconvolution amplifies the mesh's
    shortest waves: the rms grew 8-fold, the excess in a checkerboard (measured with ``kernel="cic"``), and the
    equation warns of it."""
    grid, eq, y0, y1, _ = growth
    assert eq.kernel == "tsc"
    with pytest.warns(UserWarning, match="kernel='cic' with deconvolve=True amplifies"):
        ComovingNBody(grid, kernel="cic")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ComovingNBody(grid, kernel="cic", deconvolve=False)
    d0, d1 = (np.asarray(eq.mesh.contrast(y.positions)) for y in (y0, y1))
    assert np.std(d1) / np.std(d0) == pytest.approx(4.0, rel=0.05)
    corner = abs(np.fft.fftn(d1)[8, 8, 8]) / d1.size
    assert corner < 1e-6 * np.std(d1)


def test_a_run_through_halos_is_the_exchange_run_and_a_particle_leaving_its_halo_stops_it(growth):
    """halo=2: each device holds the lattice of its own block and paints and reads out through halos (no particle
    sent anywhere); the same run's density contrast equals the exchange's to round-off (measured 8e-14 of a
    contrast of rms 0.05). Particles 3 cells off their blocks stop the run with the paint's ValueError, which says
    what to set."""
    grid, eq, y0, y1, _ = growth
    halo = ComovingNBody(grid, halo=2)
    z0 = halo.initial_state("gaussian", a0=0.1, sigma=0.005, index=-1.0, seed=1)
    z1 = solvers.simulate(halo, Leapfrog, t0=0.1, t_end=0.4, y0=z0, controller=solvers.FixedStep(0.03)).state
    for y, z in ((y0, z0), (y1, z1)):
        d, dh = (np.asarray(eq.mesh.contrast(s.positions)) for s in (y, z))
        np.testing.assert_allclose(dh, d, rtol=0, atol=1e-12 * np.max(np.abs(d)))
    with pytest.raises(ValueError, match="capacity and halo exclude each other"):
        ComovingNBody(grid, halo=2, capacity=64)
    off = z0._replace(positions=jnp.mod(z0.positions + 3 / 16, 1.0))  # every particle 3 cells off its block
    with pytest.raises(ValueError, match=r"more than halo=2 cells outside the block .* pass a wider halo"):
        solvers.simulate(halo, Leapfrog, t0=0.1, t_end=0.13, y0=off, controller=solvers.FixedStep(0.03))


def test_comoving_nbody_runs_from_the_command_line_from_its_initial_scale_factor(tmp_path, capsys):
    """``python -m solvers run comoving-nbody`` (in this process): the run's time is the scale factor, from the
    initial condition's ``a0`` (the CSV's first row is the initial state at ``t = a0``) to ``--t-end``; the kinetic
    energy of the Zel'dovich pancake, ``(1/2) mean p^2 = a^3 A^2 / (4 k^2)``, as the CSV's ``energy`` column
    reads it (TSC, 32 cells per wavelength: measured within 0.2% up to a = 0.5, shell crossing at 1 / A); a
    ``--t-end`` at or before ``a0`` is refused naming it, exit status 2."""
    from solvers.cli import main
    from solvers.io import read_csv

    out = tmp_path / "pancake"
    args = ["run", "comoving-nbody", "--n", "32", "4", "--ic", "plane-wave", "--param", "a0=0.1",
            "--param", "amplitude=1.5", "--param", "kernel=tsc", "--dtype", "float64", "--dt", "0.02",
            "--diag-every", "5", "--out", str(out), "--no-progress"]
    assert main([*args, "--t-end", "0.5"]) == 0
    rows = read_csv(out / "diagnostics.csv")
    a = np.array([float(r["t"]) for r in rows])
    assert [int(r["step"]) for r in rows] == [0, 5, 10, 15, 20]
    np.testing.assert_allclose(a, [0.1, 0.2, 0.3, 0.4, 0.5], rtol=0, atol=1e-12)
    exact = a**3 * 1.5**2 / (4 * (2 * math.pi) ** 2)
    energy = np.array([float(r["energy"]) for r in rows])
    np.testing.assert_allclose(energy[0], exact[0], rtol=1e-12)
    np.testing.assert_allclose(energy, exact, rtol=3e-3)
    assert max(abs(float(r["momentum"])) for r in rows) < 1e-15
    capsys.readouterr()
    assert main([*args, "--t-end", "0.1", "--overwrite"]) == 2
    assert "--t-end must be past the initial condition's time 0.1" in capsys.readouterr().err
