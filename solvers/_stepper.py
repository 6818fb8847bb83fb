"""The driver's compiled time loop: many steps per dispatch, the time step chosen on the device.

:class:`Stepper` runs the steps between two host events (a diagnostics row, a checkpoint, a snapshot, a time to
land on, the end) as one ``lax.while_loop`` (:meth:`Stepper.segment`), so the host waits for the devices once per
segment instead of twice per step. One dispatch (:meth:`Stepper.program`) also computes the diagnostics row the
host asked for at the segment's start (:mod:`solvers._record`) and returns everything the host reads as one
vector: one transfer per segment. Each step's CFL rate comes from the step's own first evaluation
(:meth:`~solvers.integrators.Integrator.controlled_step`), its blow-up check from that rate or from the energy.

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
step is a segment of one step whose dt the host forces (``dt_force``), and a row alone is a segment of no step: the
same compiled program, so a run compiles one step program, not three.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._record import pack_dtype

#: the CFL band (fractions of the target) in which schemes with dt-dependent coefficients keep their dt
BAND = (0.8, 1.2)
#: most steps in one segment (the size of the buffer of step sizes it returns)
MAX_SEGMENT = 1000
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
    the step it would take next (NEAR_STOP, NEW_DT); ``energy`` that of the returned state (NaN after no step
    of a fixed-dt program); ``row`` the packed values of the row asked for (None where none was)."""

    state: Any
    steps: int
    dts: list[float]
    status: int
    dt_next: float
    energy: float
    row: np.ndarray | None = None


