"""The main job (``solvers.run``, its Python API): resume is bit-identical, a checkpoint restores on another mesh,
a blow-up stops with step and time and keeps the last good checkpoint."""

import shutil
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xfft
from solvers import BlowUpError, ConfigError, NavierStokes, ResolutionWarning, RunConfig, SpectralGrid, run
from solvers.io import Checkpoints, read_csv


def _cfg(out, **kw):
    params = {"nu": kw.pop("nu", 0.01), "k0": 3.0, "energy": kw.pop("energy", 0.5)}
    if kw.get("ic") == "taylor-green":
        del params["k0"], params["energy"]
    base = dict(ic="random-isotropic", n=16, t_end=0.5, dtype="float64", integrator="etdrk4", cfl=0.5,
                params=params, diag_every=2, checkpoint_every=3, out=str(out), progress=False, plots=False)
    base.update(kw)
    return RunConfig(**base)


def _one_device():
    """A mesh of one device, where distribution is not the point: the 16^3 ETDRK4 runs of this file (resume,
    legacy checkpoints) run once (:func:`stopped_run`) and resume on it, without the 8-device exchanges."""
    return xfft.make_mesh("slab", devices=jax.devices()[:1])


def _final_state(out, like):
    ck = Checkpoints(out / "checkpoints")
    state, meta = ck.restore(ck.latest_step(), like)
    ck.close()
    return np.asarray(state), meta


# a 16^3 smoke run: under-resolved on purpose (the resolution monitor says so; tests/solvers/test_resolution.py)
_UNDER_RESOLVED = pytest.mark.filterwarnings("ignore::solvers.ResolutionWarning")


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """The uninterrupted 16^3 run (its summary and directory) and the same run stopped after 5 steps (checkpoints
    at steps 3 and 5), on one device, for the tests below to compare with and to copy."""
    root = tmp_path_factory.mktemp("stopped")
    one = _one_device()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResolutionWarning)
        full = run(_cfg(root / "full"), mesh=one)
        part = run(_cfg(root / "part", max_steps=5), mesh=one)
    return full, root / "full", part, root / "part"


@_UNDER_RESOLVED
def test_resume_is_bit_identical_and_restores_on_another_mesh(tmp_path, meshes, stopped_run):
    full, a, part, stopped = stopped_run
    assert full["steps"] >= 8  # adaptive (CFL) steps, so resume must reproduce the dt sequence too
    assert part["steps"] == 5 and part["t"] < 0.5
    assert Checkpoints(stopped / "checkpoints").steps() == [3, 5]
    b, c = tmp_path / "b", tmp_path / "c"
    shutil.copytree(stopped, b)
    shutil.copytree(stopped, c)
    one = _one_device()
    rest = run(_cfg(b, resume=True), mesh=one)
    assert rest["steps"] == full["steps"] and rest["steps_this_run"] == full["steps"] - 5
    for name in ("diagnostics.csv", "spectra.csv"):
        assert (b / name).read_bytes() == (a / name).read_bytes()  # every digit of every row
    like = NavierStokes(SpectralGrid(16, one, dtype=jnp.float64), nu=0.01).abstract_state()
    sa, ma = _final_state(a, like)
    sb, mb = _final_state(b, like)
    assert np.array_equal(sa, sb) and ma["t"] == mb["t"] == 0.5
    # The step-5 checkpoint written on one device continues on a 2 x 4 pencil mesh of 8 devices. (A bit-identical
    # resume on a sharded mesh: tests/solvers/test_controller_cli.py and test_user_equation.py, 8-device slab.)
    other = run(_cfg(c, resume=True, mesh="pencil"), mesh=meshes["pencil"])
    assert other["mesh"] == {"x": 2, "y": 4} and other["steps"] == full["steps"]
    ra, rc = read_csv(a / "diagnostics.csv"), read_csv(c / "diagnostics.csv")
    assert [r["step"] for r in ra] == [r["step"] for r in rc]
    for x, y in zip(ra, rc):
        for col in ("t", "energy", "enstrophy"):
            assert float(y[col]) == pytest.approx(float(x[col]), rel=1e-12, abs=1e-300)


def test_resume_refuses_other_physics_and_overwrite_rules(tmp_path, stopped_run):
    out = tmp_path / "r"
    shutil.copytree(stopped_run[3], out)
    with pytest.raises(ConfigError, match="nu: checkpoint 0.01 vs now 0.02"):
        run(_cfg(out, resume=True, nu=0.02))
    with pytest.raises(ConfigError, match="already holds a run"):
        run(_cfg(out))


