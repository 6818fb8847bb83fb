"""IMEX Runge-Kutta: nonlinear part explicit, linear part implicit (a division for a diagonal ``L``, the equation's
own banded solves for an implicit one)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from ..model.linear import implicit_part, linear_form
from ..model.tree import State
from ._base import Integrator
from ._base import apply_linear_lean as apply_linear  # a real L scales parts: no complex multiply


@dataclass(frozen=True)
class Tableau:
    """A pair of Butcher tableaux (explicit ``a_ex, b_ex``; implicit ``a_im, b_im``; shared ``c``)."""

    a_ex: tuple[tuple[float, ...], ...]
    b_ex: tuple[float, ...]
    a_im: tuple[tuple[float, ...], ...]
    b_im: tuple[float, ...]
    c: tuple[float, ...]
    order: int


#: ARS(4,4,3) of Ascher, Ruuth & Spiteri (Appl. Numer. Math. 25, 151, 1997): L-stable, stiffly accurate, 3rd order.
ARS443 = Tableau(
    a_ex=((0, 0, 0, 0, 0), (1 / 2, 0, 0, 0, 0), (11 / 18, 1 / 18, 0, 0, 0), (5 / 6, -5 / 6, 1 / 2, 0, 0),
          (1 / 4, 7 / 4, 3 / 4, -7 / 4, 0)),
    b_ex=(1 / 4, 7 / 4, 3 / 4, -7 / 4, 0),
    a_im=((0, 0, 0, 0, 0), (0, 1 / 2, 0, 0, 0), (0, 1 / 6, 1 / 2, 0, 0), (0, -1 / 2, 1 / 2, 1 / 2, 0),
          (0, 3 / 2, -3 / 2, 1 / 2, 1 / 2)),
    b_im=(0, 3 / 2, -3 / 2, 1 / 2, 1 / 2),
    c=(0, 1 / 2, 2 / 3, 1 / 2, 1),
    order=3,
)


class IMEX(Integrator):
    """Additive IMEX Runge-Kutta (default ARS(4,4,3), 3rd order, 4 nonlinear evaluations per step).

    Each implicit stage solves ``(I - a_ii dt L) y = rhs`` with the equation's :meth:`~solvers.Equation.
    implicit_solve` (a division for a diagonal ``L``; banded solves with boundary conditions for a wall-normal
    Chebyshev axis), the factors prepared once per ``dt`` by ``implicit_factor``. Where a later stage needs
    ``L y`` of an implicit stage and ``L`` is not diagonal, it is ``(y - rhs) / (a_ii dt)``: exactly the operator
    the solve inverted, boundary conditions and tau terms included.
    """

    name = "imex"
    description = "IMEX Runge-Kutta ARS(4,4,3): nonlinear explicit, linear implicit, 3rd order"
    order = 3
    needs_diagonal = False
    dt_coefficients = True

    def __init__(self, equation, tableau: Tableau = ARS443):
        super().__init__(equation)
        self.tableau = tableau

    def coefficients(self, dt: jax.Array):
        diag = sorted({a[i] for i, a in enumerate(self.tableau.a_im) if a[i] != 0})
        solver = implicit_part(self.equation)
        return {g: solver.implicit_factor(g * dt) for g in diag}

    def first_evaluation(self, state: State, t: jax.Array, rate: bool):
        if self.tableau.a_im[0][0] != 0:  # an implicit first stage: its nonlinear term needs dt
            return None, None
        return super().first_evaluation(state, t, rate)

    def finish(self, state: State, first: State | None, t: jax.Array, dt: jax.Array, inv) -> State:
        eq, tab = self.equation, self.tableau
        diagonal = linear_form(eq) == "diagonal"
        solver = implicit_part(eq)
        lin = eq.linear() if diagonal else None
        s = len(tab.c)
        nl, li = [None] * s, [None] * s

        def acc(terms):
            out = state
            for coef, x in terms:
                if coef != 0:
                    out = jax.tree.map(lambda o, v, coef=coef: o + (dt * coef) * v, out, x)
            return out

        for i in range(s):
            rhs = acc([(tab.a_ex[i][j], nl[j]) for j in range(i)] + [(tab.a_im[i][j], li[j]) for j in range(i)])
            g = tab.a_im[i][i]
            y = solver.implicit_solve(rhs, inv[g]) if g != 0 else rhs
            if i == s - 1 and tab.b_im == tab.a_im[-1] and tab.b_ex == tab.a_ex[-1]:
                return y  # stiffly accurate: the last stage is the solution
            if any(tab.a_im[r][i] for r in range(i + 1, s)) or tab.b_im[i]:
                if diagonal:
                    li[i] = apply_linear(lin, y)
                elif g != 0:
                    li[i] = jax.tree.map(lambda a, b, g=g: (a - b) / (g * dt), y, rhs)
                else:
                    raise TypeError(f"{tab}: an explicit stage's L y is needed, which an implicit linear form "
                                    "cannot give")
            if any(tab.a_ex[r][i] for r in range(i + 1, s)) or tab.b_ex[i]:
                nl[i] = first if i == 0 and first is not None else eq.nonlinear(y, t + tab.c[i] * dt)
            else:
                nl[i] = jax.tree.map(jnp.zeros_like, y)
        return acc([(b, n) for b, n in zip(tab.b_ex, nl)] + [(b, x) for b, x in zip(tab.b_im, li)])
