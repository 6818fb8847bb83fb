"""A user-defined equation, written as a user would (outside the package): 2D Kuramoto-Sivashinsky.

The same code as the ``# ks_equation.py`` block of ``docs/guide/own-equation.md`` (``tests/docs/test_tables.py``
compares them).

``u_t + |grad u|^2 / 2 + lap u + lap^2 u = 0``. The tests copy this file into a temporary directory and import it
from there (``python -m solvers run ks_equation:SPEC``), so it is never imported from the package. ``SPEC`` says how
it runs as a job (2D, ETDRK4 by default); the class is physics only.
"""

import jax.numpy as jnp

from solvers import Equation, InitialCondition, Param, RunSpec


def cosines(eq, amplitude):
    """``amplitude * cos(x / 16) (1 + sin(y / 16))`` on a 32 pi box."""
    g = eq.grid
    x, y = g.coordinates()
    return g.dealias(g.rfft(amplitude * jnp.cos(x / 16) * (1 + jnp.sin(y / 16))))


class KuramotoSivashinsky(Equation):
    """2D Kuramoto-Sivashinsky: linear part the damping ``-k^4`` (exact in ETDRK4), the growth ``-lap u`` and
    ``-|grad u|^2 / 2`` from the physical fields (a growing linear part would amplify the half spectrum's
    anti-Hermitian part, which no real field has, from round-off); diagnostics ``energy`` and ``grad2``."""

    parameters = (Param("alpha", 1.0, "strength of the nonlinear term", low=0),)
    initial_conditions = {"cosines": InitialCondition(cosines, (Param("amplitude", 1.0, low=0, low_open=True),))}

    def __init__(self, grid, alpha=1.0):
        super().__init__(grid, alpha=alpha)

    def linear(self):
        k2 = self.grid.k2()
        return (-k2 * k2).astype(self.grid.dtype)

    def nonlinear(self, u_hat, t):
        g = self.grid
        du = g.to_physical(g.grad(u_hat))
        lap = g.to_physical(g.laplacian(u_hat))
        return g.from_physical(-0.5 * self.alpha * (du[0] ** 2 + du[1] ** 2) - lap)

    def diagnostics(self, u_hat, t, dt):
        g = self.grid
        return {"energy": self.energy(u_hat), "grad2": g.mean_square(u_hat, g.k2())}


#: how it runs as a job: ``python -m solvers run ks_equation:SPEC`` (2D grids, ETDRK4 by default)
SPEC = RunSpec("ks", KuramotoSivashinsky, "2D Kuramoto-Sivashinsky", ndims=(2,), integrator="etdrk4")
