"""Mass-assignment kernels (NGP, CIC, TSC) on a block of a periodic mesh: cells and weights of each particle."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp

#: the mass-assignment kernels: name -> (cells reached below the base cell, cells reached above)
KERNELS = {"ngp": (0, 0), "cic": (0, 1), "tsc": (1, 1)}


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


def stencil(pos: jax.Array, kernel: str, shape: tuple[int, ...], lo: Sequence, sharded: Sequence[bool],
             full: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    """Flat indices into the padded local block and kernel weights, ``(m, K)`` each, of particles at ``pos``.

    ``shape`` is the padded block's shape, ``full`` the global one; ``lo[d]`` the global index of the block's first
    interior cell along a sharded axis ``d`` (unsharded axes wrap around the whole axis). Indices are clipped into
    the block (particles another device owns get in-range indices; the caller zeroes their weights).
    """
    idx, wts = [], []
    below = KERNELS[kernel][0]
    for d in range(pos.shape[-1]):
        base, taps = weights_1d(pos[:, d], kernel)
        if sharded[d]:
            cell = jnp.mod(base, full[d]) - lo[d] + below
            cells = [jnp.clip(cell + o, 0, shape[d] - 1) for o, _ in taps]
        else:
            cells = [jnp.mod(base + o, shape[d]) for o, _ in taps]
        idx.append(cells)
        wts.append([w for _, w in taps])
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    flat, weight = [], []
    for combo in itertools.product(*[range(len(c)) for c in idx]):
        flat.append(sum(idx[d][k] * strides[d] for d, k in enumerate(combo)))
        weight.append(math.prod(wts[d][k] for d, k in enumerate(combo)))
    return jnp.stack(flat, -1), jnp.stack(weight, -1)
