"""Classical fourth-order Runge-Kutta on the full right-hand side (linear part explicit)."""

from __future__ import annotations

import jax

from .._tree import State, apply_linear, tree_add, tree_axpy
from ._base import Integrator


class RK4(Integrator):
    """Classical RK4: 4 evaluations of ``L u + N(u)`` per step; explicit, so ``dt |L| <= 2.78``."""

    name = "rk4"
    description = "classical 4th-order Runge-Kutta, fully explicit"
    order = 4
    treats_linear_exactly = False
    linear_stability_radius = 2.78

    def step(self, state: State, t: jax.Array, dt: jax.Array, coeffs=()) -> State:
        eq = self.equation
        lin = eq.linear()

        def f(u, s):
            return tree_add(apply_linear(lin, u), eq.nonlinear(u, s))

        k1 = f(state, t)
        k2 = f(tree_axpy(dt / 2, k1, state), t + dt / 2)
        k3 = f(tree_axpy(dt / 2, k2, state), t + dt / 2)
        k4 = f(tree_axpy(dt, k3, state), t + dt)
        return jax.tree.map(lambda u, a, b, c, d: u + dt / 6 * (a + 2 * (b + c) + d), state, k1, k2, k3, k4)
