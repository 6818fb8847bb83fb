"""The driver's compiled time loop: many steps per dispatch, the time step chosen on the device.

:class:`Stepper` runs the steps between two host events (a checkpoint, a snapshot, a time to land on, the end) as one
``lax.while_loop`` (:meth:`Stepper.segment`), so the host waits for the devices once per segment instead of twice per
step. The diagnostics rows are no host event: the loop computes each one after its step, in a ``lax.cond`` (on a GPU,
where a branch costs a round trip to the host, the loop turns once per row instead: an inner loop over the steps
up to it, then the row), into a buffer, and the program (:meth:`Stepper.program`)
returns the buffer with the step sizes and the segment's scalars as one vector: one dispatch and one transfer per
segment, whatever ``diag_every`` (the host writes the rows, :mod:`solvers._record`). Each step's CFL rate comes from the
step's own first evaluation (:meth:`~solvers.integrators.Integrator.controlled_step`), its blow-up check from that rate
or from the energy. Under CFL control a row's CFL number (:attr:`~solvers.Equation.cfl_diagnostic`) is filled in by the
next step, from that rate of the same state; the last row of a segment computes it after the loop
(:meth:`~solvers.integrators.Integrator.first_stage_rate`): the same number, and the row transforms nothing for it.

Time-step rules (``Control``):

- fixed ``dt``: the host knows every step; the device takes exactly the steps it is given;
- CFL, schemes without dt-dependent coefficients (``rk4``, ``lsrk4``): ``dt = min(cfl / rate, dt_cap)`` every step,
  the rule of the host loop it replaces;
- CFL, schemes whose coefficients depend on dt (``etdrk4``, ``ifrk4``, ``imex``, split-step): dt is kept while the
  CFL number ``dt * rate`` stays in ``[BAND[0], BAND[1]] * cfl`` (and below ``dt_cap``), and reset to
  ``cfl / rate`` when it leaves the band, as DNS codes do: the coefficients are rebuilt only then.

Clock: the host keeps the time in float64 (the sum of the steps' dt, as before); a step that would land on a stop
time is never taken inside a longer segment: the loop stops about one step before it (the device's own clock is
only compared with a margin), and the host takes the last steps, deciding the landing in float64 exactly as the
host loop did. So the steps taken, and hence a resumed run, do not depend on where the segments start. The landing
step is a segment of one step whose dt the host forces (``dt_force``): the same compiled program, so a run compiles
one step program, not two.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._record import pack_dtype
from .integrators import _base as _integrators  # host_control_flow, read at trace time (tests patch it)

#: the CFL band (fractions of the target) in which schemes with dt-dependent coefficients keep their dt
BAND = (0.8, 1.2)
#: most steps in one segment (the size of the buffer of step sizes it returns)
MAX_SEGMENT = 1000
#: diagnostics rows per segment at most: a segment ends after this many rows even with no host event before,
#: so the progress bar moves and the row buffer stays small (8 rows cost one program start, about 2 ms on 8 CPU
#: devices, instead of 8)
ROWS_PER_SEGMENT = 8
#: the size of a segment's row buffer (its rows, and the last step's row of a landing)
MAX_ROWS = ROWS_PER_SEGMENT + 2
#: why a segment stopped
RAN, NEAR_STOP, NEW_DT, NONFINITE, BOUND, AT_REST = range(6)


@dataclass(frozen=True)
class Control:
    """How the time step is chosen.

    Attributes:
      dt: the fixed step, or None for CFL control.
      cfl: target CFL number (``dt * max_rate``).
      dt_cap: largest step (``min(dt_max, 0.9 * stable_dt)``).
      band: keep dt while the CFL number is in ``band * cfl`` (schemes with dt-dependent coefficients), or None.
      energy_every_step: compute the energy after every step (fixed dt: the blow-up check; an energy bound).
    """

    dt: float | None
    cfl: float
    dt_cap: float
    band: tuple[float, float] | None
    energy_every_step: bool


@dataclass
class Segment:
    """What one compiled segment did: ``steps`` steps of ``dts``; ``status`` says why it stopped; ``dt_next`` is
    the step it would take next (NEAR_STOP, NEW_DT); ``energy`` that of the returned state; ``rows`` the
    diagnostics rows computed, as ``(index of the step in the segment, 1-based; packed values)``."""

    state: Any
    steps: int
    dts: list[float]
    status: int
    dt_next: float
    energy: float
    rows: list[tuple[int, np.ndarray]] = dataclasses.field(default_factory=list)


class Stepper:
    """The compiled programs of a run: the step program (a segment of steps with its diagnostics rows; also the
    single landing step), the coefficients.

    Args:
      integ: the integrator (its equation and grid).
      control: the time-step rule.
      row: ``row(state, t, dt, rate=None) -> vector``, the diagnostics row
        (:meth:`solvers._record.Recorder.row`); None for none.
      cfl_position: where the row holds ``dt * rate`` (:attr:`solvers._record.Recorder.cfl_position`), or None.
    """

    def __init__(self, integ, control: Control, row: Callable | None = None, cfl_position: int | None = None):
        self.integ, self.eq, self.control, self.row = integ, integ.equation, control, row
        self.cfl_position = cfl_position if row is not None else None
        self._program = jax.jit(self.program, donate_argnums=0)
        self._coefficients = jax.jit(integ.coefficients)
        self._coef_cache: tuple[float, Any] | None = None
        self._row_size = 0 if row is None else int(jax.eval_shape(row, self.eq.abstract_state(), 0.0, 1.0).size)

    # ----- device programs ------------------------------------------------------------------------
    def choose(self, rate: jax.Array | None, dt_band: jax.Array, remaining: jax.Array, dt_force: jax.Array):
        """``(dt, go, (reason, dt_next, rate))`` for the next step from the state's rate (see the module's rules;
        ``rate`` 0 under a fixed dt); ``dt_force > 0`` is taken as it is (a landing step)."""
        c = self.control
        real = remaining.dtype
        forced = dt_force > 0
        if c.dt is not None:
            dt = jnp.where(forced, dt_force, jnp.asarray(c.dt, real))
            return dt, jnp.array(True), (jnp.int32(RAN), dt, jnp.zeros((), real))
        cand = jnp.where(rate > 0, c.cfl / jnp.where(rate > 0, rate, 1), jnp.inf).astype(real)
        cand = jnp.minimum(cand, jnp.asarray(c.dt_cap, real))
        if c.band is not None:
            lo, hi = c.band
            now = dt_band * rate
            change = (dt_band <= 0) | (now > hi * c.cfl) | ((now < lo * c.cfl) & (dt_band < cand))
            dt = jnp.where(change, cand, dt_band)
        else:
            change, dt = jnp.array(False), cand
        reason = jnp.where(~jnp.isfinite(rate), NONFINITE, jnp.where(
            ~jnp.isfinite(cand), AT_REST, jnp.where(change, NEW_DT, jnp.where(remaining <= 1.5 * dt, NEAR_STOP, RAN))))
        dt = jnp.where(forced, dt_force, dt)
        reason = jnp.where(forced & jnp.isfinite(rate), RAN, reason)
        return dt, reason == RAN, (reason.astype(jnp.int32), dt, rate)

    def segment(self, state, t, dt_band, coeffs, n, remaining, bound, dt_force, rows=None):
        """Up to ``n`` steps (``n <= MAX_SEGMENT``) in one ``lax.while_loop``; stops early before a step that
        would come within 1.5 steps of ``remaining`` (the time to the next stop), where dt must change (band
        rule), on a non-finite state, or where the energy passes ``bound``. ``dt_force > 0``: every step takes
        that dt (the host's landing step, ``n = 1``).

        ``rows = (step0, every, last)`` (with a ``row`` function): after each step that brings the run's step count
        (``step0`` before the segment) to a multiple of ``every``, or after the ``n``-th step where ``last``, the
        diagnostics row of the new state (at the device's time and that step's dt) is computed in a ``lax.cond`` and
        kept, with the step's index in the segment (1-based) first; a step that failed the blow-up check gets none. On a
        GPU (:func:`~solvers.integrators._base.host_control_flow`) the loop turns once per row instead: an inner loop
        takes the steps up to the row (or a stop) and the row is computed after it, with no branch (a segment that stops
        between rows computes one row it does not keep; the program holds more bytes: compiled for 8 CPU devices, the 3D
        CFL program at 128^3 float32 held 69.2 bytes per point this way against 63.1, and 72.8 with the GPU's stage loop
        as well). At most ``MAX_ROWS`` rows: ``n`` at most :meth:`row_limit`. Under CFL control a row's CFL number
        (``cfl_position``) is left out of that computation and filled in by the next step, from its first stage's rate
        of the same state (``fill``); the last row's after the loop.

        Returns ``(state, t, steps, status, dts, dt_next, energy, rows, count)`` (``rows`` an empty buffer
        without rows).
        """
        c, eq, integ = self.control, self.eq, self.integ
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        t, dt_band, remaining, dt_force = (jnp.asarray(v, real) for v in (t, dt_band, remaining, dt_force))
        want_rate = c.dt is None
        pack = pack_dtype()
        width = 1 + self._row_size if rows is not None and self.row is not None else 0
        later = bool(width) and want_rate and self.cfl_position is not None  # CFL numbers from the next step
        zero = jnp.zeros((), real)
        nested = bool(width) and _integrators.host_control_flow(eq)  # a GPU: one loop turn per row, no branch per step

        def record(buf, j, i, due, state, t, dt):
            """The row of ``state`` kept where ``due``: after each step in a ``lax.cond``, or (``nested``) computed
            either way once per row, after the steps up to it."""
            def compute(s):
                return jnp.concatenate([i.astype(pack)[None], self.row(
                    s, t, dt, rate=zero if later else None).astype(pack)])

            vals = compute(state) if nested else jax.lax.cond(
                due, compute, lambda s: jnp.zeros((width,), pack), state)
            k = jnp.minimum(j, MAX_ROWS - 1)
            return buf.at[k].set(jnp.where(due, vals, buf[k])), j + due.astype(jnp.int32)

        def fill(buf, j, pending, dt, rate):
            """The CFL number of the last row kept, if ``pending``, from its state's ``rate`` (as ``row``)."""
            if not later:
                return buf
            k, col = jnp.maximum(j - 1, 0), 1 + self.cfl_position
            return buf.at[k, col].set(jnp.where(pending, (dt * rate).astype(pack), buf[k, col]))

        def body(carry):  # one step; ``due``: a row is due after it
            state, t, s, comp, i, _, dts, _, energy, buf, j, pending, dt_row, _ = carry
            state, dt, go, (reason, dt_next, rate) = integ.controlled_step(
                state, t, coeffs, lambda r: self.choose(r, dt_band, remaining - s, dt_force), rate=want_rate)
            buf = fill(buf, j, pending, dt_row, rate)  # the previous row's state is the one this step started from
            y = dt - comp  # Kahan: the elapsed time s keeps its rounding error, not n of them
            s_new = s + y
            comp = jnp.where(go, (s_new - s) - y, comp)
            s = jnp.where(go, s_new, s)
            if c.energy_every_step:
                energy = jnp.where(go, eq.energy(state).astype(real), energy)
                bad = go & ~jnp.isfinite(energy)
                over = go & jnp.isfinite(energy) & (energy > bound)
                reason = jnp.where(bad, NONFINITE, jnp.where(over, BOUND, reason))
            dts = jnp.where(go, dts.at[i].set(dt), dts)
            t, i = jnp.where(go, t + dt, t), i + go.astype(jnp.int32)
            due = jnp.array(False)
            if width:
                step0, every, last = rows
                due = go & (reason == RAN) & (((step0 + i) % every == 0) | (last & (i == n)))
            if width and not nested:  # the row right after its step, in a branch
                buf, j = record(buf, j, i, due, state, t, dt)
                return state, t, s, comp, i, reason, dts, dt_next, energy, buf, j, due, dt, due
            return state, t, s, comp, i, reason, dts, dt_next, energy, buf, j, jnp.array(False), dt, due

        def running(cr):
            return (cr[4] < n) & (cr[5] == RAN)

        def to_row(carry):  # the steps up to the next row (or a stop), then that row: one loop turn per row
            carry = jax.lax.while_loop(lambda cr: running(cr) & ~cr[13], body, carry[:13] + (jnp.array(False),))
            state, t, s, comp, i, reason, dts, dt_next, energy, buf, j, _, dt_row, due = carry
            buf, j = record(buf, j, i, due, state, t, dt_row)
            return state, t, s, comp, i, reason, dts, dt_next, energy, buf, j, due, dt_row, due

        start = (state, t, zero, zero, jnp.int32(0), jnp.int32(RAN), jnp.zeros((MAX_SEGMENT,), real), zero,
                 jnp.full((), jnp.nan, real), jnp.zeros((MAX_ROWS if width else 0, width), pack), jnp.int32(0),
                 jnp.array(False), zero, jnp.array(False))
        state, t, _, _, i, status, dts, dt_next, energy, buf, j, pending, dt_row, _ = jax.lax.while_loop(
            running, to_row if nested else body, start)
        if later:  # the last row's CFL number: no step of this segment followed it
            rate = jax.lax.cond(pending, lambda s: integ.first_stage_rate(s, t).astype(real), lambda s: zero, state)
            buf = fill(buf, j, pending, dt_row, rate)
        if not c.energy_every_step:
            energy = eq.energy(state).astype(real)
        return state, t, i, status, dts, dt_next, energy, buf, j

    def program(self, state, t, dt_band, coeffs, n, remaining, bound, dt_force, step0, every, last):
        """What one dispatch runs: :meth:`segment` with its diagnostics rows (``rows = (step0, every, last)``).

        Returns ``(state, vector)``: the vector (:func:`~solvers._record.pack_dtype`) holds ``steps, status,
        dt_next, energy, row count``, the ``MAX_SEGMENT`` step sizes, then the row buffer: the host reads
        everything in one transfer.
        """
        pack = pack_dtype()
        state, _, i, status, dts, dt_next, energy, buf, j = self.segment(
            state, t, dt_band, coeffs, n, remaining, bound, dt_force, rows=(step0, every, last))
        head = jnp.stack([v.astype(pack) for v in (i, status, dt_next, energy, j)])
        return state, jnp.concatenate([head, dts.astype(pack), buf.ravel()])

    def lower(self):
        """The step program (:meth:`program`, the state donated as the driver donates it) lowered on the
        equation's abstract state, with rows: nothing is allocated. The memory check compiles it
        (:func:`solvers._memory.program_bytes`) and tests read its HLO."""
        like = self.eq.abstract_state()
        with jax.set_mesh(self.eq.grid.mesh):
            coeffs = jax.eval_shape(self.integ.coefficients, 1.0) if self.integ.dt_coefficients else ()
            return self._program.lower(like, 0.0, 0.0, coeffs, 10, math.inf, math.inf, 0.0, 0, 2, True)

    # ----- host side --------------------------------------------------------------------------------
    def coefficients(self, dt: float):
        """The integrator's coefficients for ``dt`` (one program, cached for the last dt)."""
        if self._coef_cache is None or self._coef_cache[0] != dt:
            self._coef_cache = (dt, self._coefficients(dt))
        return self._coef_cache[1]

    def row_limit(self, every: int) -> int:
        """The most steps of a segment with rows every ``every`` steps: ``ROWS_PER_SEGMENT`` rows."""
        return ROWS_PER_SEGMENT * every

    def run_segment(self, state, t: float, dt_band: float, n: int, remaining: float, bound: float,
                    dt_force: float = 0.0, rows: tuple[int, int, bool] | None = None) -> Segment:
        """One program (see :meth:`program`) from host values; ``remaining`` may be ``inf``. ``rows = (step0,
        every, last)``: the diagnostics rows to compute (:meth:`segment`), returned in ``Segment.rows`` as
        ``(index in the segment, values)``; ``n`` must then be at most :meth:`row_limit`."""
        coeffs = ()
        if self.integ.dt_coefficients:
            dt = dt_force if dt_force > 0 else self.control.dt if self.control.dt is not None else dt_band
            coeffs = self.coefficients(dt if dt > 0 else 1.0)  # dt 0: the first step only chooses dt (NEW_DT)
        n = min(int(n), MAX_SEGMENT)
        step0, every, last = (0, 1 << 30, False) if rows is None or self.row is None else rows
        if rows is not None and n > self.row_limit(every):
            raise ValueError(f"a segment of {n} steps with rows every {every} steps overflows its row buffer")
        state, vec = self._program(state, t, dt_band, coeffs, n, remaining, bound, dt_force, step0, every, last)
        v = np.asarray(jax.device_get(vec))  # one transfer per program
        steps, status, dt_next, energy, count = int(v[0]), int(v[1]), float(v[2]), float(v[3]), int(v[4])
        k = 5 + MAX_SEGMENT
        buf = v[k:].reshape(MAX_ROWS, -1) if self.row is not None else np.zeros((0, 1))
        return Segment(state, steps, [float(x) for x in v[5:5 + steps]], status, dt_next, energy,
                       [(int(r[0]), r[1:]) for r in buf[:count]])

    def fixed_steps_before(self, t: float, target: float, limit: int) -> int:
        """Fixed dt: how many whole steps the host loop took from ``t`` before the one landing on ``target``."""
        dt = self.control.dt
        k = 0
        while k < limit and not target - t <= dt * (1 + 1e-6):
            t += dt
            k += 1
        return k


def control_for(integ, controller, stable_dt: float, has_bound: bool) -> Control:
    """The :class:`Control` of a run from its step controller (``FixedStep`` or ``CFLStep``)."""
    fixed = getattr(controller, "dt", None) if not hasattr(controller, "cfl") else None
    cfl = float(getattr(controller, "cfl", 0.0))
    cap = min(float(getattr(controller, "dt_max", math.inf)), 0.9 * stable_dt)
    band = BAND if fixed is None and integ.dt_coefficients else None
    return Control(None if fixed is None else float(fixed), cfl, cap, band, fixed is not None or has_bound)
