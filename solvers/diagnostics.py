"""Diagnostics of spectral fields, all sharded reductions (safe on many processes): results are replicated.

Conventions: ``u_hat`` is a ``(3, ...)`` (or ``(2, ...)``) velocity spectrum of a :class:`~solvers.SpectralGrid`
(Fourier coefficients, ``norm="forward"``); means are volume means, so ``E = <|u|^2> / 2``.

Resolution monitor: :func:`resolution` is the fraction of a field's energy (or norm) in the outer third of the
resolved wavenumbers; a run warns when it passes :data:`RESOLUTION_THRESHOLD` (see the README, "Resolution").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .grids import SpectralGrid

#: the outer band of :func:`resolution`: modes whose radius, in units of the largest kept wavenumber of each axis,
#: exceeds this (the top third of the resolved wavenumbers, and whatever lies beyond them)
RESOLUTION_BAND = 2 / 3
#: a run warns once when :func:`resolution` passes this fraction (measured on the README's runs, see the README)
RESOLUTION_THRESHOLD = 1e-3


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
    return grid.maximum(jnp.abs(grid.irfft(grid.div(u_hat))))


def max_rate(grid: SpectralGrid, u_hat: jax.Array) -> jax.Array:
    """``max_x sum_i |u_i(x)| / dx_i``: the advective CFL rate (CFL number = dt * rate).

    Each component is transformed on its own and summed as it comes: a batched transform of all of them would hold
    them all in physical space at once (inside the main job's loop, where the diagnostics rows are computed beside
    the integrator's registers, the batched transform of ``u`` and ``div u`` took 65.1 bytes per point at 128^3
    float32 on 8 devices, against the step's 63.0; one at a time, 63.1).

    Raises:
      ValueError: ``u_hat`` without one component per axis of the grid.
    """
    if u_hat.ndim != grid.ndim + 1 or u_hat.shape[0] != grid.ndim:
        raise ValueError(f"u_hat must hold {grid.ndim} velocity components of the grid's spectrum, shape "
                         f"({grid.ndim}, ...); got shape {tuple(u_hat.shape)}")
    rate = None
    for i, h in enumerate(grid.spacing):
        term = jnp.abs(grid.irfft(u_hat[i])) / h
        rate = term if rate is None else rate + term
    return grid.maximum(rate)


def cfl_number(grid: SpectralGrid, u_hat: jax.Array, dt) -> jax.Array:
    """The CFL number ``dt * max_rate(grid, u_hat)`` of a step ``dt`` (a replicated scalar)."""
    return dt * max_rate(grid, u_hat)


def energy_spectrum(grid: SpectralGrid, u_hat: jax.Array) -> jax.Array:
    """Radial energy spectrum ``E(k_j)``, ``k_j = j dk``: energy summed over the shell ``|k| ~ k_j``.

    ``sum_j E(k_j) = E``. Each device bins its block, one ``psum`` joins them; the result is replicated.
    """
    return grid.radial_sum(0.5 * jnp.sum(u_hat.real ** 2 + u_hat.imag ** 2, axis=0))


def outer_band(grid: SpectralGrid, band: float = RESOLUTION_BAND, rule: str | None = None) -> jax.Array:
    """1 on the modes of the outer band, 0 elsewhere: ``sum_i (m_i / M_i)^2 > band^2``, where ``m_i`` is a mode's
    integer wavenumber along axis ``i`` and ``M_i`` the largest one the dealiasing ``rule`` keeps on that axis
    (default the grid's rule; 2/3: the largest ``m < n/3``; ``3/2`` padding: ``n/2 - 1``; none: ``n/2``).

    Each axis is measured against its own resolution, so on a grid with a coarse axis (``--n 256 64 64``) the
    coarse axis's high modes count as outer; on a cube with equal spacing the band is the grid's shells
    ``j > band * M``. Broadcastable against the spectrum (one 1D table per axis, no grid-sized constant).
    """
    rho2 = 0.0
    for d, b in enumerate(grid.bases):
        m = np.abs(b.modes())
        top = max(float(m[b.keep(grid.dealias_rule if rule is None else rule)].max()), 1.0)
        rho2 = rho2 + grid.spectral_along((m / top) ** 2, d)
    return (rho2 > band ** 2).astype(grid.dtype)


def resolution(grid: SpectralGrid, f_hat: jax.Array, multiplier: jax.Array | None = None,
               rule: str | None = None) -> jax.Array:
    """Fraction of ``sum_k m_k |f_k|^2`` (the energy or norm of ``f``; any leading axes summed) in the outer band
    of :func:`outer_band`: 0 for a field whose spectrum ends well inside the resolved wavenumbers, and of order
    1 for one that has piled up at the grid scale. A run warns when it passes :data:`RESOLUTION_THRESHOLD`.

    Args:
      grid: a :class:`~solvers.SpectralGrid` (real or complex fields).
      f_hat: coefficients, spectral sharding (leading batch axes allowed).
      multiplier: a real per-mode weight (e.g. ``grid.inv_k2()`` for the energy of a vorticity, or a mask that
        leaves out the mean), None for 1.
      rule: the dealiasing rule whose kept modes count as resolved (default the grid's; ``"none"`` for schemes
        that never truncate, such as split-step, whose every mode up to Nyquist carries the solution).

    Returns:
      a replicated scalar in ``[0, 1]`` (0 for a zero field).
    """
    w = 1.0 if multiplier is None else multiplier
    total = grid.mean_square(f_hat, w)
    outer = grid.mean_square(f_hat, w * outer_band(grid, rule=rule))
    return jnp.where(total > 0, outer / jnp.where(total > 0, total, 1), 0)


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
