"""The two forms of an equation's linear part, and the implicit solve an IMEX scheme asks for.

An equation gives its linear part ``L`` either as a diagonal operator (:class:`DiagonalLinear`: ``linear()`` is
``L(k)``, which explicit, exponential, integrating-factor and IMEX schemes all use), or as solves of
``(I - h L) y = rhs`` (:class:`ImplicitLinear`: where ``L`` couples coefficients, e.g. along a Chebyshev axis with
boundary conditions; only IMEX schemes advance it). Which form it has is read from the methods it defines; there is
no mode flag. :func:`implicit_part` is what an IMEX scheme asks for: the equation's own solves, or the division by
``1 - h L`` of a diagonal operator.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Protocol, runtime_checkable

import jax

from .tree import State, apply_linear

__all__ = ["DiagonalLinear", "FusedRate", "ImplicitLinear", "implicit_part", "linear_form"]


@runtime_checkable
class DiagonalLinear(Protocol):
    """An equation whose linear part is diagonal in its spectral representation."""

    def linear(self) -> State:
        """``L(k)``: an array broadcastable against every state leaf (or a pytree matching the state), real or
        complex, on the spectral sharding."""


@runtime_checkable
class ImplicitLinear(Protocol):
    """An equation that solves ``(I - h L) y = rhs`` itself (boundary conditions included)."""

    def implicit_factor(self, h: jax.Array) -> Any:
        """What :meth:`implicit_solve` needs for this ``h`` (computed once per step size)."""

    def implicit_solve(self, rhs: State, factor: Any) -> State:
        """``y`` with ``(I - h L) y = rhs``; same structure, dtypes and shardings as the state."""


@runtime_checkable
class FusedRate(Protocol):
    """An equation that computes its CFL rate from the physical fields its nonlinear term already holds.

    ``nonlinear_and_rate(state, t, reduce)`` returns ``(nonlinear(state, t), rate)``, where ``reduce`` maps the
    per-point rate field ``sum_i |u_i| / dx_i`` to the rate (None: ``jnp.max``; a run's stage loop passes a
    :class:`~solvers.grids.GatedMax`, which reduces in a step's first stage only and which
    :meth:`~solvers.Grid.from_physical_and_max` carries in the forward transform's all-to-all). It returns
    ``rate=None`` where it cannot (e.g. products on a padded grid): the run then calls ``max_rate``.
    """

    def nonlinear_and_rate(self, state: State, t: jax.Array, reduce: Any = None) -> tuple[State, jax.Array | None]:
        """The nonlinear term and the rate of ``state``."""


def linear_form(equation: Any) -> str:
    """``"implicit"`` (:class:`ImplicitLinear`), ``"diagonal"`` (:class:`DiagonalLinear`) or ``"none"``."""
    if isinstance(equation, ImplicitLinear):
        return "implicit"
    if isinstance(equation, DiagonalLinear):
        return "diagonal"
    return "none"


class _DiagonalSolve:
    """The implicit solve of a diagonal ``L``: ``factor = 1 / (1 - h L)``, ``y = factor * rhs``."""

    def __init__(self, equation: DiagonalLinear):
        self.equation = equation

    def implicit_factor(self, h: jax.Array) -> Any:
        return jax.tree.map(lambda a: 1 / (1 - h * a), self.equation.linear())

    def implicit_solve(self, rhs: State, factor: Any) -> State:
        return apply_linear(factor, rhs)


def implicit_part(equation: Any) -> ImplicitLinear:
    """The implicit solve of ``equation``'s linear part: its own (:class:`ImplicitLinear`), or the division of a
    diagonal one.

    Raises:
      TypeError: the equation defines neither form (naming the methods it needs).
    """
    if isinstance(equation, ImplicitLinear):
        return equation
    if isinstance(equation, DiagonalLinear):
        return _DiagonalSolve(equation)
    raise TypeError(f"{type(equation).__name__} has no linear part: define linear() (a diagonal L) or "
                    "implicit_factor(h) and implicit_solve(rhs, factor)")


def implicit_solve_at(solver: Any, rhs: State, factor: Any, t: Any) -> State:
    """``solver.implicit_solve(rhs, factor)``, given the time ``t`` of the solve where the method takes one
    (boundary values that depend on time: :class:`~solvers.Dirichlet` and the other conditions with a function of
    ``t``, :class:`~solvers.WallEquation`)."""
    if _takes_time(type(solver).implicit_solve):
        return solver.implicit_solve(rhs, factor, t=t)
    return solver.implicit_solve(rhs, factor)


@functools.cache
def _takes_time(method: Any) -> bool:
    try:
        return "t" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False

