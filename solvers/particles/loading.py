"""Particle loadings: quiet starts (low-discrepancy phase-space sequences) and Lagrangian lattices.

A random loading of ``N`` particles carries density noise of relative size ``N^-1/2`` in every mode; a quiet start
places them on a lattice in position and a low-discrepancy (van der Corput / Halton) sequence in velocity, so a
small perturbation (Landau damping at ``alpha = 0.01``) stands well above the noise with far fewer particles.
Every function here is traced inside an initial condition's builder: each device computes its own particles.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["halton", "lagrangian_lattice", "lattice", "quiet_maxwellian"]

#: the bases of the Halton sequence's coordinates
PRIMES = (2, 3, 5, 7, 11, 13)


def halton(index: jax.Array, count: int, base: int, dtype) -> jax.Array:
    """The radical inverse of ``index`` in ``base`` with as many digits as ``count`` points need (base 2: the
    bit-reversed van der Corput sequence), shifted by half its finest digit: ``(j + 1/2) / base^m`` for ``m``
    digits, never 0 or 1 (where an inverse CDF is infinite). For ``count = base^m`` the points are the strata's
    midpoints, each once."""
    i = index.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)
    digits = 1
    while base**digits < count:
        digits += 1
    out = jnp.zeros(index.shape, dtype)
    scale = 1.0 / base
    for _ in range(digits):
        out = out + (i % base).astype(dtype) * scale
        i = i // base
        scale /= base
    return out + 0.5 * scale * base


def lattice(index: jax.Array, count: int, box_length, dtype, spread: bool = True) -> jax.Array:
    """Positions ``(N, D)`` for particle ``index`` of ``count``: axis 0 on the regular lattice ``(i + 1/2) L /
    N``; the other axes (``spread``) on the Halton sequence in bases 3, 5 (a quiet start in several dimensions),
    or all at the lattice's coordinates where ``spread`` is False."""
    box = tuple(float(v) for v in box_length)
    cols = [(index.astype(dtype) + 0.5) * (box[0] / count)]
    for d in range(1, len(box)):
        u = halton(index, count, PRIMES[d], dtype) if spread else (index.astype(dtype) + 0.5) / count
        cols.append(u * box[d])
    return jnp.stack(cols, -1)


#: the golden ratio's fractional part: the shift of beam ``j``'s lattice is ``frac(1/2 + j GOLDEN)`` of a spacing
GOLDEN = 0.6180339887498949


def quiet_maxwellian(index: jax.Array, count: int, beams: int, box_length, vth: float, dtype,
                     vmax: float = 6.0) -> tuple[jax.Array, jax.Array, jax.Array]:
    """A weighted multi-beam quiet start of a uniform Maxwellian: ``beams`` velocities evenly spaced in
    ``[-vmax, vmax] vth`` along axis 0, each on its own regular lattice of ``count / beams`` positions along axis 0,
    weighted by the Maxwellian.

    Beam ``j`` moves at ``v_j = vth (-vmax + (j + 1/2) 2 vmax / beams)`` (other velocity components zero) with the
    weight ``f(v_j)`` (normalized to mean 1), and its lattice is shifted by ``frac(1/2 + j GOLDEN)`` of a spacing.
    Each beam alone has no density in any mode below its lattice's, and keeps none as it streams: the loading is
    noiseless for free streaming (a lattice in ``x`` with random or bit-reversed velocities is so only at ``t =
    0``). Evenly spaced velocities resolve the Maxwellian's tail, where Landau damping's resonant particles are
    (``v = omega / k``, 2.8 at ``k = 0.5``), which equal-weight beams sample with only a few particles; the
    discrete velocities bring a recurrence at ``t = 2 pi / (k dv)`` (``dv = 2 vmax vth / beams``). Particle ``i``
    is position ``i // beams`` of beam ``i % beams`` (a device holds whole stretches of the box).

    Returns:
      ``(positions, velocities, weights)``: ``(N, D)``, ``(N, D)`` (``D = len(box_length)``) and ``(N,)``.
    """
    box = tuple(float(v) for v in box_length)
    sites = count // beams
    i = index.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)
    p, j = i // beams, i % beams
    shift = jnp.mod(0.5 + j.astype(dtype) * GOLDEN, 1.0)
    cols = [(p.astype(dtype) + shift) * (box[0] / sites)]
    cols += [halton(index, count, PRIMES[d], dtype) * box[d] for d in range(1, len(box))]
    u = -vmax + (j.astype(dtype) + 0.5) * (2 * vmax / beams)
    grid = -vmax + (np.arange(beams) + 0.5) * (2 * vmax / beams)
    norm = float(np.mean(np.exp(-0.5 * grid**2)))
    w = jnp.exp(-0.5 * u * u) / norm
    v = jnp.stack([u] + [jnp.zeros_like(u)] * (len(box) - 1), -1)
    return jnp.stack(cols, -1), vth * v, w


def lagrangian_lattice(index: jax.Array, counts, box_length, dtype, blocks=None) -> jax.Array:
    """Lagrangian positions ``q`` ``(N, D)``: particle ``index`` at node ``(i_0, ..., i_D-1) * L / counts`` of a
    regular lattice of ``counts`` points per axis (row-major: the last axis fastest).

    ``blocks``: the mesh fields' ``NamedSharding`` (None: row-major over the whole lattice). Given, the particles
    are numbered block by block instead: the share of the particle axis that a device holds
    (:func:`~solvers.particles.particle_sharding`) is the lattice inside that device's block of the mesh,
    row-major within it, so every particle starts in the block of the device that holds it (what painting through
    halos needs, :func:`xfft.paint`'s ``halo``).
    """
    i = index.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)
    counts = tuple(int(n) for n in counts)
    if blocks is None:
        node = _unravel(i, counts)
    else:
        split = _splits(blocks, len(counts))  # per lattice axis: the mesh axes that split it
        sizes = dict(zip(blocks.mesh.axis_names, blocks.mesh.axis_sizes))
        nblocks = [math.prod(sizes[a] for a in names) for names in split]
        local = tuple(n // b for n, b in zip(counts, nblocks))
        per_device = math.prod(local)
        device = dict(zip(blocks.mesh.axis_names, _unravel(i // per_device, tuple(blocks.mesh.axis_sizes))))
        within = _unravel(i % per_device, local)
        node = []
        for names, n_local, j in zip(split, local, within):
            block = 0
            for a in names:
                block = block * sizes[a] + device[a]
            node.append(block * n_local + j)
    return jnp.stack([j.astype(dtype) * (float(length) / n) for j, n, length in zip(node, counts, box_length)], -1)


def _unravel(i: jax.Array, counts: tuple[int, ...]) -> list[jax.Array]:
    """The row-major multi-index of the flat index ``i`` in an array of ``counts``."""
    out = []
    for n in reversed(counts):
        out.append(i % n)
        i = i // n
    return out[::-1]


def _splits(sharding, ndim: int) -> list[tuple[str, ...]]:
    """Per axis of an ``ndim`` array sharded as ``sharding``: the mesh axes that split it, major first."""
    spec = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
    return [() if e is None else (e,) if isinstance(e, str) else tuple(e) for e in spec[:ndim]]
