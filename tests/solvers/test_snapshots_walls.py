"""Snapshots of the wall equations carry the true geometry: xarray dimensions named after the grid's axes with the
bases' points as coordinates (Chebyshev points across a channel, cell centres between free-slip plates), VTK's
XDMF reader placing every point where the grid has it, fields equal to their closed forms at those points,
``load_snapshot`` onto another mesh, no spectra for walls, plots on the true coordinates, and series written
before the geometry was recorded still opening as before."""

import json

import h5py
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.polynomial import chebyshev as C

import xfft
from solvers import RunConfig, run
from solvers.equations.channel import Channel
from solvers.equations.rayleigh_benard_no_slip import RayleighBenardNoSlip
from solvers.io import SnapshotWriter, load_snapshot, open_snapshots, plot_history, plot_slice, write_plots
from solvers.job import lookup
from solvers.job.build import build, validate

AMPLITUDE = 1e-2  # the convection cases' initial temperature perturbation (the equation's default)


def _series(tmp_path_factory, cls, shape, box, ic, mesh, ic_params=None, **params):
    """A two-snapshot float64 series of ``cls``'s initial condition ``ic`` (t = 0) and twice it (t = 0.5), written
    by the snapshot writer on ``mesh``; returns the equation, the series directory and the fields on the devices."""
    grid = lookup(cls)[0].grid(shape, mesh, box, dtype=jnp.float64, dealias="2/3", backend=None)  # the job's grid
    eq = cls(grid, **params)
    state = eq.initial_state(ic, **(ic_params or {}))
    d = tmp_path_factory.mktemp(cls.__name__) / "snapshots"
    w = SnapshotWriter(d, eq, every=1, dtype="float64")
    w.after_step(state, 0, 0.0)
    w.after_step(2 * state, 1, 0.5, last=True)
    fields = {k: np.asarray(v) for k, v in jax.jit(eq.physical_fields)(state).items()}
    return eq, d, fields


@pytest.fixture(scope="module")
def channel_2d(tmp_path_factory, meshes):
    """Laminar 2D channel flow, 17 Chebyshev points in y on the slab mesh."""
    return _series(tmp_path_factory, Channel, (17, 8), (2.0, 2 * np.pi), "laminar", meshes["slab"], Re=100.0)


@pytest.fixture(scope="module")
def channel_3d(tmp_path_factory, meshes):
    """3D channel flow with a random solenoidal perturbation (horizontal modes below Nyquist), 9 x 16 x 16 on the
    pencil mesh."""
    return _series(tmp_path_factory, Channel, (9, 16, 16), (2.0, 2 * np.pi, np.pi), "turbulent", meshes["pencil"],
                   ic_params={"amplitude": 0.1, "seed": 1}, Re=100.0)


@pytest.fixture(scope="module")
def no_slip_2d(tmp_path_factory, meshes):
    """No-slip convection at rest with a single-mode temperature perturbation, 17 Chebyshev points in z."""
    return _series(tmp_path_factory, RayleighBenardNoSlip, (17, 16), (1.0, 2.0), "single-mode", meshes["slab"])


@pytest.fixture(scope="module")
def free_slip_run(tmp_path_factory):
    """Two steps of 2D free-slip convection through the main job (8 x 16, slab mesh), a snapshot every step."""
    out = tmp_path_factory.mktemp("free_slip_run")
    cfg = RunConfig(equation="rayleigh-benard", n=(8, 16), box_length=(1.0, 2.0), ic="single-mode", t_end=0.002,
                    dt=0.001, integrator="rk4", dtype="float64", out=str(out), snapshot_every=1,
                    snapshot_dtype="float64", progress=False)
    return run(cfg), out


def _vtk_axes(directory, t: float) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """The points that VTK's XDMF reader places along each array axis of the snapshot at time ``t``: every VTK
    point is reshaped onto the array's grid (VTK's X varies fastest, like the array's last axis), and along each
    array axis exactly one VTK coordinate may vary."""
    import vtk  # the [io] extra (in dev) installs it

    r = vtk.vtkXdmfReader()
    r.SetFileName(str(directory / "snapshots.xmf"))
    r.UpdateTimeStep(t)
    out = r.GetOutputDataObject(0)
    dims = [0, 0, 0]  # (VTK's X, Y, Z point counts; a structured grid fills the array it is given)
    out.GetDimensions(dims)
    shape = tuple(int(n) for n in reversed(dims) if n > 1)
    pts = np.array([out.GetPoint(i) for i in range(out.GetNumberOfPoints())]).reshape(*shape, 3)
    lines = []
    for d in range(len(shape)):
        line = pts[tuple(slice(None) if a == d else 0 for a in range(len(shape)))]  # (n_d, 3)
        moving = np.flatnonzero(np.ptp(line, axis=0) > 0)
        assert moving.size == 1, f"array axis {d} moves VTK coordinates {moving}"
        lines.append(line[:, moving[0]])
    return shape, lines


