"""Initial velocity fields (spectral, divergence-free, dealiased): Taylor-Green, ABC and random isotropic."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .grids import SpectralGrid
from .model.params import Param

#: parameters of :func:`random_isotropic` (``--seed``, ``--k0``, ``--energy`` on the command line)
RANDOM_PARAMS = (
    Param("seed", 0, "random seed (the field does not depend on the mesh)", int, low=0),
    Param("k0", 4.0, "spectral peak", low=0, low_open=True),
    Param("energy", 0.5, "initial kinetic energy", low=0, low_open=True),
)


def _spectral(grid: SpectralGrid, fn) -> jax.Array:
    """Evaluate ``fn(x, y, z) -> (3, ...)`` on the sharded grid and transform it (one batched call)."""
    xyz = grid.coordinates()
    return jax.jit(lambda *c: grid.dealias(grid.project(grid.rfft(jnp.stack(fn(*c))))))(*xyz)


def taylor_green(grid: SpectralGrid, *, v0: float = 1.0) -> jax.Array:
    """``u = v0 (sin x cos y cos z, -cos x sin y cos z, 0)`` (Brachet et al. 1983; Re = v0 L / nu with L = 1)."""
    def f(x, y, z):
        return (v0 * jnp.sin(x) * jnp.cos(y) * jnp.cos(z), -v0 * jnp.cos(x) * jnp.sin(y) * jnp.cos(z),
                jnp.zeros_like(x))
    return _spectral(grid, f)


def abc(grid: SpectralGrid, *, a: float = 1.0, b: float = 1.0, c: float = 1.0) -> jax.Array:
    """Arnold-Beltrami-Childress flow ``(a sin z + c cos y, b sin x + a cos z, c sin y + b cos x)``.

    A Beltrami field (``curl u = u``), so ``u x omega = 0`` and Navier-Stokes gives exactly
    ``u(t) = u(0) exp(-nu t)``, ``E(t) = E(0) exp(-2 nu t)``.
    """
    def f(x, y, z):
        return (a * jnp.sin(z) + c * jnp.cos(y), b * jnp.sin(x) + a * jnp.cos(z), c * jnp.sin(y) + b * jnp.cos(x))
    return _spectral(grid, f)


def random_isotropic(grid: SpectralGrid, *, seed: int = 0, k0: float = 4.0, energy: float = 0.5) -> jax.Array:
    """Random solenoidal field whose shell spectrum is exactly ``E(k) ~ k^4 exp(-2 (k / k0)^2)``, total ``energy``.

    Gaussian noise (threefry, independent of the mesh) is projected, dealiased, and every shell rescaled to the
    target spectrum, so the field depends only on ``seed`` and the grid size, never on the decomposition.
    """
    if not energy > 0 or not k0 > 0:
        raise ValueError(f"random-isotropic needs energy > 0 and k0 > 0, got energy={energy}, k0={k0}")
    shape = (grid.ndim,) + grid.shape
    noise = grid.place(lambda s: jax.random.normal(jax.random.key(seed), shape, grid.dtype, out_sharding=s),
                       grid.real_sharding(1))
    dk = 2 * np.pi / max(grid.box_length)
    kj = np.arange(grid.num_shells) * dk
    target = kj ** 4 * np.exp(-2 * (kj / k0) ** 2)
    target = (energy * target / target.sum()).astype(grid.dtype)  # numpy: a constant on every process

    @jax.jit
    def build(noise):
        u_hat = grid.dealias(grid.project(grid.rfft(noise)))
        have = grid.radial_sum(0.5 * jnp.sum(jnp.abs(u_hat) ** 2, axis=0))
        scale = jnp.where(have > 0, jnp.sqrt(target / jnp.where(have > 0, have, 1)), 0)
        u_hat = u_hat * grid.shell_lookup(scale)
        return u_hat * jnp.sqrt(energy / (0.5 * grid.mean_square(u_hat)))  # shells cut by dealiasing

    return build(noise)
