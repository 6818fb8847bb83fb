"""Statistics of wall flows against exactly known fields (laminar Poiseuille flow; a small Tollmien-Schlichting wave,
whose rms profile is the Orr-Sommerfeld eigenfunction's), read from the files as a user reads them (the columns of
the documented contract, wall units recomputed by hand from the file's own outer columns and ``u_tau``), identical
after an interrupted and resumed run, and a restart at another resolution that keeps the kept modes exactly."""

import json
import math
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
import xfft
from solvers import Channel, FixedStep, simulate, wall_grid
from solvers.job.resume import restore
from solvers.outputs import Checkpoints, Statistics, open_statistics, read_csv, wall_units
from solvers.stability import orr_sommerfeld

RE = 2000.0
#: the columns of statistics.csv of a channel (the documented contract), 3D; 2D has no W, w_rms, w_rms_plus
CHANNEL = ["y", "U", "W", "u_rms", "v_rms", "w_rms", "uv", "y_plus", "U_plus", "u_rms_plus", "v_rms_plus",
           "w_rms_plus", "uv_plus"]


def contract(columns: list[str]) -> list[str]:
    """The header of statistics.csv: the coordinate, the profiles, then a standard error of each profile."""
    return columns + [f"{c}_se" for c in columns[1:]]


def read_columns(path) -> tuple[list[str], dict[str, np.ndarray]]:
    """The header of a CSV file and its columns as float arrays."""
    rows = read_csv(path)
    return list(rows[0]), {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


def check_wall_units(c: dict[str, np.ndarray], u_tau: float, nu: float) -> None:
    """The wall-unit columns recomputed from the outer ones and ``u_tau`` (walls at y = -1, 1): the distance to the
    nearer wall and the velocity relative to it."""
    y, U = c["y"], c["U"]
    np.testing.assert_allclose(c["y_plus"], (1 - np.abs(y)) * u_tau / nu, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c["U_plus"], np.abs(U - np.where(y <= 0, U[0], U[-1])) / u_tau, rtol=1e-12,
                               atol=1e-12)
    for k in ("u_rms", "v_rms", "w_rms"):
        if k in c:
            np.testing.assert_allclose(c[f"{k}_plus"], c[k] / u_tau, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(c["uv_plus"], c["uv"] / u_tau ** 2, rtol=1e-12, atol=1e-300)


def _channel(shape, mesh, Re=RE):
    return Channel(wall_grid(shape, mesh, walls=(-1.0, 1.0), lengths=(2 * math.pi,) + (math.pi,) * (len(shape) - 2),
                             dtype=jnp.float64), Re=Re)


def test_laminar_poiseuille_statistics_are_exact(meshes, tmp_path):
    """A 3D channel (the full contract: spanwise columns too; the 2D contract is the Tollmien-Schlichting test's)
    with 16 wall points on 8 devices: the physical fields are sharded along the wall axis, the statistics not."""
    shape = (16, 8, 4)
    eq = _channel(shape, meshes["slab"])
    stats = Statistics(tmp_path, every=2, batch=2, derive=wall_units.channel)
    simulate(eq, t_end=0.1, y0=eq.initial_state("laminar"), controller=FixedStep(0.01), outputs=[stats])
    header, c = read_columns(tmp_path / "statistics.csv")
    assert header == contract(CHANNEL)
    y = c["y"]
    np.testing.assert_allclose(c["U"], 1 - y ** 2, atol=1e-13)
    for col in [k for k in header if k.endswith(("_rms", "uv", "_rms_plus", "uv_plus")) or k == "W"]:
        assert np.max(np.abs(c[col])) < 1e-12, col
    s = stats.scalars
    assert s["samples"] == 5 and s["batches"] == 2  # steps 2, 4, 6, 8, 10 in batches of 2
    assert s["u_tau"] == pytest.approx(math.sqrt(2 / RE), rel=1e-12)  # wall shear nu dU/dy = 2 nu
    assert s["re_tau"] == pytest.approx(math.sqrt(2 * RE), rel=1e-12)
    assert s["bulk_velocity"] == pytest.approx(2 / 3, rel=1e-13)
    assert s["c_f"] == pytest.approx(2 * (2 / RE) / (2 / 3) ** 2, rel=1e-12)
    assert s["U_c_plus"] == pytest.approx(1 / math.sqrt(2 / RE), rel=1e-12)
    ds = open_statistics(tmp_path)  # the HDF5 file, with xarray: the same columns, the scalars as attributes
    assert list(ds.data_vars) == header[1:] and ds.attrs["coordinate"] == "y"
    np.testing.assert_array_equal(ds["U"].values, c["U"])
    check_wall_units(c, ds.attrs["u_tau"], 1 / RE)
    assert ds.attrs["samples"] == 5 and ds.attrs["u_tau_se"] < 1e-12 * ds.attrs["u_tau"]  # steady: batches agree
    for k in header[1:]:  # two batches: every standard error is a number (zero to round-off: the flow is steady)
        if k.endswith("_se"):
            assert np.all(np.isfinite(c[k])) and np.max(np.abs(c[k])) < 1e-9 * max(1.0, np.max(np.abs(c[k[:-3]]))), k


def test_a_tollmien_schlichting_wave_has_the_orr_sommerfeld_rms_profile(tmp_path):
    """(One device: the sharded statistics are the laminar test's; 65 wall points resolve the mode.)"""
    eq = _channel((65, 8), None, Re=10000.0)
    amp = 1e-4
    stats = Statistics(tmp_path, every=1, batch=5, derive=wall_units.channel)
    simulate(eq, t_end=0.2, y0=eq.initial_state("tollmien-schlichting", amplitude=amp),
             controller=FixedStep(0.02), outputs=[stats])
    header, c = read_columns(tmp_path / "statistics.csv")
    assert header == contract([k for k in CHANNEL if not k.startswith(("W", "w_"))])  # 2D: no spanwise columns
    check_wall_units(c, stats.scalars["u_tau"], 1 / 10000.0)  # nonzero rms and <u'v'>: the scaling is checked
    assert np.max(np.abs(c["uv_plus"])) > 1e-9 and np.max(c["u_rms_plus"]) > 1e-6
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


@pytest.mark.filterwarnings("ignore:Statistics. the standard errors")  # ten samples: one batch
def test_statistics_continue_identically_after_a_resume(tmp_path):
    """Twenty steps straight (checkpoints at steps 10 and 20, with the statistics' samples), and the same run
    resumed from its step-10 checkpoint (the step-20 checkpoint and the statistics files removed): the same
    statistics, byte for byte, written anew from the restored samples (a small 2D channel on one device: the
    accumulators do not depend on the dimension or the mesh, and its programs compile faster; a run stopped by
    ``max_steps`` and resumed: tests/solvers/test_grid_points.py, tests/solvers/test_wall_resume.py)."""
    base = dict(equation="channel", ic="turbulent", n=(9, 8), dtype="float64", dt=0.01, params={"Re": 1000.0},
                stats_every=2, checkpoint_every=10, diag_every=2, progress=False, plots=False)
    one = xfft.make_mesh((1,), devices=jax.devices()[:1])
    straight, split = tmp_path / "straight", tmp_path / "split"
    solvers.run(solvers.RunConfig(**base, t_end=0.2, out=str(straight)), mesh=one)
    shutil.copytree(straight, split)
    shutil.rmtree(split / "checkpoints" / "20")  # as if stopped after step 10
    written = [f for f in split.iterdir() if f.name.startswith("statistics")]
    assert {f.suffix for f in written} >= {".csv"}
    for f in [*written, split / "run.json"]:
        f.unlink()
    store = Checkpoints(split / "checkpoints")
    assert store.latest_step() == 10
    store.close()
    solvers.run(solvers.RunConfig(**base, t_end=0.2, out=str(split), resume=True), mesh=one)
    a = (straight / "statistics.csv").read_text()
    b = (split / "statistics.csv").read_text()
    assert a == b and len(a.splitlines()) == 10  # the header and the 9 wall points
    summary = json.loads((split / "run.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert summary["statistics"]["batches"] == 1 and summary["statistics"]["u_tau_se"] is None  # strict JSON: null


@pytest.mark.filterwarnings("ignore::solvers.ResolutionWarning")  # a 16^3 random field: under-resolved on purpose
def test_restart_at_another_resolution_keeps_the_kept_modes(tmp_path, meshes):
    cfg = dict(equation="navier-stokes", ic="random-isotropic", dtype="float64", dt=0.01, t_end=0.02,
               progress=False, plots=False, out=str(tmp_path / "run"))
    solvers.run(solvers.RunConfig(**cfg, n=16), mesh=xfft.make_mesh((1,), devices=jax.devices()[:1]))  # onto slab
    store = Checkpoints(tmp_path / "run" / "checkpoints")
    coarse = np.asarray(store.restore(2, jax.ShapeDtypeStruct((3, 16, 16, 9), jnp.complex128))[0])
    store.close()
    spec, mesh = solvers.REGISTRY["navier-stokes"], meshes["slab"]
    coarse_eq = solvers.NavierStokes(solvers.SpectralGrid(16, None, dtype=jnp.float64))  # natural order
    coarse_energy = jax.jit(coarse_eq.energy)  # one program for both resolutions' kept modes
    for n in (24, 8):  # finer: the same field; coarser: the kept modes
        grid = spec.grid((n,) * 3, mesh, (2 * math.pi,) * 3, dtype=jnp.float64, dealias="2/3", backend=None)
        eq = solvers.NavierStokes(grid)
        later = solvers.RunConfig(**{**cfg, "n": n, "t_end": 0.04}, resume=True)  # (a resumed run goes on)
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
