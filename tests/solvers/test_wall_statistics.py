"""Statistics of wall flows against exactly known fields (laminar Poiseuille flow; a small Tollmien-Schlichting wave,
whose rms profile is the Orr-Sommerfeld eigenfunction's), identical after an interrupted and resumed run, and a
restart at another resolution that keeps the kept modes exactly."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers import Channel, FixedStep, simulate, wall_grid
from solvers.job.resume import restore
from solvers.outputs import Checkpoints, Statistics, open_statistics, read_csv, wall_units
from solvers.stability import orr_sommerfeld

RE = 2000.0


def _channel(shape, mesh, Re=RE):
    return Channel(wall_grid(shape, mesh, walls=(-1.0, 1.0), lengths=(2 * math.pi,) + (math.pi,) * (len(shape) - 2),
                             dtype=jnp.float64), Re=Re)


@pytest.mark.parametrize("shape", [(17, 8, 8), (16, 16)], ids=["3d", "2d-wall-axis-of-8k-points"])
def test_laminar_poiseuille_statistics_are_exact(meshes, tmp_path, shape):
    """(16 wall points on 8 devices: the physical fields are sharded along the wall axis, the statistics not.)"""
    eq = _channel(shape, meshes["slab"])
    stats = Statistics(tmp_path, every=2, batch=2, derive=wall_units.channel)
    simulate(eq, t_end=0.1, y0=eq.initial_state("laminar"), controller=FixedStep(0.01), outputs=[stats])
    rows = read_csv(tmp_path / "statistics.csv")
    y = np.array([float(r["y"]) for r in rows])
    np.testing.assert_allclose([float(r["U"]) for r in rows], 1 - y ** 2, atol=1e-13)
    for col in ("u_rms", "v_rms", "w_rms", "uv", "W"):
        assert max(abs(float(r[col])) for r in rows) < 1e-12, col
    s = stats.scalars
    assert s["samples"] == 5 and s["batches"] == 2  # steps 2, 4, 6, 8, 10 in batches of 2
    assert s["u_tau"] == pytest.approx(math.sqrt(2 / RE), rel=1e-12)  # wall shear nu dU/dy = 2 nu
    assert s["re_tau"] == pytest.approx(math.sqrt(2 * RE), rel=1e-12)
    assert s["bulk_velocity"] == pytest.approx(2 / 3, rel=1e-13)
    assert s["c_f"] == pytest.approx(2 * (2 / RE) / (2 / 3) ** 2, rel=1e-12)
    assert s["U_c_plus"] == pytest.approx(1 / math.sqrt(2 / RE), rel=1e-12)
    yp, up = np.array([float(r["y_plus"]) for r in rows]), np.array([float(r["U_plus"]) for r in rows])
    lower = y <= 0
    np.testing.assert_allclose(up[lower], (1 - y[lower] ** 2) / math.sqrt(2 / RE), rtol=1e-12)
    np.testing.assert_allclose(yp[lower], (1 + y[lower]) * math.sqrt(2 / RE) * RE, rtol=1e-12)
    ds = open_statistics(tmp_path)  # the HDF5 file, with xarray
    np.testing.assert_array_equal(ds["U"].values, [float(r["U"]) for r in rows])
    assert ds.attrs["samples"] == 5 and (tmp_path / "statistics.png").exists()


def test_a_tollmien_schlichting_wave_has_the_orr_sommerfeld_rms_profile(meshes, tmp_path):
    eq = _channel((65, 8), meshes["slab"], Re=10000.0)
    amp = 1e-4
    stats = Statistics(tmp_path, every=1, derive=wall_units.channel)
    simulate(eq, t_end=0.2, y0=eq.initial_state("tollmien-schlichting", amplitude=amp),
             controller=FixedStep(0.02), outputs=[stats])
    y = stats.columns["y"]
    _, coeffs = orr_sommerfeld.least_stable_mode(10000.0, 1.0, n=96)
    u_hat, v_hat = (np.abs(f) for f in orr_sommerfeld.mode_fields(coeffs, 1.0, y))
    u_rms, v_rms = stats.columns["u_rms"], stats.columns["v_rms"]
    # the profiles are the eigenfunction's (u' = Re(u_hat exp(i alpha x)): rms |u_hat| / sqrt 2), in shape and in
    # the ratio of v to u; the amplitude to the normalization of the mode (its maximum between points)
    # (1e-5: the 65 points resolve the mode of the 97-point eigen-solver to that; 2e-6 of the peak: the O(amplitude)
    # harmonic and mean-flow distortion)
    np.testing.assert_allclose(u_rms / u_rms.max(), u_hat / u_hat.max(), rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(v_rms / u_rms.max(), v_hat / u_hat.max(), rtol=1e-5, atol=2e-6)
    assert u_rms.max() == pytest.approx(amp / math.sqrt(2), rel=2e-3)
    assert np.max(np.abs(stats.columns["U"] - (1 - y ** 2))) < 1e-7  # the mean flow: laminar to O(amplitude^2)


def test_statistics_continue_identically_after_a_resume(tmp_path):
    """Twenty steps straight, or a run stopped after ten (checkpoints every six) and resumed to the end: the same
    statistics, byte for byte (a 2D channel: the accumulators do not depend on the dimension, and its programs
    compile faster)."""
    base = dict(equation="channel", ic="turbulent", n=(17, 8), dtype="float64", dt=0.01, params={"Re": 1000.0},
                stats_every=2, checkpoint_every=6, diag_every=2, progress=False, plots=False)
    solvers.run(solvers.RunConfig(**base, t_end=0.2, out=str(tmp_path / "straight")))
    solvers.run(solvers.RunConfig(**base, t_end=0.2, max_steps=10, out=str(tmp_path / "split")))  # interrupted
    solvers.run(solvers.RunConfig(**base, t_end=0.2, out=str(tmp_path / "split"), resume=True))
    a = (tmp_path / "straight" / "statistics.csv").read_text()
    b = (tmp_path / "split" / "statistics.csv").read_text()
    assert a == b and len(a.splitlines()) == 18


@pytest.mark.filterwarnings("ignore::solvers.ResolutionWarning")  # a 16^3 random field: under-resolved on purpose
def test_restart_at_another_resolution_keeps_the_kept_modes(tmp_path, meshes):
    cfg = dict(equation="navier-stokes", ic="random-isotropic", dtype="float64", dt=0.01, t_end=0.02,
               progress=False, plots=False, out=str(tmp_path / "run"))
    solvers.run(solvers.RunConfig(**cfg, n=16))
    store = Checkpoints(tmp_path / "run" / "checkpoints")
    coarse = np.asarray(store.restore(2, jax.ShapeDtypeStruct((3, 16, 16, 9), jnp.complex128))[0])
    store.close()
    spec, mesh = solvers.REGISTRY["navier-stokes"], meshes["slab"]
    coarse_eq = solvers.NavierStokes(solvers.SpectralGrid(16, None, dtype=jnp.float64))  # natural order
    coarse_energy = jax.jit(coarse_eq.energy)  # one program for both resolutions' kept modes
    for n in (24, 8):  # finer: the same field; coarser: the kept modes
        grid = spec.grid((n,) * 3, mesh, (2 * math.pi,) * 3, dtype=jnp.float64, dealias="2/3", backend=None)
        eq = solvers.NavierStokes(grid)
        later = solvers.RunConfig(**{**cfg, "n": n}, resume=True)
        start = restore(later, solvers.job.resolve(later), grid, eq)
        assert start.resized_from == (16, 16, 16) and start.step == 2
        with jax.set_mesh(mesh):
            new = np.asarray(jax.device_get(jax.jit(grid.to_natural)(start.state)))
        m = 8 if n > 16 else -(-n // 3)  # finer: every mode; coarser: those its 2/3 rule keeps (|k| < n / 3)
        k = np.r_[0:m, -m + 1:0] if n < 16 else np.r_[0:m, -m:0]
        common = np.ix_(range(3), k % n, k % n, range(m))
        old = coarse[np.ix_(range(3), k % 16, k % 16, range(m))]
        np.testing.assert_array_equal(new[common], old)  # the kept modes, exactly
        mask = np.zeros(new.shape, bool)
        mask[common] = True
        assert not np.any(new[~mask])  # nothing else
        kept = np.zeros_like(coarse)
        kept[np.ix_(range(3), k % 16, k % 16, range(m))] = old
        e_kept = float(coarse_energy(jnp.asarray(kept)))  # the energy of the kept modes on 16^3
        assert float(jax.jit(eq.energy)(start.state)) == pytest.approx(e_kept, rel=1e-12)
