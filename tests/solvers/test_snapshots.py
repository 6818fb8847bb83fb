"""Field snapshots: values read back (xarray, sharded loader, VTK's XDMF reader) equal the fields on the devices,
the Taylor-Green initial snapshot equals its closed form, resume truncation, a kill while writing, failed writes,
and the main job's snapshot flags (times landed on exactly; bad input exits 2 before any compute; the command
line's entry point ``solvers.cli.main`` is called in this process, the kill runs in a process of its own)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xfft
from solvers import NavierStokes, RunConfig, SpectralGrid, run
from solvers.cli import main
from solvers.io import SnapshotError, SnapshotWriter, load_snapshot, open_snapshots

ROOT = Path(__file__).resolve().parents[2]
N = 16


@pytest.fixture(scope="module")
def eq_state(meshes):
    """A float64 Navier-Stokes on the pencil mesh (2-D block layout) with a random isotropic state."""
    eq = NavierStokes(SpectralGrid(N, meshes["pencil"], dtype=jnp.float64), nu=0.02)
    return eq, eq.initial_state("random-isotropic", seed=3)


@pytest.fixture(scope="module")
def series(eq_state, tmp_path_factory):
    """Three float32 snapshots of ``eq_state`` (steps 0, 1, 2) and the fields on the devices."""
    eq, state = eq_state
    d = tmp_path_factory.mktemp("snaps") / "snapshots"
    w = SnapshotWriter(d, eq, every=1, config={"nu": 0.02})
    states = [state, 2 * state, 3 * state]
    for step, s in enumerate(states):
        w.after_step(s, step, 0.25 * step, last=step == 2)
    w.close()
    fields = [{k: np.asarray(v) for k, v in jax.jit(eq.physical_fields)(s).items()} for s in states]
    return d, fields


def test_xarray_values_equal_the_fields_on_the_devices(series):
    d, fields = series
    ds = open_snapshots(d)
    assert ds.sizes == {"time": 3, "x": N, "y": N, "z": N}
    assert list(ds.time.values) == [0.0, 0.25, 0.5] and list(ds.step.values) == [0, 1, 2]
    assert np.allclose(ds.x.values, np.arange(N) * 2 * np.pi / N)
    # a writer built directly names the equation by its class (the main job passes its name, e.g. navier-stokes)
    assert ds.attrs["equation"] == "NavierStokes" and json.loads(ds.attrs["parameters"]) == {"nu": 0.02}
    assert json.loads(ds.attrs["grid"])["shape"] == [N, N, N]
    assert set(ds.data_vars) == {"u", "v", "w", "vorticity_x", "vorticity_y", "vorticity_z", "vorticity_magnitude"}
    for i, f in enumerate(fields):
        for name, ref in f.items():
            got = ds[name].isel(time=i).values
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, ref.astype(np.float32))  # exact for the stored dtype
    # lazy indexing reads a slice across time
    np.testing.assert_array_equal(ds.u[:, 3, :, 5].values, np.stack([f["u"][3, :, 5] for f in fields]).astype("f4"))


def test_no_process_file_holds_a_global_field(series):
    d, _ = series
    with h5py.File(d / "snap_00000.p0000.h5") as f:
        blocks = list(f["u"])
        assert len(blocks) == 8 and all(f["u"][b].shape == (N // 2, N // 4, N) for b in blocks)
    with h5py.File(d / "snap_00000.h5") as f:
        assert f["u"].is_virtual and f["u"].shape == (N, N, N)


def test_load_snapshot_is_sharded_on_the_given_mesh(series, meshes):
    d, fields = series
    for kind in ("slab", "pencil"):
        a = load_snapshot(d, "vorticity_z", meshes[kind], time=0.25)
        assert a.sharding == xfft.real_sharding(meshes[kind], (N, N, N))
        np.testing.assert_array_equal(np.asarray(a), fields[1]["vorticity_z"].astype(np.float32))
    assert load_snapshot(d, "u").shape == (N, N, N)
    with pytest.raises(ValueError, match="unknown field 'p'"):
        load_snapshot(d, "p")
    with pytest.raises(ValueError, match="no snapshot at time=0.3"):
        load_snapshot(d, "u", time=0.3)


def test_vtk_xdmf_reader_sees_every_field(series):
    import vtk  # the [io] extra (in dev) installs it: a missing vtk must fail, not skip
    from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline as S

    d, fields = series
    r = vtk.vtkXdmfReader()
    r.SetFileName(str(d / "snapshots.xmf"))
    r.UpdateInformation()
    assert tuple(r.GetOutputInformation(0).Get(S.TIME_STEPS())) == (0.0, 0.25, 0.5)
    r.UpdateTimeStep(0.25)
    out = r.GetOutputDataObject(0)
    assert out.GetDimensions() == (N, N, N) and out.GetNumberOfPoints() == N ** 3
    assert out.GetBounds() == pytest.approx((0, 2 * np.pi * (N - 1) / N) * 3)
    pd = out.GetPointData()
    assert pd.GetNumberOfArrays() == 7
    for name, ref in fields[1].items():
        a = pd.GetArray(name)
        ref = ref.astype(np.float32)
        assert a.GetNumberOfTuples() == ref.size
        assert a.GetRange() == (float(ref.min()), float(ref.max()))


def test_taylor_green_initial_snapshot_equals_its_closed_form(meshes, tmp_path):
    eq = NavierStokes(SpectralGrid(N, meshes["slab"], dtype=jnp.float32), nu=0.01)
    w = SnapshotWriter(tmp_path, eq, every=10)
    w.after_step(eq.initial_state("taylor-green"), 0, 0.0)
    ds = open_snapshots(tmp_path / "snapshots.xmf").isel(time=0)
    x, y, z = np.meshgrid(*(np.arange(N) * 2 * np.pi / N,) * 3, indexing="ij")
    exact = {"u": np.sin(x) * np.cos(y) * np.cos(z), "v": -np.cos(x) * np.sin(y) * np.cos(z), "w": 0 * x,
             "vorticity_x": -np.cos(x) * np.sin(y) * np.sin(z), "vorticity_y": -np.sin(x) * np.cos(y) * np.sin(z),
             "vorticity_z": 2 * np.sin(x) * np.sin(y) * np.cos(z)}
    exact["vorticity_magnitude"] = np.sqrt(exact["vorticity_x"] ** 2 + exact["vorticity_y"] ** 2
                                           + exact["vorticity_z"] ** 2)
    for name, ref in exact.items():
        np.testing.assert_allclose(ds[name].values, ref, atol=2e-6, err_msg=name)


def test_resume_drops_later_snapshots_and_appends(eq_state, tmp_path):
    eq, state = eq_state
    w = SnapshotWriter(tmp_path, eq, every=2, dtype="float64")
    for step in range(7):
        w.after_step(state, step, 0.1 * step)
    assert [e["step"] for e in w.entries] == [0, 2, 4, 6]
    w2 = SnapshotWriter(tmp_path, eq, every=2, dtype="float64", resume_step=3)
    assert [e["step"] for e in w2.entries] == [0, 2]
    assert not (tmp_path / "snap_00002.h5").exists() and not (tmp_path / "snap_00003.p0000.h5").exists()
    w2.after_step(state, 3, 0.3)  # the restored step: nothing due
    w2.after_step(state, 4, 0.4)
    ds = open_snapshots(tmp_path)
    assert list(ds.step.values) == [0, 2, 4] and ds.u.dtype == np.float64
    np.testing.assert_array_equal(ds.u.isel(time=2).values, np.asarray(jax.jit(eq.physical_fields)(state)["u"]))
    SnapshotWriter(tmp_path, eq, every=2)  # a new run starts a new series
    assert json.loads((tmp_path / "snapshots.json").read_text())["snapshots"] == []
    assert not list(tmp_path.glob("snap_*"))


def test_a_failed_write_is_a_clear_error(eq_state, tmp_path):
    eq, state = eq_state
    w = SnapshotWriter(tmp_path, eq, times=(0.5, 1.0))
    assert (w.stop_time(0.0), w.stop_time(0.5), w.stop_time(1.0)) == (0.5, 1.0, None)
    (tmp_path / "snap_00000.p0000.h5").mkdir()  # the rename onto it fails (like a full disk or no permission)
    with pytest.raises(SnapshotError, match=r"writing its blocks of snapshot 0 \(step 3\) in .* failed"):
        w.after_step(state, 3, 0.5)
    assert w.entries == [] and not list(tmp_path.glob(".*tmp*"))
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        SnapshotWriter(tmp_path, eq, dtype="float16")
    with pytest.raises(ValueError, match="times must be finite and > 0"):
        SnapshotWriter(tmp_path, eq, times=(0.0,))


def test_a_field_named_like_the_coordinates_group_is_refused(eq_state, tmp_path, monkeypatch):
    eq, state = eq_state
    monkeypatch.setattr(eq, "physical_fields", lambda s: {"coordinates": eq.grid.backward(s[0])})
    with pytest.raises(ValueError, match="names a field 'coordinates', the master files' group of axis points"):
        SnapshotWriter(tmp_path, eq, every=1)


def test_without_h5py_the_error_names_the_extra(eq_state, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=r'pip install "xfft\[io\]"'):
        SnapshotWriter(tmp_path, eq_state[0], every=1)


def test_cli_reports_a_failed_snapshot_write_in_one_line(tmp_path, capsys):
    (tmp_path / "snapshots").mkdir()
    (tmp_path / "snapshots" / "snap_00001.p0000.h5").mkdir()  # snapshot 1 cannot be renamed into place
    # the run of test_run_lands_on_snapshot_times_and_resumes below (the same programs), from the command line
    code = _cli("--dt", "0.04", "--t-end", "0.3", "--snapshot-every", "4", "--snapshot-times", "0.1,0.25",
                "--max-steps", "5", "--dtype", "float64", "--snapshot-dtype", "float64", "--no-plots",
                "--no-progress", "--out", str(tmp_path))
    err = capsys.readouterr().err
    assert code == 1, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("python -m solvers: error: writing its blocks of snapshot 1 (step 3)"), err


KILL = textwrap.dedent("""
    import os, signal, sys
    import jax, jax.numpy as jnp, h5py
    import xfft
    from solvers import NavierStokes, SpectralGrid
    from solvers.io import SnapshotWriter
    eq = NavierStokes(SpectralGrid(16, xfft.make_mesh("slab"), dtype=jnp.float32), nu=0.01)
    state = eq.initial_state("taylor-green")
    w = SnapshotWriter(sys.argv[1], eq, every=1)
    w.after_step(state, 0, 0.0)
    w.after_step(state, 1, 0.5)
    calls = 0
    create = h5py.Group.create_dataset
    def dying(self, *a, **k):  # SIGKILL in the middle of the third snapshot's block file
        global calls
        calls += 1
        if calls == 20:
            os.kill(os.getpid(), signal.SIGKILL)
        return create(self, *a, **k)
    h5py.Group.create_dataset = dying
    w.after_step(state, 2, 1.0)
