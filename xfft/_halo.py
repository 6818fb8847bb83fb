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


def _send(x: jax.Array | None, h: AxisHalo, by: int, periodic: bool) -> jax.Array | None:
    """``x`` sent along ``h`` to the block ``by`` (+1 or -1) away: what this block receives from the other side.
    Unsharded: the block is its own neighbour (periodic) or None (non-periodic: nothing arrives)."""
    if x is None:
        return None
    if h.group:
        return _permute(x, h.group, h.p, by, periodic)
    return x if periodic else None


def _swap(up: jax.Array | None, down: jax.Array | None, h: AxisHalo, periodic: bool):
    """``up`` sent to the block above along ``h``, ``down`` to the block below: ``(from below, from above)``, what
    the neighbours sent this block (None where nothing arrives). With two devices on a periodic axis the block above
    is the block below: both strips go in one collective."""
    if h.p == 2 and periodic and up is not None and down is not None:
        got = _permute(jnp.concatenate([up, down], axis=h.axis), h.group, 2, 1, True)
        k = up.shape[h.axis]
        return (jax.lax.slice_in_dim(got, 0, k, axis=h.axis),
                jax.lax.slice_in_dim(got, k, got.shape[h.axis], axis=h.axis))
    return _send(up, h, +1, periodic), _send(down, h, -1, periodic)


def pad_blocks(b: jax.Array, halos: Sequence[AxisHalo], periodic: bool) -> jax.Array:
    """Pad the local block ``b`` by each of ``halos`` in turn (inside ``shard_map`` over their mesh axes): my top
    cells are the low halo of the block above, my bottom cells the high halo of the block below."""
    for h in halos:
        n = b.shape[h.axis]
        top = jax.lax.slice_in_dim(b, n - h.lo, n, axis=h.axis) if h.lo else None
        bottom = jax.lax.slice_in_dim(b, 0, h.hi, axis=h.axis) if h.hi else None
        below, above = _swap(top, bottom, h, periodic)
        parts = [b]
        if top is not None:
            parts.insert(0, jnp.zeros_like(top) if below is None else below)
        if bottom is not None:
            parts.append(jnp.zeros_like(bottom) if above is None else above)
        b = jnp.concatenate(parts, axis=h.axis) if len(parts) > 1 else b
    return b


def fill_blocks(b: jax.Array, halos: Sequence[AxisHalo], periodic: bool) -> jax.Array:
    """The padded block ``b`` with its halos refilled from the neighbours' edge cells, in place (inside
    ``shard_map``): each strip is cut, sent and written over a halo (``dynamic_update_slice``), one after the
    other, each cut from the block the previous write left (a strip cut from the block before a write would make
    XLA copy the block to keep it; a strip never overlaps an earlier write). Where both strips go in one collective
    (two devices, periodic) both are cut before either write, which the data orders already. No copy of a donated
    or intermediate block, unlike :func:`pad_blocks` of the interior. The axes in turn, each strip spanning the
    others' halos, so corners come from the diagonal neighbours; a non-periodic end gets zeros."""
    for h in halos:
        n = b.shape[h.axis] - h.lo - h.hi
        # (source start, width, direction, destination): my top interior cells are the low halo of the block above,
        # my bottom ones the high halo of the block below
        strips = [(src, w, by, dst) for src, w, by, dst in ((n, h.lo, +1, 0), (h.lo, h.hi, -1, h.lo + n)) if w]
        if h.p == 2 and periodic and len(strips) == 2:  # one collective for both: cut both, then write both
            cut = [jax.lax.slice_in_dim(b, src, src + w, axis=h.axis) for src, w, _, _ in strips]
            for (_, _, _, dst), back in zip(strips, _swap(*cut, h, periodic)):
                b = _at(b, back, h.axis, dst, {}, False)
            continue
        for src, w, by, dst in strips:  # each cut from the block the previous write left
            strip = jax.lax.slice_in_dim(b, src, src + w, axis=h.axis)
            back = _send(strip, h, by, periodic)
            b = _at(b, jnp.zeros_like(strip) if back is None else back, h.axis, dst, {}, False)
    return b


def reduce_blocks(y: jax.Array, halos: Sequence[AxisHalo], periodic: bool) -> jax.Array:
    """The adjoint of :func:`pad_blocks`: halos sent back and added into the neighbours' edge cells, then dropped.

    ``y`` is only read, never written: the interior is cut out once (the one copy of the block, which the result
    needs anyway) and the received strips are added into it in place. The axes in reverse order of padding: an
    axis's outgoing strips span the interior of the axes reduced before it and the halos of the later ones, and
    carry what the earlier axes' received strips put there (the corners, added on the small strips), so that each
    halo cell crosses the network once, corners in two hops. Both strips of an axis are cut from ``y`` and sent
    independently."""
    got: list[tuple[jax.Array, int, int, dict[int, int]]] = []  # (strip, axis, interior offset, axes it spans whole)
    inner: dict[int, int] = {}  # axis reduced -> its interior start (lo)
    size = {h.axis: y.shape[h.axis] - h.lo - h.hi for h in halos}
    for k in range(len(halos) - 1, -1, -1):
        h = halos[k]
        n = size[h.axis]
        done = {ax: (lo, lo + size[ax]) for ax, lo in inner.items()}
        strips = []
        for start, stop in ((h.lo + n, h.lo + n + h.hi), (0, h.lo)):  # my high halo (sent up), my low one (down)
            if stop == start:
                strips.append(None)
                continue
            s = _strip(y, h.axis, start, stop, done)
            for r, ax, off, whole in got:  # what an earlier axis's strip brought into this strip's cells
                piece = jax.lax.slice_in_dim(r, start, stop, axis=h.axis)
                for a in whole.keys() & inner.keys():  # reduced since: their interior (the halo part went on)
                    piece = jax.lax.slice_in_dim(piece, inner[a], inner[a] + size[a], axis=a)
                s = _at(s, piece, ax, off, {}, True)
            strips.append(s)
        whole = {g.axis: g.lo for g in halos[:k]}
        for back, land in zip(_swap(*strips, h, periodic), (0, n - h.lo)):  # into my bottom cells, my top ones
            if back is not None:
                got.append((back, h.axis, land, whole))
        inner[h.axis] = h.lo
    out = y
    for ax, lo in inner.items():
        out = jax.lax.slice_in_dim(out, lo, lo + size[ax], axis=ax)
    for r, ax, off, whole in got:  # each received strip's interior part, added in place into the cut interior
        for a, lo in whole.items():
            r = jax.lax.slice_in_dim(r, lo, lo + size[a], axis=a)
        out = _at(out, r, ax, off, {}, True)
    return out


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