def _check_geometry(eq, directory, dims: tuple[str, ...]) -> None:
    """xarray and VTK both put the series on the grid's points (the bases' own), with the grid's axis names."""
    ds = open_snapshots(directory)
    assert ds[next(iter(ds.data_vars))].dims == ("time",) + dims
    assert dict(ds.sizes) == {"time": 2, **dict(zip(dims, eq.grid.shape))}
    shape, lines = _vtk_axes(directory, 0.5)
    assert shape == eq.grid.shape
    for d, (name, basis) in enumerate(zip(dims, eq.grid.bases)):
        np.testing.assert_allclose(ds[name].values, basis.points(), rtol=0, atol=1e-15, err_msg=name)
        np.testing.assert_allclose(lines[d], basis.points(), rtol=0, atol=1e-15, err_msg=f"vtk {name}")


def test_channel_2d_series_is_on_the_chebyshev_points(channel_2d, meshes):
    eq, d, fields = channel_2d
    _check_geometry(eq, d, ("y", "x"))
    ds = open_snapshots(d)
    y = np.cos(np.pi * np.arange(16, -1, -1) / 16)  # Gauss-Lobatto points, ascending from the wall y = -1
    np.testing.assert_allclose(ds.y.values, y, atol=1e-15)
    assert ds.y.values[0] == -1.0 and ds.y.values[-1] == 1.0
    assert set(ds.data_vars) == {"u", "v"}
    laminar = np.broadcast_to((1 - ds.y.values ** 2)[:, None], (17, 8))
    np.testing.assert_allclose(ds.u.isel(time=0).values, laminar, atol=1e-13)  # U = 1 - y^2 at the true y
    np.testing.assert_allclose(ds.u.isel(time=1).values, 2 * laminar, atol=1e-13)
    np.testing.assert_allclose(ds.v.values, 0, atol=1e-13)
    grid = json.loads(ds.attrs["grid"])
    assert grid["names"] == ["y", "x"] and grid["origin"] == [-1.0, 0.0] and grid["axes"][0]["basis"] == "Chebyshev"
    with h5py.File(d / "snap_00001.h5") as f:
        assert json.loads(f.attrs["grid"]) == grid
        np.testing.assert_array_equal(f["coordinates/y"][()], eq.grid.bases[0].points())
    xmf = (d / "snapshots.xmf").read_text()
    # a non-uniform axis: a structured mesh with every point's coordinates (every reader, ParaView 5.11 included)
    assert 'TopologyType="2DSMesh" Dimensions="17 8"' in xmf and 'GeometryType="XY"' in xmf
    for kind in ("pencil", "single"):  # written on the slab mesh, read onto another
        a = load_snapshot(d, "u", meshes[kind], index=0)
        assert a.sharding == xfft.real_sharding(meshes[kind] or xfft.make_mesh((1,), devices=jax.devices()[:1]),
                                                (17, 8), ndim=2)
        np.testing.assert_array_equal(np.asarray(a), fields["u"])


def _d_chebyshev(f: np.ndarray, points: np.ndarray, axis: int) -> np.ndarray:
    """``df/dx`` along ``axis`` from values on the ``n`` points (the interpolating polynomial of degree n - 1)."""
    a, b = points[0], points[-1]
    g = np.moveaxis(f, axis, 0)
    c = C.chebfit(2 * (points - a) / (b - a) - 1, g.reshape(len(points), -1), len(points) - 1)
    d = C.chebval(2 * (points - a) / (b - a) - 1, C.chebder(c)).T.reshape(g.shape) * 2 / (b - a)
    return np.moveaxis(d, 0, axis)


