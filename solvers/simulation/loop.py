"""The host side of :func:`~solvers.simulate`: the compiled segment program, the float64 clock, landing on stop
times, handing rows and events to the outputs, and the blow-up checks.

One program runs every segment (:func:`~solvers.stepping.segment` with its rows and samples), the landing step
included (a segment of one step whose dt the host forces): a run compiles one step program. The host keeps the time
in float64 (the sum of the steps' dt); a step that would land on a stop time is never taken inside a longer
segment (the loop stops about one step before it, ``NEAR_STOP``), and the host decides the landing in float64 with
the one landing rule (:func:`~solvers.stepping.lands`). So the steps taken, and hence a resumed run, do not depend
on where the segments start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import xfft

from ..outputs.base import Event, Row, RunInfo, StopRun
from ..stepping import lands
from ..stepping.core import (
    AT_REST,
    BAD_DT,
    BOUND,
    MAX_ROWS,
    MAX_SEGMENT,
    NEAR_STOP,
    NEW_DT,
    NONFINITE,
    ROWS_PER_SEGMENT,
)
from . import programs as _programs


@dataclass
class Clock:
    """The host's clock: step, float64 time, the last step's dt, the last energy, the last row's values, the
    outputs' samples (by name, and as the devices carry them: ``samples_dev``), the controller's state (a
    :class:`~solvers.stepping.ControllerState` of device arrays: the last step's ``aux`` and its own ``cstate``),
    the dt the coefficients are for (0: none yet) and the controller's next dt as the host last heard it."""

    step: int
    t: float
    dt: float
    energy: float
    last_row: dict | None = None
    samples: dict = field(default_factory=dict)
    samples_dev: Any = None
    stopped: str | None = None
    controller: Any = None
    dt_coef: float = 0.0
    dt_next: float = math.nan


@dataclass
class Segment:
    """What one program did: its steps' sizes, why it stopped, the dt it would take next, the energy after it, its
    rows (index of the step in the segment, 1-based; packed values)."""

    steps: int
    dts: list[float]
    status: int
    dt_next: float
    energy: float
    rows: list[tuple[int, np.ndarray]]


class Loop:
    """The compiled programs (cached by their static configuration, :mod:`~solvers.simulation.programs`) and the
    host loop of one run (see the module).

    Args:
      integ: the bound integrator. controller: the resolved controller (:class:`~solvers.Controller`). outputs:
      the run's outputs. energy_bound: a blow-up bound of the energy, or ``bound(initial_energy)`` (None: none).
      rows: compute the rows the outputs ask for. synced: no branch per step (a GPU). bound_every_step: check the
      bound after every step (False: where the host sees the state, after each segment, at no cost per step).
    """

    def __init__(self, integ, controller, outputs, energy_bound: float | None, rows: bool, synced: bool,
                 bound_every_step: bool = True):
        self.integ, self.eq, self.controller, self.outputs = integ, integ.equation, controller, outputs
        self.bound = energy_bound
        self.bound_note = "" if bound_every_step else " (simulate's default energy_bound; None turns it off)"
        wants = [int(o.row_every) for o in outputs if o.row_every]
        self.every = math.gcd(*wants) if rows and wants else None
        spectrum = any(getattr(o, "wants_spectrum", False) for o in outputs if o.row_every)
        self.samplers = {o.name: s for o in outputs if (s := o.sampler(self.eq)) is not None}
        self.programs = _programs.programs(integ, controller, spectrum if self.every else None, self.samplers,
                                           energy_bound is not None and bound_every_step, synced)
        self.core, self.row = self.programs.core, self.programs.row
        self.columns = self.row.columns if self.row else ()
        self.has_spectrum = bool(self.row and self.row.has_spectrum)
        self._ctrl = None if self.programs.opaque else controller
        self._coefs: dict[float, Any] = {}
        self._segment = self.programs.segment

    # ----- the device program ------------------------------------------------------------------------
    def lower(self, samples=None):
        """The segment program lowered on the equation's abstract state (nothing allocated): what the memory
        check compiles and tests read."""
        like = self.eq.abstract_state()
        with jax.set_mesh(self.eq.grid.mesh):
            _, _, controller_state, zero, _ = jax.eval_shape(self.programs.begin, like, 0.0, self._ctrl)
            samples = zero if samples is None else samples
            coeffs = jax.eval_shape(self.integ.coefficients, 1.0) if self.integ.dt_coefficients else ()
            return self.programs.segment.lower(like, 0.0, coeffs, 10, math.inf, math.inf, 0.0, 0.0, 0,
                                               self.every or 1 << 30, True, samples, controller_state, self._ctrl)

    def initial_samples(self):
        """The outputs' accumulators at zero (abstract shapes where the state is abstract)."""
        if self.core.sampler is None:
            return None
        return jax.eval_shape(self.core.sampler.init, self.eq.abstract_state())

    def coefficients(self, dt: float):
        """The integrator's coefficients for ``dt`` (one program; the last few dts kept)."""
        if not self.integ.dt_coefficients:
            return ()
        if dt not in self._coefs:
            if len(self._coefs) >= 4:
                self._coefs.pop(next(iter(self._coefs)))
            self._coefs[dt] = self.programs.coefficients(dt)
        return self._coefs[dt]

    def run_segment(self, state, clock: Clock, n: int, remaining: float, dt_force: float = 0.0,
                    last: bool = False) -> tuple[Any, Segment]:
        """Up to ``n`` steps from ``clock`` (its controller input and samples updated); ``dt_force``: one step of
        that dt (a landing)."""
        dt = dt_force if dt_force > 0 else clock.dt_coef
        coeffs = self.coefficients(dt if dt > 0 else 1.0)
        n = min(int(n), MAX_SEGMENT)
        every = self.every or 1 << 30
        if self.every and n > ROWS_PER_SEGMENT * self.every:
            raise ValueError(f"a segment of {n} steps with rows every {self.every} steps overflows its row buffer")
        bound = math.inf if self.bound is None or callable(self.bound) else self.bound
        state, clock.samples_dev, clock.controller, vec = self._segment(
            state, clock.t, coeffs, n, remaining, bound, dt_force, clock.dt_coef, clock.step, every,
            last and self.every is not None, clock.samples_dev, clock.controller, self._ctrl)
        v = np.asarray(jax.device_get(vec))
        xfft.check_errors()  # a check inside the segment (particles): its message, before the NaN it left
        steps, status, count = int(v[0]), int(v[1]), int(v[4])
        k = 5 + MAX_SEGMENT
        buf = v[k:].reshape(MAX_ROWS, -1) if self.row else np.zeros((0, 1))
        clock.dt_next = float(v[2])
        return state, Segment(steps, [float(x) for x in v[5:5 + steps]], status, float(v[2]), float(v[3]),
                              [(int(r[0]), r[1:]) for r in buf[:count]])

    # ----- the host loop -------------------------------------------------------------------------------
    def run(self, state, info: RunInfo, samples: dict | None = None, controller_state: Any = None):
        """Step from ``state`` (at ``info.t0``, ``info.step0``) to ``info.t_end`` or ``info.max_steps``; ``samples``:
        the outputs' samples to continue from (name -> pytree); ``controller_state``: the controller's input to
        continue from (:meth:`saved_controller`).

        Raises:
          ValueError: a check inside the programs failed (a particle outside its halo, a full exchange buffer of
            :func:`xfft.paint`), with the check's own message: :func:`xfft.check_errors` after every program.
        """
        try:  # what a jitted program before this run recorded was logged then and is not this run's
            xfft.check_errors()
        except ValueError:
            pass
        return self._run(state, info, samples, controller_state)

    def _run(self, state, info: RunInfo, samples: dict | None, controller_state: Any):
        clock, values, energy = self.clock(state, info.step0, info.t0, samples, controller_state)
        self.pending: list[Row] = []
        if not info.resumed and self.row is not None:
            values, spec = self.row.unpack(jax.device_get(values))
            self.pending.append(Row(clock.step, clock.t, 0.0, values, spec))
            clock.energy = float(values["energy"]) if "energy" in values else float(energy)
        else:
            clock.energy = float(energy)
        if not math.isfinite(clock.energy):
            raise self._blow_up(clock.step, clock.t, None)
        if callable(self.bound):  # a bound that depends on the energy the run starts with
            self.bound = float(self.bound(clock.energy))
        for o in self.outputs:
            o.start(info, self.event(state, clock, False))
        self._deliver(clock)
        t_end = info.t_end
        while t_end - clock.t > 0 and (info.max_steps is None or clock.step < info.max_steps):
            target = min([s for o in self.outputs if (s := o.stop_time(clock.t)) is not None
                          and clock.t < s < t_end], default=t_end)
            budget = self._steps_to_event(clock.step, info.max_steps)
            try:
                state, landed = self._steps(state, clock, budget, target, target == t_end)
            except BlowUpError_ as e:
                self._deliver(clock, before=e.step)  # the rows of the steps before a blow-up are finished work
                raise e.error from None
            try:
                self._deliver(clock)
                event = self.event(state, clock, landed and target == t_end)
                for o in self.outputs:
                    o.on_event(event)
            except StopRun as e:  # an output ends the run here, cleanly
                clock.stopped = str(e)
                break
        return state, clock

    def clock(self, state, step: int = 0, t: float = 0.0, samples: dict | None = None,
              controller_state: Any = None) -> tuple[Clock, Any, Any]:
        """The clock of a run that starts from ``state`` at ``step``, ``t`` (the begin program: the controller's
        state and first dt, the outputs' samples, given ones taken where given), the initial row's values (None
        without rows) and the energy (device arrays)."""
        clock = Clock(step, t, 0.0, math.nan)
        values, energy, clock.controller, zero, dt0 = self.programs.begin(state, t, self._ctrl)
        clock.dt_next = float(dt0)
        xfft.check_errors()
        if controller_state is not None:
            clock.controller = self._restored(controller_state, clock.controller)
            clock.dt_next = math.nan
        elif self.integ.dt_coefficients:  # the controller's first dt: the coefficients it needs
            clock.dt_coef = clock.dt_next
        if self.core.sampler is not None:
            given = samples or {}
            clock.samples_dev = tuple(jax.tree.map(jnp.asarray, given[n]) if n in given else z
                                      for n, z in zip(self.samplers, zero))
        return clock, values, energy

    def saved_controller(self, clock: Clock) -> dict:
        """The controller's input after ``clock``'s step as JSON-ready lists (what a checkpoint stores and
        :meth:`run` takes back as ``controller_state``): the last step's aux and the controller's state."""
        def plain(tree):
            return [np.asarray(a).tolist() for a in jax.tree.leaves(tree)]
        return {"aux": plain(clock.controller.aux), "state": plain(clock.controller.cstate)}

    def _restored(self, saved: dict, like):
        """``saved`` (:meth:`saved_controller`) on the structure, dtypes and shardings of the controller state
        ``like``."""
        def put(leaves, like, what):
            flat, tree = jax.tree.flatten(like)
            if len(leaves) != len(flat):
                raise ValueError(f"controller_state: the {what} holds {len(leaves)} arrays, this run's controller "
                                 f"{len(flat)}: it was saved by another controller or scheme")
            return jax.tree.unflatten(tree, [jax.device_put(np.asarray(v, a.dtype).reshape(a.shape), a.sharding)
                                             for v, a in zip(leaves, flat)])
        if not isinstance(saved, dict) or "aux" not in saved or "state" not in saved:
            raise TypeError(f"controller_state must be what a checkpoint stores (a dict of 'aux' and 'state'), got "
                            f"{type(saved).__name__}")
        return like._replace(aux=put(saved["aux"], like.aux, "aux"), cstate=put(saved["state"], like.cstate, "state"))

    def event(self, state, clock: Clock, last: bool) -> Event:
        samples = dict(zip(self.samplers, clock.samples_dev)) if self.samplers else {}
        clock.samples = samples
        saved = Clock(clock.step, clock.t, clock.dt, clock.energy, controller=clock.controller)
        return Event(state, clock.step, clock.t, clock.dt, _band(clock.controller.cstate), clock.energy, last, samples,
                     lambda: self.saved_controller(saved))

    def _steps_to_event(self, step: int, max_steps: int | None) -> int:
        """Steps to the next step the host must see: an output's step, ``max_steps``, a full row buffer."""
        events = [step + (ROWS_PER_SEGMENT * self.every if self.every else MAX_SEGMENT)]
        if max_steps is not None:
            events.append(max_steps)
        events += [s for o in self.outputs if (s := o.next_step(step)) is not None and s > step]
        return max(1, min(events) - step)

    def _take(self, seg: Segment, clock: Clock, dts: list[float], t_last: float | None = None,
              last: bool = False) -> None:
        """Advance ``clock`` by the segment's steps ``dts`` (float64, step by step; the last one lands on ``t_last``
        where given) and queue its rows with their step, time and dt."""
        rows = dict(seg.rows)
        for i, dt in enumerate(dts, start=1):
            clock.step, clock.dt = clock.step + 1, dt
            clock.t = t_last if t_last is not None and i == len(dts) else clock.t + dt
            if i in rows:
                values, spec = self.row.unpack(rows[i])
                self.pending.append(Row(clock.step, clock.t, dt, values, spec))
                if last and i == len(dts):
                    self.final_step = clock.step
        clock.energy = seg.energy

    def _deliver(self, clock: Clock, before: int | None = None) -> None:
        """Hand the queued rows to the outputs (each its own multiples, and the run's final row); ``before``: only
        the rows of steps before it (a blow-up)."""
        rows = [r for r in self.pending if before is None or r.step < before]
        self.pending = []
        if not rows:
            return
        final = getattr(self, "final_step", None)
        for o in self.outputs:
            if o.row_every:
                mine = [r for r in rows if r.step % int(o.row_every) == 0 or r.step == final]
                if mine:
                    o.on_rows(mine)
        clock.last_row = rows[-1].values

    def _land(self, state, clock: Clock, target: float, last: bool):
        """The step that lands exactly on ``target`` (with a row where ``last``)."""
        dt = target - clock.t
        state, seg = self.run_segment(state, clock, 1, math.inf, dt_force=dt, last=last)
        self._take(seg, clock, [dt] * seg.steps, t_last=target, last=last)
        self._check(seg, clock)
        return state

    def _steps(self, state, clock: Clock, budget: int, target: float, last: bool):
        """Up to ``budget`` steps, stopping after one that lands on ``target``; returns (state, landed)."""
        begin = clock.step
        seg = None
        while clock.step - begin < budget:
            state, seg = self.run_segment(state, clock, budget - (clock.step - begin), target - clock.t)
            self._take(seg, clock, seg.dts)
            if seg.status in (NONFINITE, BOUND, AT_REST, BAD_DT):
                self._check(seg, clock)
            if seg.status == NEW_DT:
                clock.dt_coef = seg.dt_next
            elif seg.status == NEAR_STOP:
                if lands(target - clock.t, seg.dt_next):  # the landing rule, in float64
                    return self._land(state, clock, target, last), True
                # not yet: one ordinary step (the same program, no stop in sight), then look again
                state, seg = self.run_segment(state, clock, 1, math.inf)
                self._take(seg, clock, seg.dts)
                self._check(seg, clock)
                if seg.status == NEW_DT:
                    clock.dt_coef = seg.dt_next
        self._check(seg, clock)
        return state, False

    def _check(self, seg: Segment, clock: Clock) -> None:
        """Raise for a segment that stopped on a non-finite state, an energy over the bound, a flow at rest."""
        if seg.status == AT_REST:
            raise ValueError(f"controller: {type(self.controller).__name__} chose an infinite dt at t = "
                             f"{clock.t:.6g} (the flow is at rest and the CFL controller has no dt_max: give "
                             "CFL(dt_max=...) or FixedStep(dt))")
        if seg.status == BAD_DT:
            raise ValueError(f"controller: {type(self.controller).__name__}.choose returned dt = {seg.dt_next!r} at "
                             f"t = {clock.t:.6g}; a step must be positive")
        if seg.status == NONFINITE or not math.isfinite(seg.energy):
            step = clock.step + 1 if math.isfinite(seg.energy) else clock.step  # a finite state without a rate
            raise BlowUpError_(step, self._blow_up(step, clock.t, None))
        if self.bound is not None and seg.energy > self.bound:
            raise BlowUpError_(clock.step, self._blow_up(
                clock.step, clock.t, f"the energy {seg.energy:.6g} passed the bound {self.bound:.6g}{self.bound_note}"))

    def _blow_up(self, step: int, t: float, reason: str | None) -> BlowUpError:
        return BlowUpError(step, t, reason)


class BlowUpError(RuntimeError):
    """The state became non-finite, or its energy passed the bound; ``step``/``t`` name the first bad step,
    ``checkpoint`` the last good checkpoint (where the run that raises it knows one)."""

    def __init__(self, step: int, t: float, reason: str | None = None, checkpoint: int | None = None,
                 directory: Any = None):
        self.step, self.t, self.reason, self.checkpoint, self.directory = step, t, reason, checkpoint, directory
        where = f"last good checkpoint: step {checkpoint} in {directory}" if checkpoint is not None else \
            "no checkpoint was written before it"
        super().__init__(f"blow-up: {reason or 'the solution became NaN/inf'} at step {step} (t = {t:.6g}); "
                         f"{where}. Reduce the time step (dt or cfl) or raise the resolution.")


class BlowUpError_(Exception):  # noqa: N801  (carries the public error out of the segment logic)
    def __init__(self, step: int, error: Exception):
        super().__init__(str(error))
        self.step, self.error = step, error


def _band(cstate) -> float:
    """The dt a CFL band holds (0: none), for the checkpoints' metadata."""
    if isinstance(cstate, dict) and "dt" in cstate:
        return float(cstate["dt"])
    return 0.0
