"""Snapshots open with their true coordinates and every field in every reader a user has for ``snapshots.xmf``: the
three XDMF readers of Debian's ParaView 5.11 (``Xdmf3ReaderS``, which ``OpenDataFile`` and a double-click pick,
``Xdmf3ReaderT`` and the legacy ``XDMFReader``) through one ``pvpython`` process, pip's VTK (``vtkXdmfReader``)
and xarray (``open_snapshots``). The series: a laminar channel in 2D and 3D and no-slip convection (Chebyshev points
across, a structured mesh) and a periodic Taylor-Green box (uniform, origin and spacing), float32 as written by
default; every reader is asked for the second snapshot (t = 0.5, twice the initial state)."""

import json
import math
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers import Channel, NavierStokes, RayleighBenardNoSlip, SpectralGrid, wall_grid
from solvers.job import lookup
from solvers.outputs import SnapshotWriter, open_snapshots

PVPYTHON = shutil.which("pvpython")
READERS = ("Xdmf3ReaderS", "Xdmf3ReaderT", "XDMFReader")
T = 0.5
EPS = float(np.finfo(np.float32).eps)

# pvpython (ParaView's own Python): argv = output directory, then (case, .xmf) pairs; for each case and reader
# the time steps, the class, every point and every point field at time T, one .npz each (written as it goes, so
# a reader that crashes is the last one printed)
READ = f"""
import json, sys
import numpy as np
from paraview import simple, servermanager
from vtkmodules.util.numpy_support import vtk_to_numpy
out, pairs = sys.argv[1], sys.argv[2:]
for case, xmf in zip(pairs[::2], pairs[1::2]):
    picked = simple.OpenDataFile(xmf)
    default = picked.GetXMLName()
    simple.Delete(picked)
    for name in {READERS!r}:
        print("READING", case, "with", name, flush=True)  # the last line before a crash names the culprit
        r = getattr(simple, name)(**({{"FileNames": [xmf]}} if name == "XDMFReader" else {{"FileName": [xmf]}}))
        r.UpdatePipeline({T!r})
        b = servermanager.Fetch(r)
        while b.IsA("vtkMultiBlockDataSet"):
            b = b.GetBlock(0)
        pd = b.GetPointData()
        fields = {{pd.GetArrayName(i): vtk_to_numpy(pd.GetArray(i)) for i in range(pd.GetNumberOfArrays())}}
        points = np.array([b.GetPoint(i) for i in range(b.GetNumberOfPoints())]).reshape(-1, 3)
        meta = json.dumps({{"default": default, "times": list(r.TimestepValues), "class": b.GetClassName()}})
        arrays = {{"field_" + k: v for k, v in fields.items()}}
        np.savez(f"{{out}}/{{case}}.{{name}}.npz", points=points, meta=meta, **arrays)
        simple.Delete(r)
print("READ ALL")
"""


@dataclass
class Case:
    directory: Path
    shape: tuple[int, ...]
    axes: dict[str, np.ndarray]  # each array axis's name and points, in array order
    vtk: tuple[str | None, ...]  # the axis that VTK's X, Y, Z run along (None: constant 0)
    fields: dict[str, np.ndarray]  # at time T, as written (float32)
    exact: dict[str, np.ndarray]  # closed forms at time T on the true points (float64)


def _series(directory: Path, eq, state, vtk, exact) -> Case:
    w = SnapshotWriter(directory, eq, every=1)
    w.after_step(state, 0, 0.0)
    w.after_step(2 * state, 1, T, last=True)
    fields = {k: np.asarray(v, np.float32) for k, v in jax.jit(eq.physical_fields)(2 * state).items()}
    names = json.loads((directory / "snapshots.json").read_text())["grid"]["names"]
    axes = {n: np.asarray(b.points(), float) for n, b in zip(names, eq.grid.bases)}
    return Case(directory, eq.grid.shape, axes, vtk, fields, exact(axes))


def _laminar(axes):
    """U = 1 - y^2 (twice it at T), no wall-normal or spanwise velocity, on the grid's points."""
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    y = mesh[list(axes).index("y")]
    return {"u": 2 * (1 - y ** 2), "v": 0 * y, **({"w": 0 * y} if "z" in axes else {})}


