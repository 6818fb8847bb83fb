"""A user-defined equation, written as a user would (outside the package): 2D Kuramoto-Sivashinsky.

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
    """2D Kuramoto-Sivashinsky: linear part ``k^2 - k^4`` (exact in ETDRK4), nonlinear ``-F[|grad u|^2] / 2``."""

    parameters = (Param("alpha", 1.0, "strength of the nonlinear term", low=0),)
    initial_conditions = {"cosines": InitialCondition(cosines, (Param("amplitude", 1.0, low=0, low_open=True),))}

    def __init__(self, grid, alpha=1.0):
        super().__init__(grid, alpha=alpha)

    def linear(self):
        k2 = self.grid.k2()
        return (k2 - k2 * k2).astype(self.grid.dtype)

    def nonlinear(self, u_hat, t):
        g = self.grid
        du = g.to_physical(g.grad(u_hat))
        return -0.5 * self.alpha * g.from_physical(du[0] ** 2 + du[1] ** 2)


#: how it runs as a job: ``python -m solvers run ks_equation:SPEC`` (2D grids, ETDRK4 by default)
SPEC = RunSpec("ks", KuramotoSivashinsky, "2D Kuramoto-Sivashinsky", ndims=(2,), integrator="etdrk4")
