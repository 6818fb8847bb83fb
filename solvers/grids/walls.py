"""Grids between two walls, in one call: a wall-normal basis on axis 0 (Chebyshev for any boundary condition,
cosine/sine series for free-slip ones) and Fourier bases on the periodic axes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax.numpy as jnp
from jax.sharding import Mesh

from ..bases import Basis, Chebyshev
from ..bases.fourier import periodic_bases
from .grid import Grid

__all__ = ["wall_grid"]


def wall_grid(shape: Sequence[int], mesh: Mesh | None = None, *, walls: tuple[float, float] = (-1.0, 1.0),
              lengths: Sequence[float] | None = None, basis: type[Basis] = Chebyshev, dtype=jnp.float32,
              dealias: str = "2/3", backend: str | None = None, axis_names: Sequence[str] | None = None,
              points: Sequence[int] | None = None, real_last: bool | None = None) -> Grid:
    """A 2D or 3D grid between walls at ``walls[0]`` and ``walls[1]`` along array axis 0, periodic along the others.

    Axis 0 is ``basis(shape[0], walls)`` (default :class:`~solvers.bases.Chebyshev`: Gauss-Lobatto points, both walls
    included, any boundary condition by the tau method); the other axes are :class:`~solvers.bases.Fourier` of
    ``lengths``, the last one a half spectrum (:class:`~solvers.bases.RealFourier`; in 2D without its Nyquist
    coefficient, which dealiasing zeroes, so that the ``n / 2`` modes split over the devices). The wall-normal axis
    stays unsharded in spectral space, so the implicit solves along it are local to each device: in 2D the half
    spectrum's modes are what the devices share, so choose ``nx`` divisible by twice the device count (with other
    sizes every device holds all of them; ``real_last=False`` keeps the full spectrum of ``nx`` coefficients).

    Args:
      shape: points per axis, wall-normal first: ``(ny, nx)`` or ``(ny, nx, nz)``. Each basis checks its own size
        (Chebyshev any ``n >= 5``; Fourier an even ``n >= 4``).
      mesh: a mesh from :func:`xfft.make_mesh`, or None for one device.
      walls: the wall-normal coordinates of the two walls.
      lengths: the periodic axes' box lengths (default ``2 pi`` each).
      basis: the wall-normal basis class (``Chebyshev``, or ``Cosine``/``Sine`` for free-slip walls).
      dtype, dealias, backend: as :class:`~solvers.Grid`.
      axis_names: coordinate names (default ``("y", "x", "z")``).
      points: store the periodic axes' modes on more points (see :class:`~solvers.SpectralGrid`); ``points[0]``, if
        given, must equal ``shape[0]``.
      real_last: a half spectrum on the last axis (default: in 3D, and in 2D unless ``dealias="none"``, where the
        Nyquist coefficient would have to be kept and ``nx / 2 + 1`` modes rarely split over the devices).

    Raises:
      ValueError: sizes a basis refuses, walls that are not an interval, lengths of the wrong number or sign, a mesh
        that cannot hold the grid or would shard the wall-normal axis in spectral space (naming the argument).
      TypeError: ``basis`` not a Basis subclass.
    """
    shape = tuple(shape)
    if len(shape) not in (2, 3):
        raise ValueError(f"wall_grid: shape needs 2 or 3 sizes (wall-normal first), got {shape!r}")
    if not (isinstance(basis, type) and issubclass(basis, Basis)):
        raise TypeError(f"wall_grid: basis must be a solvers.bases.Basis subclass, got {basis!r}")
    a, b = (float(v) for v in walls)
    if not (math.isfinite(a) and math.isfinite(b) and b > a):
        raise ValueError(f"wall_grid: walls must be an interval (a, b) with a < b, got {walls!r}")
    lengths = (2 * math.pi,) * (len(shape) - 1) if lengths is None else tuple(float(v) for v in lengths)
    if len(lengths) != len(shape) - 1 or not all(math.isfinite(v) and v > 0 for v in lengths):
        raise ValueError(f"wall_grid: lengths needs {len(shape) - 1} positive periodic box lengths, got {lengths!r}")
    periodic_points = None
    if points is not None:
        points = tuple(int(p) for p in points)
        if len(points) == len(shape):
            if points[0] != shape[0]:
                raise ValueError(f"wall_grid: the wall-normal axis keeps its {shape[0]} points; only the periodic axes "
                                 f"can hold their modes on more points, got points {points}")
            points = points[1:]
        periodic_points = points
    try:
        wall = basis(int(shape[0]), (a, b))
        periodic = periodic_bases(shape[1:], lengths, points=periodic_points,
                                  real_last=(len(shape) == 3 or dealias != "none") if real_last is None else real_last)
    except ValueError as e:
        raise ValueError(f"wall_grid: shape {shape}: {e}") from None
    names = ("y", "x", "z")[:len(shape)] if axis_names is None else axis_names
    try:
        return Grid([wall, *periodic], mesh, dtype=dtype, dealias=dealias, backend=backend, axis_names=names)
    except ValueError as e:
        if "unsharded" in str(e) or "cannot be split" in str(e):
            raise ValueError(f"wall_grid: shape/mesh: {e}") from None
        raise
