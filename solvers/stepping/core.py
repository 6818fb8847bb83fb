"""The stepping core: one step (:func:`step`) on a named loop carry (:class:`Carry`), and the two loops over it.

Every way of advancing a state goes through the integrator's :meth:`~solvers.Integrator.step_aux`:
:func:`simulate`'s segments (:func:`segment`, a ``lax.while_loop`` that stops early for a stop time, a new dt of
dt-dependent coefficients, a blow-up or a full row buffer), and :func:`fixed_steps` (a ``lax.scan`` of a static
number of fixed steps, reverse-mode differentiable), which serves :func:`~solvers.rollout` and
:meth:`~solvers.Integrator.advance`. A segment's step asks the controller (:class:`~solvers.Controller`) for dt from
the previous step's aux, checks that dt (finite, positive, no stop within 1.5 steps, the coefficients' dt), takes
the step, keeps the segment's elapsed time as a Kahan sum, checks for blow-up, and computes the diagnostics row and
the outputs' device-side samples that fall due after it.

The carry has four parts, each owned by one party: ``state`` (the integrator's), ``clock`` (:class:`Clock`: time,
steps, their sizes and why the segment stops), ``controller`` (:class:`ControllerState`: what the controller chooses
from, saved in checkpoints) and ``outputs`` (:class:`OutputsState`: the diagnostics rows' buffer, :class:`Rows`, and
the samplers' accumulators, :class:`Sampler`). The core reads the controller only through ``choose`` and the outputs
only through their ``init``/``update`` (a row's ``due``/``record``/``fill``).

The diagnostics rows are no host event: a row is computed right after its step, in a ``lax.cond``, into a buffer
that comes back with the segment's step sizes in one transfer. On a GPU (:func:`host_control_flow`), where a branch
costs a round trip to the host, the loop turns once per row instead (an inner loop over the steps up to it, then
the row). Where the controller asks for the rate, a row's CFL number is ``dt`` times the rate that the next step's
first stage computes from the same state (filled in one step later; the segment's last row after the loop), so
the row transforms nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .controllers import AT_REST, BAD_DT, BOUND, NEAR_STOP, NEW_DT, NONFINITE, RAN, StepAux

__all__ = ["AT_REST", "BAD_DT", "BOUND", "MAX_ROWS", "MAX_SEGMENT", "NEAR_STOP", "NEW_DT", "NONFINITE", "RAN",
           "ROWS_PER_SEGMENT", "Carry", "Clock", "ControllerState", "Core", "OutputsState", "RowBuffer", "Rows",
           "Sampler", "Window", "first_aux", "fixed_steps", "host_control_flow", "pack_dtype", "segment", "start",
           "step"]

#: most steps in one segment (the size of the buffer of step sizes it returns)
MAX_SEGMENT = 1000
#: diagnostics rows per segment at most: a segment ends after this many rows even with no host event before
ROWS_PER_SEGMENT = 8
#: the size of a segment's row buffer (its rows, and the last step's row of a landing)
MAX_ROWS = ROWS_PER_SEGMENT + 2


def pack_dtype():
    """The dtype of the vectors a step program returns: float64 where JAX has it, else float32."""
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def host_control_flow(mesh) -> bool:
    """Whether a branch or loop turn whose predicate the devices compute costs a round trip to the host: on GPUs
    XLA copies each ``lax.cond`` predicate and each ``lax.while_loop`` condition to the host and waits for it. Where
    True the step programs select with ``jnp.where`` instead of branching (on CPUs the host runs the program)."""
    return next(iter(mesh.devices.flat)).platform == "gpu"


@dataclass(frozen=True)
class Sampler:
    """Device-side accumulation of an output (e.g. statistics): ``update(acc, state, t, dt, step) -> acc`` after
    every step whose number ``step`` is a multiple of ``every``; ``init(state) -> acc`` its zero (traced: it may be
    given abstract shapes)."""

    init: Callable[[Any], Any]
    update: Callable[[Any, Any, jax.Array, jax.Array], Any]
    every: int


class Clock(NamedTuple):
    """A segment's clock: the device time ``t``, the segment's elapsed time as a Kahan sum (``elapsed`` + ``comp``),
    its step count ``steps`` and step sizes ``dts``, the dt chosen but not taken (``dt_next``), why it stops
    (``reason``) and the energy after the last step."""

    t: Any
    elapsed: Any
    comp: Any
    steps: Any
    dts: Any
    dt_next: Any
    reason: Any
    energy: Any


class ControllerState(NamedTuple):
    """What the controller chooses from: the last step's ``aux`` and its own state ``cstate`` (a pytree)."""

    aux: Any
    cstate: Any


