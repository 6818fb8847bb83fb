"""``simulate``: advance an equation with an integrator to ``t_end`` under a step controller, feeding outputs.

In the shape of diffrax's ``diffeqsolve``: every concern is its own argument. The equation is physics; the
integrator the scheme; the controller (:class:`~solvers.FixedStep`, :class:`~solvers.CFL`) chooses dt on the devices;
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
from ..outputs.base import Event, Output, RunInfo
from ..stepping import CFL, FixedStep, host_control_flow
from .loop import BlowUpError, Loop

__all__ = ["BlowUpError", "Solution", "simulate"]


@dataclass(frozen=True)
class Solution:
    """What :func:`simulate` returns: the final ``state`` (spectral order of the grid), its time ``t`` and step,
    the steps this call took, the wall time, the last diagnostics row (None without rows), the last step's dt
    and CFL-band dt (what a later call needs to continue bit for bit), and why it stopped early (an output's
    :class:`~solvers.outputs.StopRun`; None: it reached ``t_end`` or ``max_steps``)."""

    state: Any
    t: float
    step: int
    steps_taken: int
    wall_s: float
    last_row: dict[str, float] | None
    dt: float
    dt_band: float
    stopped: str | None = None


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def simulate(equation: Equation, integrator: str | type[Integrator] | Integrator | None = None, *,
             t_end: float, y0: Any = None, t0: float = 0.0, step0: int = 0,
             controller: FixedStep | CFL | None = None, outputs: Sequence[Output] = (),
             max_steps: int | None = None, dt_band: float = 0.0, energy_bound: float | Callable | None = None,
             rows: bool = True, donate: bool = False, samples: dict | None = None) -> Solution:
    """Advance ``equation`` from ``y0`` at ``t0`` to ``t_end`` (or ``max_steps``), landing exactly on ``t_end`` and
    on every output's stop time.

    Args:
      equation: the :class:`~solvers.Equation` (its grid's mesh decides the sharding).
      integrator: a name in :data:`~solvers.INTEGRATORS`, an :class:`~solvers.Integrator` subclass or an instance
        bound to ``equation``; None: ``imex`` for an equation with implicit solves, else ``rk4``.
      t_end: the final time. y0: the initial state (None: ``equation.initial_state()``, its first initial
        condition). t0, step0: the time and step number of ``y0`` (a continued run).
      controller: :class:`~solvers.FixedStep` or :class:`~solvers.CFL`; None: ``CFL()`` where the equation has a CFL
        rate (``max_rate``), else a ``ValueError``.
      outputs: :class:`~solvers.Output` objects (checkpoints, CSV, plots, snapshots, progress, your own).
      max_steps: stop after this step number (counted from 0) even before ``t_end``.
      dt_band: the dt a CFL band held when the run being continued stopped (0: none yet).
      energy_bound: raise :class:`BlowUpError` when the energy passes it (checked after every step); a function
        ``bound(initial_energy)`` gives it from the energy of ``y0``.
      rows: compute the diagnostics rows the outputs ask for (``row_every``); False: none (outputs get no rows).
      samples: the outputs' device-side samples to continue from (name -> pytree, as a checkpoint holds them;
        e.g. statistics of a resumed run); the others start at zero.
      donate: hand ``y0``'s buffers to the first step (``y0`` is then deleted; saves one state of memory). By
        default ``y0`` is copied first and stays valid.

    Returns:
      A :class:`Solution`.

    Raises:
      TypeError: an argument of the wrong kind (naming it). ValueError: a value out of range, a controller the
        equation or scheme cannot take (a CFL controller without a rate), naming the argument.
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
    outputs = list(outputs)
    for o in outputs:
        if not isinstance(o, Output):
            raise TypeError(f"outputs: every output must be a solvers.Output, got {type(o).__name__}")
    mesh = equation.grid.mesh
    with jax.set_mesh(mesh):
        has_rate = jax.eval_shape(equation.max_rate, equation.abstract_state()) is not None
        if controller is None:
            if not has_rate:
                raise ValueError(f"controller: {equation.label()} has no CFL rate (max_rate); give "
                                 "controller=FixedStep(dt)")
            controller = CFL()
        if not isinstance(controller, (FixedStep, CFL)):
            raise TypeError(f"controller must be FixedStep(dt) or CFL(...), got {type(controller).__name__}")
        if isinstance(controller, CFL) and not has_rate:
            raise ValueError(f"controller: a CFL controller needs the equation's CFL rate, and {equation.label()} "
                             "has none (max_rate returns None): use FixedStep(dt)")
        control = controller.resolve(integ, integ.stable_dt() if isinstance(controller, CFL) else math.inf)
        loop = Loop(integ, control, outputs, energy_bound, rows, host_control_flow(mesh))
        started = time.perf_counter()
        resumed = step0 > 0 or y0 is not None and t0 > 0
        if y0 is None:
            y0 = equation.initial_state()
        elif not donate:
            y0 = jax.tree.map(lambda a: a.copy(), y0)
        info = RunInfo(equation, integ, control, t0, t_end, int(step0), max_steps, resumed, jax.process_index() == 0,
                       loop.columns, loop.row.shells if loop.row is not None else 0)
        try:
            state, clock = loop.run(y0, info, float(dt_band), samples or {})
            event = Event(state, clock.step, clock.t, clock.dt, clock.dt_band, clock.energy, True, clock.samples)
            for o in outputs:
                o.finish(event)
        finally:
            for o in outputs:
                o.close()
    return Solution(state, clock.t, clock.step, clock.step - int(step0), time.perf_counter() - started,
                    clock.last_row, clock.dt, clock.dt_band, clock.stopped)


def first_energy(values: dict[str, float] | None) -> float:
    """The energy of a row's values (NaN where there is none)."""
    return float(values.get("energy", np.nan)) if values else np.nan
