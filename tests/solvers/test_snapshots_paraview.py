"""Snapshots of wall flows show their true geometry (Chebyshev points between the walls) in every XDMF reader: pip's
VTK, and Debian's ParaView 5.11 (``pvpython``), which reads a ``RectMesh``'s coordinates wrongly (the first array
on every axis) and so gets a structured mesh with its coordinate arrays."""

import shutil
import subprocess

import jax.numpy as jnp
import numpy as np
import pytest

from solvers import Channel, wall_grid
from solvers.outputs import SnapshotWriter

PVPYTHON = shutil.which("pvpython")
READ = """
import sys
from paraview.simple import XDMFReader, servermanager
r = XDMFReader(FileNames=[sys.argv[1]])
r.UpdatePipeline(0.0)
b = servermanager.Fetch(r)
while b.IsA("vtkMultiBlockDataSet"):
    b = b.GetBlock(0)
print("BOUNDS", *b.GetBounds())
print("POINT4", *b.GetPoint(int(sys.argv[2])))
"""


@pytest.fixture(scope="module", params=[(9, 8, 4), (9, 8)], ids=["3D", "2D"])
def series(request, meshes, tmp_path_factory):
    shape = request.param
    eq = Channel(wall_grid(shape, meshes["slab"], dtype=jnp.float64, lengths=(6.0, 3.0)[: len(shape) - 1]))
    d = tmp_path_factory.mktemp("series")
    SnapshotWriter(d, eq, every=1).after_step(eq.initial_state("laminar"), 0, 0.0)
    return d, shape, eq.grid


def _expected(shape, grid):
    """VTK's axes: x along the last (fastest) array axis, y the one before, z the first (3D); the wall-normal
    Chebyshev axis is the first array axis."""
    pts = [np.asarray(b.points()) for b in grid.bases]
    ranges = [(float(p.min()), float(p.max())) for p in reversed(pts)]
    ranges += [(0.0, 0.0)] * (3 - len(ranges))
    wall = pts[0][1]  # the first Chebyshev point inside the channel
    stride = int(np.prod(shape[1:]))  # the point one step along the wall-normal axis
    return ranges, wall, stride


def test_pip_vtk_reads_the_true_geometry(series):
    import vtk

    d, shape, grid = series
    r = vtk.vtkXdmfReader()
    r.SetFileName(str(d / "snapshots.xmf"))
    r.Update()
    b = r.GetOutputDataObject(0)
    while b.IsA("vtkMultiBlockDataSet"):
        b = b.GetBlock(0)
    ranges, wall, stride = _expected(shape, grid)
    np.testing.assert_allclose(np.reshape(b.GetBounds(), (3, 2)), ranges, atol=1e-6)
    assert b.GetPoint(stride)[len(shape) - 1] == pytest.approx(wall, abs=1e-6)


def test_paraview_511_reads_the_true_geometry(series):
    if PVPYTHON is None:
        pytest.skip("Debian's pvpython is not installed (apt-get install paraview python3-paraview): "
                    "ParaView's reader is checked where it is")
    d, shape, grid = series
    ranges, wall, stride = _expected(shape, grid)
    out = subprocess.run([PVPYTHON, "-c", READ, str(d / "snapshots.xmf"), str(stride)], capture_output=True,
                         text=True, timeout=300)
    lines = {ln.split()[0]: [float(v) for v in ln.split()[1:]] for ln in out.stdout.splitlines()
             if ln.startswith(("BOUNDS", "POINT4"))}
    assert "BOUNDS" in lines, out.stdout[-2000:] + out.stderr[-2000:]
    np.testing.assert_allclose(np.reshape(lines["BOUNDS"], (3, 2)), ranges, atol=1e-6)
    assert lines["POINT4"][len(shape) - 1] == pytest.approx(wall, abs=1e-6)