class RowBuffer(NamedTuple):
    """The diagnostics rows' device state (see :class:`Rows`): the buffer ``rows`` and its fill ``count``,
    whether the last row's CFL number awaits the next step's rate (``pending``), that row's ``dt``, and whether a
    row is ``due`` after the last step."""

    rows: Any
    count: Any
    pending: Any
    dt: Any
    due: Any


class OutputsState(NamedTuple):
    """The outputs' device state: the diagnostics rows (:class:`RowBuffer`) and the samplers' accumulators."""

    rows: RowBuffer
    samples: Any


class Carry(NamedTuple):
    """The loop carry: ``{state, clock, controller, outputs}`` (:class:`Clock`, :class:`ControllerState`,
    :class:`OutputsState`)."""

    state: Any
    clock: Clock
    controller: ControllerState
    outputs: OutputsState


@dataclass(frozen=True)
class Rows:
    """The diagnostics rows as a device-side output: ``row(state, t, dt, rate=None) -> vector`` computed after the
    steps whose number is due (a multiple of the row interval, or the segment's last step), into a buffer of
    ``MAX_ROWS`` rows that comes back with the segment.

    Attributes:
      row: the row function. width: a buffered row's length (the step number first). cfl_position: where the row
        holds ``dt * rate``, filled from the next step's first-stage rate (``lagged``; None: no such column).
    """

    row: Callable
    width: int
    cfl_position: int | None = None
    lagged: bool = False

    def init(self, real) -> RowBuffer:
        zero = jnp.zeros((), real)
        return RowBuffer(jnp.zeros((MAX_ROWS, self.width), pack_dtype()), jnp.int32(0), jnp.array(False), zero,
                         jnp.array(False))

    def due(self, buf: RowBuffer, ok, step, w: Window, steps) -> RowBuffer:
        """Whether a row is due after the run's step ``step`` (the segment's ``steps``-th), if it was taken."""
        return buf._replace(due=ok & ((step % w.every == 0) | (w.last & (steps == w.n))))

    def record(self, buf: RowBuffer, state, t, steps, synced: bool) -> RowBuffer:
        """The row of ``state`` kept where ``buf.due``: in a ``lax.cond`` after each step, or (``synced``)
        computed either way once per row, after the steps up to it."""
        zero = jnp.zeros((), _real(state))
        pack = pack_dtype()

        def compute(s):
            values = self.row(s, t, buf.dt, rate=zero if self.lagged else None).astype(pack)
            return jnp.concatenate([steps.astype(pack)[None], values])

        vals = compute(state) if synced else jax.lax.cond(
            buf.due, compute, lambda s: jnp.zeros((self.width,), pack), state)
        k = jnp.minimum(buf.count, MAX_ROWS - 1)
        rows = buf.rows.at[k].set(jnp.where(buf.due, vals, buf.rows[k]))
        return buf._replace(rows=rows, count=buf.count + buf.due.astype(jnp.int32), pending=buf.due & self.lagged)

    def fill(self, buf: RowBuffer, rate) -> RowBuffer:
        """The CFL number of the last row kept, if ``pending``, from its state's ``rate``."""
        if not self.lagged:
            return buf
        k, col = jnp.maximum(buf.count - 1, 0), 1 + self.cfl_position
        rows = buf.rows.at[k, col].set(jnp.where(buf.pending, (buf.dt * rate).astype(buf.rows.dtype),
                                                 buf.rows[k, col]))
        return buf._replace(rows=rows)


