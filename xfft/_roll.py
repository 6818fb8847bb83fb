"""xroll: ``jnp.roll`` for sharded arrays, by collective permutes of only the boundary slabs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from ._layout import layout_to_spec
from ._partition import placement


def _roll_block(b: jax.Array, shift: int, axis: int, group: tuple[str, ...], p: int, n: int) -> jax.Array:
    """Roll the local block ``b`` (one of ``p`` blocks of a global axis of length ``n``) by ``shift``."""
    blk = n // p
    q, r = divmod(shift % n, blk)
    name = group[0] if len(group) == 1 else group

    def permute(x, by):
        if by % p == 0:
            return x
        return jax.lax.ppermute(x, name, [(i, (i + by) % p) for i in range(p)])

    # Output block i holds global rows [i*blk - shift, (i+1)*blk - shift): the last r rows of block i-q-1
    # followed by the first blk-r rows of block i-q. Only those rows travel.
    head = permute(jax.lax.slice_in_dim(b, 0, blk - r, axis=axis), q)
    if r == 0:
        return head
    tail = permute(jax.lax.slice_in_dim(b, blk - r, blk, axis=axis), q + 1)
    return jnp.concatenate([tail, head], axis=axis)


def xroll(x: jax.Array, shift: int | Sequence[int], axis: int | Sequence[int]) -> jax.Array:
    """Roll ``x`` along ``axis`` like ``jnp.roll``, also along sharded axes (collective permute, no gather).

    Args:
      x: array, sharded or not.
      shift: Python int (or a sequence of ints, one per axis); positive shifts move elements to higher indices.
      axis: int or sequence of ints.

    Returns:
      The rolled array, with the same sharding as ``x``. On a sharded axis each device sends only the
      ``|shift|`` boundary rows it must give away (plus whole blocks for shifts longer than a block).

    Raises:
      TypeError: non-array ``x`` or non-integer ``shift``/``axis`` (traced shifts are not supported).
      ValueError: axis out of range, or ``shift`` and ``axis`` of different lengths.
    """
    if not isinstance(x, (jax.Array, np.ndarray)):
        raise TypeError(f"x must be a jax.Array or numpy.ndarray, got {type(x).__name__}")
    x = jnp.asarray(x)
    shifts = (shift,) if np.ndim(shift) == 0 else tuple(shift)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    if len(shifts) != len(axes):
        raise ValueError(f"shift {shift!r} and axis {axis!r} must have the same length")
    for v, nm in [(s, "shift") for s in shifts] + [(a, "axis") for a in axes]:
        if isinstance(v, jax.core.Tracer) or not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"{nm} must be a Python int (static), got {v!r}")
    norm_axes = []
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"axis {a} is out of range for an array with {x.ndim} axes")
        norm_axes.append(int(a) % x.ndim)
    pl = placement(x)
    for s, a in zip(shifts, norm_axes):
        x = _roll_one(x, int(s), a, pl)
    return x


def _roll_one(x: jax.Array, shift: int, axis: int, pl) -> jax.Array:
    if pl is None or x.shape[axis] == 0:
        return jnp.roll(x, shift, axis)
    layout = pl.layout
    if layout is None:
        # Auto mesh under jit: the layout is unknown here and XLA partitions jnp.roll itself.
        return jnp.roll(x, shift, axis)
    sizes = dict(pl.mesh_sizes)
    group = tuple(a for a in layout[axis] if sizes[a] > 1)
    if not group:
        return jnp.roll(x, shift, axis)
    p = math.prod(sizes[a] for a in group)
    return _roll_program(pl.mesh, layout_to_spec(layout), shift, axis, group, p, x.shape[axis])(x)


@lru_cache(maxsize=128)
def _roll_program(mesh, spec, shift: int, axis: int, group: tuple[str, ...], p: int, n: int):
    """The jitted ``shard_map`` of one roll (jitted and cached: an eager call compiles one program, not one per
    operation inside; under ``jit`` it inlines)."""
    body = lambda b: _roll_block(b, shift, axis, group, p, n)  # noqa: E731
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))
