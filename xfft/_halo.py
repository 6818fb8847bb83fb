"""Halo exchange on sharded arrays: :func:`halo_pad` and its adjoint :func:`halo_reduce`, by collective permutes only.

Every block of a sharded array grows by ``width`` cells on both sides of each padded axis, filled from the
neighbouring blocks (periodic) or with zeros at the ends of the global axis (non-periodic). The padded result is a
sharded array itself: along an axis split into ``p`` blocks its global length is ``n + 2 * width * p`` and it is
sharded like the input, so block ``i`` of the result is block ``i`` of the input with its halos. Axes are padded one
after the other (the second axis pads the first axis's halos too), so corner cells come from diagonal neighbours
in two hops, and every cell of a halo crosses the network once: the bytes sent per device are exactly the halo
cells of its padded block.

:func:`pad_blocks` and :func:`reduce_blocks` are the per-block bodies (inside ``jax.shard_map``), shared with the
particle painting of :mod:`xfft._particles`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._layout import Layout, MeshSizes, canonical_layout, check_even, group_size, layout_to_spec
from ._partition import placement


class AxisHalo(NamedTuple):
    """One padded axis of a block: the array axis, cells below and above, its mesh axes (empty: unsharded)."""

    axis: int
    lo: int
    hi: int
    group: tuple[str, ...]
    p: int  # devices along the axis (1 when unsharded)


def _permute(x: jax.Array, group: tuple[str, ...], p: int, by: int, periodic: bool) -> jax.Array:
    """Send ``x`` from block ``i`` to block ``i + by`` (``by`` is +1 or -1); non-periodic ends receive zeros."""
    pairs = [(i, (i + by) % p) for i in range(p) if periodic or 0 <= i + by < p]
    name = group[0] if len(group) == 1 else group
    return jax.lax.ppermute(x, name, pairs)


def _strip(b: jax.Array, axis: int, start: int, stop: int, inner: dict[int, tuple[int, int]]) -> jax.Array:
    """``b[start:stop]`` along ``axis``, and along each axis of ``inner`` only its ``(lo, lo + n)`` cells."""
    b = jax.lax.slice_in_dim(b, start, stop, axis=axis)
    for ax, (lo, hi) in inner.items():
        b = jax.lax.slice_in_dim(b, lo, hi, axis=ax)
    return b


def _at(b: jax.Array, v: jax.Array, axis: int, start: int, inner: dict[int, int], add: bool) -> jax.Array:
    """``b`` with ``v`` written (or added) at ``start`` along ``axis`` and at ``inner[ax]`` along the others (an
    in-place update for XLA)."""
    index = [0] * b.ndim
    index[axis] = start
    for ax, lo in inner.items():
        index[ax] = lo
    if add:
        v = v + jax.lax.dynamic_slice(b, index, v.shape)
    return jax.lax.dynamic_update_slice(b, v, index)


def pad_blocks(b: jax.Array, halos: Sequence[AxisHalo], periodic: bool) -> jax.Array:
    """Pad the local block ``b`` by each of ``halos`` in turn (inside ``shard_map`` over their mesh axes)."""
    for h in halos:
        n = b.shape[h.axis]
        parts = []
        if h.lo:
            low = jax.lax.slice_in_dim(b, n - h.lo, n, axis=h.axis)
            parts.append(_permute(low, h.group, h.p, +1, periodic) if h.group else
                         (low if periodic else jnp.zeros_like(low)))
        parts.append(b)
        if h.hi:
            high = jax.lax.slice_in_dim(b, 0, h.hi, axis=h.axis)
            parts.append(_permute(high, h.group, h.p, -1, periodic) if h.group else
                         (high if periodic else jnp.zeros_like(high)))
        b = jnp.concatenate(parts, axis=h.axis) if len(parts) > 1 else b
    return b


def fill_blocks(b: jax.Array, halos: Sequence[AxisHalo], periodic: bool) -> jax.Array:
    """The padded block ``b`` with its halos refilled from the neighbours' edge cells, in place (inside
    ``shard_map``): each strip is cut, sent and written over a halo (``dynamic_update_slice``), one after the
    other, each cut from the block the previous write left (a strip cut from the block before a write would make
    XLA copy the block to keep it; a strip never overlaps an earlier write). No copy of a donated or intermediate
    block, unlike :func:`pad_blocks` of the interior. The axes in turn, each strip spanning the others' halos, so
    corners come from the diagonal neighbours; a non-periodic end gets zeros."""
    for h in halos:
        n = b.shape[h.axis] - h.lo - h.hi
        for src, dst, width, by in ((n, 0, h.lo, +1), (h.lo, h.lo + n, h.hi, -1)):
            if not width:  # (lo: my top interior cells are the low halo above; hi: my bottom ones, below's high)
                continue
            strip = jax.lax.slice_in_dim(b, src, src + width, axis=h.axis)
            got = (_permute(strip, h.group, h.p, by, periodic) if h.group else
                   (strip if periodic else jnp.zeros_like(strip)))
            b = _at(b, got, h.axis, dst, {}, False)
    return b


def reduce_blocks(y: jax.Array, halos: Sequence[AxisHalo], periodic: bool) -> jax.Array:
    """The adjoint of :func:`pad_blocks`: halos sent back and added into the neighbours' edge cells, then dropped.

    One padded axis: its strips are added into the interior, cut out first (one copy of the block). More: the
    strips are added in place, the last-padded axis first (a strip spans the interior of the axes reduced before it
    and the halos of the later ones), and the interior is cut out once at the end (a copy, and one of ``y`` where
    it is an input XLA may not overwrite: inside a larger program, such as painting, it is not)."""
    inner: dict[int, tuple[int, int]] = {}
    for h in reversed(halos):
        n = y.shape[h.axis] - h.lo - h.hi
        done = dict(inner)
        if len(halos) == 1:  # one axis: its strips go into the interior, cut out first (one copy)
            return _into_interior(y, h, n, done, periodic)
        if h.hi:
            high = _strip(y, h.axis, h.lo + n, h.lo + n + h.hi, done)
            back = _permute(high, h.group, h.p, +1, periodic) if h.group else (high if periodic else None)
            if back is not None:
                y = _at(y, back, h.axis, h.lo, {ax: v[0] for ax, v in done.items()}, True)
        if h.lo:
            low = _strip(y, h.axis, 0, h.lo, done)
            back = _permute(low, h.group, h.p, -1, periodic) if h.group else (low if periodic else None)
            if back is not None:
                y = _at(y, back, h.axis, h.lo + n - h.lo, {ax: v[0] for ax, v in done.items()}, True)
        inner[h.axis] = (h.lo, h.lo + n)
    for ax, (lo, hi) in inner.items():
        y = jax.lax.slice_in_dim(y, lo, hi, axis=ax)
    return y


def _into_interior(y: jax.Array, h: AxisHalo, n: int, done: dict[int, tuple[int, int]], periodic: bool) -> jax.Array:
    """The interior of ``y`` (along ``h`` and the axes in ``done``) with ``h``'s halo strips sent back and added."""
    strips = []
    if h.hi:
        high = _strip(y, h.axis, h.lo + n, h.lo + n + h.hi, done)
        strips.append((0, _permute(high, h.group, h.p, +1, periodic) if h.group else (high if periodic else None)))
    if h.lo:
        low = _strip(y, h.axis, 0, h.lo, done)
        strips.append((n - h.lo, _permute(low, h.group, h.p, -1, periodic) if h.group else (low if periodic else None)))
    mid = _strip(y, h.axis, h.lo, h.lo + n, done)
    zero = {ax: 0 for ax in done}
    for start, back in strips:
        if back is not None:
            mid = _at(mid, back, h.axis, start, zero, True)
    return mid