@dataclass(frozen=True)
class Core:
    """What a step needs besides the carry and the controller: the integrator and the device-side outputs.

    Attributes:
      integrator: a bound :class:`~solvers.Integrator`. rate: the controller asks for the rate (``wants_rate``).
      rows: the diagnostics rows (:class:`Rows`), or None.
      energy_every_step: compute the energy after every step (the blow-up check without a rate, an energy bound).
      sampler: a :class:`Sampler` (one pytree of accumulators for all outputs), or None.
      synced: no branch per step (a GPU, :func:`host_control_flow`).
    """

    integrator: Any
    rate: bool = False
    rows: Rows | None = None
    energy_every_step: bool = False
    sampler: Sampler | None = None
    synced: bool = False


class Window(NamedTuple):
    """A segment's inputs besides the state (device scalars): the time to the next stop, the energy bound, a
    forced dt (the landing step), the dt the coefficients were computed for, the step budget, and the run's step
    count before the segment with the row interval (and whether the segment's last step gets a row)."""

    remaining: Any
    bound: Any
    dt_force: Any
    dt_coef: Any
    n: Any
    step0: Any
    every: Any
    last: Any


def _real(state):
    return jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype


def start(core: Core, state, t, controller: ControllerState, samples=None) -> Carry:
    """The carry at the start of a segment from ``state`` at time ``t``, the controller's state and the samplers'
    accumulators."""
    real = _real(state)
    zero = jnp.zeros((), real)
    clock = Clock(jnp.asarray(t, real), zero, zero, jnp.int32(0), jnp.zeros((MAX_SEGMENT,), pack_dtype()),
                  jnp.zeros((), pack_dtype()), jnp.int32(RAN), jnp.full((), jnp.nan, real))
    rows = core.rows.init(real) if core.rows is not None else None
    return Carry(state, clock, controller, OutputsState(rows, samples))


def _reason(core: Core, c: Carry, dt, w: Window):
    """Why the step of ``dt`` (the controller's) is not taken, or ``RAN``; a forced dt is always taken."""
    remaining = w.remaining - c.clock.elapsed
    reason = jnp.where(~(dt > 0), BAD_DT, jnp.where(~jnp.isfinite(dt), AT_REST, RAN))
    if core.integrator.dt_coefficients:
        reason = jnp.where((reason == RAN) & (dt != w.dt_coef), NEW_DT, reason)
    reason = jnp.where((reason == RAN) & (remaining <= 1.5 * dt), NEAR_STOP, reason)
    reason = jnp.where(w.dt_force > 0, RAN, reason)
    if core.rate:
        reason = jnp.where(jnp.isfinite(c.controller.aux.rate), reason, NONFINITE)
    return reason.astype(jnp.int32)


def _choice(core: Core, controller, c: Carry, w: Window):
    """The controller's dt for the next step from ``c`` (the state's real dtype; in the pack dtype for the host:
    a forced dt where given), its new state, and why the step would not be taken (``RAN``: it is)."""
    real = _real(c.state)
    remaining = w.remaining - c.clock.elapsed
    chosen, cstate = controller.choose(c.controller.aux, c.controller.cstate, c.clock.t, c.clock.t + remaining)
    chosen = jnp.asarray(chosen)
    forced = w.dt_force > 0
    dt = jnp.where(forced, jnp.asarray(w.dt_force, real), chosen.astype(real))
    dt_pack = jnp.where(forced, jnp.asarray(w.dt_force, pack_dtype()), chosen.astype(pack_dtype()))
    return dt, dt_pack, cstate, _reason(core, c, chosen.astype(real), w)


