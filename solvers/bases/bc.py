"""Boundary conditions at the two walls of a Chebyshev axis, as objects: one per wall, mixed at will.

A scalar field ``u`` between walls at the two ends of a Chebyshev axis takes one condition at each wall, given as
``bc=(bottom, top)`` (the wall at the low end of the axis first):

- :class:`Dirichlet` ``(value)``: ``u = value``;
- :class:`Neumann` ``(value)``: ``du/dn = value``;
- :class:`Robin` ``(a, b, value)``: ``a u + b du/dn = value``.

**Sign convention**: ``d/dn`` is the derivative along the *outward* normal of the wall, pointing out of the
domain: ``du/dn = +du/dy`` at the top wall and ``-du/dy`` at the bottom one. So ``Neumann(0)`` is an insulated wall
at either end, ``Neumann(-q)`` at either wall lets a heat flux ``q`` into the domain through it (for a unit
conductivity), and ``Robin(h, 1, h * u_out)`` is Newton's cooling to an outside value ``u_out`` with ``h > 0`` at
either wall (the well-posed sign for ``a, b >= 0``).

``value`` is a number (or array broadcastable against the solve's trailing axes) or a function of time
``value(t)``; :meth:`Robin.at` evaluates it. The coefficients ``a``, ``b`` are numbers. Derivatives are in the units
of the coordinate the solve works in: the tau solves of :mod:`solvers.bases.tau` work on ``[-1, 1]``;
:class:`~solvers.Diffusion` takes them in the grid's units and rescales them (:meth:`Robin.on_interval`).

On Chebyshev coefficients ``a_k`` the conditions are one row each (:func:`boundary_row`): ``T_k(+-1) = (+-1)^k``,
``T_k'(+-1) = (+-1)^(k+1) k^2``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Dirichlet", "Neumann", "Robin", "as_pair", "boundary_row", "values"]

SIDES = ("bottom", "top")


@dataclasses.dataclass(frozen=True)
class Robin:
    """``a u + b du/dn = value`` at a wall (``d/dn`` the outward normal derivative; see the module).

    Args:
      a, b: the coefficients (real numbers, not both 0).
      value: the right-hand side: a number, an array broadcastable against the solve's trailing axes, or a
        function of time ``value(t)`` returning one.

    Raises:
      ValueError: ``a`` and ``b`` both 0, or not finite. TypeError: a ``value`` that is neither a number, an array
        nor callable.
    """

    a: float
    b: float
    value: Any = 0.0

    def __post_init__(self):
        for name in ("a", "b"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not np.isfinite(v):
                raise ValueError(f"{type(self).__name__}: {name} must be a finite real number, got {v!r}")
            object.__setattr__(self, name, float(v))
        if self.a == 0 and self.b == 0:
            raise ValueError(f"{type(self).__name__}: a and b must not both be 0")
        v = self.value
        if not (callable(v) or isinstance(v, (int, float, complex, np.number, np.ndarray, jax.Array))):
            raise TypeError(f"{type(self).__name__}: value must be a number, an array or a function of time, "
                            f"got {type(v).__name__}")

    def at(self, t: Any = 0.0) -> Any:
        """The value at time ``t`` (the value itself where it is not a function)."""
        return self.value(t) if callable(self.value) else self.value

    def on_interval(self, half_length: float) -> Robin:
        """The same condition for the reference coordinate ``xi = (y - centre) / half_length`` of ``[-1, 1]``
        (``d/dn`` in ``y`` is ``d/dn`` in ``xi`` over ``half_length``)."""
        return Robin(self.a, self.b / half_length, self.value) if self.b else self

    @property
    def kind(self) -> str:
        """``"dirichlet"``, ``"neumann"`` or ``"robin"``: the fast solves serve two walls of the first two kinds."""
        return "robin"


@dataclasses.dataclass(frozen=True, init=False)
class Dirichlet(Robin):
    """``u = value`` at a wall (``Robin(1, 0, value)``).

    Args:
      value: a number, an array or a function of time ``value(t)``.
    """

    def __init__(self, value: Any = 0.0):
        super().__init__(1.0, 0.0, value)

    def on_interval(self, half_length: float) -> Dirichlet:
        """The same condition (a value does not depend on the coordinate's scale)."""
        return self

    @property
    def kind(self) -> str:
        """``"dirichlet"``."""
        return "dirichlet"

    def __repr__(self) -> str:
        return f"Dirichlet({self.value!r})"


@dataclasses.dataclass(frozen=True, init=False)
class Neumann(Robin):
    """``du/dn = value`` at a wall, ``d/dn`` along the outward normal (``Robin(0, 1, value)``).

    Args:
      value: a number, an array or a function of time ``value(t)``.
    """

    def __init__(self, value: Any = 0.0):
        super().__init__(0.0, 1.0, value)

    def on_interval(self, half_length: float) -> Neumann:
        """The condition for ``xi = (y - centre) / half_length``: the value times ``half_length``."""
        v = self.value
        return Neumann((lambda t: v(t) * half_length) if callable(v) else v * half_length)

    @property
    def kind(self) -> str:
        """``"neumann"``."""
        return "neumann"

    def __repr__(self) -> str:
        return f"Neumann({self.value!r})"


def as_pair(bc: Any, name: str = "bc") -> tuple[Robin, Robin]:
    """``(bottom, top)`` conditions of ``bc``: a pair of conditions, or one condition for both walls.

    Raises:
      TypeError: anything else (naming ``name``).
    """
    if isinstance(bc, Robin):
        return bc, bc
    if isinstance(bc, (tuple, list)) and len(bc) == 2 and all(isinstance(c, Robin) for c in bc):
        return tuple(bc)
    raise TypeError(f"{name} must be a boundary condition (Dirichlet, Neumann, Robin) or a pair (bottom, top) of "
                    f"them, got {bc!r}")


def values(bc: Any, t: Any = 0.0) -> tuple[Any, Any]:
    """The values ``(bottom, top)`` of the conditions ``bc`` (:func:`as_pair`) at time ``t``."""
    bottom, top = as_pair(bc)
    return bottom.at(t), top.at(t)


def boundary_row(condition: Robin, n: int, side: str) -> np.ndarray:
    """The row ``r`` with ``sum_k r_k a_k = a u + b du/dn`` at a wall of ``[-1, 1]`` for ``u = sum_k a_k T_k``.

    ``T_k(+1) = 1``, ``T_k(-1) = (-1)^k``, ``T_k'(+1) = k^2``, ``T_k'(-1) = (-1)^(k+1) k^2``; ``du/dn = u'(+1)``
    at the top wall and ``-u'(-1)`` at the bottom one. E.g. ``Dirichlet`` at the bottom: ``(-1)^k``;
    ``Neumann`` at the bottom: ``(-1)^k k^2``.

    Args:
      condition: the wall's condition (on ``[-1, 1]``).
      n: the number of coefficients.
      side: ``"bottom"`` (``y = -1``) or ``"top"`` (``y = +1``).

    Returns:
      The row, float64 ``(n,)``.

    Raises:
      ValueError: an unknown ``side``.
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    k = np.arange(n, dtype=float)
    sign = 1.0 if side == "top" else -1.0
    return condition.a * sign ** k + condition.b * sign * sign ** (k + 1) * k * k


def evaluate(bc: tuple[Robin, Robin], t: Any, dtype) -> tuple[jax.Array, jax.Array]:
    """``values(bc, t)`` as arrays of ``dtype`` (complex stays complex)."""
    out = []
    for v in values(bc, t):
        v = jnp.asarray(v)
        out.append(v if jnp.iscomplexobj(v) else v.astype(dtype))
    return out[0], out[1]

