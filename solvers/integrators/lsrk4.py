"""Low-storage fourth-order Runge-Kutta (Carpenter & Kennedy 1994): five stages, two registers (2N storage)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..model.tree import State
from ._base import Integrator

# Carpenter & Kennedy (1994), "Fourth-order 2N-storage Runge-Kutta schemes", NASA TM-109112, solution 3:
# du <- A_i du + dt F(u, t + C_i dt);  u <- u + B_i du   (i = 1..5, A_1 = 0).
A = (0.0,
     -567301805773 / 1357537059087,
     -2404267990393 / 2016746695238,
     -3550918686646 / 2091501179385,
     -1275806237668 / 842570457699)
B = (1432997174477 / 9575080441755,
     5161836677717 / 13612068292357,
     1720146321549 / 2090206949498,
     3134564353537 / 4481467310338,
     2277821191437 / 14882151754819)
C = (0.0,
     1432997174477 / 9575080441755,
     2526269341429 / 6820363962896,
     2006345519317 / 3224310063776,
     2802321613138 / 2924317926251)


class LSRK4(Integrator):
    """Carpenter-Kennedy 2N-storage RK4: 5 evaluations of ``L u + N(u)`` per step, 2 state-sized registers.

    Explicit on the full right-hand side like :class:`RK4` (``dt |L| <= 4.65`` on the negative real axis: the
    stability polynomial's interval is [-4.657, 0], RK4's [-2.785, 0]). Only the state ``u`` and one increment
    ``du`` live across stages (RK4 keeps three registers here, five when unrolled), which is what bounds the grid
    that fits a device. Each stage is ``du = A_i du + dt F(u)`` then ``u = u + B_i du``, both element-wise; the
    stages run as a loop whose carry is the two registers, updated in place (unrolled, XLA fuses the register
    updates into their consumers and keeps every stage's ``F`` alive to the end of the step: 146 instead of 63
    bytes per point at 128^3): one loop (:meth:`~solvers.integrators.Integrator.stage_loop`), whose first stage
    also gives the CFL rate where asked.
    """

    name = "lsrk4"
    description = "low-storage 4th-order Runge-Kutta (Carpenter-Kennedy, 5 stages, 2N storage), fully explicit"
    order = 4
    treats_linear_exactly = False
    explicit_linear = True
    linear_stability_radius = 4.65

    def step_aux(self, state: State, t: jax.Array, dt: jax.Array, coeffs=(), rate: bool = False, *,
                 synced: bool = False):
        """The step and its aux (see ``Integrator.stage_loop``)."""
        table = self.stage_table(state, A, B, C)

        def update(i, regs, f, dt):
            u, du = regs
            du = jax.tree.map(lambda d, y: (table[0, i] * d + dt * y).astype(d.dtype), du, f)
            u = jax.tree.map(lambda x, d: (x + table[1, i] * d).astype(x.dtype), u, du)
            return u, du

        du0 = jax.tree.map(jnp.zeros_like, state)
        (u, _), aux = self.stage_loop(state, t, dt, rate, table[2], update, (state, du0), synced)
        return u, aux
