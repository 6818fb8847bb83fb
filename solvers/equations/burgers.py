"""3D viscous Burgers ``u_t + (u . grad) u = nu lap u`` (vector form), pseudo-spectral, dealiased."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .. import diagnostics as diag
from .. import initial_conditions as ics
from ..grids import SpectralGrid
from ..model import InitialCondition, Param, VelocityEquation


def _sine(eq: Burgers) -> jax.Array:
    """Planar ``u = (-v0 sin(2 pi (x - Lx/2) / Lx), 0, 0)``; on ``Lx = 2`` the classic ``-sin(pi x)`` on [-1, 1]."""
    g = eq.grid
    kx, half, v0 = 2 * math.pi / g.box_length[0], g.box_length[0] / 2, eq.amplitude

    def build(x):
        u = -v0 * jnp.sin(kx * (x - half))
        return g.dealias(g.rfft(jnp.stack([u, jnp.zeros_like(u), jnp.zeros_like(u)])))

    return jax.jit(build)(g.coordinates()[0])


class Burgers(VelocityEquation):
    """``du/dt = u x omega - grad(|u|^2 / 2) + nu lap(u)`` for the velocity spectrum ``u_hat`` ``(3, ...)``.

    The advection ``(u . grad) u = grad(|u|^2 / 2) - u x omega`` in rotational form: ``u`` and ``omega`` go to
    physical space in one batched inverse transform (6 fields) and ``u x omega``, ``|u|^2 / 2`` come back in
    one batched forward transform (4 fields), dealiased by the grid's rule. No pressure, so ``u`` is
    compressible and forms shocks; ``u = (u(x), 0, 0)`` stays planar and is the 1D Burgers equation.

    Args:
      grid: a 3D :class:`~solvers.SpectralGrid` (long thin grids such as ``(n, 8, 8)`` for planar flows; the CLI:
        ``--n 864 8 8 --box-length 2 0.0185 0.0185``).
      nu: kinematic viscosity (>= 0). amplitude: ``v0`` of the ``sine`` initial condition.

    State: ``u_hat`` complex ``(3,) + grid.spectral_shape`` with ``grid.spectral_sharding(1)``.

    Raises:
      ValueError: negative or non-finite viscosity, or a grid that is not 3D.
    """

    grid_ndims = (3,)
    parameters = (
        Param("nu", 1 / 1600, "kinematic viscosity", low=0, reciprocal="Re"),
        Param("amplitude", 1.0, "v0 of the sine and taylor-green initial conditions"),
    )
    initial_conditions = {
        "sine": InitialCondition(_sine, (), "planar -v0 sin(2 pi (x - Lx/2) / Lx)"),
        "taylor-green": lambda eq: ics.taylor_green(eq.grid, v0=eq.amplitude),
        "random": InitialCondition(lambda eq, seed, k0, energy: ics.random_isotropic(
            eq.grid, seed=seed, k0=k0, energy=energy), ics.RANDOM_PARAMS, "random solenoidal field"),
    }

    def __init__(self, grid: SpectralGrid, nu: float = 1 / 1600, amplitude: float = 1.0):
        super().__init__(grid, nu=nu, amplitude=amplitude)



    def nonlinear(self, u_hat: jax.Array, t: jax.Array) -> jax.Array:
        g = self.grid
        u, lamb = self.velocity_and_lamb(u_hat)
        q = 0.5 * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
        out = g.from_physical(jnp.concatenate([lamb, q[None]]))
        return out[:3] - g.grad(out[3])



    def diagnostics(self, u_hat: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        """Energy, ``<|grad u|^2> / 2``, dissipation ``nu <|grad u|^2>``, ``max |du_x/dx|``, ``min div u`` and
        ``resolution`` (:func:`~solvers.diagnostics.resolution` of the energy)."""
        g = self.grid
        gsq = 0.5 * g.mean_square(u_hat, g.k2())
        du = g.irfft(jnp.stack([1j * g.k[0] * u_hat[0], g.div(u_hat)]))
        return {"energy": diag.kinetic_energy(g, u_hat), "gradient_sq": gsq, "dissipation": 2 * self.nu * gsq,
                "max_dudx": g.maximum(jnp.abs(du[0])), "min_div": -g.maximum(-du[1]),
                "resolution": diag.resolution(g, u_hat)}


    def physical_fields(self, u_hat: jax.Array) -> dict[str, jax.Array]:
        """Velocity components ``u, v, w``."""
        u = self.grid.irfft(u_hat)
        return {"u": u[0], "v": u[1], "w": u[2]}
