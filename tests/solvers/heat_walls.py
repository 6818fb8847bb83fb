"""A user-defined wall-bounded equation, written as a user would (outside the package): heat between walls.

``theta_t = kappa lap theta`` between walls at ``y = 0, 1`` where ``theta = 0``, periodic along the other axes. The
implicit part is the Chebyshev tau Helmholtz solve of :mod:`solvers.bases.tau`, called directly on the grid's
sharded spectral arrays. The tests copy this file into a temporary directory and run it from there
(``python -m solvers run heat_walls:SPEC``), so it is never imported from the package.
"""

import math

import jax.numpy as jnp

from solvers import Equation, InitialCondition, Param, RunSpec, WallBuilder
from solvers.bases import tau


def mode(eq, amplitude):
    """``amplitude sin(pi y) cos(x)`` (2D) or ``... cos(x) cos(z)`` (3D)."""
    g = eq.grid
    c = g.coordinates()
    f = amplitude * jnp.sin(math.pi * c[0]) * math.prod(jnp.cos(x) for x in c[1:])
    return g.dealias(g.forward(f))


class Heat(Equation):
    """Diffusion of a scalar held at zero on both walls: ``(I - h kappa lap) y = rhs`` by a tau solve per mode."""

    parameters = (Param("kappa", 0.1, "diffusivity", low=0, low_open=True),)
    initial_conditions = {"mode": InitialCondition(mode, (Param("amplitude", 1.0),))}

    def __init__(self, grid, kappa=0.1):
        super().__init__(grid, kappa=kappa)

    def implicit_factor(self, h):
        g = self.grid
        k2 = sum(g.wavenumbers(a, odd=False) ** 2 for a in range(1, g.ndim))[0]  # per periodic mode: (kx[, kz])
        scale = (2 / g.box_length[0]) ** 2  # d/dy on [0, 1] is 2 d/dxi on the Chebyshev interval [-1, 1]
        hk = h * self.kappa
        return {"lu": tau.helmholtz_factor(g.shape[0], (k2 + 1 / hk) / scale), "rhs": -1 / (hk * scale)}

    def implicit_solve(self, rhs, factor):
        return tau.helmholtz_solve(factor["lu"], factor["rhs"] * rhs)

    def nonlinear(self, s, t):
        return jnp.zeros_like(s)

    def physical_fields(self, s):
        return {"theta": self.grid.backward(s)}


#: the builder of its grid and its default box (walls at y = 0, 1; periodic length 2 pi)
WALLS = WallBuilder(walls=(0.0, 1.0))
#: how it runs as a job: ``python -m solvers run heat_walls:SPEC --n NY NX [NZ]``
SPEC = RunSpec("heat", Heat, "heat between walls at y = 0, 1", ndims=(2, 3), grid=WALLS, box=WALLS.box)
