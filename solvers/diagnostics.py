"""Diagnostics of velocity fields, all sharded reductions (safe on many processes): results are replicated.

Conventions: ``u_hat`` is a ``(3, ...)`` (or ``(2, ...)``) velocity spectrum of a :class:`~solvers.SpectralGrid`
(Fourier coefficients, ``norm="forward"``); means are volume means, so ``E = <|u|^2> / 2``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._spectral_grid import SpectralGrid


def kinetic_energy(grid: SpectralGrid, u_hat: jax.Array) -> jax.Array:
    """``E = <|u|^2> / 2`` (Parseval on the half spectrum)."""
    return 0.5 * grid.mean_square(u_hat)


def enstrophy(grid: SpectralGrid, u_hat: jax.Array) -> jax.Array:
    """``Z = <|omega|^2> / 2 = sum_k |k|^2 |u_k|^2 / 2`` (equal to the curl form for divergence-free u)."""
    return 0.5 * grid.mean_square(u_hat, grid.k2())


def dissipation(grid: SpectralGrid, u_hat: jax.Array, nu: float) -> jax.Array:
    """Viscous dissipation rate ``epsilon = 2 nu Z``."""
    return 2 * nu * enstrophy(grid, u_hat)


def max_divergence(grid: SpectralGrid, u_hat: jax.Array) -> jax.Array:
    """``max |div u|`` over the grid points (one inverse transform)."""
    return jnp.max(jnp.abs(grid.irfft(grid.div(u_hat))))


def max_rate(grid: SpectralGrid, u_hat: jax.Array) -> jax.Array:
    """``max_x sum_i |u_i(x)| / dx_i``: the advective CFL rate (CFL number = dt * rate)."""
    u = grid.irfft(u_hat)
    return jnp.max(sum(jnp.abs(u[i]) / h for i, h in enumerate(grid.spacing)))


def cfl_number(grid: SpectralGrid, u_hat: jax.Array, dt) -> jax.Array:
    return dt * max_rate(grid, u_hat)


def energy_spectrum(grid: SpectralGrid, u_hat: jax.Array) -> jax.Array:
    """Radial energy spectrum ``E(k_j)``, ``k_j = j dk``: energy summed over the shell ``|k| ~ k_j``.

    ``sum_j E(k_j) = E``. Each device bins its block, one ``psum`` joins them; the result is replicated.
    """
    return grid.radial_sum(0.5 * jnp.sum(u_hat.real ** 2 + u_hat.imag ** 2, axis=0))


def vorticity_slice(grid: SpectralGrid, u_hat: jax.Array, axis: int = -1, index: int | None = None) -> jax.Array:
    """``|omega|`` on the plane ``index`` (default the mid-plane) normal to ``axis``, replicated (for plots).

    In 2D the whole ``|omega|`` field is returned.
    """
    w = grid.irfft(grid.curl(u_hat))
    mag = jnp.abs(w) if grid.ndim == 2 else jnp.sqrt(jnp.sum(w * w, axis=0))
    return grid.mid_plane(mag, axis=axis, index=index)


def _replicate(grid: SpectralGrid, x: jax.Array) -> jax.Array:
    """Kept for callers of the old private name: :meth:`SpectralGrid.replicate`."""
    return grid.replicate(x)
