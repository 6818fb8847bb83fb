"""A pure, differentiable rollout: ``steps`` fixed steps of one integrator as one traced function of the state
(and of the equation's float parameters), with checkpointing that bounds the memory of the backward pass."""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..integrators import Integrator, make_integrator
from ..model import Equation, State
from ..stepping import CFL, FixedStep, fixed_steps
from ._checks import abstract_state, check_like, check_methods

__all__ = ["Rollout", "rollout"]

#: not yet known (the equation's abstract state is traced at the first call)
_UNKNOWN = object()

#: ``checkpoint_every``: None (no remat), one block length, or nested block lengths (outermost first)
Checkpoints = int | Sequence[int] | None


def rollout(equation: Equation, integrator: str | type[Integrator] | Integrator | None = None, *,
            dt: float | FixedStep, steps: int, checkpoint_every: Checkpoints = None, save_every: int | None = None,
            t0: float = 0.0) -> Rollout:
    """A pure function ``run(state0, params=None)`` that takes ``steps`` steps of ``dt`` with ``integrator``.

    ``run`` is traceable: ``jax.jit``, ``jax.grad``, ``jax.vjp``, ``jax.jvp`` and ``jax.vmap`` apply to it, in the
    initial state and in the equation's float parameters (``run(state0, params={"nu": 2e-3})``: the integrator's
    coefficients, e.g. ETDRK4's phi functions of ``nu k^2``, are computed inside the traced function, so
    gradients flow through them). Step ``i`` (0-based) starts at ``t0 + i dt``.

    Checkpointing (memory of the backward pass; ``S`` = one state, ``R`` = what reverse mode keeps of one step,
    several states for a 4-stage scheme):

    - ``None``: no recomputation; the backward pass keeps every step's internals, ``steps R``.
    - ``k`` (int): a scan over blocks of ``k`` steps, each block under ``jax.checkpoint``: the backward pass keeps
      the state at the start of every block and recomputes one block at a time, ``(steps / k) S + k R``, for
      one extra forward run. ``k ~ sqrt(steps R / S)`` minimizes it.
    - ``(k1, k2, ...)`` (strictly decreasing): nested (recursive) checkpointing: blocks of ``k1`` steps, whose
      recomputation is itself checkpointed every ``k2`` steps, and so on: ``(steps / k1 + k1 / k2 + ...) S +
      k_last R`` for one extra forward run per level (e.g. ``(100, 10)`` for 1000 steps keeps 10 + 10 states and
      10 steps' internals; ``(64, 16, 4)`` gives the ``O(log steps)`` memory of recursive bisection-type schemes
      at a constant factor of work).

    When ``steps`` (or a block) is not a multiple of a block length ``k``, the whole blocks run first and the
    remainder runs as one last, shorter block (also checkpointed); a level whose ``k`` is not below the length
    it splits is skipped. Every step is taken exactly once per forward run: the result does not depend on the
    policy (bit for bit on one device).

    Args:
      equation: the :class:`~solvers.Equation` (its grid's mesh decides the sharding; any mesh works).
      integrator: a name in :data:`~solvers.INTEGRATORS`, an :class:`~solvers.Integrator` subclass, or an
        instance (rebound to the equation with ``params``); None: ``imex`` for an equation with implicit solves,
        else ``rk4``.
      dt: the fixed step (a positive float or a :class:`~solvers.FixedStep`). Adaptive controllers
        (:class:`~solvers.CFL`) are refused: the step sequence would depend on the state through a
        non-differentiable host decision.
      steps: number of steps (a positive int).
      checkpoint_every: the checkpointing policy above.
      save_every: if given, ``run`` returns the states after steps ``save_every, 2 save_every, ...``, stacked
        along a new leading axis, and also the final state when ``steps`` is not a multiple (its step numbers:
        :attr:`Rollout.saved_steps`); the saved states are checkpoints too, so levels of ``checkpoint_every``
        that are not below ``save_every`` have no effect.
      t0: time of the initial state.

    Returns:
      A :class:`Rollout`; ``run(state0, params=None)`` returns the final state (same structure, dtype and
      sharding as ``state0``) or, with ``save_every``, the stacked states (each leaf with a leading unsharded
      axis of length ``len(run.saved_steps)`` before the state's own sharding).

    Raises:
      TypeError: ``steps``, ``save_every`` or ``checkpoint_every`` not integers, ``dt`` not a number, an unknown
        kind of ``integrator``, ``equation`` not an Equation, a method of the equation that returns another
        structure than the state's.
      ValueError: ``steps`` or ``dt`` not positive, an adaptive ``dt`` controller, an unknown integrator name,
        block lengths that are not positive and strictly decreasing, ``save_every`` not positive;
        ``nonlinear``, ``linear`` or ``implicit_solve`` returning another shape, dtype or sharding than the state's
        (checked once, by tracing), naming the method.
    """
    if not isinstance(equation, Equation):
        raise TypeError(f"equation must be a solvers.Equation, got {type(equation).__name__}")
    steps = _positive_int(steps, "steps")
    save = None if save_every is None else _positive_int(save_every, "save_every")
    levels = _levels(checkpoint_every)
    step_dt = _step(dt)
    t0 = _number(t0, "t0")
    integ = make_integrator(equation, integrator)
    with _on_mesh(equation.grid.mesh):
        check_methods(equation)
    return Rollout(equation, integ, step_dt, steps, levels, save, t0, checkpoint_every)


