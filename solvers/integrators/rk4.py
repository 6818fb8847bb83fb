"""Classical fourth-order Runge-Kutta on the full right-hand side (linear part explicit)."""

from __future__ import annotations

import jax

from ..model.tree import State
from ._base import Integrator

#: stage times c_i, the weights b_i of the final sum, and the next stage's offset a_{i+1} (Butcher: diagonal)
_C, _W, _NEXT = (0.0, 0.5, 0.5, 1.0), (1 / 6, 1 / 3, 1 / 3, 1 / 6), (0.5, 0.5, 1.0, 0.0)


class RK4(Integrator):
    """Classical RK4: 4 evaluations of ``L u + N(u)`` per step; explicit, so ``dt |L| <= 2.78``.

    The stages run as a loop over three registers: the state ``u`` (read only), the next stage's input ``y``
    and the running sum ``acc``; each stage's ``k`` is folded into both element-wise and then dropped (XLA would
    otherwise keep ``k1 .. k4`` alive for the final combination): one loop
    (:meth:`~solvers.integrators.Integrator.stage_loop`), whose first stage also gives the CFL rate where asked.
    """

    name = "rk4"
    description = "classical 4th-order Runge-Kutta, fully explicit"
    order = 4
    treats_linear_exactly = False
    explicit_linear = True
    linear_stability_radius = 2.78

    def step_aux(self, state: State, t: jax.Array, dt: jax.Array, coeffs=(), rate: bool = False, *,
                 synced: bool = False):
        """The step and its aux (see ``Integrator.stage_loop``)."""
        table = self.stage_table(state, _C, _W, _NEXT)

        def update(i, regs, k, dt):
            y, acc = regs
            acc = jax.tree.map(lambda a, x: a + (table[1, i] * dt) * x, acc, k)
            return jax.tree.map(lambda u, x: u + (table[2, i] * dt) * x, state, k), acc

        (_, out), aux = self.stage_loop(state, t, dt, rate, table[0], update, (state, state), synced)
        return out, aux
