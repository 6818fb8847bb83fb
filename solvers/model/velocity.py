"""Shared parts of equations for a 3-component velocity field with viscosity (Navier–Stokes, Burgers)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from .. import diagnostics as diag
from ..grids import rmul, times_i
from ._order import after_on
from .equation import Equation


def cross(a: jax.Array, b: jax.Array) -> jax.Array:
    """Pointwise cross product of two ``(3, ...)`` fields."""
    return jnp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


class VelocityEquation(Equation):
    """State ``u_hat``: complex ``(3,) + grid.spectral_shape`` sharded like ``grid.spectral_sharding(1)``;
    linear part ``-nu k^2`` (subclasses set ``self.nu``); energy, spectrum and CFL rate of the velocity."""

    nu: float
    grid_ndims = (3,)
    #: points per device up to which :meth:`lamb_hat` moves ``u`` and ``omega`` in one batched transform and
    #: ``u x omega`` back in another, on a mesh of more than one device (0: never). On 8 CPU devices,
    #: float32, LSRK4 step: 8.6 against 18.4 ms at 32^3 (4096 points per device), 51.9 against 58.9 at
    #: 64^3 (32768), but 226 against 192 at 96^3 and 598 against 534 at 128^3; on one device no faster (8.4
    #: against 8.1 ms at 32^3). The batched form holds 89 bytes per point against 72 (64^3, not donated), which
    #: only large grids feel, and those take the scalar transforms.
    batched_points_per_device = 2 ** 15

    #: the points of the run whose programs this equation builds (None: its grid's); the memory check builds a
    #: large run's programs on a small probe grid by setting it
    planned_points: tuple[int, ...] | None = None

    def batched_transforms(self) -> bool:
        """True where :meth:`lamb_hat` takes the batched transforms (see :attr:`batched_points_per_device`):
        on a mesh of several devices and at most that many points per device of the run's grid
        (:attr:`planned_points`). Both forms give the same numbers to rounding (float64: a few
        1e-15 relative; the batched FFTs may round differently)."""
        g = self.grid
        points = math.prod(self.planned_points or g.shape)
        return g.mesh.size > 1 and points <= self.batched_points_per_device * g.mesh.size

    def abstract_state(self) -> jax.ShapeDtypeStruct:
        g = self.grid
        return jax.ShapeDtypeStruct((3,) + g.spectral_shape, g.cdtype, sharding=g.spectral_sharding(1))

    def linear(self) -> jax.Array:
        return (-self.nu * self.grid.k2()).astype(self.grid.dtype)

    def velocity_and_lamb(self, u_hat: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Physical velocity ``u`` and Lamb vector ``u x omega`` (one batched inverse transform of 6 fields)."""
        uw = self.grid.to_physical(jnp.concatenate([u_hat, self.grid.curl(u_hat)]))
        return uw[:3], cross(uw[:3], uw[3:])

    def lamb_hat(self, u_hat: jax.Array, rate: bool | Callable = False) -> jax.Array | tuple[jax.Array, jax.Array]:
        """Dealiased spectrum of the Lamb vector ``u x omega``.

        Large grids (and one device): nine scalar transforms (6 inverse, 3 forward) in an order that frees each
        physical field as soon as its last product is formed (at most 5 physical scalar fields are needed at
        once, where one batched transform of ``u`` and ``omega`` holds 9 and the work buffers of 6). XLA's CPU
        scheduler still runs independent transforms side by side; forcing this order by data dependencies saved
        4 more bytes per point but cost 75% of the step time on 8 CPU devices, so it is not done.

        Small blocks on several devices (:meth:`batched_transforms`): one batched inverse transform of ``u`` and
        ``omega`` and one batched forward transform of ``u x omega``, so 2 all-to-alls instead of 9 (where the
        exchanges' latency, not the data, sets the step's time); the same numbers to rounding.

        Args:
          u_hat: velocity spectrum ``(3,) + grid.spectral_shape``, ``grid.spectral_sharding(1)``.
          rate: also return :func:`~solvers.diagnostics.max_rate` of ``u_hat`` from the same physical velocity
            (only where products are formed on the grid points, i.e. not with 3/2 padding); with the batched
            transforms its maximum is carried in the Lamb vector's forward transform where the grid can
            (:meth:`~solvers.Grid.from_physical_and_max`; a :class:`~solvers.grids.GatedMax` from the
            driver's stage loop: in the first stage only); another callable is the reduction of the per-point
            rate field to use instead of ``jnp.max`` (see :meth:`~solvers.Equation.nonlinear_with_rate`).

        Returns:
          ``(3,) + grid.spectral_shape``, same sharding (and the rate, replicated, if ``rate``).
        """
        g = self.grid
        hx, hy, hz = g.spacing
        reduce = (rate if callable(rate) else None) if rate else None
        if self.batched_transforms():
            u, lamb = self.velocity_and_lamb(u_hat)
            if not rate:
                return g.from_physical(lamb)
            # the rate's maximum rides in the Lamb vector's all-to-all: no collective of its own (on these small
            # blocks a separate maximum across devices cost 4-6% of a step on 8 CPU devices)
            return g.from_physical_and_max(lamb, jnp.abs(u[0]) / hx + jnp.abs(u[1]) / hy + jnp.abs(u[2]) / hz,
                                           reduce)
        kx, ky, kz = g.k
        phys = g.to_physical
        # the later transforms' inputs once the products before them are formed: XLA's scheduler otherwise starts
        # all six inverse transforms at once (67.0 instead of 62.7 bytes per point of the LSRK4 step at 128^3)
        after = functools.partial(after_on, g)
        ux = phys(u_hat[0])
        uy = phys(u_hat[1])
        partial = jnp.abs(ux) / hx + jnp.abs(uy) / hy if rate else None
        wz = phys(times_i(rmul(kx, u_hat[1]) - rmul(ky, u_hat[0])))
        lx, ly = uy * wz, -(ux * wz)
        wy = phys(after(times_i(rmul(kz, u_hat[0]) - rmul(kx, u_hat[2])), lx))
        lz = ux * wy  # ux is dead from here
        uz = phys(after(u_hat[2], lz))
        lx_hat = g.from_physical(lx - uz * wy)  # wy and lx are dead from here
        wx = phys(after(times_i(rmul(ky, u_hat[2]) - rmul(kz, u_hat[1])), lx_hat))
        ly_hat = g.from_physical(ly + uz * wx)
        lz_hat = g.from_physical(lz - uy * wx)
        out = jnp.stack([lx_hat, ly_hat, lz_hat])
        # the rate reduced on its own here: carried in lx's transform it would need a padded copy of lx at once
        # (66.9 instead of 63.0 bytes per point at 128^3), and on large blocks one all-reduce is cheap
        return out if not rate else (out, (reduce or jnp.max)(partial + jnp.abs(uz) / hz))

    def max_rate(self, u_hat: jax.Array) -> jax.Array:
        return diag.max_rate(self.grid, u_hat)

    def energy(self, u_hat: jax.Array) -> jax.Array:
        return diag.kinetic_energy(self.grid, u_hat)

    def spectrum(self, u_hat: jax.Array) -> jax.Array:
        return diag.energy_spectrum(self.grid, u_hat)
