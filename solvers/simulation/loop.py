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

from ..outputs.base import Event, Row, RunInfo, StopRun
from ..stepping import Core, Sampler, Window, lands, segment, start, steps_before
from ..stepping.controllers import AT_REST, BOUND, NEAR_STOP, NEW_DT, NONFINITE
from ..stepping.core import MAX_ROWS, MAX_SEGMENT, ROWS_PER_SEGMENT, pack_dtype
from .rows import RowFunction


@dataclass
class Clock:
    """The host's clock: step, float64 time, the last step's dt, the dt a CFL band holds, the last energy, the last
    row's values, and the outputs' samples."""

    step: int
    t: float
    dt: float
    dt_band: float
    energy: float
    last_row: dict | None = None
    samples: dict = field(default_factory=dict)
    samples_dev: Any = None
    stopped: str | None = None


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
    """The compiled programs and the host loop of one run (see the module).

    Args:
      integ: the bound integrator. control: the resolved controller. outputs: the run's outputs.
      energy_bound: a blow-up bound of the energy, or ``bound(initial_energy)`` (None: none). rows: compute the
      rows the outputs ask for. synced: no branch per step (a GPU). bound_every_step: check the bound after every
      step (False: where the host sees the state, after each segment, at no cost per step).
    """

    def __init__(self, integ, control, outputs, energy_bound: float | None, rows: bool, synced: bool,
                 bound_every_step: bool = True):
        self.integ, self.eq, self.control, self.outputs = integ, integ.equation, control, outputs
        self.bound = energy_bound
        self.bound_note = "" if bound_every_step else " (simulate's default energy_bound; None turns it off)"
        wants = [int(o.row_every) for o in outputs if o.row_every]
        self.every = math.gcd(*wants) if rows and wants else None
        spectrum = any(getattr(o, "wants_spectrum", False) for o in outputs if o.row_every)
        self.row = RowFunction(self.eq, spectrum) if self.every else None
        self.columns = self.row.columns if self.row else ()
        self.has_spectrum = bool(self.row and self.row.has_spectrum)
        samplers = {o.name: s for o in outputs if (s := o.sampler(self.eq)) is not None}
        self.core = Core(integ, control, row=self.row, cfl_position=self.row.cfl_position if self.row else None,
                         energy_every_step=control.dt is not None or (energy_bound is not None and bound_every_step),
                         sampler=_combined(samplers), synced=synced)
        self.samplers = samplers
        self._program = jax.jit(self.program, donate_argnums=0)
        self._coefficients = jax.jit(integ.coefficients)
        self._coef_cache: tuple[float, Any] | None = None
        self._first = None
        self._energy = None

    # ----- the device program ------------------------------------------------------------------------
    def program(self, state, t, dt_band, coeffs, n, remaining, bound, dt_force, step0, every, last, samples):
        """One segment: returns ``(state, samples, vector)``; the vector (:func:`~solvers.stepping.pack_dtype`)
        holds ``steps, status, dt_next, energy, row count``, the step sizes, then the rows: one transfer."""
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        width = 1 + self.row.size if self.row else 0
        w = Window(*(jnp.asarray(v, real) for v in (dt_band, remaining, bound, dt_force)), n, step0, every, last)
        c = segment(self.core, start(self.core, state, t, width, samples), coeffs, w)
        pack = pack_dtype()
        head = jnp.stack([v.astype(pack) for v in (c.steps, c.reason, c.dt_next, c.energy, c.nrows)])
        return c.state, c.samples, jnp.concatenate([head, c.dts.astype(pack), c.rows.ravel()])

    def lower(self, samples=None):
        """The segment program lowered on the equation's abstract state (nothing allocated): what the memory
        check compiles and tests read."""
        like = self.eq.abstract_state()
        samples = self.initial_samples() if samples is None else samples
        with jax.set_mesh(self.eq.grid.mesh):
            coeffs = jax.eval_shape(self.integ.coefficients, 1.0) if self.integ.dt_coefficients else ()
            return self._program.lower(like, 0.0, 0.0, coeffs, 10, math.inf, math.inf, 0.0, 0,
                                       self.every or 1 << 30, True, samples)

    def initial_samples(self):
        """The outputs' accumulators at zero (abstract shapes where the state is abstract)."""
        if self.core.sampler is None:
            return None
        return jax.eval_shape(self.core.sampler.init, self.eq.abstract_state())

    def coefficients(self, dt: float):
        """The integrator's coefficients for ``dt`` (one program, cached for the last dt)."""
        if not self.integ.dt_coefficients:
            return ()
        if self._coef_cache is None or self._coef_cache[0] != dt:
            self._coef_cache = (dt, self._coefficients(dt))
        return self._coef_cache[1]

    def run_segment(self, state, clock: Clock, dt_band: float, n: int, remaining: float, dt_force: float = 0.0,
                    last: bool = False) -> tuple[Any, Segment]:
        dt = dt_force if dt_force > 0 else self.control.dt if self.control.dt is not None else dt_band
        coeffs = self.coefficients(dt if dt > 0 else 1.0)  # dt 0: the first step only chooses dt (NEW_DT)
        n = min(int(n), MAX_SEGMENT)
        every = self.every or 1 << 30
        if self.every and n > ROWS_PER_SEGMENT * self.every:
            raise ValueError(f"a segment of {n} steps with rows every {self.every} steps overflows its row buffer")
        bound = math.inf if self.bound is None else self.bound
        state, clock.samples_dev, vec = self._program(state, clock.t, dt_band, coeffs, n, remaining, bound, dt_force,
                                                      clock.step, every, last and self.every is not None,
                                                      clock.samples_dev)
        v = np.asarray(jax.device_get(vec))
        steps, status, count = int(v[0]), int(v[1]), int(v[4])
        k = 5 + MAX_SEGMENT
        buf = v[k:].reshape(MAX_ROWS, -1) if self.row else np.zeros((0, 1))
        return state, Segment(steps, [float(x) for x in v[5:5 + steps]], status, float(v[2]), float(v[3]),
                              [(int(r[0]), r[1:]) for r in buf[:count]])

    # ----- the host loop -------------------------------------------------------------------------------
    def run(self, state, info: RunInfo, dt_band: float, samples: dict | None = None):
        """Step from ``state`` (at ``info.t0``, ``info.step0``) to ``info.t_end`` or ``info.max_steps``; ``samples``:
        the outputs' samples to continue from (name -> pytree)."""
        clock = Clock(info.step0, info.t0, 0.0, dt_band, math.nan)
        if self.core.sampler is not None:
            zero = jax.jit(self.core.sampler.init)(state)
            given = samples or {}
            clock.samples_dev = tuple(jax.tree.map(jnp.asarray, given[n]) if n in given else z
                                      for n, z in zip(self.samplers, zero))
        self.pending: list[Row] = []
        if not info.resumed and self.row is not None:
            if self._first is None:
                self._first = jax.jit(self.row)
            values, spec = self.row.unpack(jax.device_get(self._first(state, info.t0, 0.0)))
            self.pending.append(Row(clock.step, clock.t, 0.0, values, spec))
            clock.energy = float(values["energy"]) if "energy" in values else self._energy_of(state)
        else:
            clock.energy = self._energy_of(state)
        if not math.isfinite(clock.energy):
            raise self._blow_up(clock.step, clock.t, None)
        if callable(self.bound):  # a bound that depends on the energy the run starts with
            self.bound = float(self.bound(clock.energy))
        for o in self.outputs:
            o.start(info, self._event(state, clock, False))
        self._deliver(clock)
        t_end, fixed = info.t_end, self.control.dt
        while t_end - clock.t > 0 and (info.max_steps is None or clock.step < info.max_steps):
            target = min([s for o in self.outputs if (s := o.stop_time(clock.t)) is not None
                          and clock.t < s < t_end], default=t_end)
            budget = self._steps_to_event(clock.step, info.max_steps)
            try:
                if fixed is not None:
                    k = steps_before(clock.t, target, fixed, min(budget, MAX_SEGMENT))
                    if k:
                        # dt reaches the program as an argument, as in the fixed steps of rollout and advance
                        state, seg = self.run_segment(state, clock, 0.0, k, math.inf, dt_force=fixed)
                        self._take(seg, clock, [fixed] * seg.steps)  # the host's dt, not the device's rounding
                        self._check(seg, clock)
                        landed = False
                    else:
                        state = self._land(state, clock, target, target == t_end)
                        landed = True
                else:
                    state, landed = self._cfl_steps(state, clock, budget, target, target == t_end)
            except BlowUpError_ as e:
                self._deliver(clock, before=e.step)  # the rows of the steps before a blow-up are finished work
                raise e.error from None
            try:
                self._deliver(clock)
                event = self._event(state, clock, landed and target == t_end)
                for o in self.outputs:
                    o.on_event(event)
            except StopRun as e:  # an output ends the run here, cleanly
                clock.stopped = str(e)
                break
        return state, clock

    def _energy_of(self, state) -> float:
        if self._energy is None:
            self._energy = jax.jit(self.eq.energy)
        return float(self._energy(state))

    def _event(self, state, clock: Clock, last: bool) -> Event:
        samples = dict(zip(self.samplers, clock.samples_dev)) if self.samplers else {}
        clock.samples = samples
        return Event(state, clock.step, clock.t, clock.dt, clock.dt_band, clock.energy, last, samples)

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
        state, seg = self.run_segment(state, clock, 0.0, 1, math.inf, dt_force=dt, last=last)
        self._take(seg, clock, [dt] * seg.steps, t_last=target, last=last)
        self._check(seg, clock)
        return state

    def _cfl_steps(self, state, clock: Clock, budget: int, target: float, last: bool):
        """Up to ``budget`` CFL steps, stopping after one that lands on ``target``; returns (state, landed)."""
        begin = clock.step
        remaining = target - clock.t
        seg = None
        while clock.step - begin < budget:
            state, seg = self.run_segment(state, clock, clock.dt_band, budget - (clock.step - begin), remaining)
            self._take(seg, clock, seg.dts)
            if seg.status in (NONFINITE, BOUND, AT_REST):
                self._check(seg, clock)
            if seg.status == NEW_DT:
                clock.dt_band = seg.dt_next
            elif seg.status == NEAR_STOP:
                if lands(target - clock.t, seg.dt_next):  # the landing rule, in float64
                    return self._land(state, clock, target, last), True
                # not yet: one ordinary step (the same program, no stop in sight), then look again
                state, seg = self.run_segment(state, clock, clock.dt_band, 1, math.inf)
                self._take(seg, clock, seg.dts)
                self._check(seg, clock)
                if seg.status == NEW_DT:
                    clock.dt_band = seg.dt_next
            remaining = target - clock.t
        self._check(seg, clock)
        return state, False

    def _check(self, seg: Segment, clock: Clock) -> None:
        """Raise for a segment that stopped on a non-finite state, an energy over the bound, a flow at rest."""
        if seg.status == AT_REST:
            raise ValueError("controller: the flow is at rest and the CFL controller has no dt_max: give "
                             "CFL(dt_max=...) or FixedStep(dt)")
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


def _combined(samplers: dict[str, Sampler]) -> Sampler | None:
    """One sampler for all outputs' samplers: a tuple of their accumulators, each updated on its own multiples."""
    if not samplers:
        return None
    items = list(samplers.values())
    every = math.gcd(*(s.every for s in items))

    def init(state):
        return tuple(s.init(state) for s in items)

    def update(accs, state, t, dt, step):
        out = []
        for s, acc in zip(items, accs):
            if s.every == every:
                out.append(s.update(acc, state, t, dt, step))
            else:
                new = s.update(acc, state, t, dt, step)
                take = step % s.every == 0
                out.append(jax.tree.map(lambda a, b, take=take: jnp.where(take, a, b), new, acc))
        return tuple(out)

    return Sampler(init, update, every)
