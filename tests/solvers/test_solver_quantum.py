"""Schroedinger-Poisson and Gross-Pitaevskii (split-step Fourier), each checked against closed forms.

* Schroedinger-Poisson, uniform state rho0 plus a small density wave: linear theory (hbar = m = 1) gives
  omega^2 = k^4 / 4 - 4 pi G rho0. With 4 pi G rho0 = 1 on a 2 pi box, mode k = 1 is Jeans unstable
  (gamma = sqrt(3)/2) and k = 2 oscillates (omega = sqrt(3)); starting at rest the density contrasts follow
  cosh(gamma t) and cos(omega t). Measured (dt = 0.01, t = 3): gamma to 5e-6, omega to 2e-6 (relative).
* Gross-Pitaevskii, isotropic unit trap, g = 0: imaginary-time ground-state energy per particle 3/2 (measured
  error 7e-8 at dtau = 0.05, L = 16, n = 32) and psi = pi^(-3/4) exp(-r^2/2); real time conserves the norm to
  round-off and, with g = 1, the centre of mass oscillates as x0 cos(t) (Kohn's theorem, exact for any g).
* Focusing NLS bright soliton (g = -1, no trap) on a long thin 3D box moving at v, against its closed form.
"""

import csv

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xfft
from solvers import INTEGRATORS, REGISTRY, RunConfig, SpectralGrid, run
from solvers.equations import GrossPitaevskii, SchrodingerPoisson
from solvers.equations.gross_pitaevskii import bright_soliton_field, gaussian
from solvers.integrators import ImaginaryTimeSplitStep, SplitStep


def _mode(eq, psi_hat, k):
    """Fourier amplitude ``2 <rho cos(k x)>`` of the density along x (a sharded reduction)."""
    x = eq.grid.coordinates()[0]
    psi = eq.to_real(psi_hat)
    return 2 * jnp.mean((psi.real ** 2 + psi.imag ** 2) * jnp.cos(k * x))


def test_schrodinger_poisson_jeans_dispersion_and_mass(meshes):
    """Growth rate (k = 1) and frequency (k = 2) of the quantum Jeans problem; mass to round-off."""
    grid = SpectralGrid((32, 8, 8), meshes["slab"], dtype=jnp.float64)
    eq = SchrodingerPoisson(grid, G=1 / (4 * np.pi))
    eps = 1e-6
    psi = eq._state(lambda: 1 + eps * (jnp.cos(grid.coordinates()[0]) + jnp.cos(2 * grid.coordinates()[0])))
    modes = jax.jit(lambda p: jnp.stack([_mode(eq, p, 1.0), _mode(eq, p, 2.0)]))
    mass = jax.jit(eq.mass)
    m0, d0 = float(mass(psi)), np.asarray(modes(psi))
    rho0 = m0 / eq.volume
    gamma, omega = np.sqrt(-eq.jeans_omega2(1.0, rho0)), np.sqrt(eq.jeans_omega2(2.0, rho0))
    ss = SplitStep(eq)
    ts, ds = [], []
    for j in range(6):
        psi = ss.advance(psi, 0.5 * j, 0.01, 50)
        ts.append(0.5 * (j + 1))
        ds.append(np.asarray(modes(psi)) / d0)
    ts, ds = np.array(ts), np.array(ds)
    assert abs(float(mass(psi)) / m0 - 1) < 1e-13
    np.testing.assert_allclose(ds[:, 0], np.cosh(gamma * ts), rtol=2e-5)
    np.testing.assert_allclose(ds[:, 1], np.cos(omega * ts), atol=1e-4)
    gamma_fit = np.arccosh(ds[-1, 0]) / ts[-1]  # t = 3
    omega_fit = np.arccos(ds[2, 1]) / ts[2]  # t = 1.5, omega t < pi
    assert abs(gamma_fit / gamma - 1) < 2e-5, (gamma_fit, gamma)
    assert abs(omega_fit / omega - 1) < 2e-5, (omega_fit, omega)


@pytest.fixture(scope="module")
def trap(meshes):
    grid = SpectralGrid(32, meshes["slab"], dtype=jnp.float64, box_length=16.0)
    return GrossPitaevskii(grid, g=0.0, omega=1.0)


def test_gross_pitaevskii_ground_state_energy(trap):
    """Imaginary time from an off-centre, too-wide Gaussian: E/N = 3/2 to 1e-6 and the exact wavefunction."""
    psi = gaussian(trap, width=1.4, x0=0.5)
    psi = ImaginaryTimeSplitStep(trap).advance(psi, 0.0, 0.05, 200)

    @jax.jit
    def measure(psi, exact):  # one program
        err = jnp.max(jnp.abs(trap.to_real(psi) - trap.to_real(exact)))
        return trap.mass(psi), trap.energy(psi), err, jnp.max(jnp.abs(trap.to_real(exact)))

    with jax.set_mesh(trap.grid.mesh):
        n, energy, err, peak = (float(v) for v in measure(psi, gaussian(trap, width=1.0)))
    assert abs(n - 1) < 1e-12
    assert abs(energy / n - 1.5) < 1e-6
    assert err < 5e-4 * peak  # measured 2.3e-4: O(dtau^2)


