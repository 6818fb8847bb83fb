"""Rayleigh-Benard convection between no-slip (rigid) plates: Chebyshev in z with tau boundary conditions."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..bases import Chebyshev
from ..bases import tau as _tau
from ..grids import Grid
from ..model import Diffusion, NoSlipVelocity, WallEquation, WallVelocity
from ..model.velocity_vorticity import own_buffer
from .rayleigh_benard import K_CRITICAL_NO_SLIP, RayleighBenard


class RayleighBenardNoSlip(WallEquation, RayleighBenard):
    """Rigid plates (``u = 0``, ``theta = 0`` at ``z = 0, 1``): the velocity in the velocity-vorticity form of
    :class:`~solvers.WallVelocity` (viscosity ``Pr``, buoyancy ``Ra Pr theta`` along z in the
    Lamb vector) and the temperature perturbation ``theta``, all Chebyshev in z (Gauss-Lobatto points, plates
    included) and Fourier horizontally (a half spectrum on the last horizontal axis). IMEX: advection,
    buoyancy and the base gradient explicit (from the physical fields, so only what they show drives the flow),
    diffusion implicit with banded tau solves per horizontal wavenumber.

    State: complex ``(F + 1,) + grid.spectral_shape`` (``(nz, nx // 2)`` in 2D, ``(nz, nx, ny // 2 + 1)`` in 3D): the
    velocity fields (``F = 1`` in 2D, 2 in 3D) and ``theta``, on ``grid.spectral_sharding(1)``.
    """

    wall_basis = Chebyshev
    half_spectrum = True
    critical_wavenumber = K_CRITICAL_NO_SLIP

    def __init__(self, grid: Grid, Ra: float = 2000.0, Pr: float = 1.0, amplitude: float = 1e-2):
        super().__init__(grid, Ra=Ra, Pr=Pr, amplitude=amplitude)
        self.kmm = WallVelocity(self.grid)
        self.nv = self.kmm.fields

    def abstract_state(self) -> jax.ShapeDtypeStruct:
        g = self.grid
        return jax.ShapeDtypeStruct((self.nv + 1,) + g.spectral_shape, g.cdtype, sharding=g.spectral_sharding(1))

    def from_physical(self, fn) -> jax.Array:
        """State from ``fn(z, x[, y]) -> (u_x[, u_y], w, theta)`` in physical space; the velocity must satisfy the
        no-slip conditions (it is carried as ``lap w``, the vertical vorticity and the mean horizontal flow)."""
        g, kmm, d = self.grid, self.kmm, self.dim

        def build(*xyz):
            fields = fn(*xyz)
            if len(fields) != d + 1:
                raise ValueError(f"{self.label()}: the field function must return {d + 1} fields, got {len(fields)}")
            c = g.dealias(g.forward(jnp.stack(fields)))
            u = jnp.concatenate([c[d - 1:d], c[: d - 1]])  # array-axis order: (w, u_x[, u_y])
            return jnp.concatenate([kmm.from_velocity(u), c[d:]])
        if not jax.sharding.get_abstract_mesh().empty:
            return jax.jit(build)(*g.coordinates())  # one program, not ~100 eager ones
        with jax.set_mesh(g.mesh):
            return jax.jit(build)(*g.coordinates())

    # ----- equation ----------------------------------------------------------------------------------
    def implicit_parts(self) -> dict:
        """The velocity between no-slip plates (viscosity ``Pr``) and ``theta``'s diffusion (diffusivity 1, held at
        0 on both plates), solved in that order."""
        return {"velocity": NoSlipVelocity(self.Pr), "theta": Diffusion(1.0)}

    def state_slices(self) -> dict:
        return {"velocity": slice(0, self.nv), "theta": slice(self.nv, self.nv + 1)}

    def nonlinear(self, s: jax.Array, t: jax.Array) -> jax.Array:
        """Lamb vector with buoyancy, advection and the base gradient, each field transformed alone (together on a small
        grid, :meth:`WallVelocity.physical`)."""
        kmm, d = self.kmm, self.dim
        u, _ = kmm.velocity_parts(s[: self.nv])
        w = kmm.vorticity_parts(u, s[: self.nv])
        p = kmm.physical(w + u + [s[self.nv]])  # one after the other, or together where small
        wp, up, th = p[: len(w)], p[len(w): len(w) + d], p[-1]
        H = kmm.lamb_parts(up, wp if d == 3 else wp[0])
        H[0] = H[0] + self.Ra * self.Pr * th
        velocity = own_buffer(kmm.tendency(kmm.spectra(H, after=th)))
        c = kmm.spectra([ui * th for ui in up] + up[:1], after=velocity)
        return own_buffer(jnp.concatenate([velocity, (c[d] - kmm.divergence(c[:d]))[None]]))

    # ----- diagnostics ---------------------------------------------------------------------------------
    def _phys_velocity(self, s: jax.Array) -> list[jax.Array]:
        """Spectral velocity components ``(w, u_x[, u_y])`` (a list: nothing stacked)."""
        return self.kmm.velocity_parts(s[: self.nv])[0]

    def energy(self, s: jax.Array) -> jax.Array:
        """Kinetic energy ``<|u|^2> / 2`` (component by component: no stacked copy)."""
        return 0.5 * sum(self.grid.mean_square(u) for u in self._phys_velocity(s))

    def plate_nusselt(self, s: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Nusselt numbers ``-d_z <T>`` at the bottom (z = 0) and top (z = 1) plates."""
        theta = self.grid.replicate(jnp.sum((s[self.nv] * self.kmm.mean_mask()).real,
                                            axis=tuple(range(1, self.dim))))
        top, bottom = _tau.boundary_derivatives(theta)
        scale = 2 / self.grid.box_length[0]
        return 1 - scale * bottom, 1 - scale * top

    def nusselt(self, s: jax.Array) -> jax.Array:
        """Volume-averaged Nusselt number ``1 + <w theta>``."""
        return 1 + self.grid.inner(self._phys_velocity(s)[0], s[self.nv])

    def max_rate(self, s: jax.Array) -> jax.Array:
        """Advective rate ``max sum |u_i| / dx_i`` plus the buoyancy frequency bound ``sqrt(Ra Pr)``."""
        return self.kmm.max_rate(self.kmm.physical(self._phys_velocity(s), padded=False)) + math.sqrt(self.Ra * self.Pr)

    def diagnostics(self, s: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        bottom, top = self.plate_nusselt(s)
        return {"energy": self.energy(s), "nusselt": self.nusselt(s), "nusselt_bottom": bottom,
                "nusselt_top": top}

    def temperature(self, s: jax.Array) -> jax.Array:
        z = self.grid.coordinates()[0]
        return 1 - z + self.grid.backward(s[self.nv])

    def physical_fields(self, s: jax.Array) -> dict[str, jax.Array]:
        """Velocity ``u`` (x), ``v`` (y, 3D), ``w`` (z, vertical) and the total temperature ``temperature``
        (``1 - z + theta``) on the Chebyshev points."""
        p = self.kmm.physical(self._phys_velocity(s), padded=False)
        out = {"u": p[1]}
        if self.dim == 3:
            out["v"] = p[2]
        out["w"] = p[0]
        out["temperature"] = self.temperature(s)
        return out