def _conduction(axes):
    """At rest: no velocity (the temperature's closed form is checked in test_snapshots_walls)."""
    z = np.meshgrid(*axes.values(), indexing="ij")[0]
    return {"u": 0 * z, "w": 0 * z}


@pytest.fixture(scope="module")
def cases(meshes, tmp_path_factory) -> dict[str, Case]:
    root = tmp_path_factory.mktemp("readers")
    out = {}
    for shape in [(17, 8), (17, 8, 8)]:
        eq = Channel(wall_grid(shape, meshes["slab"], dtype=jnp.float64, lengths=(6.0, 3.0)[: len(shape) - 1]))
        vtk = ("x", "y", "z") if len(shape) == 3 else ("x", "y", None)  # VTK's X, Y(, Z): the named axes
        out[f"channel-{len(shape)}d"] = _series(root / f"channel{len(shape)}", eq, eq.initial_state("laminar"),
                                                vtk, _laminar)
    grid = lookup(RayleighBenardNoSlip)[0].grid((17, 16), meshes["slab"], (1.0, 2.0), dtype=jnp.float64,
                                                dealias="2/3", backend=None)
    eq = RayleighBenardNoSlip(grid)
    out["convection-2d"] = _series(root / "convection", eq, eq.initial_state("single-mode"), ("x", "z", None),
                                   _conduction)
    eq = NavierStokes(SpectralGrid((8, 6, 4), meshes["pencil"], dtype=jnp.float64, box_length=(2.0, 3.0, 4.0)),
                      nu=0.01)
    # uniform: X along the last array axis (z), Z along the first (x)
    out["periodic-3d"] = _series(root / "periodic", eq, eq.initial_state("taylor-green"), ("z", "y", "x"),
                                 lambda axes: {})
    lobatto = np.cos(np.pi * np.arange(16, -1, -1) / 16)  # the points every reader must show across the walls
    for name in ("channel-2d", "channel-3d"):
        np.testing.assert_allclose(out[name].axes["y"], lobatto, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out["convection-2d"].axes["z"], (1 + lobatto) / 2, rtol=0, atol=1e-15)
    return out


def _check(case: Case, points: np.ndarray, fields: dict[str, np.ndarray], who: str) -> None:
    """Every point where the grid has it (VTK's point order: X's index fastest, the array's C order) and every
    field equal to what was written and to its closed form."""
    n = math.prod(case.shape)
    assert points.shape == (n, 3), f"{who}: {points.shape[0]} points, expected {n}"
    expected = np.zeros(case.shape + (3,))
    mesh = dict(zip(case.axes, np.meshgrid(*case.axes.values(), indexing="ij")))
    for c, name in enumerate(case.vtk):
        if name is not None:
            expected[..., c] = mesh[name]
    scale = max(np.abs(p).max() for p in case.axes.values())
    np.testing.assert_allclose(points.reshape(expected.shape), expected, rtol=0, atol=4 * EPS * scale,
                               err_msg=f"{who}: coordinates")
    assert set(fields) == set(case.fields), who
    for name, ref in case.fields.items():
        np.testing.assert_array_equal(np.reshape(fields[name], case.shape), ref, err_msg=f"{who}: {name}")
    for name, ref in case.exact.items():
        np.testing.assert_allclose(np.reshape(fields[name], case.shape), ref, rtol=0, atol=8 * EPS,
                                   err_msg=f"{who}: {name} against its closed form")


