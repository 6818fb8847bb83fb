"""3D incompressible Navier-Stokes, pseudo-spectral, rotational form, dealiased, optional linear forcing."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import diagnostics as diag
from .. import initial_conditions as ics
from ..grids import SpectralGrid
from ..model import InitialCondition, Param, VelocityEquation


class NavierStokes(VelocityEquation):
    """``du/dt = P[u x omega] + nu lap(u) (+ A u)`` for the velocity spectrum ``u_hat`` of shape ``(3, ...)``.

    Rotational form with the Leray projector ``P`` (the pressure never appears); the components of ``u`` and
    ``omega`` go to physical space one at a time and ``u x omega`` comes back one component at a time (9 scalar
    3D transforms per nonlinear evaluation, ordered so that few full fields are alive), except on small blocks
    of several devices, where two batched transforms take fewer exchanges (see
    :meth:`~solvers.VelocityEquation.lamb_hat`). Products are dealiased by the grid's rule
    (2/3 truncation or 3/2 padding).

    Args:
      grid: a 3D :class:`~solvers.SpectralGrid`.
      nu: kinematic viscosity (>= 0).
      forcing_epsilon: if > 0, Lundgren's linear forcing ``f = A u`` with ``A = epsilon / (2 E)`` recomputed at
        every stage, so the energy injection rate is exactly ``epsilon`` (stationary turbulence).

    State: ``u_hat`` complex ``(3, nx, ny, nz // 2 + 1)`` with ``grid.spectral_sharding(1)``.

    Raises:
      ValueError: negative or non-finite viscosity or forcing, or a grid that is not 3D (checked against
        :attr:`parameters` by ``Equation.__init__``).
    """

    grid_ndims = (3,)
    parameters = (
        Param("nu", 1 / 1600, "kinematic viscosity", low=0, reciprocal="Re"),
        Param("forcing_epsilon", 0.0, "Lundgren linear forcing injecting this power (0: decaying)", low=0),
    )
    initial_conditions = {
        "taylor-green": InitialCondition(lambda eq, v0: ics.taylor_green(eq.grid, v0=v0),
                                         (Param("v0", 1.0, "speed"),), "Taylor-Green vortex"),
        "abc": InitialCondition(lambda eq, a, b, c: ics.abc(eq.grid, a=a, b=b, c=c),
                                (Param("a", 1.0), Param("b", 1.0), Param("c", 1.0)), "ABC (Beltrami) flow"),
        "random-isotropic": InitialCondition(lambda eq, seed, k0, energy: ics.random_isotropic(
            eq.grid, seed=seed, k0=k0, energy=energy), ics.RANDOM_PARAMS, "random solenoidal field, E(k) peaked at k0"),
    }

    def __init__(self, grid: SpectralGrid, nu: float = 1 / 1600, forcing_epsilon: float = 0.0):
        super().__init__(grid, nu=nu, forcing_epsilon=forcing_epsilon)



    def nonlinear(self, u_hat: jax.Array, t: jax.Array) -> jax.Array:
        return self._nonlinear(u_hat, False)

    def nonlinear_and_rate(self, u_hat: jax.Array, t: jax.Array, reduce=None) -> tuple[jax.Array, jax.Array | None]:
        """The nonlinear term and the CFL rate from the physical velocity it holds (:class:`~solvers.FusedRate`;
        the rate is None with 3/2 padding, whose products are formed on other points)."""
        if self.grid.dealias_rule == "3/2":
            return self._nonlinear(u_hat, False), None
        return self._nonlinear(u_hat, reduce or True)

    def _nonlinear(self, u_hat: jax.Array, rate):
        g = self.grid
        lamb = self.lamb_hat(u_hat, rate)
        lamb, r = lamb if rate else (lamb, None)
        out = g.project_lean(lamb)
        if self.forcing_epsilon > 0:
            out = out + self.forcing_rate(u_hat) * u_hat
        return (out, r) if rate else out

    def forcing_rate(self, u_hat: jax.Array) -> jax.Array:
        """Lundgren's coefficient ``A = epsilon / (2 E)`` (0 without forcing or for a fluid at rest)."""
        e = diag.kinetic_energy(self.grid, u_hat)
        return jnp.where(e > 0, self.forcing_epsilon / (2 * jnp.where(e > 0, e, 1)), 0).astype(self.grid.dtype)



    def diagnostics(self, u_hat: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        g = self.grid
        z = diag.enstrophy(g, u_hat)
        out = {"energy": diag.kinetic_energy(g, u_hat), "enstrophy": z, "dissipation": 2 * self.nu * z,
               "max_div": diag.max_divergence(g, u_hat),
               "resolution": diag.resolution(g, u_hat)}
        if self.forcing_epsilon > 0:
            out["injection"] = jnp.asarray(self.forcing_epsilon, g.dtype)
        return out


    def physical_fields(self, u_hat: jax.Array) -> dict[str, jax.Array]:
        """Velocity ``u, v, w``, vorticity ``vorticity_x/y/z`` and its magnitude (one batched inverse transform)."""
        g = self.grid
        uw = g.irfft(jnp.concatenate([u_hat, g.curl(u_hat)]))
        names = ("u", "v", "w", "vorticity_x", "vorticity_y", "vorticity_z")
        out = {name: uw[i] for i, name in enumerate(names)}
        out["vorticity_magnitude"] = jnp.sqrt(uw[3] ** 2 + uw[4] ** 2 + uw[5] ** 2)
        return out