def _check_width(width: object, ndim: int, name: str) -> tuple[int, ...] | int:
    """``width`` as an int or a tuple of ``ndim`` ints, all static and non-negative."""
    def one(w: object) -> int:
        if isinstance(w, jax.core.Tracer) or isinstance(w, bool) or not isinstance(w, (int, np.integer)):
            raise TypeError(f"{name}: width must be a Python int or a sequence of ints (static), got {w!r}")
        if w < 0:
            raise ValueError(f"{name}: width must be non-negative, got {int(w)}")
        return int(w)

    if np.ndim(width) == 0:
        return one(width)
    ws = tuple(one(w) for w in width)  # type: ignore[union-attr]
    if len(ws) != ndim:
        raise ValueError(f"{name}: width needs one entry per array axis ({ndim}), got {len(ws)}: {tuple(width)}")
    return ws


def _where(x: jax.Array, name: str) -> tuple[object, Layout, MeshSizes]:
    """The mesh, layout (known, or assumed: :func:`xfft.real_sharding`'s) and mesh sizes of ``x``, or Nones."""
    pl = placement(x)
    if pl is None:
        return None, tuple(() for _ in x.shape), ()
    sizes = pl.mesh_sizes
    layout = pl.layout if pl.layout is not None else canonical_layout(tuple(x.shape), tuple(range(x.ndim)), sizes)
    layout = tuple(tuple(a for a in g if dict(sizes)[a] > 1) for g in layout)
    check_even(tuple(x.shape), layout, dict(sizes))
    return pl.mesh, layout, sizes


def _halos(shape: tuple[int, ...], layout: Layout, sizes: MeshSizes, width, padded: bool,
           name: str) -> list[AxisHalo]:
    """The padded axes: an int width pads every sharded axis, a sequence the axes it gives a width to."""
    d = dict(sizes)
    out = []
    for ax, (n, g) in enumerate(zip(shape, layout)):
        w = (width if g else 0) if isinstance(width, int) else width[ax]
        if not w:
            continue
        p = group_size(g, d) if g else 1
        block = n // p - (2 * w if padded else 0)
        if w > block:
            what = "interior" if padded else "block"
            raise ValueError(
                f"{name}: width {w} along axis {ax} is wider than the {what} ({block} cells: axis length {n} over "
                f"{p} device{'s' if p > 1 else ''}{', minus its halos' if padded else ''}); a halo may span at most "
                "one neighbouring block: use a smaller width or fewer devices along that axis"
            )
        out.append(AxisHalo(ax, w, w, g, p))
    return out


