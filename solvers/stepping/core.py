"""The stepping core: one step (:func:`step`) on a named loop carry (:class:`Carry`), and the two loops over it.

Every way of advancing a state goes through the integrator's :meth:`~solvers.Integrator.step_aux`:
:func:`simulate`'s segments (:func:`segment`, a ``lax.while_loop`` that stops early for a stop time, a new dt of
dt-dependent coefficients, a blow-up or a full row buffer), and :func:`fixed_steps` (a ``lax.scan`` of a static
number of fixed steps, reverse-mode differentiable), which serves :func:`~solvers.rollout` and
:meth:`~solvers.Integrator.advance`. A segment's step asks the controller (:class:`~solvers.Controller`) for dt from
the previous step's aux, checks that dt (finite, positive, no stop within 1.5 steps, the coefficients' dt), takes
the step, keeps the segment's elapsed time as a Kahan sum, checks for blow-up, and computes the diagnostics row and
the outputs' device-side samples that fall due after it.

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
           "ROWS_PER_SEGMENT", "Carry", "Core", "Sampler", "Window", "first_aux", "fixed_steps", "host_control_flow",
           "pack_dtype", "segment", "start", "step"]

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


@dataclass(frozen=True)
class Core:
    """What a step needs besides the carry and the controller: the integrator and what a segment computes after
    its steps.

    Attributes:
      integrator: a bound :class:`~solvers.Integrator`. rate: the controller asks for the rate (``wants_rate``).
      row: ``row(state, t, dt, rate=None) -> vector`` (the diagnostics row), or None.
      cfl_position: where the row holds ``dt * rate`` (filled from the next step's rate where ``rate``).
      energy_every_step: compute the energy after every step (the blow-up check without a rate, an energy bound).
      sampler: a :class:`Sampler` (one pytree of accumulators for all outputs), or None.
      synced: no branch per step (a GPU, :func:`host_control_flow`).
    """

    integrator: Any
    rate: bool = False
    row: Callable | None = None
    cfl_position: int | None = None
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


class Carry(NamedTuple):
    """The loop carry, by name: the state and clock (device time ``t``, the segment's elapsed time as a Kahan sum
    ``elapsed`` + ``comp``, its step count ``steps``), why it stops (``reason``, ``dt_next``: the dt chosen but not
    taken), the step sizes ``dts``, the energy after the last step, the rows buffer (``rows``, ``nrows``;
    ``pending``: the last row's CFL number awaits the next step's rate; ``dt_row``: that row's dt; ``due``: a row is
    due), the samples, and the controller's input: the last step's ``aux`` and the controller state ``cstate``."""

    state: Any
    t: Any
    elapsed: Any
    comp: Any
    steps: Any
    reason: Any
    dts: Any
    dt_next: Any
    energy: Any
    rows: Any
    nrows: Any
    pending: Any
    dt_row: Any
    due: Any
    samples: Any
    aux: Any
    cstate: Any


def _real(state):
    return jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype


def start(core: Core, state, t, aux, cstate, width: int = 0, samples=None) -> Carry:
    """The carry at the start of a segment (``width``: a row's length, 0 without rows)."""
    real = _real(state)
    zero = jnp.zeros((), real)
    return Carry(state, jnp.asarray(t, real), zero, zero, jnp.int32(0), jnp.int32(RAN),
                 jnp.zeros((MAX_SEGMENT,), pack_dtype()), jnp.zeros((), pack_dtype()), jnp.full((), jnp.nan, real),
                 jnp.zeros((MAX_ROWS if width else 0, width), pack_dtype()), jnp.int32(0), jnp.array(False), zero,
                 jnp.array(False), samples, aux, cstate)


def _reason(core: Core, c: Carry, dt, w: Window):
    """Why the step of ``dt`` (the controller's) is not taken, or ``RAN``; a forced dt is always taken."""
    remaining = w.remaining - c.elapsed
    reason = jnp.where(~(dt > 0), BAD_DT, jnp.where(~jnp.isfinite(dt), AT_REST, RAN))
    if core.integrator.dt_coefficients:
        reason = jnp.where((reason == RAN) & (dt != w.dt_coef), NEW_DT, reason)
    reason = jnp.where((reason == RAN) & (remaining <= 1.5 * dt), NEAR_STOP, reason)
    reason = jnp.where(w.dt_force > 0, RAN, reason)
    if core.rate:
        reason = jnp.where(jnp.isfinite(c.aux.rate), reason, NONFINITE)
    return reason.astype(jnp.int32)


def _choice(core: Core, controller, c: Carry, w: Window):
    """The controller's dt for the next step from ``c`` (the state's real dtype; in the pack dtype for the host:
    a forced dt where given), its new state, and why the step would not be taken (``RAN``: it is)."""
    real = _real(c.state)
    remaining = w.remaining - c.elapsed
    chosen, cstate = controller.choose(c.aux, c.cstate, c.t, c.t + remaining)
    chosen = jnp.asarray(chosen)
    forced = w.dt_force > 0
    dt = jnp.where(forced, jnp.asarray(w.dt_force, real), chosen.astype(real))
    dt_pack = jnp.where(forced, jnp.asarray(w.dt_force, pack_dtype()), chosen.astype(pack_dtype()))
    return dt, dt_pack, cstate, _reason(core, c, chosen.astype(real), w)


def step(core: Core, controller, c: Carry, coeffs, w: Window, t0) -> Carry:
    """One step from ``c`` (which the controller's checks let go, see :func:`segment`): the controller's dt, the
    step, the clock (``t = t0 + elapsed``), the blow-up checks, the step size, and whether a row is due after it.
    Pure and jit-able; the body of a segment."""
    integ = core.integrator
    real = _real(c.state)
    dt, dt_pack, cstate, _ = _choice(core, controller, c, w)
    state, aux = integ.step_aux(c.state, c.t, dt, coeffs, rate=core.rate, **({"synced": True} if core.synced else {}))
    cstate = jax.tree.map(lambda a, b: jnp.asarray(a).astype(jnp.asarray(b).dtype), cstate, c.cstate)
    rows = _fill(core, c.rows, c.nrows, c.pending, c.dt_row, aux.rate)  # the previous row's state started it
    y = dt - c.comp  # Kahan: the elapsed time keeps its rounding error, not one per step
    elapsed = c.elapsed + y
    comp = (elapsed - c.elapsed) - y
    energy, reason = c.energy, c.reason
    if core.energy_every_step:
        energy = integ.equation.energy(state).astype(real)
        reason = jnp.where(~jnp.isfinite(energy), NONFINITE, jnp.where(energy > w.bound, BOUND, reason))
    steps = c.steps + 1
    t = (t0 + elapsed).astype(real)
    ok = reason == RAN
    due = jnp.array(False)
    if c.rows.shape[-1]:
        due = ok & (((w.step0 + steps) % w.every == 0) | (w.last & (steps == w.n)))
    samples = c.samples
    if core.sampler is not None:
        take_sample = ok & ((w.step0 + steps) % core.sampler.every == 0)
        samples = _sample(core, samples, take_sample, state, t, dt, w.step0 + steps)
    return c._replace(state=state, t=t, elapsed=elapsed, comp=comp, steps=steps, reason=reason,
                      dts=c.dts.at[c.steps].set(dt_pack), dt_next=dt_pack, energy=energy, rows=rows,
                      pending=jnp.array(False), dt_row=dt, due=due, samples=samples, aux=aux, cstate=cstate)


def _sample(core: Core, samples, take, state, t, dt, step):
    update = core.sampler.update
    if core.synced:
        new = update(samples, state, t, dt, step)
        return jax.tree.map(lambda a, b: jnp.where(take, a, b), new, samples)
    return jax.lax.cond(take, lambda s: update(s, state, t, dt, step), lambda s: s, samples)


def _record(core: Core, c: Carry) -> Carry:
    """The row of ``c.state`` kept where ``c.due``: in a ``lax.cond`` after each step, or (``synced``) computed
    either way once per row, after the steps up to it."""
    later = core.rate and core.cfl_position is not None
    zero = jnp.zeros((), _real(c.state))
    pack = pack_dtype()
    width = c.rows.shape[-1]

    def compute(s):
        values = core.row(s, c.t, c.dt_row, rate=zero if later else None).astype(pack)
        return jnp.concatenate([c.steps.astype(pack)[None], values])

    vals = compute(c.state) if core.synced else jax.lax.cond(
        c.due, compute, lambda s: jnp.zeros((width,), pack), c.state)
    k = jnp.minimum(c.nrows, MAX_ROWS - 1)
    rows = c.rows.at[k].set(jnp.where(c.due, vals, c.rows[k]))
    return c._replace(rows=rows, nrows=c.nrows + c.due.astype(jnp.int32), pending=c.due & later)


def _fill(core: Core, rows, nrows, pending, dt, rate):
    """The CFL number of the last row kept, if ``pending``, from its state's ``rate``."""
    if not core.rate or core.cfl_position is None or not rows.shape[-1]:
        return rows
    k, col = jnp.maximum(nrows - 1, 0), 1 + core.cfl_position
    return rows.at[k, col].set(jnp.where(pending, (dt * rate).astype(rows.dtype), rows[k, col]))


def segment(core: Core, controller, c: Carry, coeffs, w: Window) -> Carry:
    """Up to ``w.n`` steps in one ``lax.while_loop`` from ``c`` (see :func:`start`); stops early before a step that
    would come within 1.5 steps of ``w.remaining``, whose dt differs from the coefficients' (``NEW_DT``), or that
    the controller cannot give (``AT_REST``: an infinite dt, ``BAD_DT``), on a non-finite state, or where the energy
    passes ``w.bound``. The rows due after its steps are in ``rows`` (index in the segment first), at most
    ``MAX_ROWS``: ``n`` must be at most ``ROWS_PER_SEGMENT * every``. Returns the last carry."""
    t0 = c.t
    width = c.rows.shape[-1]
    nested = bool(width) and core.synced

    def running(cr: Carry):  # the controller's checks before a step decide the loop, not a branch around it
        return (cr.steps < w.n) & (cr.reason == RAN) & (_choice(core, controller, cr, w)[3] == RAN)

    def body(cr: Carry) -> Carry:
        cr = step(core, controller, cr, coeffs, w, t0)
        return _record(core, cr) if width else cr

    def to_row(cr: Carry) -> Carry:  # the steps up to the next row (or a stop), then that row
        cr = jax.lax.while_loop(lambda x: running(x) & ~x.due,
                                lambda x: step(core, controller, x, coeffs, w, t0), cr._replace(due=jnp.array(False)))
        return _record(core, cr)

    c = jax.lax.while_loop(running, to_row if nested else body, c)
    _, dt_pack, _, why = _choice(core, controller, c, w)  # why it stopped before a step (if it did)
    before = (c.steps < w.n) & (c.reason == RAN)
    c = c._replace(reason=jnp.where(before, why, c.reason), dt_next=jnp.where(before, dt_pack, c.dt_next))
    if width and core.rate and core.cfl_position is not None:  # the last row's CFL number
        integ = core.integrator
        real = _real(c.state)
        rate = jax.lax.cond(c.pending, lambda s: integ.first_stage_rate(s, c.t).astype(real),
                            lambda s: jnp.zeros((), real), c.state)
        c = c._replace(rows=_fill(core, c.rows, c.nrows, c.pending, c.dt_row, rate))
    if not core.energy_every_step:
        c = c._replace(energy=core.integrator.equation.energy(c.state).astype(_real(c.state)))
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

