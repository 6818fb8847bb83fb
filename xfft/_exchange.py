"""The all-to-all of a :class:`~xfft._layout.Move`, alone or with the transpose that follows it.

A move splits one local axis (``dst``) into ``p`` chunks, sends chunk ``j`` to device ``j`` of its group and
stacks what it receives along another axis (``src``). When the lowered program transposes the result right after
(transposed spectral order brings the gathered axis to the minor-most position for the next FFT), XLA's CPU
backend fuses that transpose with the copy that stacks the received chunks: a strided pass that reads ``p``
buffers at once and, at 256^3 on 8 CPU devices, takes as long as the local FFT that follows it.

:func:`move_then_transpose` gives the same array with the transpose done on the sending side instead: the block
is split into its ``p`` destination chunks and transposed into the output's axis order in one pass (each chunk's
rows stay short and in cache), the exchange then moves contiguous chunks (split and concatenated on the leading
axis), and the received chunks are put side by side along the gathered axis, a copy of whole runs that keeps the
minor-most axis. Same values to the last bit, as many all-to-alls and minor-axis transposes; at 256^3 on 8 CPU
devices of a 2-core machine the slab transform in transposed order took 166 ms instead of 205 and its inverse 186
instead of 268, one device's ``fftn`` 165 (complex64, medians of one run). The lowering asks for it with a
:class:`~xfft._lower.SendTransposed` step (``xfft.LoweringOptions.send_transposed``, the default on CPU devices).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._layout import Move, group_size


def _name(step: Move):
    return step.mesh_axes[0] if len(step.mesh_axes) == 1 else step.mesh_axes


def all_to_all(x: jax.Array, step: Move, sizes: dict[str, int]) -> jax.Array:
    """The all-to-all of ``step`` (a block the group does not divide is padded in transit and cropped after)."""
    p = group_size(step.mesh_axes, sizes)
    n = x.shape[step.dst]
    if n % p:
        widths = [(0, 0)] * x.ndim
        widths[step.dst] = (0, p - n % p)
        # The padded block stays whole: else XLA's CPU backend may send the chunks that hold only padding as
        # broadcasts whose layout differs from the data chunk's (the HLO verifier rejects the all-to-all: a
        # (6, 14, 1, 16) grid sharded over its last axis, transformed over every axis on 8 devices).
        x = jax.lax.optimization_barrier(jnp.pad(x, widths))
    x = jax.lax.all_to_all(x, _name(step), step.dst, step.src, tiled=True)
    if x.shape[step.src] != step.src_len:
        x = jax.lax.slice_in_dim(x, 0, step.src_len, axis=step.src)
    return x


def move_then_transpose(x: jax.Array, step: Move, perm: tuple[int, ...], sizes: dict[str, int]) -> jax.Array:
    """``jnp.transpose(all_to_all(x, step, sizes), perm)``, transposed before the exchange (module docstring).

    A move that pads or crops in transit (a length the group does not divide) runs as the plain exchange and
    transpose.
    """
    p = group_size(step.mesh_axes, sizes)
    d, s = step.dst, step.src
    if x.shape[d] % p or x.shape[s] * p != step.src_len:
        return jnp.transpose(all_to_all(x, step, sizes), perm)
    shape = x.shape
    out_shape = [shape[a] for a in perm]
    out_shape[perm.index(d)] = shape[d] // p
    out_shape[perm.index(s)] = shape[s] * p
    # axis d becomes (destination, local part); the output's axes follow the destination axis
    chunks = x.reshape(shape[:d] + (p, shape[d] // p) + shape[d + 1:])
    y = jnp.transpose(chunks, (d,) + tuple(a if a < d else a + 1 for a in perm))
    y = jax.lax.all_to_all(y, _name(step), 0, 0, tiled=True)  # the leading axis now counts the sources
    return jnp.moveaxis(y, 0, perm.index(s)).reshape(out_shape)