def test_blow_up_names_step_and_keeps_last_good_checkpoint(tmp_path, meshes):
    out = tmp_path / "boom"
    cfg = _cfg(out, integrator="rk4", dt=0.5, nu=0.0, energy=50.0, t_end=100.0, checkpoint_every=1, keep=3)
    with pytest.raises(BlowUpError) as info:
        run(cfg, mesh=meshes["slab"])
    err = info.value
    assert err.step >= 2 and err.checkpoint == err.step - 1
    assert f"step {err.step} " in str(err) and f"t = {err.t:.6g}" in str(err)
    assert Checkpoints(out / "checkpoints").latest_step() == err.step - 1  # the last finite state is kept
    rows = read_csv(out / "diagnostics.csv")
    assert all(np.isfinite(float(r["energy"])) for r in rows)


def test_checkpoint_written_before_the_parameter_declarations_resumes(tmp_path):
    """A checkpoint whose metadata has the old RunConfig fields (``n``, ``nu``, ``seed``, ... as main wrote them
    before issue 12) resumes where the physics is the same, to every digit of the uninterrupted run's rows, and
    is refused, naming the parameter, where not."""
    one = _one_device()
    new = tmp_path / "new"  # the uninterrupted Taylor-Green run of 4 steps, checkpoints at steps 2 and 4
    full = run(_cfg(new, ic="taylor-green", max_steps=4, checkpoint_every=2), mesh=one)
    assert full["steps"] == 4
    like = NavierStokes(SpectralGrid(16, one, dtype=jnp.float64), nu=0.01).abstract_state()
    ck = Checkpoints(new / "checkpoints")
    state, meta = ck.restore(2, like)
    ck.close()
    legacy = {"equation": "navier-stokes", "ic": "taylor-green", "n": 16, "nu": 0.01, "dtype": "float64",
              "dealias": "2/3", "integrator": "etdrk4", "dt": None, "cfl": 0.5, "dt_max": 0.1,
              "box_length": 2 * np.pi, "seed": 0, "k0": 3.0, "energy": 0.5, "forcing_epsilon": 0.0, "params": {}}
    old = tmp_path / "old"
    ck = Checkpoints(old / "checkpoints")
    ck.save(2, state, {**{k: meta[k] for k in ("step", "t", "dt")}, "config": legacy})
    ck.close()
    lines = (new / "diagnostics.csv").read_bytes().splitlines(keepends=True)
    assert [line.split(b",")[0] for line in lines] == [b"step", b"0", b"2", b"4"]
    (old / "diagnostics.csv").write_bytes(b"".join(lines[:3]))  # the rows up to the checkpoint's step
    with pytest.raises(ConfigError, match="nu: checkpoint 0.01 vs now 0.02"):
        run(_cfg(old, ic="taylor-green", resume=True, nu=0.02), mesh=one)
    a = run(_cfg(old, ic="taylor-green", resume=True, max_steps=4), mesh=one)
    assert a["steps"] == 4 and a["steps_this_run"] == 2
    assert (old / "diagnostics.csv").read_bytes() == (new / "diagnostics.csv").read_bytes()


def test_2d_checkpoint_written_with_the_nyquist_coefficient_resumes(tmp_path, meshes, monkeypatch):
    """Checkpoints hold the natural half spectrum, Nyquist coefficient included (``n // 2 + 1`` columns), also
    since 2D grids leave it out of their state: a checkpoint of a grid that kept it (as before 2026-11-25, forced
    here) resumes, and the run ends where the uninterrupted run of this version ends, to rounding."""
    import jax

    from solvers.grids.grid import Grid

    kw = dict(equation="navier-stokes-2d", ic="taylor-green", n=16, integrator="rk4", t_end=1.5, diag_every=1)
    a, b = tmp_path / "a", tmp_path / "b"
    full = run(_cfg(a, **kw), mesh=meshes["slab"])
    with monkeypatch.context() as m:
        m.setattr(Grid, "_leaves_out_nyquist", lambda self: False)
        part = run(_cfg(b, max_steps=4, **kw), mesh=meshes["slab"])
    assert part["steps"] == 4 < full["steps"]
    grid = SpectralGrid(16, meshes["slab"], ndim=2, dtype=jnp.float64, order="transposed")
    assert not grid.nyquist
    like = grid.natural_like(jax.ShapeDtypeStruct(grid.spectral_shape, grid.cdtype))
    for out in (a, b):
        state, _ = _final_state(out, like)
        assert state.shape == (16, 9)  # numpy.fft.rfft2's layout, whatever the state's
        assert np.all(state[:, 8] == 0)
    rest = run(_cfg(b, resume=True, **kw), mesh=meshes["slab"])
    assert rest["steps"] == full["steps"] and rest["t"] == full["t"]
    ra, rb = read_csv(a / "diagnostics.csv"), read_csv(b / "diagnostics.csv")
    assert [r["step"] for r in ra] == [r["step"] for r in rb]
    for x, y in zip(ra, rb):
        for col in ("t", "energy", "enstrophy"):
            assert float(y[col]) == pytest.approx(float(x[col]), rel=1e-12, abs=1e-300)
    sa, _ = _final_state(a, like)
    sb, _ = _final_state(b, like)
    np.testing.assert_allclose(sb, sa, rtol=0, atol=1e-13 * np.abs(sa).max())
