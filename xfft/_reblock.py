"""Crop or zero-pad a sharded axis in place (``numpy.fft``'s ``n=``/``s=``) where no other axis can take its devices.

The axis keeps its mesh axes: device ``t``'s new block ``[t m', (t + 1) m')`` of the resized axis comes from the old
blocks ``[s m, (s + 1) m)`` that overlap it, received by collective permutes (one per distinct device offset
``t - s``: one or two for a small change of length, about ``p / 2`` to halve it), and entries past the old length
are zeros. A new length that the devices do not divide cannot stay sharded (JAX shards evenly): the axis is then
padded to the next multiple, gathered and cropped, so it ends replicated at its new length.
"""

from __future__ import annotations

import math
from functools import lru_cache

import jax
import jax.numpy as jnp

from ._layout import layout_to_spec
from ._partition import Placement


def _offsets(length: int, new_block: int, block: int, p: int) -> range:
    """The device offsets ``t - s`` for which device ``t``'s new block overlaps old block ``s``."""
    ks = set()
    for t in range(p):
        lo, hi = t * new_block, min(t * new_block + new_block, length)
        for s in range(lo // block, (hi - 1) // block + 1 if hi > lo else lo // block):
            if s < p:
                ks.add(t - s)
    if not ks:
        return range(0, 1)
    return range(min(ks), max(ks) + 1)


def _reblock_local(b: jax.Array, axis: int, name, p: int, n_old: int, n_new: int) -> jax.Array:
    """Device ``t``'s block of length ``ceil(n_new / p)`` of the resized axis from its old block ``b``."""
    block = b.shape[axis]
    new_block = -(-n_new // p)
    keep = min(n_old, n_new)
    ks = _offsets(keep, new_block, block, p)
    t = jax.lax.axis_index(name)
    pieces = []
    for k in reversed(ks):  # sources s = t - k in increasing order
        if k == 0:
            pieces.append(b)
        else:
            pieces.append(jax.lax.ppermute(b, name, [(i, i + k) for i in range(p) if 0 <= i + k < p]))
    tail = list(b.shape)
    tail[axis] = new_block
    cat = jnp.concatenate(pieces + [jnp.zeros(tail, b.dtype)], axis=axis)  # zeros: a window past the old length
    first = (t - ks[-1]) * block  # global index of cat's first entry
    start = jnp.clip(t * new_block - first, 0, cat.shape[axis] - new_block)
    out = jax.lax.dynamic_slice_in_dim(cat, start, new_block, axis=axis)
    shape = [1] * b.ndim
    shape[axis] = new_block
    g = t * new_block + jnp.arange(new_block, dtype=t.dtype).reshape(shape)
    return jnp.where(g < keep, out, jnp.zeros((), out.dtype))


def reblock(x: jax.Array, axis: int, n: int, pl: Placement) -> jax.Array:
    """Crop or zero-pad the sharded ``axis`` of ``x`` to ``n`` (``numpy.fft``'s ``s``), without a gather of ``x``.

    Args:
      x: global array whose layout ``pl.layout`` shards ``axis`` (over its mesh axes, as given).
      axis: the axis to resize.
      n: the new length (positive).
      pl: where ``x`` lives (its layout known).

    Returns:
      ``x`` with ``axis`` of length ``n``: sharded as before if the axis's devices divide ``n``; else that axis
      replicated (the resized axis is gathered: no even layout exists for it).
    """
    layout = pl.layout
    sizes = dict(pl.mesh_sizes)
    group = tuple(a for a in layout[axis] if sizes[a] > 1)
    p = math.prod(sizes[a] for a in group)
    name = group[0] if len(group) == 1 else group
    spec = layout_to_spec(layout)
    out_layout = list(layout)
    if n % p:
        out_layout[axis] = ()
    out_spec = layout_to_spec(tuple(out_layout))
    return _reblock_program(pl.mesh, spec, out_spec, axis, name, p, x.shape[axis], n)(x)


@lru_cache(maxsize=128)
def _reblock_program(mesh, spec, out_spec, axis: int, name, p: int, n_old: int, n: int):
    """The jitted ``shard_map`` of one resize (jitted and cached: an eager call compiles one program, not one per
    operation inside; under ``jit`` it inlines)."""
    def body(b: jax.Array) -> jax.Array:
        y = _reblock_local(b, axis, name, p, n_old, n)
        if n % p:
            y = jax.lax.all_gather(y, name, axis=axis, tiled=True)
            y = jax.lax.slice_in_dim(y, 0, n, axis=axis)
        return y

    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=out_spec, check_vma=False))