def _d_fourier(f: np.ndarray, points: np.ndarray, axis: int) -> np.ndarray:
    """``df/dx`` along a periodic ``axis`` from values on the uniform ``points``."""
    n = len(points)
    k = np.fft.fftfreq(n, points[1] - points[0]) * 2 * np.pi
    return np.real(np.fft.ifft(1j * k.reshape([-1 if d == axis else 1 for d in range(f.ndim)])
                               * np.fft.fft(f, axis=axis), axis=axis))


def test_channel_3d_series_names_y_x_z_and_is_solenoidal(channel_3d, meshes):
    eq, d, fields = channel_3d
    _check_geometry(eq, d, ("y", "x", "z"))
    ds = open_snapshots(d).isel(time=0)
    assert set(ds.data_vars) == {"u", "v", "w"}
    u, v, w = (ds[c].values for c in ("u", "v", "w"))
    # the components are where the names say: du/dx + dv/dy + dw/dz = 0 on the stored coordinates, no slip
    div = _d_fourier(u, ds.x.values, 1) + _d_chebyshev(v, ds.y.values, 0) + _d_fourier(w, ds.z.values, 2)
    scale = np.abs(_d_chebyshev(v, ds.y.values, 0)).max()
    assert scale > 1e-2 and np.abs(div).max() < 1e-11 * scale
    np.testing.assert_allclose(np.stack([u, v, w])[:, [0, -1]], 0, atol=1e-13)
    assert 'TopologyType="3DSMesh" Dimensions="9 16 16"' in (d / "snapshots.xmf").read_text()
    a = load_snapshot(d, "w", meshes["slab"], time=0.0)  # written on the pencil mesh
    np.testing.assert_array_equal(np.asarray(a), fields["w"])


def test_no_slip_convection_series_is_on_the_chebyshev_points(no_slip_2d):
    eq, d, fields = no_slip_2d
    _check_geometry(eq, d, ("z", "x"))
    ds = open_snapshots(d).isel(time=0)
    assert set(ds.data_vars) == {"u", "w", "temperature"}
    z, x = np.meshgrid(ds.z.values, ds.x.values, indexing="ij")
    exact = 1 - z + AMPLITUDE * np.cos(2 * np.pi * x / 2.0) * np.sin(np.pi * z)  # conduction + the mode, at rest
    np.testing.assert_allclose(ds.temperature.values, exact, atol=1e-9)
    np.testing.assert_allclose(ds.u.values, 0, atol=1e-12)
    np.testing.assert_allclose(ds.w.values, 0, atol=1e-12)
    assert ds.z.values[0] == 0.0 and ds.z.values[-1] == 1.0  # both plates are grid points


def test_free_slip_run_writes_cell_centred_snapshots_and_no_spectra(free_slip_run, meshes):
    summary, out = free_slip_run
    d = out / "snapshots"
    ds = open_snapshots(out)
    assert ds.temperature.dims == ("time", "z", "x") and list(ds.step.values) == [0, 1, 2]
    z = (np.arange(8) + 0.5) / 8  # cell centres: the plates are half a cell outside the first and last points
    np.testing.assert_allclose(ds.z.values, z, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ds.x.values, np.arange(16) * 2.0 / 16, rtol=0, atol=1e-15)
    zz, xx = np.meshgrid(z, ds.x.values, indexing="ij")
    exact = 1 - zz + AMPLITUDE * np.cos(np.pi * xx) * np.sin(np.pi * zz)
    np.testing.assert_allclose(ds.temperature.isel(time=0).values, exact, atol=1e-14)
    xmf = (d / "snapshots.xmf").read_text()
    assert 'TopologyType="2DCoRectMesh" Dimensions="8 16"' in xmf  # uniform: origin (first point) and spacing
    assert 'Format="XML">0.0625 0.0</DataItem>' in xmf
    shape, lines = _vtk_axes(d, ds.time.values[-1])
    assert shape == (8, 16)
    np.testing.assert_allclose(lines[0], z, rtol=0, atol=1e-15)
    np.testing.assert_allclose(lines[1], ds.x.values, rtol=0, atol=1e-15)
    assert not (out / "spectra.csv").exists() and not (out / "spectrum.png").exists()
    assert sorted(p.rsplit("/", 1)[1] for p in summary["plots"]) == ["energy.png", "summary.png", "temperature.png"]
    last = ds.isel(time=-1)
    for kind in ("pencil", "single"):
        a = load_snapshot(out, "temperature", meshes[kind])
        np.testing.assert_array_equal(np.asarray(a), last.temperature.values)


