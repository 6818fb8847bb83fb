"""The base class of a one-dimensional basis: one axis of a tensor-product grid."""

from __future__ import annotations

import abc
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

#: the dealiasing rules of a grid: "2/3" (truncation), "3/2" (products on zero-padded points), "none"
DEALIAS = ("2/3", "3/2", "none")


class Basis(abc.ABC):
    """One axis of a grid: ``n`` points on ``[a, b]``, a spectral representation and the xfft kind that maps one
    to the other.

    A grid (:class:`solvers.Grid`) is a tensor product of bases on a device mesh. A basis knows everything along
    its own axis: the points and quadrature weights, the transform kind (``fft``, ``rfft``, ``dct1``, ``dct2``,
    ``dst2``) and how to turn the transform's output (``norm="forward"``) into its coefficients, derivatives,
    dealiasing (2/3 truncation, 3/2 padding), Parseval weights, and how outputs describe its coordinate.

    Subclasses set :attr:`kind`, :attr:`boundary` and :attr:`diagonal` and implement :meth:`points`,
    :meth:`weights`, :meth:`size`, :meth:`keep` and :meth:`resized`. Static information only (numpy), so a basis
    is hashable and cheap; the array work happens in the grid.

    Attributes:
      n: number of points. domain: ``(a, b)``. length: ``b - a``.
    """

    #: xfft transform kind along this axis (see :data:`xfft.R2R_KINDS`)
    kind: ClassVar[str] = ""
    #: boundary conditions the basis functions satisfy (periodic, or a wall condition), for messages and outputs
    boundary: ClassVar[str] = ""
    #: True if ``d/dx`` is a diagonal multiplier on the coefficients (Fourier, cosine, sine)
    diagonal: ClassVar[bool] = True
    #: smallest number of points the basis accepts
    min_points: ClassVar[int] = 4
    #: True if coefficients couple along the axis (index shifts, recurrences, implicit solves): the axis must then
    #: be unsharded in spectral space, which the grid checks
    whole_axis: ClassVar[bool] = False

    def __init__(self, n: int, domain: tuple[float, float] | float = 2 * math.pi):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{type(self).__name__}: n must be an int, got {n!r}")
        self.n = int(n)
        self._check_n()
        lo, hi = (0.0, float(domain)) if np.ndim(domain) == 0 else tuple(float(v) for v in domain)
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise ValueError(f"{type(self).__name__}: domain must be a positive length or an interval (a, b) with "
                             f"a < b, got {domain!r}")
        self.domain = (lo, hi)

    def _check_n(self) -> None:
        if self.n < self.min_points:
            raise ValueError(f"{type(self).__name__} needs at least {self.min_points} points, got n={self.n}")

    @property
    def length(self) -> float:
        return self.domain[1] - self.domain[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n}, domain={self.domain})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and (other.n, other.domain) == (self.n, self.domain)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.n, self.domain))

    # ----- static description --------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def size(self) -> int:
        """Number of spectral coefficients (``n`` for most bases, ``n // 2 + 1`` for a half spectrum)."""

    @abc.abstractmethod
    def points(self) -> np.ndarray:
        """The ``n`` grid points (float64, ascending)."""

    @abc.abstractmethod
    def weights(self) -> np.ndarray:
        """Quadrature weights: ``sum_j w_j f(x_j) = integral of f over the domain`` (exact for the span)."""

    @abc.abstractmethod
    def keep(self, rule: str) -> np.ndarray:
        """Boolean mask of the coefficients a dealiasing ``rule`` keeps (``"2/3"``, ``"3/2"`` or ``"none"``)."""

    @abc.abstractmethod
    def resized(self, n: int) -> Basis:
        """The same basis on ``n`` points (the 3/2-padded grid of products)."""

    @property
    def uniform(self) -> bool:
        """True if the points are equally spaced (outputs then store origin and spacing, not every point)."""
        return True

    def padded_size(self) -> int:
        """Points of the 3/2-padded product grid."""
        return 3 * self.n // 2

    def describe(self) -> dict:
        """What outputs (snapshots, run.json) record about this axis: basis name, domain, points if non-uniform."""
        out = {"basis": type(self).__name__, "n": self.n, "domain": list(self.domain), "boundary": self.boundary}
        if not self.uniform:
            out["points"] = [float(v) for v in self.points()]
        return out

    # ----- coefficients --------------------------------------------------------------------------------
    def wavenumbers(self) -> np.ndarray:
        """The multiplier ``k`` of each coefficient under ``d/dx`` for diagonal bases (see :meth:`Grid.derivative`)."""
        raise NotImplementedError(f"{type(self).__name__} has no diagonal derivative")

    def parseval(self) -> np.ndarray | None:
        """``p_k`` with ``mean(|f|^2) = sum_k p_k |c_k|^2`` along this axis, or None if the basis is not orthogonal
        (then means use quadrature or a Gram matrix)."""
        return None

    def post_forward(self, y: jax.Array, axis: int) -> jax.Array:
        """Coefficients from the xfft forward transform ``y`` (``norm="forward"``) along ``axis`` (local)."""
        return y

    def pre_backward(self, c: jax.Array, axis: int) -> jax.Array:
        """What the xfft inverse transform (``norm="forward"``) takes along ``axis``, from coefficients ``c``."""
        return c

    def pad(self, c: jax.Array, other: Basis, axis: int) -> jax.Array:
        """The coefficients ``c`` of this basis along ``axis`` as coefficients of ``other`` (the same basis on
        more or fewer points): zero-padded or truncated, each retained coefficient keeping its meaning (the highest
        modes are appended or dropped; Fourier overrides this)."""
        m, size = c.shape[axis], other.size
        if size <= m:
            return jax.lax.slice_in_dim(c, 0, size, axis=axis)
        width = [(0, 0)] * c.ndim
        width[axis] = (0, size - m)
        return jnp.pad(c, width)


def along(v: np.ndarray, axis: int, ndim: int, dtype) -> jax.Array:
    """The 1D table ``v`` shaped to broadcast along ``axis`` of an ``ndim``-dimensional array."""
    return jnp.asarray(np.asarray(v).reshape([-1 if d == axis else 1 for d in range(ndim)]), dtype)
