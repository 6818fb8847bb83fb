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

    ``kept_modes`` (default ``n``): the resolution of the axis when it is stored on more points than it has modes
    (a grid the mesh cannot split evenly, held on the next size it can; see :class:`~solvers.SpectralGrid`'s
    ``points``). The dealiasing rules then keep the modes of a ``kept_modes``-point axis, and the coefficients
    between them and ``n / 2`` stay zero. Products of two dealiased fields are exact on either number of points,
    so the run is that of ``kept_modes`` points, evaluated on ``n``.
    """

    kind = "fft"
    boundary = "periodic"
    #: a grid's axis has an even number of points (its Nyquist conventions assume one); the 3/2-padded product
    #: axis of :meth:`resized` may have an odd number
    _even: bool = True

    def _check_n(self) -> None:
        if self.n < self.min_points or (self._even and self.n % 2):
            raise ValueError(f"{type(self).__name__} needs an even number of points >= {self.min_points} (its "
                             f"Nyquist mode conventions assume one), got n={self.n}")

    def __init__(self, n: int, domain: tuple[float, float] | float = 2 * math.pi, *, kept_modes: int | None = None):
        super().__init__(n, domain)
        kept = self.n if kept_modes is None else kept_modes
        if isinstance(kept, bool) or not isinstance(kept, (int, np.integer)):
            raise TypeError(f"{type(self).__name__}: kept_modes must be an int, got {kept_modes!r}")
        if not self.min_points <= kept <= self.n:
            raise ValueError(f"{type(self).__name__}: kept_modes must be from {self.min_points} to n={self.n}, "
                             f"got {kept_modes!r}")
        self.kept_modes = int(kept)

    def __repr__(self) -> str:
        extra = f", kept_modes={self.kept_modes}" if self.kept_modes != self.n else ""
        return f"{type(self).__name__}({self.n}, domain={self.domain}{extra})"

    def __eq__(self, other) -> bool:
        return super().__eq__(other) and other.kept_modes == self.kept_modes

    def __hash__(self) -> int:
        return hash((super().__hash__(), self.kept_modes))

    def describe(self) -> dict:
        out = super().describe()
        if self.kept_modes != self.n:
            out["kept_modes"] = self.kept_modes
        return out

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
        return keep_modes(np.abs(self.modes()), self.n, self.kept_modes, rule)

    def parseval(self) -> np.ndarray:
        return np.ones(self.size)

    def resized(self, n: int) -> Fourier:
        """The axis on ``n`` points (the 3/2-padded product grid: every mode kept, no dealiasing of its own)."""
        return _padded(type(self), n, self.domain)

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

    ``nyquist=False`` (an even ``n``): the ``n // 2`` coefficients ``m = 0 .. n/2 - 1``, without the Nyquist one
    (``xfft.xrfftn(..., drop_nyquist=True)``). A dealiased field has none, so it loses nothing, and on a 2D slab
    each transform then takes one all-to-all instead of two; :class:`~solvers.Grid` picks it for dealiased 2D
    grids of real fields.
    """

    kind = "rfft"

    def __init__(self, n: int, domain: tuple[float, float] | float = 2 * math.pi, *, kept_modes: int | None = None,
                 nyquist: bool = True):
        super().__init__(n, domain, kept_modes=kept_modes)
        if not isinstance(nyquist, (bool, np.bool_)):
            raise TypeError(f"RealFourier: nyquist must be True or False, got {nyquist!r}")
        if not nyquist and self.n % 2:
            raise ValueError(f"RealFourier: nyquist=False needs an even n (an odd n has no Nyquist mode), got {n}")
        self.nyquist = bool(nyquist)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + ("" if self.nyquist else ", nyquist=False") + ")"

    def __eq__(self, other) -> bool:
        return super().__eq__(other) and other.nyquist == self.nyquist

    def __hash__(self) -> int:
        return hash((super().__hash__(), self.nyquist))

    def without_nyquist(self) -> RealFourier:
        """The same axis without the Nyquist coefficient (``n // 2`` coefficients)."""
        return RealFourier(self.n, self.domain, kept_modes=self.kept_modes, nyquist=False)

    def resized(self, n: int) -> RealFourier:
        """The axis on ``n`` points (the 3/2-padded product grid), with or without the Nyquist coefficient as this
        one. Leaving it out on the padded grid loses nothing: a padded spectrum's is zero, and a product's is
        truncated away on the way back to this grid."""
        return _padded(RealFourier, n, self.domain, nyquist=self.nyquist)

    @property
    def size(self) -> int:
        return self.n // 2 + (1 if self.nyquist else 0)

    def modes(self) -> np.ndarray:
        return np.arange(self.size, dtype=float)

    def parseval(self) -> np.ndarray:
        m = self.modes()
        return np.where((m == 0) | (m == self.n // 2), 1.0, 2.0)

    def pad(self, c: jax.Array, other: Basis, axis: int) -> jax.Array:
        """Zero-pad or truncate the half spectrum (the highest modes are appended or dropped)."""
        return Basis.pad(self, c, other, axis)


def _padded(cls, n: int, domain, **kw) -> Fourier:
    """A product axis of ``n`` points (odd allowed: the 3/2 rule of an even axis of ``2 mod 4`` points)."""
    out = cls.__new__(cls)
    out._even = False
    out.__init__(n, domain, **kw)
    return out


def periodic_bases(sizes, lengths, *, points=None, real_last: bool = True) -> list[Fourier]:
    """Fourier bases of periodic axes with ``sizes`` modes on ``points`` (default: ``sizes``; see
    :attr:`Fourier.kept_modes`), the last one a :class:`RealFourier` half spectrum when ``real_last``."""
    pts = tuple(sizes) if points is None else tuple(points)
    out = [Fourier(p, L, kept_modes=n) for p, n, L in zip(pts, sizes, lengths)]
    if real_last and out:
        out[-1] = RealFourier(pts[-1], lengths[-1], kept_modes=sizes[-1])
    return out


def wall_points(shape, points):
    """The points of the periodic axes (1, 2) of a grid whose axis 0 is a wall-normal basis, which keeps its
    ``shape[0]`` points; None for ``points=None``.

    Raises:
      ValueError: ``points`` that change the wall-normal axis.
    """
    if points is None:
        return None
    if int(points[0]) != int(shape[0]):
        raise ValueError(f"the wall-normal axis keeps its {shape[0]} points; only the periodic axes can hold their "
                         f"modes on more points, got points {tuple(points)} for the grid {tuple(shape)}")
    return tuple(points[1:])


def keep_modes(m, n: int, kept: int, rule: str):
    """Which of the modes ``|m|`` (numpy or jax array) of an ``n``-point axis with ``kept`` modes a dealiasing
    ``rule`` keeps: ``"2/3"`` ``|m| < kept / 3``; ``"3/2"`` every mode but the Nyquist mode (of ``kept`` points:
    ``|m| < kept / 2`` when stored on more); ``"none"`` every mode (of a ``kept``-point axis
    stored on more: ``|m| < kept / 2``, its Nyquist mode has no real counterpart there)."""
    if rule == "2/3":
        return m < kept / 3
    if kept == n:
        return m != n // 2 if rule == "3/2" else m >= 0
    return m < kept / 2
