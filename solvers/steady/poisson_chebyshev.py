"""Poisson/Helmholtz ``lap(phi) - lambda phi = f`` between two walls on a Chebyshev axis, spectrally accurate."""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from ..bases import Chebyshev, Cosine, Fourier, RealFourier, Sine
from ..bases import tau as _tau
from .poisson_walls import _box_and_helmholtz, poisson_grid

#: boundary condition of a non-wall axis -> basis
_OTHER = {"periodic": Fourier, "dirichlet": Sine, "neumann": Cosine}
WALL_BCS = ("dirichlet", "neumann")


class PoissonChebyshev:
    """Spectral solver of ``lap(phi) - helmholtz * phi = f`` with walls at both ends of axis 0.

    Axis 0 is a :class:`~solvers.bases.Chebyshev` basis on ``[0, L0]`` (Gauss-Lobatto points, walls included)
    with Dirichlet (``phi`` given on each wall) or Neumann (``d phi / dx_0`` given) conditions, any values,
    solved by the tau method; the other axes are periodic (Fourier) or cell-centred sine (Dirichlet) / cosine
    (Neumann) series, so each of their wavenumbers ``k`` gives one Helmholtz problem ``phi'' - (lambda + |k|^2)
    phi = f`` along axis 0: quasi-tridiagonal, O(n) per wavenumber, local to each device. Smooth non-periodic
    solutions converge exponentially in the number of Chebyshev points (unlike the sine/cosine series of
    :class:`~solvers.PoissonWalls`, which need odd/even extensions to be smooth).

    With Neumann walls, ``helmholtz = 0`` and no Dirichlet axis, the problem fixes ``phi`` only up to a constant
    (and needs compatible data): the Chebyshev coefficient ``a_0`` of that mode is set to 0.

    Args:
      shape: points per axis (1 to 3 axes; axis 0 >= 5; periodic axes even and >= 4).
      bc: the wall condition of axis 0 (``"dirichlet"`` or ``"neumann"``), optionally followed by the conditions
        of the other axes (``"periodic"``, default, ``"dirichlet"`` or ``"neumann"``).
      mesh: a mesh from :func:`xfft.make_mesh`, or None for one device.
      box_length: side length(s) (default 1).
      helmholtz: ``lambda >= 0``.
      dtype: real dtype (default: float64 with JAX's 64-bit mode, else float32).

    Shardings: ``f``, the wall data and ``phi`` in :attr:`sharding`.

    Raises:
      ValueError: unknown boundary condition, bad shape, box length or ``helmholtz`` (naming the argument).
    """

    name = "poisson-chebyshev"
    description = ("Poisson/Helmholtz between Dirichlet or Neumann walls (any wall values) on Chebyshev points, "
                   "periodic or sine/cosine in the other axes (steady; solvers.PoissonChebyshev)")

    def __init__(self, shape: Sequence[int], bc: str | Sequence[str] = "dirichlet", mesh: Mesh | None = None, *,
                 box_length: float | Sequence[float] = 1.0, helmholtz: float = 0.0, dtype=None):
        self.shape = tuple(int(n) for n in shape)
        nd = len(self.shape)
        if not 1 <= nd <= 3:
            raise ValueError(f"shape must hold 1 to 3 axes, got {shape!r}")
        bcs = (bc,) if isinstance(bc, str) else tuple(bc)
        bcs = bcs + ("periodic",) * (nd - len(bcs))
        if len(bcs) != nd or bcs[0] not in WALL_BCS or any(b not in _OTHER for b in bcs[1:]):
            raise ValueError(f"bc must be 'dirichlet' or 'neumann' for the wall axis 0, then one of "
                             f"{tuple(_OTHER)} per other axis; got {bc!r}")
        self.bc = bcs
        self.box_length, self.helmholtz = _box_and_helmholtz(box_length, helmholtz, nd)
        bases = [Chebyshev(self.shape[0], (0.0, self.box_length[0]))]
        bases += [_OTHER[b](n, (0.0, L)) for b, n, L in zip(bcs[1:], self.shape[1:], self.box_length[1:])]
        if nd == 3 and bcs[-1] == "periodic":  # a half spectrum: in 2D its n/2 + 1 modes rarely divide the mesh
            bases[-1] = RealFourier(self.shape[-1], (0.0, self.box_length[-1]))
        self.grid = poisson_grid(bases, mesh, dtype, bcs)
        self.mesh = self.grid.mesh
        self.sharding = self.grid.real_sharding()

    def coordinates(self) -> tuple[jax.Array, ...]:
        """Sharded grid points (Chebyshev points on axis 0)."""
        return self.grid.coordinates()

    def solve(self, f: jax.Array, bottom: jax.Array | float = 0.0, top: jax.Array | float = 0.0) -> jax.Array:
        """``phi`` from real ``f`` (shape ``self.shape``) and the wall data at ``x_0 = 0`` (``bottom``) and
        ``x_0 = L0`` (``top``): numbers, or fields of the grid's shape whose values do not depend on ``x_0`` (the
        plane's values repeated along axis 0, e.g. ``g(x, y) + 0 * x0``). Sharding in = sharding out."""
        g = self.grid
        f_hat = g.forward(jnp.asarray(f))
        walls = g.forward(jnp.stack(jnp.broadcast_arrays(jnp.asarray(bottom, g.dtype), jnp.asarray(top, g.dtype),
                                                         jnp.zeros(self.shape, g.dtype))[:2]))
        scale = (self.box_length[0] / 2) ** 2
        deriv = math.sqrt(scale) if self.bc[0] == "neumann" else 1.0  # d/dx0 = (2 / L0) d/dy

        def local(fh, lo, hi):
            lam = (self._local_k2() * scale)[0] if g.ndim > 1 else jnp.asarray(self.helmholtz * scale)
            return _tau.helmholtz(fh * scale, lam, self.bc[0], top=hi[0] * deriv, bottom=lo[0] * deriv)

        # the T_0 coefficient of an x0-independent field is its value: the wall data per wavenumber
        lo, hi = walls[0], walls[1]
        phi_hat = g.local_map(local, f_hat, lo, hi) if g.ndim > 1 else local(f_hat, lo, hi)
        return g.backward(phi_hat)

    def _local_k2(self) -> jax.Array:
        """Inside :meth:`Grid.local_map`: this device's block of the transverse ``|k|^2 + lambda`` table."""
        g = self.grid
        out = self.helmholtz
        for d in range(1, g.ndim):
            b = g.bases[d]
            out = out + g.local_table(b.wavenumbers() ** 2, d)
        return out
