"""3D viscous Burgers ``u_t + (u . grad) u = nu lap u`` (vector form), pseudo-spectral, dealiased."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .. import diagnostics as diag
from .. import initial_conditions as ics
from .._grid import SpectralGrid
from ._velocity import VelocityEquation


def _sine(eq: Burgers, **_) -> jax.Array:
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
      grid: a 3D :class:`~solvers.SpectralGrid` (long thin grids such as ``(n, 8, 8)`` for planar flows).
      nu: kinematic viscosity (>= 0). amplitude: ``v0`` of the ``sine`` initial condition.

    State: ``u_hat`` complex ``(3,) + grid.spectral_shape`` with ``grid.spectral_sharding(1)``.

    Raises:
      ValueError: negative or non-finite viscosity, or a grid that is not 3D.
    """

    name = "burgers"
    description = "3D viscous Burgers, vector form (pseudo-spectral, dealiased; --param ny/nz: long thin grids)"
    initial_conditions = {
        "sine": _sine,
        "taylor-green": lambda eq, **_: ics.taylor_green(eq.grid, v0=eq.amplitude),
        "random": lambda eq, seed=0, k0=4.0, energy=0.5, **_: ics.random_isotropic(
            eq.grid, seed=seed, k0=k0, energy=energy),
    }
    _params = ("amplitude", "ny", "nz")

    def __init__(self, grid: SpectralGrid, nu: float, amplitude: float = 1.0):
        super().__init__(grid)
        if grid.ndim != 3:
            raise ValueError(f"burgers needs a 3D grid, got shape {grid.shape}")
        if not (math.isfinite(nu) and nu >= 0):
            raise ValueError(f"viscosity must be finite and >= 0, got nu={nu}")
        self.nu, self.amplitude = float(nu), float(amplitude)

    @classmethod
    def from_config(cls, grid: SpectralGrid, cfg) -> Burgers:
        bad = sorted(set(cfg.params) - set(cls._params))
        if bad:
            raise ValueError(f"{cls.name}: unknown --param {', '.join(bad)}; allowed: {', '.join(cls._params)}")
        return cls(grid, nu=cfg.nu, amplitude=float(cfg.params.get("amplitude", 1.0)))

    @classmethod
    def grid_geometry(cls, cfg) -> dict:
        """``n x ny x nz`` points (``--param ny=8 --param nz=8`` for a long thin box), equal spacing
        ``--box-length / n`` on every axis."""
        shape = [cfg.n]
        for key in ("ny", "nz"):
            v = cfg.params.get(key, float(cfg.n))
            if not (isinstance(v, float) and v == int(v) and v >= 4 and int(v) % 2 == 0):
                raise ValueError(f"burgers: --param {key} must be an even integer >= 4, got {v!r}")
            shape.append(int(v))
        return {"shape": tuple(shape), "box_length": tuple(cfg.box_length * m / cfg.n for m in shape)}



    def nonlinear(self, u_hat: jax.Array, t: jax.Array) -> jax.Array:
        g = self.grid
        u, lamb = self.velocity_and_lamb(u_hat)
        q = 0.5 * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
        out = g.from_physical(jnp.concatenate([lamb, q[None]]))
        return out[:3] - g.grad(out[3])



    def diagnostics(self, u_hat: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        """Energy, ``<|grad u|^2> / 2``, dissipation ``nu <|grad u|^2>``, ``max |du_x/dx|``, ``min div u``, CFL."""
        g = self.grid
        gsq = 0.5 * g.mean_square(u_hat, g.k2())
        du = g.irfft(jnp.stack([1j * g.k[0] * u_hat[0], g.div(u_hat)]))
        return {"energy": diag.kinetic_energy(g, u_hat), "gradient_sq": gsq, "dissipation": 2 * self.nu * gsq,
                "max_dudx": jnp.max(jnp.abs(du[0])), "min_div": jnp.min(du[1]),
                "cfl": diag.cfl_number(g, u_hat, dt)}


    def plot_field(self, u_hat: jax.Array) -> tuple[str, jax.Array]:
        g = self.grid
        ux = g.irfft(u_hat[0])
        plane = jax.lax.index_in_dim(ux, g.shape[-1] // 2, axis=2, keepdims=False)
        return "u_x, mid-plane z = L/2", diag._replicate(g, plane)

    def snapshot_fields(self, u_hat: jax.Array) -> dict[str, jax.Array]:
        """Velocity components ``u, v, w``."""
        u = self.grid.irfft(u_hat)
        return {"u": u[0], "v": u[1], "w": u[2]}