class Rollout:
    """``run(state0, params=None)``: a pure rollout built by :func:`rollout` (see there for the semantics).

    Attributes:
      equation, integrator: what it advances (the integrator bound to ``equation``).
      dt, steps, t0, save_every: the step, the number of steps, the initial time, the save interval (or None).
      checkpoint_every: the policy as given; ``levels`` the block lengths actually used (outermost first).
    """

    def __init__(self, equation: Equation, integrator: Integrator, dt: float, steps: int,
                 levels: tuple[int, ...], save_every: int | None, t0: float, checkpoint_every: Checkpoints):
        self.equation, self.integrator = equation, integrator
        self.dt, self.steps, self.levels, self.save_every, self.t0 = dt, steps, levels, save_every, t0
        self.checkpoint_every = checkpoint_every
        # one jitted function: eager calls compile once, and inside an outer jit/grad it is inlined; its trace
        # takes the mesh from the arguments' shardings (eager grad could not: set_mesh is refused under a trace)
        self._jitted = jax.jit(self._run)
        self._like = _UNKNOWN  # the equation's abstract state, what ``state0`` is checked against (None: none)

    def __repr__(self) -> str:
        return (f"Rollout({self.equation.label()}, {self.integrator.name or type(self.integrator).__name__}, "
                f"dt={self.dt:g}, steps={self.steps}, checkpoint_every={self.checkpoint_every!r}, "
                f"save_every={self.save_every!r})")

    @property
    def saved_steps(self) -> tuple[int, ...]:
        """Step numbers of the states ``run`` returns: ``(steps,)``, or the multiples of ``save_every`` up to
        ``steps`` followed by ``steps`` itself when it is not one."""
        if self.save_every is None:
            return (self.steps,)
        out = tuple(range(self.save_every, self.steps + 1, self.save_every))
        return out if out and out[-1] == self.steps else out + (self.steps,)

    @property
    def saved_times(self) -> tuple[float, ...]:
        """Times of the states ``run`` returns (``t0 + step dt``)."""
        return tuple(self.t0 + s * self.dt for s in self.saved_steps)

    def __call__(self, state0: State, params: Mapping[str, Any] | None = None) -> State:
        """Advance ``state0``; see :func:`rollout`.

        Args:
          state0: the initial state (a pytree of spectral arrays on the equation's grid, sharded as the equation
            declares, e.g. ``grid.spectral_sharding(1)`` for a velocity).
          params: float parameters of the equation to use instead of its own (name -> scalar, a number or a
            possibly traced 0-d array); differentiable.

        Returns:
          The final state (sharded like ``state0``), or the stacked saved states (leading axis unsharded).

        Raises:
          ValueError: an unknown parameter name, a value that is not a scalar; ``state0`` of another shape or dtype
            than the equation's state.
          TypeError: a parameter that is not a float one (integers, strings and booleans are not
            differentiable), or one the equation branches on in Python (it cannot take a traced value);
            ``state0`` of another structure than the state's.
        """
        eq = self.equation
        values = _param_values(eq, params)
        if self._like is _UNKNOWN:
            with _on_mesh(eq.grid.mesh):
                self._like = abstract_state(eq)
        if self._like is not None:
            check_like(state0, self._like, "state0", f"the spectral state of {eq.label()}")
        with _on_mesh(eq.grid.mesh):
            try:
                return self._jitted(state0, values, self.dt, self.t0)
            except jax.errors.ConcretizationTypeError as e:
                bad = _branching(values, self._run, state0, self.dt, self.t0)
                if not bad:
                    raise
                raise TypeError(f"params: {eq.label()} uses the value of {', '.join(bad)} in Python control flow "
                                f"(e.g. `if self.{bad[0]} > 0`), so it cannot be a traced, differentiable value; "
                                "set it in the equation's constructor instead") from e

    def _run(self, state0: State, values: dict[str, Any], dt: float, t0: float) -> State:
        """The traced rollout; ``dt`` and ``t0`` are arguments (not constants the compiler folds), so the steps
        round as the other ways of taking fixed steps do (:func:`~solvers.stepping.fixed_steps`)."""
        eq = self.equation.with_params(**values) if values else self.equation
        integ = self.integrator if eq is self.integrator.equation else make_integrator(eq, self.integrator)
        dtype = eq.grid.dtype
        dt, t0 = jnp.asarray(dt, dtype), jnp.asarray(t0, dtype)
        coeffs = integ.coefficients(dt)
        if self.save_every is None:
            return fixed_steps(integ, state0, t0, dt, self.steps, coeffs, self.levels)
        s = self.save_every
        inner = tuple(k for k in self.levels if k < s)

        def segment(state, i, n):
            return fixed_steps(integ, state, t0 + i.astype(dtype) * dt, dt, n, coeffs, inner)

        block = partial(segment, n=s)
        if self.levels:
            block = jax.checkpoint(block, prevent_cse=False)

        def body(carry, _):
            state, i = carry
            state = block(state, i)
            return (state, i + s), state

        q, r = divmod(self.steps, s)
        (state, i), traj = jax.lax.scan(body, (state0, jnp.zeros((), jnp.int32)), length=q)
        if r:
            last = partial(segment, n=r)
            last = (jax.checkpoint(last) if self.levels else last)(state, i)
            traj = jax.tree.map(lambda a, b: jnp.concatenate([a, b[None]]), traj, last) if q else \
                jax.tree.map(lambda b: b[None], last)
        return traj


