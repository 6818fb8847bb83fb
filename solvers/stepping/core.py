"""The stepping core: one step (:func:`step`) on a named loop carry (:class:`Carry`), and the two loops over it.

Every way of advancing a state goes through :func:`step`: :func:`simulate`'s segments (:func:`segment`, a
``lax.while_loop`` that stops early for a stop time, a new dt, a blow-up or a full row buffer), and
:func:`fixed_steps` (a ``lax.scan`` of a static number of fixed steps, reverse-mode differentiable), which serves
:func:`~solvers.rollout` and :meth:`~solvers.Integrator.advance`. A step asks the integrator for its
``controlled_step`` with the controller's rule (:meth:`~solvers.stepping.controllers.Control.choose`), keeps the
segment's elapsed time as a Kahan sum, checks for blow-up, and (in segments) computes the diagnostics row and the
outputs' device-side samples that fall due after it.

The diagnostics rows are no host event: a row is computed right after its step, in a ``lax.cond``, into a buffer
that comes back with the segment's step sizes in one transfer. On a GPU (:func:`host_control_flow`), where a branch
costs a round trip to the host, the loop turns once per row instead (an inner loop over the steps up to it, then
the row) and the integrator's stage loop takes no branch. Under CFL control a row's CFL number is ``dt`` times the
rate that the next step's first stage computes from the same state (filled in one step later; the segment's last
row after the loop), so the row transforms nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .controllers import BOUND, NONFINITE, RAN, Control

__all__ = ["MAX_ROWS", "MAX_SEGMENT", "ROWS_PER_SEGMENT", "Carry", "Core", "Sampler", "Window", "fixed_steps",
           "host_control_flow", "pack_dtype", "segment", "start", "step"]

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
    """What a step needs besides the carry: the integrator, the resolved controller, and what a segment
    computes after its steps.

    Attributes:
      integrator: a bound :class:`~solvers.Integrator`. control: a :class:`Control`.
      row: ``row(state, t, dt, rate=None) -> vector`` (the diagnostics row), or None.
      cfl_position: where the row holds ``dt * rate`` (filled from the next step's rate under CFL control).
      energy_every_step: compute the energy after every step (the blow-up check of a fixed dt, an energy bound).
      sampler: a :class:`Sampler` (one pytree of accumulators for all outputs), or None.
      synced: no branch per step (a GPU, :func:`host_control_flow`).
    """

    integrator: Any
    control: Control
    row: Callable | None = None
    cfl_position: int | None = None
    energy_every_step: bool = False
    sampler: Sampler | None = None
    synced: bool = False


class Window(NamedTuple):
    """A segment's inputs besides the state (device scalars): the dt a band holds, the time to the next stop, the
    energy bound, a forced dt (the landing step), the step budget, and the run's step count before the segment
    with the row interval (and whether the segment's last step gets a row)."""

    dt_band: Any
    remaining: Any
    bound: Any
    dt_force: Any
    n: Any
    step0: Any
    every: Any
    last: Any


class Carry(NamedTuple):
    """The loop carry, by name: the state and clock (device time ``t``, the segment's elapsed time as a Kahan sum
    ``elapsed`` + ``comp``, its step count ``steps``), why it stops (``reason``, ``dt_next``), the step sizes
    ``dts``, the energy after the last step, the rows buffer (``rows``, ``nrows``; ``pending``: the last row's CFL
    number awaits the next step's rate; ``dt_row``: that row's dt; ``due``: a row is due), the samples."""

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


def _real(state):
    return jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype


def start(core: Core, state, t, width: int = 0, samples=None, record_dts: bool = True) -> Carry:
    """The carry at the start of a segment (``width``: a row's length, 0 without rows)."""
    real = _real(state)
    zero = jnp.zeros((), real)
    return Carry(state, jnp.asarray(t, real), zero, zero, jnp.int32(0), jnp.int32(RAN),
                 jnp.zeros((MAX_SEGMENT,), real) if record_dts else None, zero, jnp.full((), jnp.nan, real),
                 jnp.zeros((MAX_ROWS if width else 0, width), pack_dtype()), jnp.int32(0), jnp.array(False), zero,
                 jnp.array(False), samples)


def step(core: Core, c: Carry, coeffs, w: Window, t0) -> Carry:
    """One step from ``c``: the controlled step, the clock (``t = t0 + elapsed``), the blow-up checks, the step
    size, and whether a row is due after it. Pure and jit-able; the body of both loops."""
    integ, control = core.integrator, core.control
    real = _real(c.state)
    want_rate = control.dt is None
    state, dt, go, (reason, dt_next, rate) = integ.controlled_step(
        c.state, c.t, coeffs, lambda r: control.choose(r, w.dt_band, w.remaining - c.elapsed, w.dt_force),
        rate=want_rate, synced=core.synced)
    go = jnp.asarray(go)
    rows = _fill(core, c.rows, c.nrows, c.pending, c.dt_row, rate)  # the previous row's state started this step
    y = dt - c.comp  # Kahan: the elapsed time keeps its rounding error, not one per step
    s_new = c.elapsed + y
    comp = jnp.where(go, (s_new - c.elapsed) - y, c.comp)
    elapsed = jnp.where(go, s_new, c.elapsed)
    energy = c.energy
    if core.energy_every_step:
        energy = jnp.where(go, integ.equation.energy(state).astype(real), energy)
        bad = go & ~jnp.isfinite(energy)
        over = go & jnp.isfinite(energy) & (energy > w.bound)
        reason = jnp.where(bad, NONFINITE, jnp.where(over, BOUND, reason))
    dts = None if c.dts is None else jnp.where(go, c.dts.at[c.steps].set(dt), c.dts)
    steps = c.steps + go.astype(jnp.int32)
    t = jnp.where(go, (t0 + elapsed).astype(real), c.t)
    ok = go & (reason == RAN)
    due = jnp.array(False)
    if c.rows.shape[-1]:
        due = ok & (((w.step0 + steps) % w.every == 0) | (w.last & (steps == w.n)))
    samples = c.samples
    if core.sampler is not None:
        take = ok & ((w.step0 + steps) % core.sampler.every == 0)
        samples = _sample(core, samples, take, state, t, dt, w.step0 + steps)
    return c._replace(state=state, t=t, elapsed=elapsed, comp=comp, steps=steps, reason=reason, dts=dts,
                      dt_next=dt_next, energy=energy, rows=rows, pending=jnp.array(False), dt_row=dt, due=due,
                      samples=samples)


def _sample(core: Core, samples, take, state, t, dt, step):
    update = core.sampler.update
    if core.synced:
        new = update(samples, state, t, dt, step)
        return jax.tree.map(lambda a, b: jnp.where(take, a, b), new, samples)
    return jax.lax.cond(take, lambda s: update(s, state, t, dt, step), lambda s: s, samples)


def _record(core: Core, c: Carry) -> Carry:
    """The row of ``c.state`` kept where ``c.due``: in a ``lax.cond`` after each step, or (``synced``) computed
    either way once per row, after the steps up to it."""
    later = core.control.dt is None and core.cfl_position is not None
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
    if core.control.dt is not None or core.cfl_position is None or not rows.shape[-1]:
        return rows
    k, col = jnp.maximum(nrows - 1, 0), 1 + core.cfl_position
    return rows.at[k, col].set(jnp.where(pending, (dt * rate).astype(rows.dtype), rows[k, col]))


def segment(core: Core, c: Carry, coeffs, w: Window) -> Carry:
    """Up to ``w.n`` steps in one ``lax.while_loop`` from ``c`` (see :func:`start`); stops early before a step that
    would come within 1.5 steps of ``w.remaining``, where dt must change (band rule), on a non-finite state, or
    where the energy passes ``w.bound``. The rows due after its steps are in ``rows`` (index in the segment
    first), at most ``MAX_ROWS``: ``n`` must be at most ``ROWS_PER_SEGMENT * every``. Returns the last carry."""
    t0 = c.t
    width = c.rows.shape[-1]
    nested = bool(width) and core.synced

    def running(cr: Carry):
        return (cr.steps < w.n) & (cr.reason == RAN)

    def body(cr: Carry) -> Carry:
        cr = step(core, cr, coeffs, w, t0)
        return _record(core, cr) if width else cr

    def to_row(cr: Carry) -> Carry:  # the steps up to the next row (or a stop), then that row
        cr = jax.lax.while_loop(lambda x: running(x) & ~x.due, lambda x: step(core, x, coeffs, w, t0),
                                cr._replace(due=jnp.array(False)))
        return _record(core, cr)

    c = jax.lax.while_loop(running, to_row if nested else body, c)
    if width and core.control.dt is None and core.cfl_position is not None:  # the last row's CFL number
        integ = core.integrator
        real = _real(c.state)
        rate = jax.lax.cond(c.pending, lambda s: integ.first_stage_rate(s, c.t).astype(real),
                            lambda s: jnp.zeros((), real), c.state)
        c = c._replace(rows=_fill(core, c.rows, c.nrows, c.pending, c.dt_row, rate))
    if not core.energy_every_step:
        c = c._replace(energy=core.integrator.equation.energy(c.state).astype(_real(c.state)))
    return c


def fixed_steps(integrator, state, t0, dt, n: int, coeffs, checkpoints: tuple[int, ...] = ()):
    """``n`` fixed steps of ``dt`` from time ``t0`` with :func:`step` as a ``lax.scan`` (a static trip count, so
    reverse-mode differentiable); ``checkpoints``: nested block lengths under ``jax.checkpoint`` (outermost first,
    see :func:`~solvers.rollout`). Returns the final state."""
    # a fixed-dt control whose every step takes the forced dt: dt is an argument of the program, not a constant
    core = Core(integrator, Control(1.0, 0.0, float("inf"), None),
                synced=host_control_flow(integrator.equation.grid.mesh))
    real = _real(state)
    dt = jnp.asarray(dt, real)
    inf = jnp.asarray(jnp.inf, real)
    w = Window(jnp.zeros((), real), inf, inf, dt, n, 0, 1, False)
    t0 = jnp.asarray(t0, real)

    def one(carry):
        return step(core, carry, coeffs, w, t0)

    c = _advance(one, start(core, state, t0, record_dts=False), n, tuple(checkpoints))
    return c.state


def _advance(one: Callable, c: Carry, n: int, levels: tuple[int, ...]) -> Carry:
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
