"""A wall-bounded equation as a job: the grid builder and the default box that a :class:`~solvers.RunSpec` takes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

from ..bases import Basis, Chebyshev
from ..grids import Grid, wall_grid

__all__ = ["WallBuilder"]


@dataclass(frozen=True)
class WallBuilder:
    """The grid of a wall-bounded equation run as a job: :func:`~solvers.wall_grid` between ``walls`` (array axis 0,
    the first size of ``--n``), periodic along the other axes. Give it as ``RunSpec(grid=...)`` and its
    :meth:`box` as ``RunSpec(box=...)``::

        walls = solvers.WallBuilder(walls=(0.0, 1.0))
        SPEC = solvers.RunSpec("heat", Heat, ndims=(2, 3), grid=walls, box=walls.box)

    Then ``python -m solvers run mymodule:SPEC --n 17 16`` runs it; ``--box-length`` gives the periodic lengths
    after the wall-normal extent, which must be ``walls[1] - walls[0]``. A script builds the same grid with
    :meth:`grid`.

    Args:
      walls: the wall-normal coordinates of the two walls.
      lengths: the periodic axes' default box lengths (None: ``2 pi`` each); one length serves every periodic axis.
      basis: the wall-normal basis (:class:`~solvers.bases.Chebyshev`; ``Cosine``/``Sine`` for free-slip walls).
      axis_names: coordinate names (default ``("y", "x", "z")``).

    Raises:
      ValueError: walls that are not an interval, lengths that are not positive. TypeError: ``basis`` not a
        :class:`~solvers.bases.Basis` subclass.
    """

    walls: tuple[float, float] = (-1.0, 1.0)
    lengths: float | tuple[float, ...] | None = None
    basis: type[Basis] = Chebyshev
    axis_names: tuple[str, ...] | None = None

    def __post_init__(self):
        a, b = (float(v) for v in self.walls)
        if not (math.isfinite(a) and math.isfinite(b) and b > a):
            raise ValueError(f"WallBuilder: walls must be an interval (a, b) with a < b, got {self.walls!r}")
        lengths = self.lengths if self.lengths is None or isinstance(self.lengths, Sequence) else (self.lengths,)
        if lengths is not None and not all(math.isfinite(float(v)) and float(v) > 0 for v in lengths):
            raise ValueError(f"WallBuilder: lengths must be positive, got {self.lengths!r}")
        if not (isinstance(self.basis, type) and issubclass(self.basis, Basis)):
            raise TypeError(f"WallBuilder: basis must be a solvers.bases.Basis subclass, got {self.basis!r}")
        object.__setattr__(self, "walls", (a, b))
        object.__setattr__(self, "lengths", None if lengths is None else tuple(float(v) for v in lengths))

    @property
    def depth(self) -> float:
        """The distance between the walls (the wall-normal entry of the box)."""
        return self.walls[1] - self.walls[0]

    def box(self, ndim: int, params: Mapping[str, Any] | None = None) -> tuple[float, ...]:
        """The default box of a run on ``ndim`` axes: the wall-normal extent, then the periodic lengths."""
        lengths = self.lengths or (2 * math.pi,)
        return (self.depth,) + tuple(lengths[min(i, len(lengths) - 1)] for i in range(ndim - 1))

    def grid(self, shape, mesh=None, *, dtype=jnp.float32, dealias: str = "2/3", backend: str | None = None) -> Grid:
        """The grid of ``shape`` (wall-normal first) in the default box (:meth:`box`), outside a job: what a
        script calls (``WallBuilder(walls=(0.0, 1.0)).grid((17, 16), dtype=jnp.float64)``).

        Raises:
          ValueError: as the builder itself (sizes the bases refuse, a mesh that cannot hold them).
        """
        return self(shape, mesh, self.box(len(shape)), dtype=dtype, dealias=dealias, backend=backend)

    def __call__(self, shape, mesh, box_length, *, dtype, dealias, backend, points=None) -> Grid:
        """The grid of ``shape`` (wall-normal first) on ``mesh`` for the run's ``box_length`` (the builder protocol
        of :class:`~solvers.RunSpec`).

        Raises:
          ValueError: a wall-normal box other than the walls' distance, sizes the bases refuse or a mesh that
            cannot hold them (naming them).
        """
        if not math.isclose(float(box_length[0]), self.depth, rel_tol=1e-12):
            raise ValueError(f"the wall-normal box (the first entry) must be {self.depth:g} (walls at "
                             f"{self.walls[0]:g}, {self.walls[1]:g}), got {float(box_length[0]):g}; a RunSpec takes "
                             "the builder's default box as RunSpec(box=builder.box)")
        names = self.axis_names or ("y", "x", "z")
        try:
            return wall_grid(shape, mesh, walls=self.walls, lengths=box_length[1:], basis=self.basis, dtype=dtype,
                             dealias=dealias, backend=backend, points=points, axis_names=names[:len(shape)])
        except ValueError as e:
            if mesh is not None:
                raise
            least = getattr(self.basis, "min_points", 5)
            raise ValueError(f"takes {' '.join(n.upper() for n in names[:len(shape)])}: at least {least} wall-normal "
                             f"points and even periodic sizes >= 4, got {' '.join(map(str, shape))} ({e})") from None
