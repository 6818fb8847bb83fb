"""Local (one-device) 1D DCT and DST of types 1-4 along one axis, computed with FFTs, with scipy's norms.

Each transform is an FFT of a symmetric extension (types 1 and 2) or of a twiddled, zero-padded sequence (types 3
and 4), or, for a type-1 DCT whose extension's length has a large prime factor, one product with its cosine matrix
(:func:`dense_dct1`), so it is exact to round-off, differentiable and batchable (plain ``jax.numpy``). Definitions,
lengths and the ``norm`` conventions (``"backward"``, ``"ortho"`` with orthogonalization, ``"forward"``) are those of
``scipy.fft.dct``/``dst``; complex input is transformed as ``T(re) + 1j T(im)`` (every transform is real).
"""

from __future__ import annotations

import math
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

#: inverse type of each type: ``idct(type=t) = dct(type=INVERSE_TYPE[t]) / scale``
INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def _sl(x: jax.Array, axis: int, start: int, stop: int) -> jax.Array:
    return jax.lax.slice_in_dim(x, start, stop, axis=axis)


def _along(v: jax.Array, axis: int, ndim: int) -> jax.Array:
    """Reshape the 1D ``v`` to broadcast along ``axis`` of an ``ndim``-dimensional array."""
    return v.reshape([-1 if d == axis else 1 for d in range(ndim)])


def _twiddle(n: int, scale: float, shift: float, length: int, axis: int, ndim: int, dtype) -> jax.Array:
    """``exp(1j * pi * scale * (arange(length) + shift))`` shaped to broadcast along ``axis``."""
    k = jnp.arange(length, dtype=jnp.finfo(dtype).dtype)
    return _along(jnp.exp(1j * math.pi * scale * (k + shift)).astype(dtype), axis, ndim)


def _cdtype(x: jax.Array):
    return jnp.result_type(x.dtype, jnp.complex64)


def _largest_prime_factor(m: int) -> int:
    p, f = 1, 2
    while f * f <= m:
        while m % f == 0:
            p, m = f, m // f
        f += 1
    return max(p, m)


def dense_dct1(n: int) -> bool:
    """Whether the type-1 DCT of ``n`` points is one product with its ``n x n`` cosine matrix rather than an FFT
    of its ``2(n-1)``-point even extension.

    Where ``n - 1`` has a prime factor ``p > 7`` and ``n <= 4p`` (``n <= 1024``), e.g. ``n = 32, 128, 192``, FFT
    libraries transform the extension with an O(p) pass per point (XLA CPU's 254-point real FFT costs several times
    the 256-point one) and the FFT route moves the axis last and back; the product, O(n) per point, reads the axis
    where it lies. Elsewhere (e.g. ``n = 33, 129``, or ``n = 512`` with ``511 = 7 * 73``) the FFT is the faster.

    Args:
      n: points along the axis.

    Returns:
      True for the matrix product.
    """
    if n < 3 or n > 1024:
        return False
    p = _largest_prime_factor(n - 1)
    return p > 7 and n <= 4 * p


@lru_cache(maxsize=32)
def _dct1_table(n: int) -> np.ndarray:
    """``M[k, j] = w_j cos(pi j k / (n - 1))`` (``w = 1`` at both ends, else 2): the unnormalized DCT-I."""
    j = np.arange(n)
    big = n - 1
    table = np.cos(np.pi * (np.outer(j, j) % (2 * big)) / big) * np.where((j == 0) | (j == big), 1.0, 2.0)
    table.setflags(write=False)
    return table


def _dct1_dense(x: jax.Array, axis: int) -> jax.Array:
    """The unnormalized DCT-I of real ``x`` along ``axis`` as one matrix product (the axis stays where it lies)."""
    m = jnp.asarray(_dct1_table(x.shape[axis]), x.dtype)
    hi = jax.lax.Precision.HIGHEST
    if axis == x.ndim - 1:
        return jnp.tensordot(x, m, axes=(axis, 1), precision=hi)
    return jnp.moveaxis(jnp.tensordot(m, x, axes=(1, axis), precision=hi), 0, axis)