@pytest.fixture(scope="module")
def paraview(cases, tmp_path_factory) -> Path:
    if PVPYTHON is None:
        pytest.skip("Debian's pvpython is not installed (apt-get install paraview python3-paraview): "
                    "ParaView's readers are checked where it is")
    out = tmp_path_factory.mktemp("pvpython")
    pairs = [str(a) for name, c in cases.items() for a in (name, c.directory / "snapshots.xmf")]
    done = subprocess.run([PVPYTHON, "-c", READ, str(out), *pairs], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and "READ ALL" in done.stdout, (
        f"pvpython exited {done.returncode} after {sorted(p.name for p in out.iterdir())}:\n"
        f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return out


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("name", ["channel-2d", "channel-3d", "convection-2d", "periodic-3d"])
def test_paraview_511_readers_open_the_true_grid_and_every_field(paraview, cases, name, reader):
    with np.load(paraview / f"{name}.{reader}.npz") as f:
        meta = json.loads(str(f["meta"]))
        fields = {k.removeprefix("field_"): f[k] for k in f.files if k.startswith("field_")}
        points = f["points"]
    assert meta["default"] == "Xdmf3ReaderS"  # what OpenDataFile (and a double-click) picks for .xmf
    assert meta["times"] == [0.0, T]
    assert meta["class"] == ("vtkStructuredGrid" if name != "periodic-3d" else
                             "vtkImageData" if reader == "XDMFReader" else "vtkUniformGrid")
    _check(cases[name], points, fields, f"{reader} on {name}")


@pytest.mark.parametrize("name", ["channel-2d", "channel-3d", "convection-2d", "periodic-3d"])
def test_pip_vtk_opens_the_true_grid_and_every_field(cases, name):
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    r = vtk.vtkXdmfReader()
    r.SetFileName(str(cases[name].directory / "snapshots.xmf"))
    r.UpdateInformation()
    times = r.GetOutputInformation(0).Get(vtk.vtkStreamingDemandDrivenPipeline.TIME_STEPS())
    assert list(times) == [0.0, T]
    r.UpdateTimeStep(T)
    b = r.GetOutputDataObject(0)
    while b.IsA("vtkMultiBlockDataSet"):
        b = b.GetBlock(0)
    pd = b.GetPointData()
    fields = {pd.GetArrayName(i): vtk_to_numpy(pd.GetArray(i)) for i in range(pd.GetNumberOfArrays())}
    points = np.array([b.GetPoint(i) for i in range(b.GetNumberOfPoints())]).reshape(-1, 3)
    _check(cases[name], points, fields, f"pip VTK {vtk.vtkVersion.GetVTKVersion()} on {name}")


@pytest.mark.parametrize("name", ["channel-2d", "channel-3d", "convection-2d", "periodic-3d"])
def test_xarray_opens_the_true_grid_and_every_field(cases, name):
    case = cases[name]
    ds = open_snapshots(case.directory).sel(time=T)
    assert dict(ds.sizes) == dict(zip(case.axes, case.shape))
    for axis, pts in case.axes.items():
        np.testing.assert_array_equal(ds[axis].values, pts, err_msg=axis)
    assert set(ds.data_vars) == set(case.fields)
    for field, ref in case.fields.items():
        assert ds[field].dims == tuple(case.axes)
        np.testing.assert_array_equal(ds[field].values, ref, err_msg=field)
    for field, ref in case.exact.items():
        np.testing.assert_allclose(ds[field].values, ref, rtol=0, atol=8 * EPS, err_msg=field)



def test_a_series_resumed_from_one_array_per_axis_gets_point_coordinates(cases, tmp_path):
    """A wall series written with one coordinate array per axis (``axis0``, ``axis1``) is given the point
    coordinates when a run resumes it, and opens on its true grid."""
    import h5py
    import vtk

    case = cases["channel-2d"]
    d = tmp_path / "resumed"
    shutil.copytree(case.directory, d)
    with h5py.File(d / "coordinates.h5", "w") as f:
        for i, pts in enumerate(np.meshgrid(*case.axes.values(), indexing="ij")):
            f[f"axis{i}"] = pts.astype(np.float32)
    eq = Channel(wall_grid(case.shape, None, dtype=jnp.float64, lengths=(6.0,)))
    SnapshotWriter(d, eq, every=1, resume_step=1)
    r = vtk.vtkXdmfReader()
    r.SetFileName(str(d / "snapshots.xmf"))
    r.UpdateTimeStep(T)
    b = r.GetOutputDataObject(0)
    points = np.array([b.GetPoint(i) for i in range(b.GetNumberOfPoints())]).reshape(-1, 3)
    pd = b.GetPointData()
    fields = {pd.GetArrayName(i): np.asarray(pd.GetArray(i)) for i in range(pd.GetNumberOfArrays())}
    _check(case, points, fields, "pip VTK on a resumed series")
