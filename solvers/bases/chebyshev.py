"""Chebyshev basis of a wall-normal axis on Gauss-Lobatto points (walls included), transformed by a DCT-I."""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Basis, along


@lru_cache(maxsize=64)
def _cc_weights(n: int) -> np.ndarray:
    """Clenshaw-Curtis weights of the ``n`` Gauss-Lobatto points on ``[-1, 1]`` (exact for degree ``n - 1``)."""
    N = n - 1
    j = np.arange(n)
    k = np.arange(n)
    c = np.where((k == 0) | (k == N), 2.0, 1.0)
    # a_k = (2 / (N c_k)) sum_j'' f_j cos(pi j k / N) on y_j = cos(pi j / N); integral of T_k = 2 / (1 - k^2), even k
    cj = np.where((j == 0) | (j == N), 0.5, 1.0)
    integ = np.where(k % 2 == 0, 2.0 / (1.0 - np.where(k == 1, 0, k) ** 2), 0.0)
    m = (2.0 / (N * c))[:, None] * cj[None, :] * np.cos(np.pi * np.outer(k, j) / N)
    return integ @ m


class Chebyshev(Basis):
    """Chebyshev polynomials ``T_k(y)``, ``k = 0 .. n-1``, of ``y = 2 (x - a) / L - 1`` on the ``n`` Gauss-Lobatto
    points ``x_j = a + L (1 - cos(pi j / (n - 1))) / 2`` (ascending, both walls included).

    A field is ``f(x) = sum_k c_k T_k(y)``; the transform is a DCT-I along the axis (the sharded
    :func:`xfft.xr2rn` kind ``"dct1"``) and a diagonal scaling. Boundary conditions are not built into the basis:
    they are imposed by the equation's implicit solves with the **tau method** (the two highest coefficients of
    each second-order equation are replaced by the boundary conditions; see :mod:`solvers.bases.tau`), which
    keeps every field in the one basis, its transform fast and each solve banded (quasi-tridiagonal, O(n)).
    Derivatives are recurrences on the coefficients (:meth:`derivative`), so the axis must be unsharded in
    spectral space. Dealiasing: none under the 2/3 rule of the periodic axes, or products on ``3 (n - 1) / 2 + 2``
    Gauss-Lobatto points (3/2 rule). Quadrature: Clenshaw-Curtis.
    """

    kind = "dct1"
    boundary = "tau"
    diagonal = False
    whole_axis = True
    min_points = 5

    def __init__(self, n: int, domain: tuple[float, float] | float = (-1.0, 1.0)):
        super().__init__(n, domain)

    @property
    def size(self) -> int:
        return self.n

    @property
    def uniform(self) -> bool:
        return False

    def points(self) -> np.ndarray:
        N = self.n - 1
        return self.domain[0] + self.length * (1 - np.cos(np.pi * np.arange(self.n) / N)) / 2

    def weights(self) -> np.ndarray:
        return _cc_weights(self.n) * (self.length / 2)

    def local_spacing(self) -> np.ndarray:
        """Distance from each point to its nearer neighbour (the cell size of a CFL condition)."""
        x = self.points()
        gaps = np.diff(x)
        return np.minimum(np.r_[gaps[0], gaps], np.r_[gaps, gaps[-1]])

    def keep(self, rule: str) -> np.ndarray:
        """Every coefficient: the 2/3 rule truncates only the periodic axes (as Kim, Moin & Moser 1987 did);
        truncating a third of the Chebyshev coefficients was measured to cost accuracy for nothing (Nusselt
        numbers of steady rolls at 17 points: plate vs volume 1.4e-4 apart instead of 1e-6). Products free of
        aliasing in every direction: ``dealias="3/2"`` (padded points on this axis too)."""
        return np.ones(self.n, bool)

    def padded_size(self) -> int:
        """``M + 1`` points with ``M = floor(3 N / 2) + 1``: the product of two degree-``N`` series (degree
        ``2 N``) aliases only into coefficients above ``2 M - 2 N > N``, none of the kept ones."""
        return 3 * (self.n - 1) // 2 + 2

    def resized(self, n: int) -> Chebyshev:
        return type(self)(n, self.domain)

    def _scale(self, forward: bool) -> np.ndarray:
        k = np.arange(self.n)
        ends = (k == 0) | (k == self.n - 1)
        sign = np.where(k % 2, -1.0, 1.0)  # ascending points: T_k(-y) = (-1)^k T_k(y)
        return sign * (np.where(ends, 1.0, 2.0) if forward else np.where(ends, 1.0, 0.5))

    def post_forward(self, y: jax.Array, axis: int) -> jax.Array:
        return y * along(self._scale(True), axis, y.ndim, jnp.finfo(y.dtype).dtype)

    def pre_backward(self, c: jax.Array, axis: int) -> jax.Array:
        return c * along(self._scale(False), axis, c.ndim, jnp.finfo(c.dtype).dtype)

    def derivative(self, c: jax.Array, axis: int, order: int = 1) -> jax.Array:
        """Coefficients of ``d^order f / dx^order`` from those of ``f`` along ``axis`` (local; O(n))."""
        from . import tau as _tau

        d = jnp.moveaxis(c, axis, 0)
        d = _tau.derivative(d, order) * (2 / self.length) ** order
        return jnp.moveaxis(d, 0, axis)

    def boundary_values(self, c: jax.Array, axis: int = 0) -> tuple[jax.Array, jax.Array]:
        """``f(a)`` and ``f(b)`` (the walls) from the coefficients along ``axis``."""
        from . import tau as _tau

        top, bottom = _tau.boundary_values(jnp.moveaxis(c, axis, 0))
        return bottom, top

    def quadrature_matrix(self) -> np.ndarray:
        """``G`` with ``mean over the axis of f g = c_f^T G c_g`` (``G_jk = mean of T_j T_k``, nonzero for even
        ``j + k``): the Gram matrix of the basis, a small table shared by every horizontal mode."""
        j = np.arange(self.n)[:, None]
        k = np.arange(self.n)[None, :]

        def mean_t(m):  # mean of T_m over [-1, 1]
            return np.where(m % 2 == 0, 1.0 / (1.0 - np.where(m == 1, 0, m) ** 2), 0.0)
        return 0.5 * (mean_t(j + k) + mean_t(np.abs(j - k)))
