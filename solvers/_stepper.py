"""The driver's compiled time loop: many steps per dispatch, the time step chosen on the device.

:class:`Stepper` runs the steps between two host events (a diagnostics row, a checkpoint, a snapshot, a time to
land on, the end) as one ``lax.while_loop`` (:meth:`Stepper.segment`), so the host waits for the devices once per
segment instead of twice per step. Each step's CFL rate comes from the step's own first evaluation
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
step is a segment of one step whose dt the host forces (``dt_force``): the same compiled program, so a short run
compiles one step program, not two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

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
    the step it would take next (NEAR_STOP, NEW_DT); ``energy`` that of the returned state."""

    state: Any
    steps: int
    dts: list[float]
    status: int
    dt_next: float
    energy: float


class Stepper:
    """The compiled programs of a run: the segment loop, the single (landing) step, the coefficients.

    Args:
      integ: the integrator (its equation and grid).
      control: the time-step rule.
    """

    def __init__(self, integ, control: Control):
        self.integ, self.eq, self.control = integ, integ.equation, control
        self._segment = jax.jit(self.segment, donate_argnums=0)
        self._coefficients = jax.jit(integ.coefficients)
        self._coef_cache: tuple[float, Any] | None = None

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

    # ----- host side --------------------------------------------------------------------------------
    def coefficients(self, dt: float):
        """The integrator's coefficients for ``dt`` (one program, cached for the last dt)."""
        if self._coef_cache is None or self._coef_cache[0] != dt:
            self._coef_cache = (dt, self._coefficients(dt))
        return self._coef_cache[1]

    def run_segment(self, state, t: float, dt_band: float, n: int, remaining: float, bound: float,
                    dt_force: float = 0.0) -> Segment:
        """One segment (see :meth:`segment`) from host values; ``remaining`` may be ``inf``."""
        coeffs = ()
        if self.integ.dt_coefficients:
            dt = dt_force if dt_force > 0 else self.control.dt if self.control.dt is not None else dt_band
            coeffs = self.coefficients(dt if dt > 0 else 1.0)  # dt 0: the first step only chooses dt (NEW_DT)
        out = self._segment(state, t, dt_band, coeffs, min(int(n), MAX_SEGMENT), remaining, bound, dt_force)
        steps, status, dts, dt_next, energy = jax.device_get(out[2:])  # one transfer per segment
        steps = int(steps)
        return Segment(out[0], steps, [float(v) for v in dts[:steps]], int(status), float(dt_next), float(energy))

    def land_step(self, state, t: float, dt: float, bound: float) -> Segment:
        """A single step of exactly ``dt`` (coefficients for ``dt``): a segment of one forced step."""
        return self.run_segment(state, t, 0.0, 1, math.inf, bound, dt_force=dt)

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
