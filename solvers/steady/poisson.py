"""Poisson's equation ``lap(phi) = f`` on the periodic box, solved spectrally on the sharded grid."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..grids import SpectralGrid


class Poisson:
    """Periodic Poisson solver: ``phi_k = -f_k / |k|^2``, zero-mean ``phi``.

    A periodic problem is solvable only for zero-mean ``f``; the mean of ``f`` is ignored (the usual
    background subtraction, e.g. the Jeans swindle in self-gravity). Used by Schroedinger-Poisson-type
    equations for their potential.

    Args:
      grid: a 2D or 3D :class:`~solvers.SpectralGrid`.
    """

    name = "poisson"
    description = "periodic Poisson solver lap(phi) = f (steady; Python API solvers.Poisson)"

    def __init__(self, grid: SpectralGrid):
        self.grid = grid

    def solve_hat(self, f_hat: jax.Array) -> jax.Array:
        """Spectrum of ``phi`` from the spectrum of ``f`` (spectral sharding in and out, any batch axes)."""
        return self.grid.inv_laplacian(f_hat)

    def solve(self, f: jax.Array) -> jax.Array:
        """``phi`` from real ``f`` (real sharding in and out, leading axes batched)."""
        g = self.grid
        return g.irfft(self.solve_hat(g.rfft(f)))

    def gradient(self, f: jax.Array) -> jax.Array:
        """``grad phi`` in real space, shape ``(ndim, ...)`` (e.g. minus the gravitational acceleration)."""
        g = self.grid
        return g.irfft(g.grad(self.solve_hat(g.rfft(jnp.asarray(f, g.dtype)))))
