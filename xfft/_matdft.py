"""Discrete Fourier transforms along an axis where it lies, by matrix products of its factors.

XLA's FFT op transforms only the minor-most axes of an array, so an FFT along any other axis costs a transpose
that brings the axis minor-most and, to keep the array's axis order, one that takes it back. :func:`dft_along`
transforms one axis in place instead. An axis of length ``n = n1 * n2`` (index ``n2 * a + b``) is reordered to
``[b, a]`` by whole blocks of the axes after it (a copy that XLA fuses with an all-to-all's own, where one comes
before), transformed over ``a`` by one ``n1 x n1`` matrix per ``b`` with the twiddle factors ``w_n^(k1 b)`` folded
in (one batched product), and over ``b`` by one ``n2 x n2`` product that leaves the output index ``k1 + n1 * k2``
in natural order. No copy changes the minor-most axis; the cost is ``n1 + n2`` complex multiply-adds per point,
where an FFT takes about ``5 log2(n)`` flops. Lengths of at most :data:`DIRECT` are one product; longer ones must
split into two factors of at most :data:`DIRECT` (:func:`factors`).

Used for the last transform of a natural-order program and the first of a natural-order inverse on CPU devices
(:func:`xfft._lower.lower_plan`), and for the short transforms across devices of :mod:`xfft._fourstep`.
Matrices and twiddle factors are computed in float64 from exact integer phases and rounded once to the dtype.
"""

from __future__ import annotations

import math
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

#: longest transform done as one matrix product (and longest factor of a two-factor one)
DIRECT = 32


@lru_cache(maxsize=256)
def factors(n: int) -> tuple[int, ...] | None:
    """``(n,)`` for ``n <= DIRECT``, else the most balanced ``(n1, n2)`` with ``n1 * n2 == n`` and both factors at
    most :data:`DIRECT`, else None (the length is left to the FFT op)."""
    if n <= DIRECT:
        return (n,)
    pairs = [(a, n // a) for a in range(2, DIRECT + 1) if n % a == 0 and n // a <= DIRECT]
    if not pairs:
        return None
    return min(pairs, key=lambda f: (abs(math.log(f[0] / f[1])), f[0]))


def phase(m: np.ndarray, n: int, inverse: bool) -> np.ndarray:
    """``exp(-+2 pi i m / n)`` in complex128 for integer phases ``m`` (reduced modulo ``n`` exactly first)."""
    sign = 1.0 if inverse else -1.0
    return np.exp(sign * 2j * np.pi * (np.asarray(m, np.int64) % n) / n)


def scale(norm: str, n: int, inverse: bool) -> float:
    """The factor a transform of ``n`` points takes under ``norm`` (as ``numpy.fft``), forward or inverse."""
    if norm == "ortho":
        return 1 / math.sqrt(n)
    return 1 / n if (norm == "forward") != inverse else 1.0


@lru_cache(maxsize=256)
def _tables(n: int, dtype: str, inverse: bool, factor: float) -> tuple[np.ndarray, ...]:
    """The matrices of :func:`dft_along` for ``n`` points, ``factor`` folded into the first: one ``n x n``
    matrix, or for ``n = n1 n2`` the ``n1 x n1`` matrices times the twiddle factors of each ``b`` (``n2`` of them)
    and the ``n2 x n2`` matrix."""
    f = factors(n)
    assert f is not None
    if len(f) == 1:
        k = np.arange(n)
        return ((factor * phase(np.outer(k, k), n, inverse)).astype(dtype),)
    n1, n2 = f
    k1, k2 = np.arange(n1), np.arange(n2)
    first = factor * phase(np.outer(k1, k1), n1, inverse)  # [k1, a]
    twiddle = phase(np.outer(k2, k1), n, inverse)  # [b, k1]: w_n^(b k1)
    return ((twiddle[:, :, None] * first[None]).astype(dtype), phase(np.outer(k2, k2), n2, inverse).astype(dtype))


def _left(mat: jax.Array, v: jax.Array) -> jax.Array:
    """``mat`` (``k x n``, or one per batch entry: ``batch x k x n``) applied to every ``v[i]`` of ``v``
    (``batch x n x m``): ``batch x k x m``, one product."""
    hi = jax.lax.Precision.HIGHEST
    if mat.ndim == 2 and v.shape[0] == 1:
        return jax.lax.dot_general(mat, v[0], (((1,), (0,)), ((), ())), precision=hi)[None]
    mats = jnp.broadcast_to(mat, (v.shape[0],) + mat.shape[-2:])
    return jax.lax.dot_general(mats, v, (((2,), (1,)), ((0,), (0,))), precision=hi)


def dft_along(x: jax.Array, axis: int, inverse: bool = False, norm: str = "backward",
              factor: float | None = None) -> jax.Array:
    """The DFT (or inverse) of complex ``x`` along ``axis``, as ``jnp.fft.fft(x, axis=axis, norm=norm)``, without
    moving the axis (see the module docstring); ``factor`` replaces the normalization ``norm`` gives.

    Raises:
      ValueError: the length of ``axis`` has no factors of at most :data:`DIRECT` (:func:`factors` is None).
    """
    shape = x.shape
    n = shape[axis]
    if factors(n) is None:
        raise ValueError(f"a matrix DFT of length {n} needs factors of at most {DIRECT}; use the FFT op")
    batch, rest = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    f = scale(norm, n, inverse) if factor is None else factor
    tables = [jnp.asarray(t) for t in _tables(n, jnp.dtype(x.dtype).name, inverse, f)]
    if len(tables) == 1:
        # XLA rewrites a product with a concatenation (an all-to-all's output) into a sum of products, which rounds
        # differently: the barrier keeps one product, so the result does not depend on where x comes from.
        x = jax.lax.optimization_barrier(x)
        return _left(tables[0], x.reshape(batch, n, rest)).reshape(shape)
    first, second = tables
    n2, n1 = first.shape[:2]
    # [.., a, b, ..] -> [.., b, a, ..]: whole blocks of the axes after it move (fused with an all-to-all's copy)
    y = jax.lax.optimization_barrier(x.reshape(batch, n1, n2, rest).transpose(0, 2, 1, 3))
    y = _left(jnp.tile(first, (batch, 1, 1)), y.reshape(batch * n2, n1, rest))  # [.., b, k1, ..], twiddled
    return _left(second, y.reshape(batch, n2, n1 * rest)).reshape(shape)  # [.., k2, k1, ..]: index k1 + n1 k2