""")


def test_killed_while_writing_leaves_earlier_snapshots_readable(tmp_path):
    import vtk  # the [io] extra (in dev) installs it
    script = tmp_path / "kill.py"
    script.write_text(KILL)
    env = dict(os.environ, PYTHONPATH=str(ROOT), XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "s")], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == -9, r.stderr[-3000:]
    assert list((tmp_path / "s").glob(".snap_00002.p0000.h5.tmp-*"))  # killed mid-file
    ds = open_snapshots(tmp_path / "s")
    assert list(ds.time.values) == [0.0, 0.5]
    assert float(ds.u.isel(time=1).max()) == pytest.approx(1.0, abs=1e-6)
    reader = vtk.vtkXdmfReader()
    reader.SetFileName(str(tmp_path / "s" / "snapshots.xmf"))
    reader.UpdateTimeStep(0.5)
    assert reader.GetOutputDataObject(0).GetPointData().GetArray("u").GetRange()[1] == pytest.approx(1.0, abs=1e-6)


def test_run_lands_on_snapshot_times_and_resumes(tmp_path):
    cfg = RunConfig(n=16, t_end=0.3, dt=0.04, out=str(tmp_path), snapshot_every=4, snapshot_times=(0.1, 0.25),
                    progress=False, plots=False, max_steps=5, dtype="float64", snapshot_dtype="float64")
    run(cfg)
    first = open_snapshots(tmp_path)
    assert list(first.step.values) == [0, 3, 4]
    run(RunConfig(**{**cfg.__dict__, "max_steps": None, "resume": True}))
    ds = open_snapshots(tmp_path)
    assert list(ds.time.values) == pytest.approx([0.0, 0.1, 0.14, 0.25, 0.29, 0.3], abs=1e-12)
    assert ds.time.values[1] == 0.1 and ds.time.values[3] == 0.25 and ds.time.values[5] == 0.3  # exactly
    assert list(ds.step.values) == [0, 3, 4, 7, 8, 9]


def _cli(*args) -> int:
    """``python -m solvers run navier-stokes --n 16 ARGS`` through its entry point, in this process."""
    return main(["run", "navier-stokes", "--n", "16", *args])


@pytest.mark.parametrize(("args", "message"), [
    (["--t-end", "1", "--snapshot-times", "0.5,2"], "--snapshot-times: every time must lie in (0, t_end = 1], got 2.0"),
    (["--snapshot-times", "0"], "--snapshot-times: every time must lie in (0, t_end = 1], got 0.0"),
    (["--snapshot-times", "0.5,x"], "--snapshot-times expects comma-separated times"),
    (["--snapshot-every", "-1"], "--snapshot-every must be an integer >= 0, got -1"),
    (["--snapshot-every", "1", "--snapshot-dtype", "float16"], "--snapshot-dtype must be float32 or float64"),
    (["--snapshot-every", "1", "--out", "{file}/run"], "is not writable"),
    (["--snapshot-every", "1", "--out", "{dir}"], "output directory '{dir}/snapshots' is not writable"),
])
def test_bad_snapshot_flags_exit_2_before_any_compute(tmp_path, capsys, args, message):
    (tmp_path / "file").write_text("x")
    (tmp_path / "snapshots").write_text("a file where the directory goes")
    args = [a.format(file=tmp_path / "file", dir=tmp_path) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "run")]
    code = _cli(*args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert message.format(dir=tmp_path) in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "checkpoints").exists()
