"""IMEX Runge-Kutta: nonlinear part explicit, linear part implicit (a division for a diagonal ``L``, the equation's
own banded solves for an implicit one)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from ..model.linear import implicit_part, implicit_solve_at, linear_form
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

    Each implicit stage solves ``(I - a_ii dt L) y = rhs`` with the equation's
    :meth:`~solvers.ImplicitLinear.implicit_solve` (a division for a diagonal ``L``; banded solves with boundary
    conditions for a wall-normal Chebyshev axis), the factors prepared once per ``dt`` by ``implicit_factor``.
    Where a later stage needs ``L y`` of an implicit stage and ``L`` is not diagonal, it is ``(y - rhs) / (a_ii
    dt)``: exactly the operator the solve inverted, boundary conditions and tau terms included.
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
            y = implicit_solve_at(solver, rhs, inv[g], t + tab.c[i] * dt) if g != 0 else rhs
            if i == s - 1 and stiff:
                return y
            if rows.needs("im", i):
                if diagonal:
                    rows.add("im", i, apply_linear(lin, y))
                elif g != 0:  # L y = (y - rhs) / (g dt): the operator the solve inverted, tau terms included
                    rows.add_implicit(i, y, rhs, g)
                else:
                    raise TypeError(f"{tab}: an explicit stage's L y is needed, which an implicit linear form "
                                    "cannot give")
            del rhs
            if rows.needs("ex", i):
                rows.add("ex", i, first if i == 0 and first is not None else eq.nonlinear(y, t + tab.c[i] * dt),
                         split=True)
        return rows.take(s)


class _Rows:
    """The right-hand sides still to come of an IMEX step, in as few state-sized registers as they allow.

    Row ``r`` (stage ``r``, or ``s``: the solution) is ``state + dt sum_j a_ex[r][j] N_j + dt sum_j a_im[r][j]
    L_j``. Until there are more terms than rows, the terms are kept as they are (the first stage's ``L_1`` as its
    stage value ``y_1``, formed again when needed). Then every row becomes a running sum, each in its own buffer:
    the next stage's row alone, the later rows stacked in one array per state leaf; each new ``L_j`` is added to
    them in place, each ``N_j`` (the last term before a stage) while splitting that stage's row off the stack.
    Through a nonlinear evaluation the step holds 3 states at most for ARS(4,4,3) (the stage value included),
    where keeping every ``N_j`` and ``L_j`` for the sum of each stage held 8. A row first summed has its terms in
    the plain sum's order (``N_j`` first); later terms are added as they come, ``L_j`` before ``N_j``: the values
    are the plain sums' to round-off.
    """

    def __init__(self, tab: Tableau, state: State, dt: jax.Array):
        self.state, self.dt = state, dt
        last = len(tab.c) - (tab.b_im == tab.a_im[-1] and tab.b_ex == tab.a_ex[-1])
        self.rows = list(range(1, last + 1))  # the rows still to come
        self.terms = []  # (kind, i, value or a function forming it, its registers): not yet summed
        self.head = None  # the sum of rows[0], or None: it is rest[0]
        self.rest = None  # the sums of the other rows stacked (of all rows where head is None)
        self.taken = None  # the terms of the last row taken from the terms
        self.table = {"ex": list(tab.a_ex) + [tab.b_ex], "im": list(tab.a_im) + [tab.b_im]}

    def needs(self, kind: str, i: int) -> bool:
        """Whether a row to come has a term ``N_i`` (``kind="ex"``) or ``L_i`` (``"im"``)."""
        return any(self.table[kind][r][i] != 0 for r in self.rows)

    def _summed(self) -> bool:
        return self.head is not None or self.rest is not None

    def _coefs(self, kind: str, i: int, rows: list[int], like: State) -> jax.Array:
        rdt = jnp.finfo(jax.tree.leaves(like)[0].dtype).dtype
        return jnp.asarray([self.table[kind][r][i] for r in rows], rdt) * self.dt

    def _sum(self, rows: list[int], terms: list) -> State:
        """``state + dt sum a x`` of ``terms`` for ``rows``, stacked, in the plain sum's order."""
        out = jax.tree.map(lambda a: a[None], self.state)
        for kind, i, x, _ in sorted(terms, key=lambda t: (t[0] == "im", t[1])):
            x = x() if callable(x) else x
            c = self._coefs(kind, i, rows, x)
            out = jax.tree.map(lambda o, v, c=c: o + c.reshape((-1,) + (1,) * v.ndim) * v[None], out, x)
        return out

    def add_implicit(self, i: int, y: State, rhs: State, g: float) -> None:
        """``L_i = (y - rhs) / (g dt)``; while the terms are kept, as ``y`` and the terms of ``rhs``."""
        dt = self.dt
        if self._summed() or self.taken is None:
            self.add("im", i, jax.tree.map(lambda a, b: (a - b) / (g * dt), y, rhs))
            return
        terms = self.taken

        def form():  # (y - rhs) / (g dt), with rhs's terms subtracted one by one (not rhs formed again)
            out = jax.tree.map(lambda a, b: a - b, y, self.state)
            for kind, j, x, _ in terms:
                c = self.table[kind][i][j]
                out = jax.tree.map(lambda o, v, c=c: o - (dt * c) * v, out, x)
            return jax.tree.map(lambda o: o / (g * dt), out)
        self.terms.append(("im", i, form, [y] + [r for t in terms for r in t[3]]))

    def add(self, kind: str, i: int, x: State, split: bool = False) -> None:
        """Add ``dt a[r][i] x`` to every row ``r`` to come (``a``: the explicit or implicit tableau); ``split``:
        the next row leaves the stack with it (the last term before its stage)."""
        if not self._summed():
            self.terms.append((kind, i, x, [x]))
            registers = {id(self.state)} | {id(r) for t in self.terms for r in t[3]}
            if split and len(registers) > len(self.rows):
                full = self._sum(self.rows, self.terms)
                self.head = jax.tree.map(lambda a: _own_buffer(a[0]), full)
                self.rest = jax.tree.map(lambda a: _own_buffer(a[1:]), full) if len(self.rows) > 1 else None
                self.terms = []
            return
        coefs = self._coefs(kind, i, self.rows, x)
        if self.head is not None:
            self.head = jax.tree.map(lambda h, v: _own_buffer(h + coefs[0] * v), self.head, x)
            coefs = coefs[1:]
        if self.rest is None:
            return
        split = split and self.head is None and len(self.rows) > 1

        def one(o, v):
            out = o + coefs.reshape((-1,) + (1,) * v.ndim) * v[None]
            return (_own_buffer(out[0]), _own_buffer(out[1:])) if split else _own_buffer(out)
        new = jax.tree.map(one, self.rest, x)
        if split:
            self.head = jax.tree.map(lambda _, n: n[0], self.rest, new)
            new = jax.tree.map(lambda _, n: n[1], self.rest, new)
        self.rest = new

    def take(self, r: int) -> State:
        """Row ``r``'s sum (the next row), dropped from the rows to come."""
        if r == 0:
            return self.state
        assert self.rows[0] == r, (self.rows, r)
        self.rows.pop(0)
        if not self._summed():
            self.taken = [t for t in self.terms if self.table[t[0]][r][t[1]] != 0]
            if not self.taken:
                return self.state
            return jax.tree.map(lambda a: a[0], self._sum([r], self.taken))
        self.taken = None
        if self.head is not None:
            out, self.head = self.head, None
            return out
        out = jax.tree.map(lambda a: a[0], self.rest)
        self.rest = jax.tree.map(lambda a: a[1:], self.rest) if self.rows else None
        return out


def _own_buffer(x: jax.Array) -> jax.Array:
    """``x`` unchanged (exactly, for finite values) in a buffer of its own. A running sum that XLA fused into the
    sum that reads it would keep all its terms alive instead of itself; a division is never duplicated into a
    consumer by XLA's fusion, so ``x / ((x - x) + 1)`` is computed once, where it is written."""
    if jnp.iscomplexobj(x):
        return jax.lax.complex(_own_buffer(x.real), _own_buffer(x.imag))
    return x / ((x - x) + 1)
