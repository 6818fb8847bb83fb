"""Shared parts of equations for a 3-component velocity field with viscosity (Navier–Stokes, Burgers)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import diagnostics as diag
from ._base import Equation


def cross(a: jax.Array, b: jax.Array) -> jax.Array:
    """Pointwise cross product of two ``(3, ...)`` fields."""
    return jnp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _after(x: jax.Array, *done: jax.Array) -> jax.Array:
    """``x``, made to depend on every array in ``done`` (plus 0 times a sum over one unsharded plane of each).

    XLA's CPU scheduler runs independent transforms side by side, all their buffers alive at once, and removes
    optimization barriers before it schedules: a data dependency is the order it keeps. The sum over a plane
    costs one small all-reduce; ``0 * s`` is not folded for floats (it would be NaN for an infinite ``s``, and
    then the state has blown up anyway).
    """
    zero = jnp.zeros((), x.real.dtype)
    for d in done:
        spec = getattr(getattr(jax.typeof(d), "sharding", None), "spec", ())
        free = [a for a in range(d.ndim) if a >= len(spec) or spec[a] is None]
        plane = jax.lax.slice_in_dim(d, 0, 1, axis=free[-1]) if free else d
        zero = zero + 0 * jnp.sum(plane).real.astype(zero.dtype)
    return x + zero


class VelocityEquation(Equation):
    """State ``u_hat``: complex ``(3,) + grid.spectral_shape`` sharded like ``grid.spectral_sharding(1)``;
    linear part ``-nu k^2`` (subclasses set ``self.nu``); energy, spectrum and CFL rate of the velocity."""

    nu: float

    def abstract_state(self) -> jax.ShapeDtypeStruct:
        g = self.grid
        return jax.ShapeDtypeStruct((3,) + g.spectral_shape, g.cdtype, sharding=g.spectral_sharding(1))

    def linear(self) -> jax.Array:
        return (-self.nu * self.grid.k2()).astype(self.grid.dtype)

    def velocity_and_lamb(self, u_hat: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Physical velocity ``u`` and Lamb vector ``u x omega`` (one batched inverse transform of 6 fields)."""
        uw = self.grid.to_physical(jnp.concatenate([u_hat, self.grid.curl(u_hat)]))
        return uw[:3], cross(uw[:3], uw[3:])

    def lamb_hat(self, u_hat: jax.Array) -> jax.Array:
        """Dealiased spectrum of the Lamb vector ``u x omega``, with few full fields alive at once.

        Nine scalar transforms (6 inverse, 3 forward) in an order that frees each physical field as soon as its
        last product is formed (at most 5 physical scalar fields are needed at once, where one batched transform
        of ``u`` and ``omega`` holds 9 and the work buffers of 6); :func:`_after` makes XLA keep that order.

        Args:
          u_hat: velocity spectrum ``(3,) + grid.spectral_shape``, ``grid.spectral_sharding(1)``.

        Returns:
          ``(3,) + grid.spectral_shape``, same sharding.
        """
        g = self.grid
        kx, ky, kz = g.k
        phys = g.to_physical
        ux, uy = phys(u_hat[0]), phys(u_hat[1])
        wz = phys(_after(1j * (kx * u_hat[1] - ky * u_hat[0]), ux, uy))
        lx, ly = uy * wz, -(ux * wz)
        wy = phys(_after(1j * (kz * u_hat[0] - kx * u_hat[2]), lx, ly))
        lz = ux * wy  # ux is dead from here
        uz = phys(_after(u_hat[2], lz))
        lx_hat = g.from_physical(lx - uz * wy)  # wy and lx are dead from here
        wx = phys(_after(1j * (ky * u_hat[2] - kz * u_hat[1]), lx_hat))
        ly_hat = g.from_physical(ly + uz * wx)
        lz_hat = g.from_physical(_after(lz - uy * wx, ly_hat))
        return jnp.stack([lx_hat, ly_hat, lz_hat])

    def max_rate(self, u_hat: jax.Array) -> jax.Array:
        return diag.max_rate(self.grid, u_hat)

    def energy(self, u_hat: jax.Array) -> jax.Array:
        return diag.kinetic_energy(self.grid, u_hat)

    def spectrum(self, u_hat: jax.Array) -> jax.Array:
        return diag.energy_spectrum(self.grid, u_hat)
