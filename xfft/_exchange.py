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
instead of 268, one device's ``fftn`` 165 (complex64, medians of one run).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._layout import Move, group_size

#: run a move followed by a transpose as :func:`move_then_transpose` on CPU devices (False: the plain exchange
#: and XLA's placement of the transpose, as on accelerators); read when a program is traced
SEND_TRANSPOSED = True


def _name(step: Move):
    return step.mesh_axes[0] if len(step.mesh_axes) == 1 else step.mesh_axes


def all_to_all(x: jax.Array, step: Move, sizes: dict[str, int], side: jax.Array | None = None):
    """The all-to-all of ``step``; with ``side`` (a local real scalar) returns ``(x, max of side over the move's
    devices)``, the scalars carried in the same exchange (:func:`_exchange_with_side`)."""
    p = group_size(step.mesh_axes, sizes)
    n = x.shape[step.dst]
    if n % p:
        widths = [(0, 0)] * x.ndim
        widths[step.dst] = (0, p - n % p)
        # The padded block stays whole: else XLA's CPU backend may send the chunks that hold only padding as
        # broadcasts whose layout differs from the data chunk's (the HLO verifier rejects the all-to-all: a
        # (6, 14, 1, 16) grid sharded over its last axis, transformed over every axis on 8 devices).
        x = jax.lax.optimization_barrier(jnp.pad(x, widths))
    if side is None:
        x = jax.lax.all_to_all(x, _name(step), step.dst, step.src, tiled=True)
    else:
        x, side = _exchange_with_side(x, side, _name(step), p, step.dst, step.src)
    if x.shape[step.src] != step.src_len:
        x = jax.lax.slice_in_dim(x, 0, step.src_len, axis=step.src)
    return x if side is None else (x, side)


def move_then_transpose(x: jax.Array, step: Move, perm: tuple[int, ...], sizes: dict[str, int],
                        side: jax.Array | None = None):
    """``jnp.transpose(all_to_all(x, step, sizes), perm)``, transposed before the exchange (module docstring); with
    ``side``, ``(that, max of side over the move's devices)`` as :func:`all_to_all` returns.

    A move that pads or crops in transit (a length the group does not divide) runs as the plain exchange and
    transpose.
    """
    p = group_size(step.mesh_axes, sizes)
    d, s = step.dst, step.src
    if x.shape[d] % p or x.shape[s] * p != step.src_len:
        if side is None:
            return jnp.transpose(all_to_all(x, step, sizes), perm)
        y, side = all_to_all(x, step, sizes, side)
        return jnp.transpose(y, perm), side
    shape = x.shape
    out_shape = [shape[a] for a in perm]
    out_shape[perm.index(d)] = shape[d] // p
    out_shape[perm.index(s)] = shape[s] * p
    # axis d becomes (destination, local part); the output's axes follow the destination axis
    chunks = x.reshape(shape[:d] + (p, shape[d] // p) + shape[d + 1:])
    y = jnp.transpose(chunks, (d,) + tuple(a if a < d else a + 1 for a in perm))
    if side is None:
        y = jax.lax.all_to_all(y, _name(step), 0, 0, tiled=True)  # the leading axis now counts the sources
    else:
        y, side = _exchange_with_side(y, side, _name(step), p, 0, 0)
    y = jnp.moveaxis(y, 0, perm.index(s)).reshape(out_shape)
    return y if side is None else (y, side)


def _exchange_with_side(x: jax.Array, side: jax.Array, name, p: int, dst: int, src: int):
    """``all_to_all(x, name, dst, src, tiled=True)`` carrying one scalar per device: ``x`` is padded by one entry
    holding ``side`` along its longest axis that is neither exchanged nor gathered (or, without one as long as
    a block, one entry at the end of every block of ``dst``), so each device receives the ``p`` scalars of its
    group with the data and takes their maximum. One exchange instead of an all-to-all and an all-reduce, for
    ``1/n`` more data and one padded copy of the block. Carried in the first stage of a Runge-Kutta step only
    (``max_if``): carried in every stage, the 2D Navier-Stokes main job at 256^2 on 8 CPU devices took 3%
    longer. ``side`` travels in ``x``'s dtype (its real part), so it must not be wider."""
    tag = side.astype(x.dtype)
    block = x.shape[dst] // p
    others = [a for a in range(x.ndim) if a not in (dst, src)]
    along = max(others, key=lambda a: x.shape[a], default=None)
    if along is not None and x.shape[along] >= block:
        n = x.shape[along]
        widths = [(0, 1 if a == along else 0, 0) for a in range(x.ndim)]
        y = jax.lax.all_to_all(jax.lax.pad(x, tag, widths), name, dst, src, tiled=True)
        side = jnp.max(jnp.real(jax.lax.slice_in_dim(y, n, n + 1, axis=along)))
        return jax.lax.slice_in_dim(y, 0, n, axis=along), side
    split = x.shape[:dst] + (p, block) + x.shape[dst + 1:]
    widths = [(0, 1 if a == dst + 1 else 0, 0) for a in range(x.ndim + 1)]
    y = jax.lax.pad(x.reshape(split), tag, widths).reshape(x.shape[:dst] + (p * (block + 1),) + x.shape[dst + 1:])
    y = jax.lax.all_to_all(y, name, dst, src, tiled=True)  # dst: this device's block and the p tags after it
    side = jnp.max(jnp.real(jax.lax.slice_in_dim(y, block, block + 1, axis=dst)))
    return jax.lax.slice_in_dim(y, 0, block, axis=dst), side
