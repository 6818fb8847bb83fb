"""A DFT along a sharded axis that stays sharded: the four-step (Bailey) algorithm across the devices.

Used where no other axis can take a sharded transformed axis's mesh axes (a 1D array: :class:`xfft._layout.
FourStep`). The axis of ``n`` points is split over ``p`` devices in blocks of ``l = n / p``, so its index is
``l c + b`` (``c`` the device, ``b`` local). With ``k = k1 + p k2`` (``k1 < p``, ``k2 < l``)::

    X[k1 + p k2] = sum_b w_l^(b k2) w_n^(b k1) sum_c w_p^(c k1) x[l c + b]

Steps on the local block (the axis at ``axis``; other axes are batch axes):

1. all-to-all: split ``b`` (padded to a multiple of ``p`` in transit), gather ``c``;
2. the ``p``-point DFT over ``c`` (a matrix product in place, :func:`xfft._matdft.dft_along`), times the twiddle
   factors ``w_n^(b k1)`` (``b`` global: the device's offset comes from a ``p x p`` table);
3. all-to-all: split ``k1`` (one per device), gather ``b``; the ``l``-point FFT over ``b`` gives ``k2``: device
   ``k1`` now holds ``X[k1 + p k2]`` for every ``k2`` (a cyclic distribution);
4. all-to-all: split ``k2``, gather ``k1``; a local swap of the two gives the natural blocks of ``X``. When ``p``
   does not divide ``l`` these blocks are ``p ceil(l / p)`` long, and one collective permute of at most
   ``(p - 1)^2`` entries per row hands each device's surplus to the next (:func:`rebalance`).

Three all-to-alls of one block each (the six-step count: input and output both in natural block order), no
all-gather; the inverse is the same with conjugate factors. Every step is plain JAX (differentiable, batchable).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._matdft import dft_along, factors, phase, scale


def _name(mesh_axes: tuple[str, ...]):
    return mesh_axes[0] if len(mesh_axes) == 1 else mesh_axes


def _exchange(x: jax.Array, name, p: int, split: int, concat: int) -> jax.Array:
    """Tiled all-to-all over ``name`` (``p`` devices), ``split`` zero-padded to a multiple of ``p`` first."""
    extra = -x.shape[split] % p
    if extra:
        widths = [(0, 0)] * x.ndim
        widths[split] = (0, extra)
        x = jnp.pad(x, widths)
    return jax.lax.all_to_all(x, name, split, concat, tiled=True)


def _short_dft(x: jax.Array, axis: int, inverse: bool, factor: float) -> jax.Array:
    """The DFT of the (short) ``axis`` times ``factor``: a matrix product in place where the length allows."""
    if factors(x.shape[axis]) is not None:
        return dft_along(x, axis, inverse, factor=factor)
    y = jnp.fft.ifft(x, axis=axis, norm="forward") if inverse else jnp.fft.fft(x, axis=axis)
    return y if factor == 1 else y * jnp.asarray(factor, x.real.dtype)


def _twiddle(n: int, p: int, rows: int, inverse: bool, dtype, name) -> jax.Array:
    """``w_n^(k1 b)`` as a ``p x rows`` array (``k1`` by ``b``) for this device's ``rows`` values of ``b``."""
    k1, j, c = np.arange(p), np.arange(rows), np.arange(p)
    local = jnp.asarray(phase(np.outer(k1, j), n, inverse).astype(dtype))  # w^(k1 j)
    offset = jnp.asarray(phase(np.outer(c * rows, k1), n, inverse).astype(dtype))  # w^(k1 c rows), row c
    here = jnp.take(offset, jax.lax.axis_index(name), axis=0)
    return here[:, None] * local


def rebalance(x: jax.Array, axis: int, name, p: int, length: int) -> jax.Array:
    """Blocks of ``x.shape[axis]`` (device ``t`` holding entries ``[t m, t m + m)`` of the axis, ``m >= length``)
    to blocks of ``length``: each device receives its missing head from the devices before it (collective
    permutes) and drops its surplus tail."""
    m = x.shape[axis]
    if m == length:
        return x
    t = jax.lax.axis_index(name)
    need = (p - 1) * (m - length)  # the longest head any device misses
    hops = -(-need // m)
    pieces = []
    for k in range(hops, 0, -1):
        send = x if hops > 1 else jax.lax.slice_in_dim(x, m - need, m, axis=axis)
        pieces.append(jax.lax.ppermute(send, name, [(i, i + k) for i in range(p - k)]))
    cat = jnp.concatenate(pieces + [x], axis=axis)
    ahead = cat.shape[axis] - m  # entries before this device's own block
    return jax.lax.dynamic_slice_in_dim(cat, ahead - t * (m - length), length, axis=axis)


def four_step(x: jax.Array, axis: int, mesh_axes: tuple[str, ...], p: int, n: int, inverse: bool,
              norm: str) -> jax.Array:
    """The DFT (``inverse``: its inverse) of length ``n`` along ``axis`` of the local block ``x``, whose ``n / p``
    entries are this device's block of the axis over the ``p`` devices of ``mesh_axes``; the result has the same
    layout. ``norm`` as ``numpy.fft``. See the module docstring."""
    name = _name(mesh_axes)
    length = x.shape[axis]
    y = _exchange(jnp.expand_dims(x, axis), name, p, axis + 1, axis)  # [.., c, b ..]
    rows = y.shape[axis + 1]
    y = _short_dft(y, axis, inverse, scale(norm, n, inverse))  # [.., k1, b, ..]
    shape = [1] * y.ndim
    shape[axis], shape[axis + 1] = p, rows
    y = y * _twiddle(n, p, rows, inverse, y.dtype, name).reshape(shape)
    y = jax.lax.all_to_all(y, name, axis, axis + 1, tiled=True)  # [.., 1 (k1), b padded, ..]
    y = jax.lax.slice_in_dim(y, 0, length, axis=axis + 1)
    y = jnp.fft.ifft(y, axis=axis + 1, norm="forward") if inverse else jnp.fft.fft(y, axis=axis + 1)
    y = _exchange(y, name, p, axis + 1, axis)  # [.., k1, k2 block, ..]
    y = jnp.swapaxes(y, axis, axis + 1)
    y = y.reshape(y.shape[:axis] + (y.shape[axis] * p,) + y.shape[axis + 2:])
    return rebalance(y, axis, name, p, length)