def _on_mesh(mesh: jax.sharding.Mesh):
    """The mesh as context: ``jax.set_mesh`` at the top level; nothing inside a trace (where ``set_mesh`` is
    refused: the jitted rollout takes its mesh from the arguments) or when the caller already set it."""
    if jax.sharding.get_abstract_mesh() == mesh.abstract_mesh:
        return contextlib.nullcontext()
    try:
        return jax.set_mesh(mesh)
    except ValueError:  # inside jit/grad: "set_mesh can only be used outside of jax.jit"
        return contextlib.nullcontext()


# ----- validation ----------------------------------------------------------------------------------------------
def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {value!r} ({type(value).__name__})")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def _step(dt: Any) -> float:
    if isinstance(dt, FixedStep):
        dt = dt.dt
    elif isinstance(dt, CFL) or callable(dt):
        raise ValueError(f"dt: the adaptive step controller {type(dt).__name__} cannot drive a differentiable "
                         "rollout (its dt is chosen from the state, so the step sequence has no derivative): give "
                         "a fixed dt (a float or FixedStep)")
    value = _number(dt, "dt")
    if value <= 0:
        raise ValueError(f"dt must be positive, got {dt!r}")
    return value


def _levels(checkpoint_every: Checkpoints) -> tuple[int, ...]:
    if checkpoint_every is None:
        return ()
    many = not isinstance(checkpoint_every, numbers.Integral) or isinstance(checkpoint_every, bool)
    if many and not isinstance(checkpoint_every, Sequence) or isinstance(checkpoint_every, (str, bytes)):
        raise TypeError("checkpoint_every must be None, a positive int or a strictly decreasing sequence of "
                        f"positive ints, got {checkpoint_every!r}")
    items = tuple(checkpoint_every) if many else (checkpoint_every,)
    levels = tuple(_positive_int(k, "checkpoint_every") for k in items)
    if not levels or any(a <= b for a, b in zip(levels, levels[1:])):
        raise ValueError("checkpoint_every must be a positive int or a non-empty, strictly decreasing sequence "
                         f"of them (outermost block first), got {checkpoint_every!r}")
    return levels


def _param_values(equation: Equation, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``params`` checked by name, kind and shape, as arrays of the grid's dtype (traced values stay traced)."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of parameter names to values, got {type(params).__name__}")
    declared = {p.name: p for p in equation.parameters}
    label = equation.label()
    unknown = sorted(set(params) - set(declared))
    if unknown:
        known = ", ".join(n for n, p in declared.items() if p.type is float) or "none"
        raise ValueError(f"params: unknown parameter {', '.join(map(repr, unknown))} for {label}; "
                         f"its float parameters: {known}")
    out = {}
    for name, value in params.items():
        p = declared[name]
        if p.type is not float:
            raise TypeError(f"params[{name!r}]: {label} parameter {name} is of type {p.type.__name__}, which is "
                            "not differentiable; only float parameters can be passed (set it in the constructor)")
        if isinstance(value, (str, bytes, bool)) or not (isinstance(value, numbers.Real) or hasattr(value, "dtype")):
            raise TypeError(f"params[{name!r}] must be a real scalar (a number or a 0-d array), got {value!r}")
        if jnp.iscomplexobj(value) or not (jnp.issubdtype(jnp.result_type(value), jnp.floating)
                                           or jnp.issubdtype(jnp.result_type(value), jnp.integer)):
            raise TypeError(f"params[{name!r}] must be real, got dtype {jnp.result_type(value)}")
        if np.shape(value) != ():
            raise ValueError(f"params[{name!r}] must be a scalar (shape ()), got shape {np.shape(value)}")
        if not isinstance(value, jax.core.Tracer):  # a concrete value gets the constructor's checks
            p.check(float(value), label)
        out[name] = jnp.asarray(value, equation.grid.dtype)
    return out


def _branching(values: dict[str, Any], run, state0: State, dt: float, t0: float) -> list[str]:
    """The parameters the equation's Python code branches on (traced one at a time: which ones fail)."""
    bad = []
    for name in values:
        try:
            jax.eval_shape(lambda s, v, name=name: run(s, {name: v}, dt, t0), state0, values[name])
        except jax.errors.ConcretizationTypeError:
            bad.append(name)
    return bad