def _tick(clock: Clock, dt, dt_pack, t0, real) -> Clock:
    """``clock`` after a step of ``dt``: the elapsed time as a Kahan sum (it keeps its rounding error, not one per
    step), ``t = t0 + elapsed``, the step counted and its size kept."""
    y = dt - clock.comp
    elapsed = clock.elapsed + y
    comp = (elapsed - clock.elapsed) - y
    return clock._replace(t=(t0 + elapsed).astype(real), elapsed=elapsed, comp=comp, steps=clock.steps + 1,
                          dts=clock.dts.at[clock.steps].set(dt_pack), dt_next=dt_pack)


def step(core: Core, controller, c: Carry, coeffs, w: Window, t0) -> Carry:
    """One step from ``c`` (which the controller's checks let go, see :func:`segment`): the controller's dt, the
    step, the clock (``t = t0 + elapsed``), the blow-up checks, and the outputs' device state after it (whether a
    row is due, the samples). Pure and jit-able; the body of a segment."""
    integ = core.integrator
    real = _real(c.state)
    dt, dt_pack, cstate, _ = _choice(core, controller, c, w)
    state, aux = integ.step_aux(c.state, c.clock.t, dt, coeffs, rate=core.rate,
                                **({"synced": True} if core.synced else {}))
    cstate = jax.tree.map(lambda a, b: jnp.asarray(a).astype(jnp.asarray(b).dtype), cstate, c.controller.cstate)
    clock = _tick(c.clock, dt, dt_pack, t0, real)
    if core.energy_every_step:
        energy = integ.equation.energy(state).astype(real)
        reason = jnp.where(~jnp.isfinite(energy), NONFINITE, jnp.where(energy > w.bound, BOUND, clock.reason))
        clock = clock._replace(energy=energy, reason=reason)
    ok = clock.reason == RAN
    rows, samples = c.outputs
    if core.rows is not None:  # the previous row's state started this step: its CFL number from this step's rate
        rows = core.rows.fill(rows, aux.rate) if core.rate else rows
        rows = core.rows.due(rows._replace(pending=jnp.array(False), dt=dt), ok, w.step0 + clock.steps, w,
                             clock.steps)
    if core.sampler is not None:
        take_sample = ok & ((w.step0 + clock.steps) % core.sampler.every == 0)
        samples = _sample(core, samples, take_sample, state, clock.t, dt, w.step0 + clock.steps)
    return Carry(state, clock, ControllerState(aux, cstate), OutputsState(rows, samples))


def _sample(core: Core, samples, take, state, t, dt, step):
    update = core.sampler.update
    if core.synced:
        new = update(samples, state, t, dt, step)
        return jax.tree.map(lambda a, b: jnp.where(take, a, b), new, samples)
    return jax.lax.cond(take, lambda s: update(s, state, t, dt, step), lambda s: s, samples)


def _record(core: Core, c: Carry) -> Carry:
    rows = core.rows.record(c.outputs.rows, c.state, c.clock.t, c.clock.steps, core.synced)
    return c._replace(outputs=c.outputs._replace(rows=rows))


