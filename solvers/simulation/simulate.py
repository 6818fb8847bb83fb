"""``simulate``: advance an equation with an integrator to ``t_end`` under a step controller, feeding outputs.

In the shape of diffrax's ``diffeqsolve``: every concern is its own argument. The equation is physics; the
integrator the scheme; the controller (:class:`~solvers.FixedStep`, :class:`~solvers.CFL` or any
:class:`~solvers.Controller`) chooses dt on the devices;
the outputs (:class:`~solvers.Output`) observe rows, states and samples. The steps between two things the host must
do (an output's step or stop time, a full row buffer, the end) run as one compiled segment of the stepping core
(:func:`~solvers.stepping.segment`); the host keeps the clock in float64, takes the landing steps itself (the one
landing rule, :func:`~solvers.stepping.lands`) and hands each segment's rows to the outputs.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ..integrators import Integrator, make_integrator
from ..model import Equation
from ..outputs.base import Output, RunInfo
from ..stepping import CFL, Controller, host_control_flow
from ._checks import check_methods, outputs_list, placed_state, warn_unreached
from .loop import BlowUpError, Loop

__all__ = ["BlowUpError", "Solution", "simulate"]


@dataclass(frozen=True)
class Solution:
    """What :func:`simulate` returns: the final ``state`` (spectral order of the grid), its time ``t`` and step,
    the steps this call took, the wall time, the last diagnostics row (None without rows), the last step's dt
    and CFL-band dt, why it stopped early (an output's :class:`~solvers.outputs.StopRun`; None: it reached
    ``t_end`` or ``max_steps``), and the controller's state (what a later call, given it as ``controller_state``,
    needs to continue bit for bit)."""

    state: Any
    t: float
    step: int
    steps_taken: int
    wall_s: float
    last_row: dict[str, float] | None
    dt: float
    dt_band: float
    stopped: str | None = None
    controller_state: dict | None = None


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def simulate(equation: Equation, integrator: str | type[Integrator] | Integrator | None = None, *,
             t_end: float, y0: Any = None, t0: float = 0.0, step0: int = 0,
             controller: Controller | None = None, outputs: Sequence[Output] = (),
             max_steps: int | None = None, energy_bound: float | Callable | str | None = "auto",
             rows: bool = True, donate: bool = False, samples: dict | None = None,
             controller_state: dict | None = None) -> Solution:
    """Advance ``equation`` from ``y0`` at ``t0`` to ``t_end`` (or ``max_steps``), landing exactly on ``t_end`` and
    on every output's stop time.

    Args:
      equation: the :class:`~solvers.Equation` (its grid's mesh decides the sharding).
      integrator: a name in :data:`~solvers.INTEGRATORS`, an :class:`~solvers.Integrator` subclass or an instance
        bound to ``equation``; None: ``imex`` for an equation with implicit solves, else ``rk4``.
      t_end: the final time. y0: the initial state (None: ``equation.initial_state()``, its first initial
        condition): the structure, shapes and dtypes of ``equation.abstract_state()``; a host (numpy) array or an
        array on another sharding is placed on the grid's. t0, step0: the time and step number of ``y0`` (a
        continued run).
      controller: a :class:`~solvers.Controller`: :class:`~solvers.FixedStep`, :class:`~solvers.CFL` or your own
        (``init``, ``choose``, ``wants_rate``); None: ``CFL()`` where the equation has a CFL rate (``max_rate``),
        else a ``ValueError``. Every controller lands on ``t_end`` and the outputs' stop times (the run takes the
        landing step).
      outputs: a sequence of :class:`~solvers.Output` objects (checkpoints, CSV, plots, snapshots, progress, your
        own). One that asks for times after ``t_end`` gets a warning (nothing is written for them).
      max_steps: stop after this step number (counted from 0) even before ``t_end``.
      controller_state: the controller's state when the run being continued stopped (a checkpoint's
        ``meta["controller"]``, :attr:`Solution.controller_state`); None: the controller starts afresh
        (``init``).
      energy_bound: raise :class:`BlowUpError` when the energy passes it (checked after every step); a function
        ``bound(initial_energy)`` gives it from the energy of ``y0``. ``"auto"`` (default): ``GROWTH`` (1e12)
        times the larger of the initial energy and 1, checked where the host sees the state (after each compiled
        segment: at rows, outputs' steps, at least every 1000 steps), at no cost per step. None: no bound. A
        non-finite state (NaN/inf) stops every run.
      rows: compute the diagnostics rows the outputs ask for (``row_every``); False: none (outputs get no rows).
      samples: the outputs' device-side samples to continue from (name -> pytree, as a checkpoint holds them;
        e.g. statistics of a resumed run); the others start at zero.
      donate: hand ``y0``'s buffers to the first step (``y0`` is then deleted; saves one state of memory). By
        default ``y0`` is copied first and stays valid.

    Returns:
      A :class:`Solution`.

    Raises:
      TypeError: an argument of the wrong kind (naming it): ``outputs`` not a sequence of outputs, ``y0`` of
        another structure than the state's, a method of the equation that returns another structure.
      ValueError: a value out of range, a controller the equation or scheme cannot take (a CFL controller without
        a rate), naming the argument; ``y0`` of another shape or dtype than the state's; an output built for an
        equation on another grid; ``nonlinear``, ``linear`` or ``implicit_solve`` returning another shape, dtype
        (float32 on a float64 grid included) or sharding than the state's (checked once, by tracing, before the
        first step), naming the method, what it returned and what was expected.
      BlowUpError: the state became non-finite or passed ``energy_bound``, naming the step and time.
    """
    if not isinstance(equation, Equation):
        raise TypeError(f"equation must be a solvers.Equation, got {type(equation).__name__}")
    integ = make_integrator(equation, integrator)
    t0, t_end = _number(t0, "t0"), _number(t_end, "t_end")
    if not t_end > t0:
        raise ValueError(f"t_end must be after t0 = {t0:g}, got {t_end:g}")
    for name, v, low in (("step0", step0, 0), ("max_steps", max_steps, 0)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low):
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    outputs = outputs_list(outputs, equation)
    bound, every_step = _bound(energy_bound)
    mesh = equation.grid.mesh
    with jax.set_mesh(mesh):
        has_rate = jax.eval_shape(equation.max_rate, equation.abstract_state()) is not None
        if controller is None:
            if not has_rate:
                raise ValueError(f"controller: {equation.label()} has no CFL rate (max_rate); give "
                                 "controller=FixedStep(dt)")
            controller = CFL()
        controller = _controller(controller, integ, has_rate, equation)
        resumed = step0 > 0  # a continued run: its files are kept up to step0 (a fresh run may start at t0 > 0)
        if y0 is None:
            y0 = placed_state(equation.initial_state(), equation, f"{equation.label()}.initial_state()")
        else:
            given = y0
            y0 = placed_state(y0, equation, "y0")
            if not donate:
                y0 = jax.tree.map(lambda a, b: a.copy() if a is b else a, y0, given)
        check_methods(equation)
        warn_unreached(outputs, t_end)
        loop = Loop(integ, controller, outputs, bound, rows, host_control_flow(mesh), bound_every_step=every_step)
        started = time.perf_counter()
        info = RunInfo(equation, integ, controller, t0, t_end, int(step0), max_steps, resumed, jax.process_index() == 0,
                       loop.columns, loop.row.shells if loop.row is not None else 0)
        try:
            state, clock = loop.run(y0, info, samples or {}, controller_state)
            event = loop.event(state, clock, True)
            for o in outputs:
                o.finish(event)
        finally:
            for o in outputs:
                o.close()
    return Solution(state, clock.t, clock.step, clock.step - int(step0), time.perf_counter() - started,
                    clock.last_row, clock.dt, event.dt_band, clock.stopped, event.controller_state)


def _controller(controller: Any, integ: Integrator, has_rate: bool, equation: Equation) -> Any:
    """``controller`` checked against the protocol and bound to the scheme (its optional ``resolve``)."""
    if not (callable(getattr(controller, "init", None)) and callable(getattr(controller, "choose", None))):
        raise TypeError(f"controller must be a solvers.Controller (FixedStep(dt), CFL(...) or an object with init "
                        f"and choose), got {type(controller).__name__}")
    wants = getattr(controller, "wants_rate", False)
    if not isinstance(wants, bool):
        raise TypeError(f"controller: wants_rate must be a bool, got {wants!r}")
    if wants and not has_rate:
        raise ValueError(f"controller: a CFL controller needs the equation's CFL rate, and {equation.label()} "
                         "has none (max_rate returns None): use FixedStep(dt)")
    resolve = getattr(controller, "resolve", None)
    if callable(resolve):
        controller = resolve(integ, integ.stable_dt() if wants else math.inf)
    return controller


def _bound(energy_bound: Any) -> tuple[Any, bool]:
    """The bound a run checks (a number, ``bound(initial_energy)`` or None) and whether after every step."""
    if isinstance(energy_bound, str):
        if energy_bound != "auto":
            raise ValueError(f"energy_bound must be a number, a function of the initial energy, 'auto' or None, got "
                             f"{energy_bound!r}")
        return growth_bound, False
    if energy_bound is None or callable(energy_bound):
        return energy_bound, True
    value = _number(energy_bound, "energy_bound")
    if value <= 0:
        raise ValueError(f"energy_bound must be positive, got {energy_bound!r}")
    return value, True


def growth_bound(initial: float) -> float:
    """The default blow-up bound: ``GROWTH`` times the larger of the initial energy and 1."""
    return GROWTH * max(initial, 1.0)


#: the default bound (``energy_bound="auto"``): this many times the larger of the initial energy and 1
GROWTH = 1e12


def first_energy(values: dict[str, float] | None) -> float:
    """The energy of a row's values (NaN where there is none)."""
    return float(values.get("energy", np.nan)) if values else np.nan
