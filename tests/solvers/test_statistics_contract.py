"""The statistics output as a user meets it: standard errors NaN before two batches with a warning that says why,
windows that take no sample refused (API: ValueError; command line: exit 2 with one line), convection's columns
by readable names with the temperature profile of the conduction state, the figure's bands and lines, and a
user's wall equation without a reading of its averages (its physical fields' means, rms and covariances)."""

import math
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from matplotlib.collections import PolyCollection

import solvers
import xfft
from solvers import Channel, Equation, FixedStep, RunSpec, simulate, wall_grid
from solvers.cli import main
from solvers.outputs import Statistics, open_statistics, read_csv, wall_units
from solvers.outputs.statistics_plot import figure

RE = 2000.0


def _columns(path) -> tuple[list[str], dict[str, np.ndarray]]:
    rows = read_csv(path)
    return list(rows[0]), {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


#: the main job's laminar 2D channel on one device (the statistics' sharding is not the point:
#: tests/solvers/test_wall_statistics.py), a sample every 2 steps: the three runs below build the same programs
ONE_DEVICE_RUN = dict(ic="laminar", n=(17, 8), dtype="float64", dt=0.01, t_end=0.08, stats_every=2, progress=False,
                      plots=False, params={"Re": RE})


def _one_device():
    return xfft.make_mesh((1,), devices=jax.devices()[:1])


def test_standard_errors_are_nan_before_two_batches_and_the_run_says_why(tmp_path):
    """The main job's channel run: 4 samples, in batches of 10."""
    with pytest.warns(UserWarning, match=r"the _se columns\) are NaN: they need 2 batches of 10 samples, and the "
                                         r"run took 4 samples"):
        solvers.run(solvers.RunConfig(equation="channel", **ONE_DEVICE_RUN, out=str(tmp_path)), mesh=_one_device())
    header, c = _columns(tmp_path / "statistics.csv")
    profiles = header[1: (len(header) + 1) // 2]
    assert "U" in profiles and "u_rms_plus" in profiles  # the channel's reading (wall_units.channel)
    assert header[0] == "y" and header[len(profiles) + 1:] == [f"{k}_se" for k in profiles]  # every one, always
    assert all(np.all(np.isnan(c[f"{k}_se"])) for k in profiles)
    np.testing.assert_allclose(c["U"], 1 - c["y"] ** 2, atol=1e-13)  # the averages themselves are there
    attrs = open_statistics(tmp_path).attrs
    assert math.isnan(attrs["u_tau_se"]) and attrs["batches"] == 0 and attrs["samples"] == 4


def test_a_window_that_takes_no_sample_is_refused_or_reported(convection, tmp_path):
    eq, y0, dt = convection  # (the convection test's run: the same programs; the window is read on the host)
    with pytest.raises(ValueError, match=r"Statistics: start = 0.0005 is at or past the run's t_end = 0.0004: no "
                                         r"sample"):
        simulate(eq, t_end=4e-4, y0=y0, controller=FixedStep(dt),
                 outputs=[Statistics(tmp_path, start=5e-4, every=1, batch=2)])
    # one step, a sample every 2: the main job's run (its programs: those of the runs of 8 steps)
    with pytest.warns(UserWarning, match=r"Statistics: no sample taken \(every 2 steps from t = 0 to t = 0.01\)"):
        solvers.run(solvers.RunConfig(equation="channel", **{**ONE_DEVICE_RUN, "t_end": 0.01}, out=str(tmp_path)),
                    mesh=_one_device())
    assert not (tmp_path / "statistics.csv").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--stats-every", "5", "--stats-start", "50", "--t-end", "0.1"],
     "--stats-start 50 is at or past --t-end 0.1: no statistics sample would be taken"),
    (["--stats-start", "0.05"], "--stats-start given, but statistics are off: give --stats-every N too"),
    (["--preset", "re-tau-180-minimal", "--t-end", "20"],
     "--stats-start 200 (from preset re-tau-180-minimal) is at or past --t-end 20"),
    (["--preset", "re-tau-180-minimal", "--stats-every", "0", "--stats-start", "5"],
     "--stats-start given, but statistics are off"),
], ids=["past-t-end", "statistics-off", "preset-past-t-end", "preset-statistics-off"])
def test_the_command_line_refuses_a_window_without_samples_in_one_line(capsys, tmp_path, args, message):
    grid = [] if "--preset" in args else ["--n", "17", "8"]
    assert main(["run", "channel", *grid, *args, "--out", str(tmp_path / "run"), "--no-compile-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "run").exists()


def test_the_api_names_the_fields(tmp_path):
    cfg = dict(equation="channel", n=(17, 8), out=str(tmp_path))
    with pytest.raises(solvers.ConfigError, match="stats_start 1 is at or past t_end 1") as e:
        solvers.job.resolve(solvers.RunConfig(**cfg, stats_every=2, stats_start=1.0, t_end=1.0))
    assert "stats_start" in e.value.fields and "t_end" in e.value.fields
    with pytest.raises(solvers.ConfigError, match="stats_start 0.5 given, but statistics are off"):
        solvers.job.resolve(solvers.RunConfig(**cfg, stats_start=0.5))
    with pytest.raises(solvers.ConfigError, match=r"stats_every: navier-stokes has no walls \(its grid's axis 0 is "
                                                  r"periodic\).*RunSpec\(statistics=...\)"):
        solvers.job.resolve(solvers.RunConfig(equation="navier-stokes", n=8, stats_every=2, out=str(tmp_path)))
    solvers.job.resolve(solvers.RunConfig(**cfg, stats_every=2, stats_start=0.5))  # a window inside the run


AMPLITUDE = 1e-3


@pytest.fixture(scope="module")
def convection(meshes):
    """Free-slip convection on 8 devices, a single roll of amplitude ``AMPLITUDE`` on the conduction state, and its
    step (the convection test's run, whose programs the API's sampling-window test reuses)."""
    spec = solvers.REGISTRY["rayleigh-benard"].variants["free-slip"]
    grid = spec.grid((8, 16), meshes["slab"], (1.0, 2.0), dtype=jnp.float64, dealias="2/3", backend=None)
    eq = spec.equation(grid, Ra=1000.0, amplitude=AMPLITUDE)
    return eq, eq.initial_state("single-mode"), 1e-4


def test_convection_columns_have_readable_names_and_the_conduction_profile(convection, tmp_path):
    """A single roll of amplitude A on the conduction state of free-slip convection, a few small steps: the mean
    temperature is ``1 - z`` (the roll averages out of every plane) and its rms the roll's ``A sin(pi z) / sqrt 2``,
    diffusing; the coordinate is ``z`` alone."""
    eq, y0, dt = convection
    amp = AMPLITUDE
    stats = Statistics(tmp_path, every=1, batch=2, derive=wall_units.convection)
    simulate(eq, t_end=4e-4, y0=y0, controller=FixedStep(dt), outputs=[stats])
    header, c = _columns(tmp_path / "statistics.csv")
    names = ["T", "T_rms", "wT", "U", "u_rms", "w_rms"]
    assert header == ["z", *names, *(f"{k}_se" for k in names)]
    z = c["z"]
    np.testing.assert_allclose(c["T"], 1 - z, atol=1e-12)
    decay = math.sqrt(np.mean(np.exp(-2 * 2 * np.pi ** 2 * np.arange(1, 5) * 1e-4)))  # kappa (pi^2 + k^2), k = pi
    # (the samples at t = 1e-4 ... 4e-4, before buoyancy acts: the roll's velocity grows from rest as Ra t)
    np.testing.assert_allclose(c["T_rms"], decay * amp * np.sin(np.pi * z) / math.sqrt(2), rtol=1e-4)
    assert np.max(np.abs(c["wT"])) > 0 and np.all(np.isfinite(c["T_se"]))
    ds = open_statistics(tmp_path)
    assert list(ds.dims) == ["z"] and "y" not in ds.variables and ds.attrs["coordinate"] == "z"
    assert ds.attrs["nusselt_volume"] == pytest.approx(1 + float(np.mean(c["wT"])), abs=1e-12)  # <w> = 0


def _synthetic(spanwise: bool, batches: int = 4) -> tuple[dict, dict]:
    """A turbulent-looking channel profile read by :func:`wall_units.channel`, with standard errors."""
    y = -np.cos(np.pi * np.arange(33) / 32)
    m = {"u": 1.2 * (1 - y ** 8), "v": 0 * y, **({"w": 0 * y} if spanwise else {})}
    bump = (1 - y ** 2) * np.exp(-((1 - np.abs(y)) / 0.1))
    cov = {"uu": 0.01 * bump, "vv": 0.002 * bump, "uv": -0.003 * bump * np.sign(-y),
           **({"ww": 0.004 * bump} if spanwise else {})}
    cols, scalars = wall_units.channel(SimpleNamespace(nu=1e-3), y, m, cov)
    cols = {"y": y, **cols, **{f"{k}_se": 0.02 * np.abs(v) for k, v in cols.items()}}
    return cols, {**scalars, "samples": 40, "batches": batches}


@pytest.mark.parametrize("spanwise", [False, True], ids=["2d", "3d"])
def test_the_figure_draws_each_profile_with_its_band_and_no_w_in_2d(tmp_path, spanwise):
    cols, scalars = _synthetic(spanwise)
    left, right = figure(cols, scalars).axes[:2]
    want = ["u_rms+", "v_rms+", *(["w_rms+"] if spanwise else []), "-<u'v'>+"]
    assert [ln.get_label() for ln in right.get_lines()] == want
    assert [t.get_text() for t in right.get_legend().get_texts()] == want
    bands = [p for p in right.collections if isinstance(p, PolyCollection)]
    assert [b.get_label() for b in bands] == [f"{k} ± 2 s.e." for k in want]
    u = next(b for b in bands if b.get_label().startswith("u_rms+"))  # the band spans u_rms+ -+ 2 se
    lower = (cols["y"] <= 0) & (cols["y_plus"] > 0)
    top = np.max(cols["u_rms_plus"][lower] + 2 * cols["u_rms_plus_se"][lower])
    assert np.max(u.get_paths()[0].vertices[:, 1]) == pytest.approx(top, rel=1e-12)
    assert "U+" in [ln.get_label() for ln in left.get_lines()] and len(left.collections) == 1
    assert "bands ± 2 s.e. (4 batches)" in left.get_title()
    cols, scalars = _synthetic(spanwise, batches=1)  # one batch: no band, and the title says so
    cols = {k: (np.full_like(v, np.nan) if k.endswith("_se") else v) for k, v in cols.items()}
    left, right = figure(cols, scalars).axes[:2]
    assert not right.collections and "no error bands: fewer than 2 batches" in left.get_title()


class _NoFields(Channel):
    """A wall equation that names no physical fields."""

    physical_fields = Equation.physical_fields


def _user_grid(shape, mesh, box_length, *, dtype, dealias, backend, points=None):
    return wall_grid(shape, mesh, walls=(-1.0, 1.0), lengths=box_length[1:], dtype=dtype, dealias=dealias,
                     backend=backend)


def test_a_user_wall_equation_gets_the_statistics_of_its_physical_fields(tmp_path):
    # no reading of the averages (statistics=None); the channel's blow-up bound, so that the run's programs are those
    # of the channel's run above (the sampler does not depend on the reading)
    spec = RunSpec("user-channel", Channel, ndims=(2,), integrator="imex", grid=_user_grid,
                   box=lambda ndim, params: (2.0, 2 * math.pi), energy_bound=solvers.REGISTRY["channel"].energy_bound)
    cfg = ONE_DEVICE_RUN
    with pytest.raises(solvers.ConfigError, match=r"stats_every: user-channel has no physical_fields to average: "
                                                  r"implement _NoFields.physical_fields .*RunSpec\(statistics=...\)"):
        solvers.job.resolve(solvers.RunConfig(equation=RunSpec("user-channel", _NoFields, ndims=(2,),
                                                                grid=_user_grid), **cfg, out=str(tmp_path)))
    with pytest.warns(UserWarning, match="standard errors"):  # (one device: the statistics' sharding is not the point)
        solvers.run(solvers.RunConfig(equation=spec, **cfg, out=str(tmp_path / "run")), mesh=_one_device())
    header, c = _columns(tmp_path / "run" / "statistics.csv")
    names = ["u_mean", "u_rms", "v_mean", "v_rms", "u_v_cov"]
    assert header == ["y", *names, *(f"{k}_se" for k in names)]
    np.testing.assert_allclose(c["u_mean"], 1 - c["y"] ** 2, atol=1e-13)
    assert np.max(np.abs(np.stack([c[k] for k in ("u_rms", "v_mean", "v_rms", "u_v_cov")]))) < 1e-12
