"""IMEX Runge-Kutta: nonlinear part explicit, linear part implicit (a division for a diagonal ``L``, the equation's
own banded solves for an implicit one)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..model.linear import implicit_part, implicit_solve_at, linear_form
from ..model.tree import State
from ..stepping import StepAux
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

    Each implicit stage solves ``(I - a_ii dt L) y = rhs`` with the equation's
    :meth:`~solvers.ImplicitLinear.implicit_solve` (a division for a diagonal ``L``; banded solves with boundary
    conditions for a wall-normal Chebyshev axis), the factors prepared once per ``dt`` by ``implicit_factor``.
    Where a later stage needs ``L y`` of an implicit stage and ``L`` is not diagonal, it is ``(y - rhs) / (a_ii
    dt)``: exactly the operator the solve inverted, boundary conditions and tau terms included.

    The stages run as one loop (:meth:`~solvers.integrators.Integrator.stage_loop`) over a stack of the right-hand
    sides still to come: each pass evaluates the nonlinear term of one stage, adds it to the stack, solves the next
    stage and adds its ``L y``. The compiled step holds one nonlinear term and one solve whatever the number of
    stages: a run's step program compiles about 1.5x faster than with the stages written out (2.5x at XLA's level
    0), at about the same speed, for more memory: the stack keeps a row for each stage where stages written out
    drop the rows already used. The stack is the loop's only register: each pass reads the solve's right-hand side
    out of it, writes every row once (in place: a stack written twice in a pass, or read at one row while written
    at all, made XLA keep a second stack), and leaves the stage's solution in the row it solved, where the next
    pass reads its ``y``. Bytes per grid point of a run's step program (float64, 8 CPU devices, stages written out
    -> one loop): channel 65^3 170 -> 180, 129x512 97 -> 106; no-slip convection 65^3 213 -> 245, 129x512 158 ->
    168.

    Args:
      equation: the equation (a diagonal ``linear()`` or an :class:`~solvers.ImplicitLinear` solve).
      tableau: the scheme's pair of tableaux: explicit first stage (``a_im[0][0] = 0``), every later stage
        implicit (``a_im[i][i] != 0``), the explicit tableau strictly lower triangular.

    Raises:
      TypeError: ``tableau`` is not a :class:`Tableau`, or ``equation`` has no linear part.
      ValueError: ``tableau`` is not of that form (inconsistent sizes, or stages of another kind).
    """

    name = "imex"
    description = "IMEX Runge-Kutta ARS(4,4,3): nonlinear explicit, linear implicit, 3rd order"
    order = 3
    needs_diagonal = False
    dt_coefficients = True

    def __init__(self, equation, tableau: Tableau = ARS443):
        super().__init__(equation)
        _check_tableau(tableau)
        self.tableau = tableau
        self.order = tableau.order

    def coefficients(self, dt: jax.Array):
        solver = implicit_part(self.equation)
        return {g: solver.implicit_factor(g * dt) for g in _diagonal(self.tableau)}

    def step_aux(self, state: State, t: jax.Array, dt: jax.Array, coeffs, rate: bool = False, *,
                 synced: bool = False) -> tuple[State, StepAux]:
        eq, tab = self.equation, self.tableau
        s = len(tab.c)
        stiff = tab.b_im == tab.a_im[-1] and tab.b_ex == tab.a_ex[-1]  # the last stage is the solution
        last = range(1, s) if stiff else range(1, s + 1)  # the rows of the stack (s: the solution's)
        a_ex, a_im = list(tab.a_ex) + [tab.b_ex], list(tab.a_im) + [tab.b_im]
        diagonal = linear_form(eq) == "diagonal"
        solver = implicit_part(eq)
        lin = eq.linear() if diagonal else None
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        # column j of each tableau over the rows, times dt: what N_j and L_j add to the right-hand sides to come
        ex = jnp.asarray(np.array([[a_ex[r][j] for r in last] for j in range(s)]), real) * dt
        im = jnp.asarray(np.array([[a_im[r][j] for r in last] for j in range(s)]), real) * dt
        c = jnp.asarray(np.array(tab.c), real)
        gs = _diagonal(tab)
        if len(gs) == 1:  # one factor for every stage (ARS(4,4,3)): used as it is
            factor_of = (lambda i: coeffs[gs[0]])  # noqa: E731
        else:  # one per distinct a_ii: stacked, and stage i's taken by index
            stacked = jax.tree.map(lambda *f: jnp.stack(f), *(coeffs[g] for g in gs))
            index = jnp.asarray([0] + [gs.index(tab.a_im[i][i]) for i in range(1, s)])
            factor_of = (lambda i: jax.tree.map(lambda f: f[index[i]], stacked))  # noqa: E731
        g = jnp.asarray(np.array([tab.a_im[i][i] for i in range(s)]), real)

        def add(rows, col, x):
            return jax.tree.map(lambda o, v: o + col.reshape((-1,) + (1,) * v.ndim) * v[None], rows, x)

        def update(i, rows, n, dt):  # stage i + 1's solve; then N_i and L y_{i+1} into the rows, y_{i+1} into row i
            # the solve's right-hand side on its own (row i with N_i), so that the stack is written once, in place
            rhs = jax.tree.map(lambda a, v: a[i] + ex[i, i] * v, rows, n)
            y = implicit_solve_at(solver, rhs, factor_of(i + 1), t + c[i + 1] * dt)
            if diagonal:
                lin_y = apply_linear(lin, y)
            else:  # L y = (y - rhs) / (a_ii dt): the operator the solve inverted, tau terms included
                lin_y = jax.tree.map(lambda a, b: (a - b) / (g[i + 1] * dt), y, rhs)
            rows = add(add(rows, ex[i], n), im[i + 1], lin_y)
            # row i (stage i + 1's right-hand side, solved) keeps y_{i + 1}: the loop carries no state beside it
            return jax.tree.map(lambda o, v: jnp.where(at(o, i), v[None], o), rows, y)

        def at(rows, i):  # row i of the stack, as a mask broadcast over a row
            return (jnp.arange(rows.shape[0]) == i).reshape((-1,) + (1,) * (rows.ndim - 1))

        def current(i, rows):  # stage i's y: the row the previous solve left it in; the state at the first stage,
            # which the last row still is there where no stage adds L of the first stage
            if explicit_first:
                return jax.tree.map(lambda o: o[(i - 1) % len(last)], rows)
            return jax.tree.map(lambda s0, o: jnp.where(i == 0, s0, o[jnp.maximum(i - 1, 0)]), state, rows)

        explicit_first = all(a_im[r][0] == 0 for r in last)

        rows = jax.tree.map(lambda a: jnp.broadcast_to(a[None], (len(last),) + a.shape), state)
        if any(a_im[r][0] != 0 for r in last):  # L of the explicit first stage
            if not diagonal:
                raise TypeError(f"{tab}: the first stage's L y is needed, which an implicit linear form cannot "
                                "give (a_im[r][0] must be 0 for an equation with implicit solves)")
            rows = add(rows, im[0], apply_linear(lin, state))
        rows, aux = self.stage_loop(state, t, dt, rate, c[:-1], update, rows, synced, linear=False,
                                    current=current)
        if stiff:  # the last stage's solution, left in the last row
            return jax.tree.map(lambda a: a[-1], rows), aux
        y = jax.tree.map(lambda a: a[s - 2], rows)
        rows = add(rows, ex[s - 1], eq.nonlinear(y, t + c[s - 1] * dt))
        return jax.tree.map(lambda a: a[-1], rows), aux