def test_old_series_without_geometry_open_unchanged(tmp_path):
    """An index of format 1 (``grid``: shape, box_length, spacing only), written by hand as earlier versions did."""
    u = np.arange(24, dtype=np.float32).reshape(4, 6)
    with h5py.File(tmp_path / "snap_00000.h5", "w") as f:
        f["u"] = u
    index = {"format": 1, "equation": "navier-stokes-2d", "parameters": {"nu": 0.01}, "fields": ["u"],
             "grid": {"shape": [4, 6], "box_length": [2.0, 3.0], "spacing": [0.5, 0.5]},
             "snapshots": [{"index": 0, "step": 0, "t": 0.0, "file": "snap_00000.h5", "dtype": "float32"}]}
    (tmp_path / "snapshots.json").write_text(json.dumps(index))
    ds = open_snapshots(tmp_path)
    assert ds.u.dims == ("time", "x", "y") and dict(ds.sizes) == {"time": 1, "x": 4, "y": 6}
    np.testing.assert_array_equal(ds.x.values, [0.0, 0.5, 1.0, 1.5])
    np.testing.assert_array_equal(ds.y.values, np.arange(6) * 0.5)
    np.testing.assert_array_equal(ds.u.isel(time=0).values, u)
    np.testing.assert_array_equal(np.asarray(load_snapshot(tmp_path, "u")), u)


def test_plot_slice_draws_on_the_true_coordinates(tmp_path):
    from matplotlib.collections import QuadMesh
    from matplotlib.figure import Figure

    x, z = np.arange(16) * 2.0 / 16, (1 - np.cos(np.pi * np.arange(9) / 8)) / 2  # Chebyshev points in z
    field = np.outer(np.cos(np.pi * x), np.sin(np.pi * z))  # (horizontal, vertical)
    ax = Figure().add_subplot()
    plot_slice(ax, field, "temperature T", {"horizontal": ("x", x), "vertical": ("z", z)})
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("x", "z", "temperature T")
    mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
    np.testing.assert_array_equal(mesh.get_array().reshape(9, 16), field.T)
    corners = mesh.get_coordinates()  # cell corners half way between the points ("nearest" shading)
    np.testing.assert_allclose(corners[1:-1, 0, 1], (z[1:] + z[:-1]) / 2)
    np.testing.assert_allclose(corners[0, 1:-1, 0], (x[1:] + x[:-1]) / 2)
    ax = Figure().add_subplot()
    plot_slice(ax, field, "no coordinates")  # the (label, array) contract of the other equations: the unit square
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x / L", "y / L")
    with pytest.raises(ValueError, match=r"plot_slice: axes give 9 horizontal x 16 vertical points"):
        plot_slice(Figure().add_subplot(), field, "T", {"horizontal": ("z", z), "vertical": ("x", x)})
    with pytest.raises(ValueError, match="plot_slice: axes must have the keys 'horizontal' and 'vertical'"):
        plot_slice(Figure().add_subplot(), field, "T", {"x": ("x", x)})
    rows = [{"t": "0.0", "energy": "1.0"}, {"t": "0.5", "energy": "0.5"}]
    ax = Figure().add_subplot()
    plot_history(ax, rows)
    assert ax.get_title() == "energy"  # no dissipation column, none drawn
    plot_history(ax, [dict(r, dissipation="0.1") for r in rows])
    assert ax.get_title() == "energy and dissipation"
    written = write_plots(tmp_path, rows, [], ("T", field, {"horizontal": ("x", x), "vertical": ("z", z)}),
                          field_file="temperature.png")
    assert [p.name for p in written] == ["energy.png", "temperature.png", "summary.png"]


@pytest.mark.parametrize(("equation", "n", "ic", "params"), [
    ("channel", (17, 8), "laminar", {}),
    ("rayleigh-benard", (17, 16), "single-mode", {"walls": "no-slip"}),
])
def test_the_main_job_builds_the_chebyshev_wall_runs(tmp_path, equation, n, ic, params):
    """The main job builds the Chebyshev wall runs on 8 devices (its abstract checks trace the initial condition
    under the mesh)."""
    cfg = RunConfig(equation=equation, n=n, ic=ic, dt=1e-3, dtype="float64", out=str(tmp_path), params=params,
                    snapshot_every=1, progress=False)
    build(cfg, validate(cfg))
