"""The XDMF description of a snapshot series (ParaView, VisIt, VTK): a temporal collection of the master files.

A uniform grid is a ``CoRectMesh`` (origin and spacing). A grid with a non-uniform axis (Chebyshev points between
walls) is a structured mesh (``SMesh``) with an ``XYZ`` geometry (``XY`` in 2D): one array of every point's
coordinates, the grid's shape plus a last axis of 3 (2), written once per series in ``coordinates.h5``. It is the
one description of such a grid that every XDMF reader of ParaView 5.11 (Debian's) reads: its ``Xdmf3ReaderS`` and
``Xdmf3ReaderT`` build an array of type None from an ``X_Y_Z`` (``X_Y``) geometry of HDF5 arrays ("Skipping
unrecognized array type [None]": 0 points in 3D, a crash in 2D), and all three readers, the legacy
``XDMFReader`` too, fill a ``RectMesh``'s ``VXVYVZ`` coordinates with wrong values.

A point's coordinates follow the grid's axis names: the axis named ``x`` is VTK's X, ``y`` its Y and ``z`` its Z;
in 2D the first of the two names in the order x, y, z is X and the other Y (a channel's or a convection cell's
wall-normal axis is vertical). A vector built from ``u, v, w`` so points where the flow goes. Axes named otherwise
keep the array order: X along the last array axis, Y the one before, Z the first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["COORDINATES_FILE", "POINTS", "components", "has_coordinates", "write_coordinates", "xdmf"]

#: the file of a non-uniform grid's point coordinates, beside the master files
COORDINATES_FILE = "coordinates.h5"
#: its dataset: the grid's shape plus one axis of the VTK components X, Y(, Z)
POINTS = "xyz"


def uniform(grid: dict) -> bool:
    """Whether every axis of an index's ``grid`` is uniform (no recorded ``points``)."""
    return not any("points" in a for a in grid.get("axes") or [])


def components(names) -> list[int]:
    """The VTK coordinate (0: X, 1: Y, 2: Z) that each array axis, named ``names``, runs along.

    Distinct names among ``x, y, z`` take their components in that order (``y, x, z`` -> ``1, 0, 2``; ``z, x`` ->
    ``1, 0``); any other names, the reversed array order (X along the last array axis).
    """
    names = list(names)
    if len(set(names)) == len(names) and set(names) <= set("xyz"):
        order = sorted(names)
        return [order.index(n) for n in names]
    return list(reversed(range(len(names))))


def write_coordinates(path: Path, points: list[np.ndarray], names, dtype) -> None:
    """Write the coordinates of every point of the grid with these ``points`` per axis into ``path`` (h5py).

    The dataset :data:`POINTS` has the grid's shape plus a last axis of one entry per dimension, each axis's
    points in the component :func:`components` gives it. It is written one plane of axis 0 at a time (no global
    array on the host).
    """
    import h5py

    shape = tuple(len(p) for p in points)
    comp = components(names)
    grids = np.meshgrid(*[np.asarray(p, dtype) for p in points[1:]], indexing="ij")
    with h5py.File(path, "w") as f:
        out = f.create_dataset(POINTS, shape=shape + (len(shape),), dtype=dtype)
        for i in range(shape[0]):
            plane = np.empty(shape[1:] + (len(shape),), dtype)
            plane[..., comp[0]] = points[0][i]
            for d in range(1, len(shape)):
                plane[..., comp[d]] = grids[d - 1]
            out[i] = plane


def has_coordinates(path: Path, shape, dtype) -> bool:
    """Whether ``path`` holds the point coordinates of a grid of ``shape`` in ``dtype`` (a series written before
    this layout holds one array per axis instead)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            d = f.get(POINTS)
            return d is not None and d.shape == tuple(shape) + (len(shape),) and d.dtype == np.dtype(dtype)
    except OSError:
        return False


def xdmf(index: dict, axis_points, axis_names) -> str:
    """The XDMF 2 temporal collection of a series index.

    XDMF lists ``Dimensions`` slowest axis first (the array's axis order) and so do a ``CoRectMesh``'s origin and
    spacing: VTK's X runs along the last array axis. (In 2D, VTK's reader puts a ``CoRectMesh`` in its Y-Z plane,
    the first array axis along Z.) An ``SMesh`` places its points by their coordinates (see the module's note).
    """
    grid = index["grid"]
    shape = grid["shape"]
    nd = len(shape)
    dims = " ".join(map(str, shape))
    rect = not uniform(grid)
    if rect:
        kind, geom = f"{nd}DSMesh", "XYZ"[:nd]
    else:
        kind, geom = f"{nd}DCoRectMesh", "ORIGIN_DXDYDZ" if nd == 3 else "ORIGIN_DXDY"
        origin = " ".join(repr(float(p[0])) for p in axis_points(grid))
        spacing = " ".join(repr(float(d)) for d in grid["spacing"])
    lines = ['<?xml version="1.0" ?>', '<!DOCTYPE Xdmf SYSTEM "Xdmf.dtd" []>', '<Xdmf Version="2.0">', " <Domain>",
             '  <Grid Name="snapshots" GridType="Collection" CollectionType="Temporal">']
    for e in index["snapshots"]:
        prec = np.dtype(e["dtype"]).itemsize
        lines += [f'   <Grid Name="step_{e["step"]}" GridType="Uniform">',
                  f'    <Time Value="{e["t"]!r}"/>',
                  f'    <Topology TopologyType="{kind}" Dimensions="{dims}"/>',
                  f'    <Geometry GeometryType="{geom}">']
        if rect:
            cprec = np.dtype(index.get("coordinates_dtype", "float32")).itemsize
            lines.append(f'     <DataItem Dimensions="{dims} {nd}" NumberType="Float" Precision="{cprec}" '
                         f'Format="HDF">{COORDINATES_FILE}:/{POINTS}</DataItem>')
        else:
            lines += [f'     <DataItem Dimensions="{nd}" NumberType="Float" Precision="8" Format="XML">{v}</DataItem>'
                      for v in (origin, spacing)]
        lines.append("    </Geometry>")
        for name in index["fields"]:
            lines += [f'    <Attribute Name="{name}" AttributeType="Scalar" Center="Node">',
                      f'     <DataItem Dimensions="{dims}" NumberType="Float" Precision="{prec}" Format="HDF">'
                      f'{e["file"]}:/{name}</DataItem>',
                      "    </Attribute>"]
        lines.append("   </Grid>")
    lines += ["  </Grid>", " </Domain>", "</Xdmf>", ""]
    return "\n".join(lines)
