"""The compiled programs of a run, cached by their static configuration.

A run's programs (the segment, the start, the coefficients) depend on the equation, the integrator's class and
options, the controller's static part (a pytree controller's structure: its numbers are arguments; any other
controller itself), the rows and samplers the outputs ask for, and the platform's control flow; the shapes, dtypes
and shardings are ``jax.jit``'s own cache. :func:`programs` keeps the last :data:`CACHE_SIZE` configurations, so a
second :func:`~solvers.simulate` of the same equation and scheme (another ``t_end``, ``y0``, dt or outputs of the
same kind) compiles nothing. The cache holds its equations alive until they are evicted (at most
:data:`CACHE_SIZE` of them); :func:`clear` empties it.
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from ..stepping import ControllerState, Core, Rows, Sampler, Window, first_aux, pack_dtype, segment, start
from .rows import RowFunction

__all__ = ["CACHE_SIZE", "Programs", "clear", "combined", "programs"]

#: how many static configurations keep their compiled programs
CACHE_SIZE = 8
_CACHE: OrderedDict = OrderedDict()


@dataclass(frozen=True)
class Programs:
    """The jitted programs of one static configuration (see :func:`programs`).

    Attributes:
      core: the stepping core's static part. row: the diagnostics row function (None without rows).
      opaque: the controller is no pytree (it is part of the programs, and passed to them as None).
      segment: ``segment(state, t, coeffs, n, remaining, bound, dt_force, dt_coef, step0, every, last, samples,
        controller_state, controller) -> (state, samples, controller_state, vector)`` (the state donated; the
        samples are the outputs' device state, :class:`~solvers.stepping.OutputsState`'s ``samples``; the
        controller state a :class:`~solvers.stepping.ControllerState`; the vector packs the clock and the rows).
      begin: ``begin(state, t, controller) -> (row, energy, controller_state, samples, dt)``: what a run needs
        before its first step (``dt``: the controller's first choice, for the coefficients).
      coefficients: the integrator's ``coefficients(dt)``.
    """

    core: Core
    row: Any
    opaque: Any
    segment: Any
    begin: Any
    coefficients: Any


def clear() -> None:
    """Forget every cached program (and the equations they hold)."""
    _CACHE.clear()


def _key_of(obj: Any) -> Any:
    try:
        hash(obj)
        return obj
    except TypeError:
        return ("id", id(obj))


def _integrator_key(integ) -> Any:
    options = tuple(sorted((k, v) for k, v in vars(integ).items() if k not in ("equation", "_fused", "_jitted")))
    try:
        hash(options)
    except TypeError:
        return ("id", id(integ))
    return type(integ), options


def _controller_key(controller) -> tuple[Any, bool]:
    leaves, tree = jax.tree.flatten(controller)
    opaque = len(leaves) == 1 and leaves[0] is controller
    return (("opaque", _key_of(controller)) if opaque else ("tree", tree)), opaque


def programs(integ, controller, spectrum: bool | None, samplers: dict[str, Sampler], energy_every_step: bool,
             synced: bool) -> Programs:
    """The cached programs of a run (built and cached on first use).

    Args:
      integ: the bound integrator. controller: the resolved controller. spectrum: None without rows, else whether
      a row carries the spectrum. samplers: the outputs' samplers by name (part of the key by identity).
      energy_every_step: the energy after every step. synced: no branch per step (a GPU).
    """
    eq = integ.equation
    ckey, opaque = _controller_key(controller)
    rate = bool(getattr(controller, "wants_rate", False))
    key = (id(eq), _integrator_key(integ), ckey, rate, spectrum, tuple((n, id(s)) for n, s in samplers.items()),
           energy_every_step, synced)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is eq:
        _CACHE.move_to_end(key)
        return hit[1]
    core = Core(integ, rate, energy_every_step=energy_every_step or not rate, sampler=combined(samplers),
                synced=synced)
    out = _build(core, controller if opaque else None, spectrum)
    _CACHE[key] = (eq, out, tuple(samplers.values()), controller if opaque else None)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return out


def _build(core: Core, fixed, spectrum) -> Programs:
    integ = core.integrator
    eq = integ.equation
    row = RowFunction(eq, spectrum) if spectrum is not None else None
    if row is not None:
        lagged = core.rate and row.cfl_position is not None
        core = dataclasses.replace(core, rows=Rows(row, 1 + row.size, row.cfl_position, lagged))

    def program(state, t, coeffs, n, remaining, bound, dt_force, dt_coef, step0, every, last, samples,
                controller_state, ctrl):
        controller = fixed if fixed is not None else ctrl
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        w = Window(*(jnp.asarray(v, real) for v in (remaining, bound, dt_force, dt_coef)), n, step0, every, last)
        c = segment(core, controller, start(core, state, t, controller_state, samples), coeffs, w)
        pack = pack_dtype()
        clock, rows = c.clock, c.outputs.rows
        count = rows.count if rows is not None else jnp.int32(0)
        head = jnp.stack([v.astype(pack) for v in (clock.steps, clock.reason, clock.dt_next, clock.energy, count)])
        buf = [rows.rows.ravel()] if rows is not None else []
        return c.state, c.outputs.samples, c.controller, jnp.concatenate([head, clock.dts.astype(pack), *buf])

    def begin(state, t, ctrl):
        controller = fixed if fixed is not None else ctrl
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        values = row(state, t, 0.0) if row else None
        energy = eq.energy(state).astype(real)
        aux = first_aux(core, state, jnp.asarray(t, real))
        cstate = controller.init(state)
        dt, _ = controller.choose(aux, cstate, jnp.asarray(t, real), jnp.asarray(math.inf, real))
        samples = core.sampler.init(state) if core.sampler is not None else None
        return values, energy, ControllerState(aux, cstate), samples, jnp.asarray(dt).astype(pack_dtype())

    return Programs(core, row, fixed is not None, jax.jit(program, donate_argnums=0), jax.jit(begin),
                    jax.jit(integ.coefficients))


def combined(samplers: dict[str, Sampler]) -> Sampler | None:
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
