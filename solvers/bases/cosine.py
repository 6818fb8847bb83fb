"""Cosine basis of a wall axis: ``f = sum_m c_m cos(m pi (x - a) / L)`` (zero normal derivative at the walls)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Basis, along


class Cosine(Basis):
    """Cosine series on the cell-centred points ``x_j = a + (j + 1/2) L / n`` (walls half a cell outside the
    first and last points), transformed by a DCT-II: free-slip (``f' = 0``, a horizontal velocity between
    free-slip plates) or Neumann walls.

    Coefficients ``c_m``, ``m = 0 .. n-1``, of ``cos(m pi (x - a) / L)``; ``d/dx`` maps them to the
    :class:`~solvers.bases.Sine` coefficients of the same index ``m`` times ``-k_m``, ``k_m = m pi / L``
    (:meth:`wavenumbers`), so cosine and sine fields share one index and the derivative is diagonal.
    """

    kind = "dct2"
    boundary = "neumann"
    min_points = 2
    #: the other parity of the same points (what ``d/dx`` maps to)
    partner = "Sine"

    @property
    def size(self) -> int:
        return self.n

    def points(self) -> np.ndarray:
        return self.domain[0] + (np.arange(self.n) + 0.5) * (self.length / self.n)

    def weights(self) -> np.ndarray:
        return np.full(self.n, self.length / self.n)

    def wavenumbers(self) -> np.ndarray:
        return np.arange(self.n) * (math.pi / self.length)

    def keep(self, rule: str) -> np.ndarray:
        m = np.arange(self.n)
        if rule == "2/3":
            return m < 2 * self.n / 3
        return np.ones(self.n, bool)

    def parseval(self) -> np.ndarray:
        p = np.full(self.n, 0.5)
        p[0] = 1.0
        return p

    def resized(self, n: int) -> Cosine:
        return type(self)(n, self.domain)

    def post_forward(self, y: jax.Array, axis: int) -> jax.Array:
        w = np.full(self.n, 2.0)
        w[0] = 1.0
        return y * along(w, axis, y.ndim, jnp.finfo(y.dtype).dtype)

    def pre_backward(self, c: jax.Array, axis: int) -> jax.Array:
        w = np.full(self.n, 0.5)
        w[0] = 1.0
        return c * along(w, axis, c.ndim, jnp.finfo(c.dtype).dtype)
