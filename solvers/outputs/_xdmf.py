"""The XDMF description of a snapshot series (ParaView, VisIt, VTK): a temporal collection of the master files.

A uniform grid is a ``CoRectMesh`` (origin and spacing). A grid with a non-uniform axis (Chebyshev points between
walls) is a structured mesh (``SMesh``) whose ``X_Y_Z`` coordinates are full arrays in ``coordinates.h5``, written
once per series: ParaView 5.11 (Debian's) reads a ``RectMesh``'s ``VXVYVZ`` coordinates as its first array on every
axis, so a channel would collapse onto its spanwise coordinates; every reader takes the ``SMesh``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["COORDINATES_FILE", "write_coordinates", "xdmf"]

#: the file of a non-uniform grid's coordinate arrays (one per axis, the grid's shape), beside the master files
COORDINATES_FILE = "coordinates.h5"


def uniform(grid: dict) -> bool:
    """Whether every axis of an index's ``grid`` is uniform (no recorded ``points``)."""
    return not any("points" in a for a in grid.get("axes") or [])


def write_coordinates(path: Path, points: list[np.ndarray], dtype) -> None:
    """Write the coordinate arrays ``axis0``, ``axis1``, ... of a grid with these ``points`` per axis into ``path``
    (h5py), one plane of axis 0 at a time (no global array on the host)."""
    import h5py

    shape = tuple(len(p) for p in points)
    with h5py.File(path, "w") as f:
        sets = [f.create_dataset(f"axis{d}", shape=shape, dtype=dtype) for d in range(len(shape))]
        grids = np.meshgrid(*[np.asarray(p, dtype) for p in points[1:]], indexing="ij") if len(shape) > 1 else []
        for i in range(shape[0]):
            sets[0][i] = np.full(shape[1:], points[0][i], dtype)
            for d in range(1, len(shape)):
                sets[d][i] = grids[d - 1]


def xdmf(index: dict, axis_points, axis_names) -> str:
    """The XDMF 2 temporal collection of a series index.

    XDMF lists ``Dimensions`` slowest axis first (the array's axis order) and so do a ``CoRectMesh``'s origin and
    spacing; an ``SMesh``'s ``X`` is the coordinate along the fastest-varying (last) array axis, ``Y`` the one
    before (VTK's reader maps them to its X and Y). (In 2D, VTK's reader puts a ``CoRectMesh`` in its Y-Z plane,
    the first array axis along Z, and an ``SMesh`` in its X-Y plane, the first array axis along Y.)
    """
    grid = index["grid"]
    shape = grid["shape"]
    nd = len(shape)
    dims = " ".join(map(str, shape))
    rect = not uniform(grid)
    if rect:
        kind, geom = f"{nd}DSMesh", "X_Y_Z"[: 2 * nd - 1]
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
            lines += [f'     <DataItem Dimensions="{dims}" NumberType="Float" Precision="{cprec}" Format="HDF">'
                      f'{COORDINATES_FILE}:/axis{d}</DataItem>' for d in reversed(range(nd))]
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


