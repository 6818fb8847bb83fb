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
        stiff = tab.b_im == tab.a_im[-1] and tab.b_ex == tab.a_ex[-1]  # the last stage is the solution
        rows = _Rows(tab, state, dt)
        for i in range(s):
            rhs = rows.take(i)
            g = tab.a_im[i][i]
            y = solver.implicit_solve(rhs, inv[g]) if g != 0 else rhs
            if i == s - 1 and stiff:
                return y
            if rows.needs_im(i):
                if diagonal:
                    rows.put_im(i, apply_linear(lin, y))
                elif g != 0:
                    rows.put_im(i, jax.tree.map(lambda a, b, g=g: (a - b) / (g * dt), y, rhs))
                else:
                    raise TypeError(f"{tab}: an explicit stage's L y is needed, which an implicit linear form "
                                    "cannot give")
            del rhs
            if rows.needs_ex(i):
                rows.compact(i)
                rows.put_ex(i, first if i == 0 and first is not None else eq.nonlinear(y, t + tab.c[i] * dt))
        return rows.take(s)


class _Rows:
    """The right-hand sides still to come of an IMEX step, kept in as few state-sized registers as the order of
    the sums allows.

    Row ``r`` (a stage, or ``s``: the solution) is ``state + dt sum_j a_ex[r][j] N_j + dt sum_j a_im[r][j] L_j``,
    summed in exactly this order (``j`` ascending, the explicit terms first), so every stage sees the values of
    the plain sum bit for bit. The explicit part of a row is a running sum (its ``base`` and the ``N_j`` not yet
    added to it); the ``N_j`` and ``L_j`` are kept only while a row to come still needs them. Before each
    nonlinear evaluation the running sums are brought up to date where that holds fewer arrays than keeping the
    ``N_j`` (:meth:`compact`): for ARS(4,4,3) at most 5 states (with the stage value) instead of 8.
    """

    def __init__(self, tab: Tableau, state: State, dt: jax.Array):
        self.ex = list(tab.a_ex) + [tab.b_ex]
        self.im = list(tab.a_im) + [tab.b_im]
        self.state, self.dt = state, dt
        self.base = {r: state for r in range(1, len(self.ex))}
        self.pending = {r: [] for r in self.base}  # j of the N_j not yet in the base of row r
        self.nl, self.li = {}, {}

    def _add(self, out: State, coef: float, x: State) -> State:
        return jax.tree.map(lambda o, v: o + (self.dt * coef) * v, out, x)

    def _sum(self, r: int) -> State:
        out = self.base[r]
        for j in self.pending[r]:
            out = self._add(out, self.ex[r][j], self.nl[j])
        return out

    def take(self, r: int) -> State:
        """Row ``r``'s sum; its registers are released."""
        if r == 0:
            return self.state
        out = self._sum(r)
        for j in range(r):
            if self.im[r][j] != 0:
                out = self._add(out, self.im[r][j], self.li[j])
        del self.base[r], self.pending[r]
        self._release()
        return out

    def needs_im(self, i: int) -> bool:
        return any(self.im[r][i] for r in self.base if r > i)

    def needs_ex(self, i: int) -> bool:
        return any(self.ex[r][i] for r in self.base if r > i)

    def put_im(self, i: int, x: State) -> None:
        self.li[i] = x

    def put_ex(self, i: int, x: State) -> None:
        self.nl[i] = x
        for r in self.base:
            if r > i and self.ex[r][i] != 0:
                self.pending[r].append(i)

    def compact(self, i: int) -> None:
        """Add the pending ``N_j`` into the running sums of the rows after ``i`` where that holds fewer arrays."""
        later = [r for r in self.base if r > i]
        raw = {("base", id(self.base[r])) for r in later} | {("N", j) for r in later for j in self.pending[r]}
        if len([r for r in later if self.pending[r]]) < len(raw):
            for r in later:
                if self.pending[r]:
                    self.base[r], self.pending[r] = jax.tree.map(_own_buffer, self._sum(r)), []
            self._release()

    def _release(self) -> None:
        used = {j for p in self.pending.values() for j in p}
        self.nl = {j: x for j, x in self.nl.items() if j in used}
        self.li = {j: x for j, x in self.li.items() if any(self.im[r][j] for r in self.base)}


def _own_buffer(x: jax.Array) -> jax.Array:
    """``x`` unchanged (exactly, for finite values) in a buffer of its own. A running sum that XLA fused into the
    sum that reads it would keep all its terms alive instead of itself; a division is never duplicated into a
    consumer by XLA's fusion, so ``x / ((x - x) + 1)`` is computed once, where it is written."""
    if jnp.iscomplexobj(x):
        return jax.lax.complex(_own_buffer(x.real), _own_buffer(x.imag))
    return x / ((x - x) + 1)