def _check(x: object, periodic: object, name: str) -> jax.Array:
    if not isinstance(x, (jax.Array, np.ndarray)):
        raise TypeError(f"{name}: x must be a jax.Array or numpy.ndarray, got {type(x).__name__}")
    if not isinstance(periodic, (bool, np.bool_)):
        raise TypeError(f"{name}: periodic must be True or False, got {periodic!r}")
    return jnp.asarray(x)


def halo_pad(x: jax.Array, width: int | Sequence[int], periodic: bool = True) -> jax.Array:
    """Extend every block of the sharded array ``x`` by ``width`` cells on both sides, filled from its neighbours.

    Along an axis split over ``p`` devices into blocks of ``n / p`` cells, block ``i`` of the result is
    ``[last width cells of block i-1, block i, first width cells of block i+1]``: the result has global length
    ``n + 2 * width * p`` there and is sharded like ``x`` (each device holds its own block with its halos). Axes
    are padded in order, so corners come from the diagonal neighbours. Only collective permutes move data, and
    each device sends exactly its halo cells.

    Args:
      x: array sharded over a mesh (slab, pencil, any number of axes); on one device, or an axis no mesh axis
        splits, the axis is one block that is its own neighbour.
      width: static int: that many cells on every sharded axis (unsharded axes are not padded); or one int per
        array axis (any axis, sharded or not; 0 leaves it). At most the block length.
      periodic: True (default): the first block's lower halo comes from the last block and vice versa; False:
        halos beyond the ends of the global axis are zeros.

    Returns:
      The padded array, sharded like ``x`` over the padded global shape (on Explicit meshes its type says so;
      on Auto meshes under ``jit`` xfft assumes :func:`xfft.real_sharding`'s layout, as the transforms do).

    Raises:
      TypeError: non-array ``x``, non-integer ``width`` or non-bool ``periodic``.
      ValueError: negative width, a width sequence of the wrong length, a width wider than a block, or an array
        its mesh does not split evenly.
    """
    x = _check(x, periodic, "halo_pad")
    width = _check_width(width, x.ndim, "halo_pad")
    mesh, layout, sizes = _where(x, "halo_pad")
    halos = _halos(tuple(x.shape), layout, sizes, width, False, "halo_pad")
    return _run(x, halos, mesh, layout, bool(periodic), pad_blocks)


def halo_reduce(y: jax.Array, width: int | Sequence[int], periodic: bool = True) -> jax.Array:
    """The adjoint of :func:`halo_pad`: add each block's halo cells into its neighbours' cells, then drop the halos.

    ``halo_reduce(halo_pad(x, w), w)`` is not ``x``: cells near block edges count twice. It is what particle
    painting needs (mass painted into a halo belongs to the neighbour), and ``jax.vjp`` of :func:`halo_pad` is
    exactly this function (and the other way round). Non-periodic: halo cells beyond the global ends are dropped.

    Args:
      y: a padded array (as :func:`halo_pad` returns it): each block is an interior with ``width`` halo cells on
        both sides of the padded axes.
      width: as given to :func:`halo_pad`.
      periodic: as given to :func:`halo_pad`.

    Returns:
      The array of the unpadded global shape (``n - 2 * width * p`` along each padded axis of ``y``), sharded
      like ``y``.

    Raises:
      TypeError: non-array ``y``, non-integer ``width`` or non-bool ``periodic``.
      ValueError: as :func:`halo_pad`, for the interior of each block.
    """
    y = _check(y, periodic, "halo_reduce")
    width = _check_width(width, y.ndim, "halo_reduce")
    mesh, layout, sizes = _where(y, "halo_reduce")
    halos = _halos(tuple(y.shape), layout, sizes, width, True, "halo_reduce")
    return _run(y, halos, mesh, layout, bool(periodic), reduce_blocks)


def _run(x: jax.Array, halos: list[AxisHalo], mesh, layout: Layout, periodic: bool, body) -> jax.Array:
    if not halos:
        return x
    if mesh is None:
        return body(x, halos, periodic)
    return _program(mesh, layout, tuple(halos), periodic, body)(x)


@lru_cache(maxsize=128)
def _program(mesh, layout: Layout, halos: tuple[AxisHalo, ...], periodic: bool, body):
    """The jitted ``shard_map`` (eager calls compile once and run as one program; under ``jit`` it inlines)."""
    spec = layout_to_spec(layout)
    fn = lambda b: body(b, halos, periodic)  # noqa: E731
    return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))