def _raw(x: jax.Array, kind: str, t: int, axis: int) -> jax.Array:
    """Unnormalized (``norm="backward"``) forward transform of real ``x`` along ``axis``."""
    n, nd, cd = x.shape[axis], x.ndim, _cdtype(x)
    if kind == "dct" and t == 1:
        if n < 2:
            raise ValueError(f"a type-1 DCT needs at least 2 points along axis {axis}, got {n}")
        if dense_dct1(n):
            return _dct1_dense(x, axis)
        v = jnp.concatenate([x, jnp.flip(_sl(x, axis, 1, n - 1), axis)], axis=axis)
        return jnp.fft.rfft(v, axis=axis).real  # the 2(n-1)-point extension's n = (2(n-1))//2 + 1 coefficients
    if kind == "dst" and t == 1:
        z = jnp.zeros_like(_sl(x, axis, 0, 1))
        v = jnp.concatenate([z, x, z, -jnp.flip(x, axis)], axis=axis)
        return -_sl(jnp.fft.rfft(v, axis=axis).imag, axis, 1, n + 1)
    if t == 2:
        sign = 1 if kind == "dct" else -1
        v = jnp.concatenate([x, sign * jnp.flip(x, axis)], axis=axis)
        f = jnp.fft.rfft(v, axis=axis)  # n + 1 coefficients of the real 2n-point extension
        if kind == "dct":
            return (_sl(f, axis, 0, n) * _twiddle(n, -1 / (2 * n), 0, n, axis, nd, cd)).real
        return (1j * _sl(f, axis, 1, n + 1) * _twiddle(n, -1 / (2 * n), 1, n, axis, nd, cd)).real
    if t == 3:
        c = jnp.full((n,), 2.0, x.dtype)
        if kind == "dct":
            c = c.at[0].set(1.0)
            z = x * _along(c, axis, nd) * _twiddle(n, 1 / (2 * n), 0, n, axis, nd, cd)
            pad = [(0, 0)] * nd
            pad[axis] = (0, n)
            return _sl((2 * n) * jnp.fft.ifft(jnp.pad(z, pad), axis=axis).real, axis, 0, n)
        c = c.at[n - 1].set(1.0)
        z = x * _along(c, axis, nd) * _twiddle(n, 1 / (2 * n), 1, n, axis, nd, cd)
        pad = [(0, 0)] * nd
        pad[axis] = (1, n - 1)
        return _sl((2 * n) * jnp.fft.ifft(jnp.pad(z, pad), axis=axis).imag, axis, 0, n)
    # type 4: 2 * sum x_n e^{-i pi (2n+1)(2k+1)/(4n)} = 2 e^{-i pi (2k+1)/(4N)} FFT_2N(x_n e^{-i pi n/(2N)})[k]
    pad = [(0, 0)] * nd
    pad[axis] = (0, n)
    z = jnp.pad(x * _twiddle(n, -1 / (2 * n), 0, n, axis, nd, cd), pad)
    # (2k+1)/(4N) = (k + 1/2) / (2N): scale -1/(2N) with shift 1/2
    f = 2 * _sl(jnp.fft.fft(z, axis=axis), axis, 0, n) * _twiddle(n, -1 / (2 * n), 0.5, n, axis, nd, cd)
    return f.real if kind == "dct" else -f.imag


def _scale_index(x: jax.Array, axis: int, index: int, factor: float) -> jax.Array:
    n = x.shape[axis]
    w = jnp.ones((n,), x.dtype).at[index].set(factor)
    return x * _along(w, axis, x.ndim)


def _ortho(x: jax.Array, kind: str, t: int, axis: int) -> jax.Array:
    """The orthonormal transform (scipy's ``norm="ortho"``, ``orthogonalize=True``)."""
    n = x.shape[axis]
    r2 = math.sqrt(2.0)
    if t == 1 and kind == "dct":
        x = _scale_index(_scale_index(x, axis, 0, r2), axis, n - 1, r2)
        y = _raw(x, kind, 1, axis)
        y = _scale_index(_scale_index(y, axis, 0, 1 / r2), axis, n - 1, 1 / r2)
        return y / math.sqrt(2 * (n - 1))
    if t == 1:
        return _raw(x, kind, 1, axis) / math.sqrt(2 * (n + 1))
    edge = 0 if kind == "dct" else n - 1
    if t == 2:
        return _scale_index(_raw(x, kind, 2, axis), axis, edge, 1 / r2) / math.sqrt(2 * n)
    if t == 3:
        return _raw(_scale_index(x, axis, edge, r2), kind, 3, axis) / math.sqrt(2 * n)
    return _raw(x, kind, 4, axis) / math.sqrt(2 * n)


def logical_size(kind: str, t: int, n: int) -> int:
    """The ``M`` of scipy's ``norm="forward"`` (``1/M`` on the forward transform, none on the inverse)."""
    if t == 1:
        return 2 * (n - 1) if kind == "dct" else 2 * (n + 1)
    return 2 * n


def r2r(x: jax.Array, kind: str, t: int, axis: int, norm: str, inverse: bool = False) -> jax.Array:
    """DCT or DST (``kind``) of type ``t`` along ``axis`` with scipy's ``norm``; ``inverse`` gives idct/idst.

    Complex ``x`` is transformed as real and imaginary parts. Validation is the caller's.
    """
    if jnp.iscomplexobj(x):
        return jax.lax.complex(r2r(x.real, kind, t, axis, norm, inverse), r2r(x.imag, kind, t, axis, norm, inverse))
    tt = INVERSE_TYPE[t] if inverse else t
    if norm == "ortho":
        return _ortho(x, kind, tt, axis)
    y = _raw(x, kind, tt, axis)
    if (norm == "forward") != inverse:
        y = y / logical_size(kind, t, x.shape[axis])
    return y
