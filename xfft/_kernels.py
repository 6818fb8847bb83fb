"""Mass-assignment kernels (NGP, CIC, TSC) on a block of a periodic mesh: cells and weights of each particle.

Painting and reading loop over the ``taps ** D`` corners of the kernel's stencil (a ``fori_loop``), so a program
holds one ``(m,)`` index and weight at a time, never an ``(m, taps ** D)`` stencil. Each corner recomputes its
cells and weights from the positions: the positions pass an ``optimization_barrier`` with the loop counter, or XLA
would hoist the per-axis base cells and tap weights out of the loop (several ``(m,)`` arrays per axis, live at
once), which is more memory than the recomputation costs time.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

#: the mass-assignment kernels: name -> (cells reached below the base cell, cells reached above)
KERNELS = {"ngp": (0, 0), "cic": (0, 1), "tsc": (1, 1)}

#: ``cell(axis, base, offset)``: the index along ``axis`` of the padded block of the cell ``offset`` cells from a
#: particle's base cell ``base`` (int32, global)
Cell = Callable[[int, jax.Array, jax.Array], jax.Array]


def weights_1d(x: jax.Array, kernel: str) -> tuple[jax.Array, list[tuple[int, jax.Array]]]:
    """The base cell (int32) and ``(offset, weight)`` pairs of ``kernel`` at coordinates ``x`` (grid units)."""
    if kernel == "cic":
        base = jnp.floor(x)
        d = x - base
        return base.astype(jnp.int32), [(0, 1 - d), (1, d)]
    base = jnp.floor(x + 0.5)
    if kernel == "ngp":
        return base.astype(jnp.int32), [(0, jnp.ones_like(x))]
    d = x - base  # in [-1/2, 1/2)
    return base.astype(jnp.int32), [(-1, 0.5 * (0.5 - d) ** 2), (0, 0.75 - d**2), (1, 0.5 * (0.5 + d) ** 2)]


def corners(kernel: str, ndim: int) -> int:
    """The number of cells of ``kernel``'s stencil in ``ndim`` dimensions."""
    lo, hi = KERNELS[kernel]
    return (lo + hi + 1) ** ndim


def corner(pos: jax.Array, c: jax.Array, kernel: str, shape: tuple[int, ...], cell: Cell
           ) -> tuple[jax.Array, jax.Array]:
    """The flat index into the padded block ``shape`` and the kernel weight, ``(m,)`` each, of corner ``c`` (an
    int, traced or not, in ``[0, corners(kernel, D))``, the last axis fastest) of the particles at ``pos``."""
    below, above = KERNELS[kernel]
    ntap = below + above + 1
    idx, weight = 0, 1
    for ax in range(pos.shape[-1]):
        t = (c // ntap ** (pos.shape[-1] - 1 - ax)) % ntap
        base, taps = weights_1d(pos[:, ax], kernel)
        w = taps[0][1]
        for j in range(1, ntap):
            w = jnp.where(t == j, taps[j][1], w)
        idx = idx + cell(ax, base, t - below) * math.prod(shape[ax + 1:])
        weight = weight * w
    return idx, weight


def paint_corners(out: jax.Array, pos: jax.Array, v: jax.Array, kernel: str, shape: tuple[int, ...], cell: Cell
                  ) -> jax.Array:
    """``out`` (the flat padded block) plus the particles at ``pos`` (``(m, D)``) of masses ``v`` (``(m,)``)."""
    def body(c, acc):
        idx, k = corner(*jax.lax.optimization_barrier((pos, c)), kernel, shape, cell)
        return acc.at[idx].add(v * k)

    return jax.lax.fori_loop(0, corners(kernel, pos.shape[-1]), body, out)


def read_corners(fp: jax.Array, pos: jax.Array, kernel: str, shape: tuple[int, ...], cell: Cell,
                 into: jax.Array | None = None, where: jax.Array | None = None) -> jax.Array:
    """The flat padded block ``fp`` (``(cells,)`` or ``(cells, C)``) interpolated at ``pos``: ``(m,)`` or ``(m, C)``;
    added to ``into`` (zeros if None), and only where the ``(m,)`` mask ``where`` holds (everywhere if None)."""
    def body(c, acc):
        idx, k = corner(*jax.lax.optimization_barrier((pos, c)), kernel, shape, cell)
        if where is not None:
            k = jnp.where(where, k, 0)
        return acc + fp[idx] * k.reshape(k.shape + (1,) * (fp.ndim - 1))

    if into is None:
        into = jnp.zeros((pos.shape[0],) + fp.shape[1:], fp.dtype)
    return jax.lax.fori_loop(0, corners(kernel, pos.shape[-1]), body, into)
