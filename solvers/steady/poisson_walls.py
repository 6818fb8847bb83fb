"""Poisson/Helmholtz ``lap(phi) - lambda phi = f`` on a box with Dirichlet, Neumann or periodic sides, per axis."""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from ..bases import Basis, Cosine, Fourier, RealFourier, Sine
from ..grids import Grid, safe_inverse

#: boundary condition of an axis -> basis on the cell-centred (walls) or uniform (periodic) points
BC_BASES: dict[str, type[Basis]] = {"dirichlet": Sine, "neumann": Cosine, "periodic": Fourier}


def _box_and_helmholtz(box_length, helmholtz, nd: int) -> tuple[tuple[float, ...], float]:
    """The checked ``box_length`` (one value or one per axis, each > 0) and ``helmholtz`` (finite, >= 0)."""
    lengths = (box_length,) * nd if np.ndim(box_length) == 0 else tuple(box_length)
    if len(lengths) != nd or not all(float(v) > 0 for v in lengths):
        raise ValueError(f"box_length must be positive, one value or one per axis; got {box_length!r}")
    if not (math.isfinite(helmholtz) and helmholtz >= 0):
        raise ValueError(f"helmholtz must be finite and >= 0, got {helmholtz!r}")
    return tuple(float(v) for v in lengths), float(helmholtz)


def poisson_grid(bases: list[Basis], mesh: Mesh | None, dtype, bcs: Sequence[str]) -> Grid:
    """The grid of a wall Poisson solver (default dtype float64; axes named x, y, z); a ValueError names the shape
    and the boundary conditions."""
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype
    try:
        return Grid(bases, mesh, dtype=dtype, axis_names=("x", "y", "z")[:len(bases)])
    except ValueError as e:
        raise ValueError(f"shape {tuple(b.n for b in bases)} with bc {tuple(bcs)}: {e}") from None


class PoissonWalls:
    """Spectral solver of ``lap(phi) - helmholtz * phi = f`` with one boundary condition per axis.

    A :class:`~solvers.Grid` of one basis per axis: :class:`~solvers.bases.Sine` on Dirichlet axes
    (``phi = 0``), :class:`~solvers.bases.Cosine` on Neumann axes (``d phi / dn = 0``), both on the cell-centred
    points ``x_j = (j + 1/2) L / n`` with the walls half a cell outside the first and last points, and Fourier on
    periodic axes (``x_j = j L / n``; a half spectrum when the last axis is periodic). Every operator is diagonal:
    one planned transform (:func:`xfft.xr2rn`), a division by ``-(|k|^2 + helmholtz)``, one inverse. ``f`` in
    the span of the series (sines up to mode ``n - 1``: the grid-scale alternation is not kept) gives ``phi``
    exact to round-off.

    With ``helmholtz = 0`` and no Dirichlet axis the problem fixes ``phi`` only up to a constant and needs
    zero-mean ``f``: the mean of ``f`` is ignored and ``phi`` has zero mean. For smooth non-periodic solutions
    with spectral accuracy and non-zero wall values use :class:`~solvers.PoissonChebyshev`.

    Args:
      shape: grid points per axis (1 to 3 axes, each >= 2; periodic axes even and >= 4).
      bc: ``"dirichlet"``, ``"neumann"`` or ``"periodic"``, one for all axes or one per axis.
      mesh: a mesh from :func:`xfft.make_mesh`, or None for one device.
      box_length: side length(s) (default 1).
      helmholtz: ``lambda >= 0``.
      dtype: real dtype of ``f`` and ``phi`` (default: float64 with JAX's 64-bit mode, else float32).

    Shardings: ``f`` and ``phi`` in :attr:`sharding` (canonical real layout of the mesh).

    Raises:
      ValueError: unknown boundary condition, bad shape, box length or ``helmholtz`` (naming the argument).
    """

    name = "poisson-walls"
    description = "Poisson/Helmholtz with Dirichlet, Neumann or periodic sides per axis (steady; solvers.PoissonWalls)"

    def __init__(self, shape: Sequence[int], bc: str | Sequence[str], mesh: Mesh | None = None, *,
                 box_length: float | Sequence[float] = 1.0, helmholtz: float = 0.0, dtype=None):
        self.shape = tuple(int(n) for n in shape)
        if not 1 <= len(self.shape) <= 3 or any(n < 2 for n in self.shape):
            raise ValueError(f"shape must hold 1 to 3 axes, each with >= 2 points; got {shape!r}")
        nd = len(self.shape)
        bcs = (bc,) * nd if isinstance(bc, str) else tuple(bc)
        if len(bcs) != nd or any(b not in BC_BASES for b in bcs):
            raise ValueError(f"bc must be one of {tuple(BC_BASES)} or one per axis ({nd}), got {bc!r}")
        self.bc = bcs
        self.box_length, self.helmholtz = _box_and_helmholtz(box_length, helmholtz, nd)
        bases = [BC_BASES[b](n, (0.0, L)) for b, n, L in zip(bcs, self.shape, self.box_length)]
        if bcs[-1] == "periodic":
            bases[-1] = RealFourier(self.shape[-1], (0.0, self.box_length[-1]))
        self.grid = poisson_grid(bases, mesh, dtype, bcs)
        self.mesh = self.grid.mesh
        self.sharding = self.grid.real_sharding()

    def coordinates(self) -> tuple[jax.Array, ...]:
        """Sharded grid points (cell-centred on wall axes)."""
        return self.grid.coordinates()

    def eigenvalues(self) -> jax.Array:
        """``|k|^2 + helmholtz`` on the coefficients (``-lap`` eigenvalues plus ``lambda``), broadcastable."""
        return sum(self.grid.wavenumbers(d, odd=False) ** 2 for d in range(self.grid.ndim)) + self.helmholtz

    def solve(self, f: jax.Array) -> jax.Array:
        """``phi`` from real ``f`` (shape ``self.shape``, leading axes batched); sharding in = sharding out."""
        g = self.grid
        f_hat = g.forward(jnp.asarray(f))
        return g.backward(-safe_inverse(self.eigenvalues()) * f_hat)