class Stepper:
    """The compiled programs of a run: the step program (a diagnostics row, then a segment of steps; also the
    single landing step and a row alone), the coefficients.

    Args:
      integ: the integrator (its equation and grid).
      control: the time-step rule.
      row: ``row(state, t, dt) -> vector``, the diagnostics row a program computes first when asked
        (:meth:`solvers._record.Recorder.row`); None for none.
    """

    def __init__(self, integ, control: Control, row: Callable | None = None):
        self.integ, self.eq, self.control, self.row = integ, integ.equation, control, row
        self._program = jax.jit(self.program, donate_argnums=0)
        self._coefficients = jax.jit(integ.coefficients)
        self._coef_cache: tuple[float, Any] | None = None
        self._row_size = 0 if row is None else int(jax.eval_shape(row, self.eq.abstract_state(), 0.0, 1.0).size)

    # ----- device programs ------------------------------------------------------------------------
    def choose(self, rate: jax.Array | None, dt_band: jax.Array, remaining: jax.Array, dt_force: jax.Array):
        """``(dt, go, (reason, dt_next))`` for the next step from the state's rate (see the module's rules);
        ``dt_force > 0`` is taken as it is (a landing step)."""
        c = self.control
        real = remaining.dtype
        forced = dt_force > 0
        if c.dt is not None:
            dt = jnp.where(forced, dt_force, jnp.asarray(c.dt, real))
            return dt, jnp.array(True), (jnp.int32(RAN), dt)
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
        return dt, reason == RAN, (reason.astype(jnp.int32), dt)

    def segment(self, state, t, dt_band, coeffs, n, remaining, bound, dt_force):
        """Up to ``n`` steps (``n <= MAX_SEGMENT``) in one ``lax.while_loop``; stops early before a step that
        would come within 1.5 steps of ``remaining`` (the time to the next stop), where dt must change (band
        rule), on a non-finite state, or where the energy passes ``bound``. ``dt_force > 0``: every step takes
        that dt (the host's landing step, ``n = 1``).

        Returns ``(state, t, steps, status, dts, dt_next, energy)``.
        """
        c, eq, integ = self.control, self.eq, self.integ
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        t, dt_band, remaining, dt_force = (jnp.asarray(v, real) for v in (t, dt_band, remaining, dt_force))
        want_rate = c.dt is None

        def body(carry):
            state, t, s, comp, i, _, dts, _, energy = carry
            state, dt, go, (reason, dt_next) = integ.controlled_step(
                state, t, coeffs, lambda r: self.choose(r, dt_band, remaining - s, dt_force), rate=want_rate)
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
            return (state, jnp.where(go, t + dt, t), s, comp, i + go.astype(jnp.int32), reason, dts, dt_next,
                    energy)

        zero = jnp.zeros((), real)
        start = (state, t, zero, zero, jnp.int32(0), jnp.int32(RAN), jnp.zeros((MAX_SEGMENT,), real), zero,
                 jnp.full((), jnp.nan, real))
        state, t, _, _, i, status, dts, dt_next, energy = jax.lax.while_loop(
            lambda cr: (cr[4] < n) & (cr[5] == RAN), body, start)
        if not c.energy_every_step:
            energy = eq.energy(state).astype(real)
        return state, t, i, status, dts, dt_next, energy

    def program(self, state, t, dt_band, coeffs, n, remaining, bound, dt_force, row_t, row_dt, want_row):
        """What one dispatch runs: where ``want_row``, the diagnostics row of ``state`` at ``(row_t, row_dt)``
        first (in a ``lax.cond``; an optimization barrier keeps it before the steps, so the input state is not
        held through the loop), then :meth:`segment`.

        Returns ``(state, vector)``: the vector (:func:`~solvers._record.pack_dtype`) holds ``steps, status,
        dt_next, energy``, the row (zeros where not asked for), then the ``MAX_SEGMENT`` step sizes: the host
        reads everything in one transfer.
        """
        pack = pack_dtype()
        if self.row is None:
            row = jnp.zeros((0,), pack)
        else:
            row = jax.lax.cond(want_row, lambda s: self.row(s, row_t, row_dt).astype(pack),
                               lambda s: jnp.zeros((self._row_size,), pack), state)
            state, row = jax.lax.optimization_barrier((state, row))
        state, _, i, status, dts, dt_next, energy = self.segment(state, t, dt_band, coeffs, n, remaining, bound,
                                                                 dt_force)
        head = jnp.stack([v.astype(pack) for v in (i, status, dt_next, energy)])
        return state, jnp.concatenate([head, row, dts.astype(pack)])

    # ----- host side --------------------------------------------------------------------------------
    def coefficients(self, dt: float):
        """The integrator's coefficients for ``dt`` (one program, cached for the last dt)."""
        if self._coef_cache is None or self._coef_cache[0] != dt:
            self._coef_cache = (dt, self._coefficients(dt))
        return self._coef_cache[1]

    def run_segment(self, state, t: float, dt_band: float, n: int, remaining: float, bound: float,
                    dt_force: float = 0.0, row: tuple[float, float] | None = None,
                    while_running: Callable[[], Any] | None = None) -> Segment:
        """One program (see :meth:`program`) from host values; ``remaining`` may be ``inf``. ``row``: the
        ``(t, dt)`` of a diagnostics row of ``state`` to compute first (its values come back in ``Segment.row``);
        ``while_running`` is called after the dispatch, while the devices compute (the host's writes)."""
        coeffs = ()
        if self.integ.dt_coefficients:
            dt = dt_force if dt_force > 0 else self.control.dt if self.control.dt is not None else dt_band
            if n == 0 and self._coef_cache is not None:
                coeffs = self._coef_cache[1]  # no step is taken: any dt's coefficients have the program's shapes
            else:
                coeffs = self.coefficients(dt if dt > 0 else 1.0)  # dt 0: the first step only chooses dt (NEW_DT)
        rt, rdt = (0.0, 0.0) if row is None else row
        state, vec = self._program(state, t, dt_band, coeffs, min(int(n), MAX_SEGMENT), remaining, bound, dt_force,
                                   rt, rdt, row is not None)
        if while_running is not None:
            while_running()
        v = np.asarray(jax.device_get(vec))  # one transfer per program
        steps, status, dt_next, energy = int(v[0]), int(v[1]), float(v[2]), float(v[3])
        k = 4 + self._row_size
        return Segment(state, steps, [float(x) for x in v[k:k + steps]], status, dt_next, energy,
                       None if row is None else v[4:k])

    def row_only(self, state, t: float, dt: float, dt_band: float = 0.0) -> tuple[Any, np.ndarray]:
        """The diagnostics row of ``state`` at ``(t, dt)`` with no step taken (the same program as every row);
        returns ``(state, row values)``: the state is donated to the program and comes back unchanged."""
        seg = self.run_segment(state, 0.0, dt_band, 0, math.inf, math.inf, row=(t, dt))
        return seg.state, seg.row

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