def segment(core: Core, controller, c: Carry, coeffs, w: Window) -> Carry:
    """Up to ``w.n`` steps in one ``lax.while_loop`` from ``c`` (see :func:`start`); stops early before a step that
    would come within 1.5 steps of ``w.remaining``, whose dt differs from the coefficients' (``NEW_DT``), or that
    the controller cannot give (``AT_REST``: an infinite dt, ``BAD_DT``), on a non-finite state, or where the energy
    passes ``w.bound``. The rows due after its steps are in ``c.outputs.rows`` (index in the segment first), at most
    ``MAX_ROWS``: ``n`` must be at most ``ROWS_PER_SEGMENT * every``. Returns the last carry."""
    t0 = c.clock.t
    rows = core.rows is not None
    nested = rows and core.synced

    def running(cr: Carry):  # the controller's checks before a step decide the loop, not a branch around it
        return (cr.clock.steps < w.n) & (cr.clock.reason == RAN) & (_choice(core, controller, cr, w)[3] == RAN)

    def body(cr: Carry) -> Carry:
        cr = step(core, controller, cr, coeffs, w, t0)
        return _record(core, cr) if rows else cr

    def to_row(cr: Carry) -> Carry:  # the steps up to the next row (or a stop), then that row
        cr = cr._replace(outputs=cr.outputs._replace(rows=cr.outputs.rows._replace(due=jnp.array(False))))
        cr = jax.lax.while_loop(lambda x: running(x) & ~x.outputs.rows.due,
                                lambda x: step(core, controller, x, coeffs, w, t0), cr)
        return _record(core, cr)

    c = jax.lax.while_loop(running, to_row if nested else body, c)
    _, dt_pack, _, why = _choice(core, controller, c, w)  # why it stopped before a step (if it did)
    clock = c.clock
    before = (clock.steps < w.n) & (clock.reason == RAN)
    clock = clock._replace(reason=jnp.where(before, why, clock.reason),
                           dt_next=jnp.where(before, dt_pack, clock.dt_next))
    if not core.energy_every_step:
        clock = clock._replace(energy=core.integrator.equation.energy(c.state).astype(_real(c.state)))
    c = c._replace(clock=clock)
    if rows and core.rate and core.rows.lagged:  # the last row's CFL number
        integ = core.integrator
        real = _real(c.state)
        buf = c.outputs.rows
        rate = jax.lax.cond(buf.pending, lambda s: integ.first_stage_rate(s, c.clock.t).astype(real),
                            lambda s: jnp.zeros((), real), c.state)
        c = c._replace(outputs=c.outputs._replace(rows=core.rows.fill(buf, rate)))
    return c


def first_aux(core: Core, state, t) -> StepAux:
    """The aux of ``state`` as a step's first stage computes it (what a controller sees before the first step)."""
    if not core.rate:
        return StepAux()
    return StepAux(core.integrator.first_stage_rate(state, t).astype(_real(state)))


def fixed_steps(integrator, state, t0, dt, n: int, coeffs, checkpoints: tuple[int, ...] = ()):
    """``n`` fixed steps of ``dt`` from time ``t0`` (the integrator's step, the clock as a segment keeps it) as a
    ``lax.scan`` (a static trip count, so reverse-mode differentiable); ``checkpoints``: nested block lengths under
    ``jax.checkpoint`` (outermost first, see :func:`~solvers.rollout`). Returns the final state."""
    real = _real(state)
    dt = jnp.asarray(dt, real)
    t0 = jnp.asarray(t0, real)
    zero = jnp.zeros((), real)

    def one(carry):
        s, t, elapsed, comp = carry
        s, _ = integrator.step_aux(s, t, dt, coeffs, rate=False)
        y = dt - comp
        s_new = elapsed + y
        return s, (t0 + s_new).astype(real), s_new, (s_new - elapsed) - y

    return _advance(one, (state, t0, zero, zero), n, tuple(checkpoints))[0]


def _advance(one: Callable, c, n: int, levels: tuple[int, ...]):
    """``n`` applications of ``one``: blocks of ``levels[0]`` under ``jax.checkpoint`` (recursively), the remainder
    as one shorter checkpointed block; no levels: a plain scan."""
    levels = tuple(k for k in levels if k < n)
    if not levels:
        return jax.lax.scan(lambda cr, _: (one(cr), None), c, length=n)[0]
    k, inner = levels[0], levels[1:]
    q, r = divmod(n, k)
    block = jax.checkpoint(lambda cr: _advance(one, cr, k, inner), prevent_cse=False)
    c = jax.lax.scan(lambda cr, _: (block(cr), None), c, length=q)[0]
    if r:  # outside the scan: keep jax.checkpoint's default prevent_cse=True (no CSE with the forward run)
        c = jax.checkpoint(lambda cr: _advance(one, cr, r, inner))(c)
    return c

