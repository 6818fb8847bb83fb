"""Sine basis of a wall axis: ``f = sum_m c_m sin(m pi (x - a) / L)`` (zero value at the walls)."""

from __future__ import annotations

import jax
import numpy as np

import xfft

from ._base import along
from .cosine import Cosine


class Sine(Cosine):
    """Sine series on the cell-centred points ``x_j = a + (j + 1/2) L / n``, transformed by a DST-II:
    fixed-value walls (``f = 0``: the normal velocity between free-slip plates, a temperature perturbation,
    Dirichlet walls).

    Coefficients ``c_m`` of ``sin(m pi (x - a) / L)`` with the index ``m = 0 .. n-1`` shared with
    :class:`~solvers.bases.Cosine` (``c_0 = 0``; the DST-II's highest mode ``m = n``, the grid-scale
    alternation, is not kept), so ``d/dx`` maps sine coefficient ``m`` to cosine coefficient ``m`` times
    ``+k_m``. The index shift from the DST-II's own ``sin((k + 1) ...)`` is a roll by one
    (:func:`xfft.xroll`: local, or one boundary row per device where the axis is sharded).
    """

    kind = "dst2"
    boundary = "dirichlet"
    partner = "Cosine"

    def parseval(self) -> np.ndarray:
        p = np.full(self.n, 0.5)
        p[0] = 0.0
        return p

    def post_forward(self, y: jax.Array, axis: int) -> jax.Array:
        w = np.full(self.n, 2.0)
        w[0] = 0.0  # the roll brings the dropped mode n to index 0
        return xfft.xroll(y, 1, axis) * along(w, axis, y.ndim, np.finfo(y.dtype).dtype)

    def pre_backward(self, c: jax.Array, axis: int) -> jax.Array:
        w = np.full(self.n, 0.5)
        w[-1] = 0.0  # index 0 (c_0 = 0) lands on the DST-II's mode n
        return xfft.xroll(c, -1, axis) * along(w, axis, c.ndim, np.finfo(c.dtype).dtype)
