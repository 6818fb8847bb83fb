"""Painting and readout through halos (``halo=`` of :func:`xfft.paint` / :func:`xfft.readout`): no particle moves.

The other design of :mod:`xfft._particles` (the one particle-mesh codes such as JaxPM use): every device paints the
particles it holds into *its own* block of the mesh padded by ``halo`` cells on each side of every sharded axis, and
one :func:`xfft.halo_reduce` adds the halos into the neighbours (readout: one :func:`xfft.halo_pad`, then each
device interpolates at its own particles). There is no sort, no all-to-all and no slot buffer, so it is several
times faster than sending particles to their owners, but it holds only while every particle's kernel cells lie
within ``halo`` cells of the block of the device that holds it: a Lagrangian layout (the particles of block ``i``
of the initial grid on device ``i``) whose displacements stay below ``halo`` minus the kernel's reach. A particle
outside is never painted silently wrong: the result is NaN and the call raises, naming the count and what to set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np

from ._halo import AxisHalo, pad_blocks, reduce_blocks
from ._kernels import KERNELS, Cell, paint_corners, read_corners, weights_1d
from ._layout import Layout, group_size
from ._particles_program import guard, paint_map, readout_map


def halo_widths(halo: object, field, name: str) -> tuple[int, ...]:
    """``halo`` (an int, or one per axis) as one width per axis, 0 on the axes the mesh does not split.

    Raises:
      ValueError: not non-negative ints, the wrong count, or wider than a block.
    """
    d = len(field.shape)
    vals = tuple(halo) if isinstance(halo, (tuple, list)) else (halo,) * d
    if len(vals) != d or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 for v in vals):
        raise ValueError(f"{name}: halo must be a non-negative int or one per axis ({d}), got {halo!r}")
    widths = tuple(int(v) if g else 0 for v, g in zip(vals, field.layout))
    for ax, (w, b) in enumerate(zip(widths, field.block)):
        if w > b:
            raise ValueError(f"{name}: halo {w} along axis {ax} is wider than a block ({b} cells); give at most "
                             f"{b}, or halo=None (particles sent to the device owning their cells)")
    return widths


def halo_error(name: str, need: int, widths: tuple[int, ...]) -> ValueError:
    """The error of ``need`` particles whose kernel cells leave the halo of their device's block."""
    return ValueError(
        f"{name}: {need} particles have kernel cells more than halo={max(widths)} cells outside the block of the "
        "device that holds them (with halo=, each device paints and reads only its own particles); pass a wider "
        "halo (at most a block), keep the particles nearer their block, or halo=None (particles sent to the "
        "device owning their cells)")


def _cells(pos: jax.Array, field, kernel: str, widths: tuple[int, ...]) -> tuple[Cell, jax.Array]:
    """The cell map of :func:`xfft._kernels.corner` into the padded block, and each particle's validity (its kernel
    cells inside the halo)."""
    below, above = KERNELS[kernel]
    shape = padded_shape(field, widths)
    origin = field.origin()
    ok = jnp.ones(pos.shape[0], bool)
    for ax in range(pos.shape[-1]):
        if field.layout[ax]:
            rel = _relative(weights_1d(pos[:, ax], kernel)[0], field, ax, origin)
            ok = ok & (rel - below >= -widths[ax]) & (rel + above <= field.block[ax] - 1 + widths[ax])

    def cell(ax: int, base: jax.Array, o: jax.Array) -> jax.Array:
        if field.layout[ax]:
            return jnp.clip(_relative(base, field, ax, origin) + widths[ax] + o, 0, shape[ax] - 1)
        return jnp.mod(base + o, field.shape[ax])

    return cell, ok


def _relative(base: jax.Array, field, ax: int, origin: list) -> jax.Array:
    """The image of the base cell nearest the block's centre, relative to the block's first cell."""
    n, b = field.shape[ax], field.block[ax]
    return jnp.mod(base - origin[ax] - b // 2 + n // 2, n) - n // 2 + b // 2


def padded_shape(field, widths: Sequence[int]) -> tuple[int, ...]:
    return tuple(b + 2 * w for b, w in zip(field.block, widths))


def _halos(field, widths: tuple[int, ...]) -> list[AxisHalo]:
    return [AxisHalo(ax, w, w, g, group_size(g, field.sizes)) for ax, (w, g) in enumerate(zip(widths, field.layout))
            if g and w]


def _outside(ok: jax.Array, names) -> jax.Array:
    return jax.lax.psum(jnp.sum(~ok, dtype=jnp.int32), names)


def paint_body(pos, w, field, kernel: str, widths: tuple[int, ...]):
    """One device's paint of its own particles: its block of the field, and the particles outside every halo."""
    d = pos.shape[-1]
    pos, w = pos.reshape(-1, d), w.reshape(-1)
    shape = padded_shape(field, widths)
    cell, ok = _cells(pos, field, kernel, widths)
    out = paint_corners(jnp.zeros(math.prod(shape), w.dtype), pos, jnp.where(ok, w, 0), kernel, shape, cell)
    out = reduce_blocks(out.reshape(shape), _halos(field, widths), True)
    return out, _outside(ok, field.names)


def readout_body(f, pos, field, kernel: str, widths: tuple[int, ...]):
    """One device's readout at its own particles (a trailing component axis of ``f`` kept last), and the particles
    outside every halo."""
    lead, d = pos.shape[:-1], pos.shape[-1]
    pos = pos.reshape(-1, d)
    shape = padded_shape(field, widths)
    cell, ok = _cells(pos, field, kernel, widths)
    fp = pad_blocks(f, _halos(field, widths), True)
    fp = fp.reshape((math.prod(shape),) + fp.shape[d:])
    vals = read_corners(fp, pos, kernel, shape, cell)
    vals = jnp.where(ok.reshape(ok.shape + (1,) * (vals.ndim - 1)), vals, 0)
    return vals.reshape(lead + vals.shape[1:]), _outside(ok, field.names)


def raise_if_outside(need, *, name: str, widths: tuple[int, ...]) -> None:
    """The error of ``need`` particles outside their halo (none: nothing)."""
    if int(need) > 0:
        raise halo_error(name, int(need), widths)


@lru_cache(maxsize=64)
def paint_program(field, layout: Layout, weighted: bool, kernel: str, widths: tuple[int, ...], dtype, traced: bool):
    """The paint program through halos (:func:`paint_body`)."""
    check = partial(raise_if_outside, name="paint", widths=widths)

    def body(q, v):
        out, need = paint_body(q, jnp.broadcast_to(v.astype(dtype), q.shape[:-1]), field, kernel, widths)
        return guard(out, need, 0, check, traced)

    return paint_map(body, field, layout, weighted)


@lru_cache(maxsize=64)
def readout_program(field, layout: Layout, kernel: str, widths: tuple[int, ...], components: bool, traced: bool):
    """The readout program through halos (:func:`readout_body`)."""
    check = partial(raise_if_outside, name="readout", widths=widths)

    def body(g, q):
        return guard(*readout_body(g, q, field, kernel, widths), 0, check, traced)

    return readout_map(body, field, layout, components)