def test_gross_pitaevskii_norm_and_kohn_mode(trap):
    """Real time with g = 1: norm to round-off; centre of mass x0 cos(t) (Kohn) to 1e-4; energy to 3e-5."""
    eq = GrossPitaevskii(trap.grid, g=1.0, omega=1.0)
    psi = gaussian(eq, width=1.2, x0=1.0)
    diag = jax.jit(lambda p: eq.diagnostics(p, 0.0, 0.0))
    d0 = diag(psi)
    ss = SplitStep(eq)
    for j in range(3):
        psi = ss.advance(psi, 0.5 * j, 0.01, 50)
        d = diag(psi)
        t = 0.5 * (j + 1)
        assert abs(float(d["mass"]) / float(d0["mass"]) - 1) < 1e-13
        assert abs(float(d["x_mean"]) - np.cos(t)) < 1e-4, (t, float(d["x_mean"]))
    assert abs(float(d["energy"]) / float(d0["energy"]) - 1) < 3e-5  # measured 1.1e-5: Strang, O(dt^2)


def test_bright_soliton_closed_form():
    """Moving bright soliton of the focusing NLS on a 256 x 4 x 4 box (L = 40): psi(x, 4) to 1e-4 of its peak."""
    grid = SpectralGrid((256, 4, 4), None, dtype=jnp.float64, box_length=(40.0, 1.0, 1.0))
    eq = GrossPitaevskii(grid, g=-1.0, omega=0.0)
    v = 8 * 2 * np.pi / 40  # a wavenumber of the box, so exp(i v x) is periodic
    eq.ic_params.update(a=1.0, v=v, x0=-2.0)
    psi = eq.initial_state("bright-soliton")
    psi = SplitStep(eq).advance(psi, 0.0, 0.01, 400)
    x = np.asarray(eq.centered_coordinates()[0])[:, 0, 0]
    got = np.asarray(jax.jit(eq.to_real)(psi))[:, 0, 0]
    exact = bright_soliton_field(x, 4.0, a=1.0, v=v, x0=-2.0, g=-1.0)
    err = np.max(np.abs(got - exact))
    assert err < 1e-4, err
    # int sech^2 = 2 (times the 1 x 1 cross-section)
    assert float(jax.jit(eq.mass)(psi)) == pytest.approx(2.0, rel=1e-12)


def test_sharded_equals_single_device(meshes):
    """Pencil (2 x 4) real-time GP steps equal one device's to round-off."""
    out = []
    for kind in ("single", "pencil"):
        eq = GrossPitaevskii(SpectralGrid(16, meshes[kind], dtype=jnp.float64, box_length=12.0), g=2.0)
        psi = gaussian(eq, width=1.3, x0=0.7)
        psi = SplitStep(eq).advance(psi, 0.0, 0.02, 10)
        with jax.set_mesh(eq.grid.mesh):
            out.append(np.asarray(jax.jit(eq.to_real)(psi)))
    np.testing.assert_allclose(out[1], out[0], rtol=0, atol=1e-13)


# a 16^3 smoke run: under-resolved on purpose (the resolution monitor says so; tests/solvers/test_resolution.py)
@pytest.mark.filterwarnings("ignore::solvers.ResolutionWarning")
def test_cli_registry_and_short_runs(tmp_path):
    """Both equations are in the CLI registry and run through the main job (diagnostics CSV with mass); on one
    device (their sharded split steps are the tests above; the main job's sharded runs are test_grid_points.py's)."""
    one = xfft.make_mesh((1,), devices=jax.devices()[:1])
    assert "schrodinger-poisson" in REGISTRY and "gross-pitaevskii" in REGISTRY
    assert "split-step" in INTEGRATORS and "split-step-imaginary" in INTEGRATORS
    cfg = RunConfig(equation="gross-pitaevskii", ic="gaussian", n=16, t_end=0.5, dt=0.05, box_length=16.0,
                    integrator="split-step-imaginary", dtype="float64", out=str(tmp_path / "gp"), progress=False,
                    plots=False, params={"width": 1.5})
    s = run(cfg, mesh=one)
    rows = list(csv.DictReader(open(tmp_path / "gp" / "diagnostics.csv")))
    assert s["steps"] == 10 and abs(s["final"]["mass"] / float(rows[0]["mass"]) - 1) < 1e-13
    assert {"mass", "kinetic", "trap", "interaction", "energy", "chemical_potential"} <= set(rows[0])
    assert 1.5 < s["final"]["energy"] < 3 * (1 / 9 + 9 / 16)  # relaxing from E/N = 2.02 (width 1.5) to 3/2
    cfg = RunConfig(equation="schrodinger-poisson", ic="jeans", n=16, t_end=0.2, dt=0.02, integrator="split-step",
                    dtype="float64", out=str(tmp_path / "sp"), progress=False, plots=False, params={"G": 0.5})
    s = run(cfg, mesh=one)
    m0 = (2 * np.pi) ** 3 * (1 + 0.5e-6)  # rho0 = 1, eps = 1e-3: <|psi|^2> = 1 + eps^2 / 2
    assert s["steps"] == 10 and abs(s["final"]["mass"] / m0 - 1) < 1e-12