def _diagonal(tab: Tableau) -> list[float]:
    """The distinct nonzero ``a_ii`` of the implicit tableau, sorted (one implicit factor each)."""
    return sorted({a[i] for i, a in enumerate(tab.a_im) if a[i] != 0})


def _check_tableau(tab) -> None:
    """Raise where ``tab`` is not an IMEX tableau the stage loop takes (see :class:`IMEX`)."""
    if not isinstance(tab, Tableau):
        raise TypeError(f"tableau must be a solvers.integrators.Tableau, got {type(tab).__name__}")
    s = len(tab.c)
    if s < 2 or any(len(x) != s for x in (tab.a_ex, tab.a_im, tab.b_ex, tab.b_im)) or any(
            len(row) != s for row in (*tab.a_ex, *tab.a_im)):
        raise ValueError(f"tableau: a_ex, a_im ({s} rows of {s}), b_ex, b_im and c need the same number of stages "
                         f"(at least 2), got {tab}")
    if any(tab.a_ex[i][j] != 0 for i in range(s) for j in range(i, s)):
        raise ValueError("tableau: a_ex must be strictly lower triangular (every nonlinear term explicit)")
    if any(tab.a_im[i][j] != 0 for i in range(s) for j in range(i + 1, s)):
        raise ValueError("tableau: a_im must be lower triangular (diagonally implicit)")
    if tab.a_im[0][0] != 0 or any(tab.a_im[i][i] == 0 for i in range(1, s)):
        raise ValueError("tableau: IMEX takes an explicit first stage (a_im[0][0] = 0) and implicit later stages "
                         f"(a_im[i][i] != 0 for i >= 1), got the diagonal {[tab.a_im[i][i] for i in range(s)]}")
