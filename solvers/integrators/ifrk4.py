"""Integrating-factor RK4 (Lawson 1967): RK4 on ``v = exp(-L t) u``, linear part integrated exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..model.tree import State, tree_add, tree_scale
from ._base import Integrator, lin_map
from ._base import apply_linear_lean as apply_linear  # real exponentials scale parts: no complex multiply


class IFRK4(Integrator):
    """Lawson's integrating-factor RK4: exact for the linear part, 4th order, 4 nonlinear evaluations."""

    name = "ifrk4"
    description = "integrating-factor RK4 (Lawson), linear part exact"
    order = 4
    dt_coefficients = True

    def coefficients(self, dt: jax.Array):
        lin = self.equation.linear()
        return {"E": lin_map(lambda a: jnp.exp(a * dt), lin), "E2": lin_map(lambda a: jnp.exp(a * dt / 2), lin)}

    def finish(self, state: State, k1: State, t: jax.Array, dt: jax.Array, c) -> State:
        eq = self.equation
        e, e2 = c["E"], c["E2"]

        k2 = eq.nonlinear(apply_linear(e2, tree_add(state, tree_scale(dt / 2, k1))), t + dt / 2)
        k3 = eq.nonlinear(tree_add(apply_linear(e2, state), tree_scale(dt / 2, k2)), t + dt / 2)
        k4 = eq.nonlinear(tree_add(apply_linear(e, state), tree_scale(dt, apply_linear(e2, k3))), t + dt)
        inc = tree_add(apply_linear(e, k1), tree_scale(2, apply_linear(e2, tree_add(k2, k3))), k4)
        return tree_add(apply_linear(e, state), tree_scale(dt / 6, inc))
