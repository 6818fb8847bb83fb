"""Fourier bases of a periodic axis: complex (``fft``, every wavenumber) and real (``rfft``, half spectrum)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Basis


class Fourier(Basis):
    """Periodic axis, complex exponentials ``exp(i k x)``: coefficients of every wavenumber (``numpy.fft.fft``
    order, ``norm="forward"``: the coefficients themselves, so padding or truncating never rescales).

    Points ``x_j = a + j L / n``; ``k = 2 pi m / L``, ``m = fftfreq(n) * n``. Used for all periodic axes of a
    real field but the last (which is :class:`RealFourier`) and for every periodic axis of a complex field.
    """

    kind = "fft"
    boundary = "periodic"

    @property
    def size(self) -> int:
        return self.n

    def points(self) -> np.ndarray:
        return self.domain[0] + np.arange(self.n) * (self.length / self.n)

    def weights(self) -> np.ndarray:
        return np.full(self.n, self.length / self.n)

    def modes(self) -> np.ndarray:
        """Integer mode number of each coefficient (negative ones after the positive ones)."""
        return np.fft.fftfreq(self.n, 1.0 / self.n)

    def wavenumbers(self) -> np.ndarray:
        return self.modes() * (2 * math.pi / self.length)

    def keep(self, rule: str) -> np.ndarray:
        m = np.abs(self.modes())
        if rule == "2/3":
            return m < self.n / 3
        if rule == "3/2":
            return m != self.n // 2
        return np.ones(self.size, bool)

    def parseval(self) -> np.ndarray:
        return np.ones(self.size)

    def resized(self, n: int) -> Fourier:
        return type(self)(n, self.domain)

    def pad(self, c: jax.Array, other: Basis, axis: int) -> jax.Array:
        """Zero-pad or truncate in wavenumber space: modes ``|m| < min(n, other.n) / 2`` keep their place."""
        n, size = c.shape[axis], other.size
        h = min(n, size) // 2
        a = jnp.take(c, np.r_[0:h, n - h:n], axis=axis)
        if size > n:
            shape = list(a.shape)
            shape[axis] = size - 2 * h
            lo = jax.lax.slice_in_dim(a, 0, h, axis=axis)
            hi = jax.lax.slice_in_dim(a, h, 2 * h, axis=axis)
            a = jnp.concatenate([lo, jnp.zeros(shape, a.dtype), hi], axis=axis)
        return a


class RealFourier(Fourier):
    """Periodic axis of a real field stored as a half spectrum (``numpy.fft.rfft``): ``n // 2 + 1`` coefficients
    ``m = 0 .. n/2``; the others are their complex conjugates. At most one axis of a grid, the last periodic one.

    Parseval weights are 1 for ``m = 0`` and the Nyquist mode, 2 for the others (each stands for itself and its
    conjugate).
    """

    kind = "rfft"

    @property
    def size(self) -> int:
        return self.n // 2 + 1

    def modes(self) -> np.ndarray:
        return np.arange(self.size, dtype=float)

    def parseval(self) -> np.ndarray:
        m = self.modes()
        return np.where((m == 0) | (m == self.n // 2), 1.0, 2.0)

    def pad(self, c: jax.Array, other: Basis, axis: int) -> jax.Array:
        """Zero-pad or truncate the half spectrum (the highest modes are appended or dropped)."""
        return Basis.pad(self, c, other, axis)
