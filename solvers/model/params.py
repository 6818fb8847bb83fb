"""Declared parameters: what an equation or an initial condition takes (name, type, default, range, help).

One declaration serves the constructor (validation), a run's configuration (defaults), the command line's
listing and the error messages, so all of them agree. A declaration knows no command-line flags.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_TYPES = {float: "a number", int: "an integer", str: "a string", bool: "true or false"}


@dataclass(frozen=True)
class Param:
    """One parameter of an equation or initial condition.

    Args:
      name: keyword argument name (``--param NAME=VALUE`` on the command line).
      default: value when not given.
      help: one line for ``python -m solvers list``.
      type: ``float``, ``int``, ``str`` or ``bool``.
      low, high: inclusive bounds (None: unbounded); ``low_open`` / ``high_open`` make them strict.
      choices: the allowed values (instead of bounds).
      legacy: the value a checkpoint written before this parameter existed had (a resume of such a checkpoint
        compares against it); None: the parameter is as old as the equation.
      reciprocal: the name under which a run may give this parameter's reciprocal instead
        (``Param("Re", ..., reciprocal="nu")``: ``nu`` is ``1 / Re``); a run's configuration resolves it
        (:meth:`from_reciprocal`) and the command line's ``--re``/``--nu`` rely on it. None: no such name.
    """

    name: str
    default: Any
    help: str = ""
    type: type = float
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    legacy: Any = None
    reciprocal: str | None = None

    def from_reciprocal(self, value: Any, owner: str = "") -> float:
        """This parameter's value ``1 / value`` from its :attr:`reciprocal` (strings are parsed); the result is
        not yet checked against this parameter's own range (:meth:`check` does that).

        Raises:
          ValueError: no reciprocal is declared, or ``value`` is not a positive finite number (naming both).
        """
        if self.reciprocal is None:
            raise ValueError(f"{self.where(owner)} declares no reciprocal")
        try:
            v = _convert(value, float)
        except (TypeError, ValueError):
            v = math.nan
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{owner + ': ' if owner else ''}{self.reciprocal} must be a positive number (it sets "
                             f"{self.where(owner)} = 1 / {self.reciprocal}), got {value!r}")
        return 1.0 / v

    def allowed(self) -> str:
        """What is accepted, in words (``a number > 0``, ``an integer >= 1 and <= 8``, ``one of 2, 3``)."""
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        bounds = []
        if self.low is not None:
            bounds.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            bounds.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        return _TYPES[self.type] + (" " + " and ".join(bounds) if bounds else "")

    def where(self, owner: str) -> str:
        """How the message names it: ``navier-stokes parameter nu``."""
        return f"{owner} parameter {self.name}".strip()

    def check(self, value: Any, owner: str = "") -> Any:
        """``value`` converted to :attr:`type` (strings are parsed, as from the command line) and checked.

        Raises:
          ValueError: naming the parameter, what is allowed and what was given.
        """
        bad = ValueError(f"{self.where(owner)} must be {self.allowed()}, got {value!r}")
        try:
            v = _convert(value, self.type)
        except (TypeError, ValueError):
            raise bad from None
        if self.choices is not None:
            if v not in self.choices:
                raise bad
            return v
        if self.type in (float, int):
            if not math.isfinite(v):
                raise bad
            if self.low is not None and (v < self.low or (self.low_open and v == self.low)):
                raise bad
            if self.high is not None and (v > self.high or (self.high_open and v == self.high)):
                raise bad
        return v


    def check_value(self, value: Any, owner: str = "") -> Any:
        """:meth:`check` for a value that may be a JAX array: a concrete one is checked (and kept an array if it
        was one), a traced one (its value unknown while tracing) by kind and shape only.

        Raises:
          ValueError: a concrete value out of range, or an array that is not a real scalar.
        """
        import jax
        import jax.numpy as jnp

        if not isinstance(value, jax.Array):
            return self.check(value, owner)
        if jnp.shape(value) != () or not (jnp.issubdtype(value.dtype, jnp.floating)
                                          or jnp.issubdtype(value.dtype, jnp.integer)):
            raise ValueError(f"{self.where(owner)} must be a 0-d real array, got {value.dtype}{list(value.shape)}")
        if isinstance(value, jax.core.Tracer):
            return value
        self.check(float(value), owner)
        return value


def _convert(value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, str):
            low = value.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if isinstance(value, (bool, int)) and value in (0, 1):
            return bool(value)
        raise ValueError(value)
    if kind is str:
        if not isinstance(value, str):
            raise TypeError(value)
        return value
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, str):
        value = float(value.strip())
    if kind is int:
        f = float(value)
        if not math.isfinite(f) or f != int(f):
            raise ValueError(value)
        return int(f)
    return float(value)


def resolve(declared: Sequence[Param], given: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """Every declared parameter's value: ``given`` (checked and converted) over the defaults.

    Raises:
      ValueError: an unknown name (listing the known ones) or a value out of range.
    """
    names = {p.name: p for p in declared}
    unknown = sorted(set(given) - set(names))
    if unknown:
        known = ", ".join(names) if names else "none"
        raise ValueError(f"unknown parameter {', '.join(unknown)} for {owner}; known: {known}")
    return {p.name: p.check(given[p.name], owner) if p.name in given else p.default for p in declared}


@dataclass(frozen=True)
class InitialCondition:
    """An initial condition with declared parameters: ``build(equation, **params) -> state``.

    ``Equation.initial_conditions`` values may be a plain callable ``build(equation) -> state`` (no
    parameters) or an ``InitialCondition``.
    """

    build: Callable[..., Any]
    params: tuple[Param, ...] = ()
    help: str = ""

    def __call__(self, equation: Any, **params: Any) -> Any:
        return self.build(equation, **params)


def as_initial_condition(ic: Callable[..., Any] | InitialCondition) -> InitialCondition:
    return ic if isinstance(ic, InitialCondition) else InitialCondition(ic, (), (ic.__doc__ or "").split("\n")[0])
