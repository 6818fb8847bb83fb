"""Reductions over the devices fused into one collective: what the diagnostics row uses.

XLA combines a program's independent sums into one all-reduce of several buffers, and XLA:CPU runs such an
all-reduce as one rendezvous of every device thread per buffer. On 8 CPU devices of a 2-core machine, in a
compiled loop: six scalar sums in one all-reduce took 1.16 ms, one sum of a 6-vector 0.18 ms.
The 2D Navier-Stokes row (five sums and a spectrum: six buffers) cost 2.4 ms inside the step program, more than
half a 4.2 ms step at 256^2, so rows every 10 steps added 6% to the main job.

:func:`fused` traces a function twice and replays it once. The first time, every reduction taken through
:func:`total` (the grid's means and Parseval sums, radial spectra, maxima of fields) records its per-device
partial, with no communication, and returns zeros. The second time (a jaxpr with the reductions' values as inputs)
finds which of them the results use: the row's CFL number, filled in from the step's own rate, uses none, and the
transform behind it must stay out of the program. The partials used, of one dtype and one set of mesh axes, are
concatenated and joined across the devices by one collective: a ``psum``, or an all-gather where maxima are among
them. Then the second evaluation's jaxpr is replayed with their values as its inputs (not a third trace of the
function). What the first evaluation computed besides the partials is unused, and JAX and XLA drop it. A reduction
taken otherwise (a plain ``jnp.sum`` or ``jnp.max``) keeps its own all-reduce.

Outside :func:`fused`, :func:`total` is the plain reduction the caller gives (``jnp.sum``, or its own
``shard_map`` with a ``psum``): programs without rows compile exactly as before.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.extend.core import Literal, jaxpr_as_fun
from jax.sharding import Mesh, PartitionSpec

__all__ = ["fused", "total"]

_STATE = threading.local()
#: the reductions :func:`total` takes, as a reduction over the devices' axis of their partials
_OPS = {"sum": jnp.sum, "max": jnp.max}


class _Collect:
    """First evaluation: the partials, in call order, as ``(mesh axes, op, per-device partial (D, *shape))``."""

    def __init__(self, mesh: Mesh):
        self.mesh = mesh
        self.partials: list[tuple[tuple[str, ...], str, jax.Array]] = []


class _Replay:
    """Later evaluations: the reductions' values, in call order."""

    def __init__(self, mesh: Mesh, values: list[jax.Array]):
        self.mesh, self.values, self.next = mesh, values, 0


def _sharded_names(mesh: Mesh, spec: PartitionSpec) -> tuple[str, ...]:
    """The mesh axes (of size > 1) that ``spec`` shards an array over, in the spec's order."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    out: list[str] = []
    for entry in spec:
        for name in (() if entry is None else (entry,) if isinstance(entry, str) else entry):
            if sizes[name] > 1:
                out.append(name)
    return tuple(out)


def total(local: Callable[..., jax.Array], mesh: Mesh, specs: tuple[PartitionSpec, ...], *arrays: jax.Array,
          plain: Callable[..., jax.Array] | None = None, op: str = "sum") -> jax.Array:
    """``sum over the devices of local(*blocks)`` (``op="max"``: the maximum), replicated: ``local`` maps each
    device's blocks of ``arrays`` (sharded as ``specs``) to a small array (``jnp.sum`` of an integrand, the bins
    of a radial spectrum, ``jnp.max`` of a field).

    Outside :func:`fused`, ``plain(*arrays)`` if given (the global-view reduction XLA partitions itself), else
    ``local`` under ``shard_map`` with one ``psum`` (``pmax``). Inside, see the module.
    """
    if op not in _OPS:
        raise ValueError(f"op must be one of {tuple(_OPS)}, got {op!r}")
    state = getattr(_STATE, "active", None)
    names = tuple(dict.fromkeys(n for s in specs for n in _sharded_names(mesh, s)))
    if state is None or not names or state.mesh != mesh:
        return _plain(local, mesh, specs, names, arrays, plain, op)
    if isinstance(state, _Replay):
        if state.next >= len(state.values):
            raise RuntimeError("fused: a later evaluation took more reductions than the first (the function must "
                               "not depend on the values of its reductions to decide which to take)")
        value = state.values[state.next]
        state.next += 1
        return value
    partial = jax.shard_map(lambda *b: local(*b)[None], mesh=mesh, in_specs=specs,
                            out_specs=PartitionSpec(names))(*arrays)
    state.partials.append((names, op, partial))
    return jnp.zeros(partial.shape[1:], partial.dtype)


def _plain(local, mesh, specs, names, arrays, plain, op):
    if plain is not None:
        return plain(*arrays)
    if mesh.size == 1:
        return local(*arrays)

    def reduce(*blocks):
        out = local(*blocks)
        return (jax.lax.psum if op == "sum" else jax.lax.pmax)(out, names) if names else out

    return jax.shard_map(reduce, mesh=mesh, in_specs=specs, out_specs=PartitionSpec())(*arrays)


def _join(flat, names, ops, sizes):
    """One device's partials (``flat[0]``) joined across the devices in one collective: a ``psum`` where every
    one is a sum, else an all-gather and each reduced on every device (sums and maxima in one rendezvous)."""
    if all(op == "sum" for op in ops):
        return jax.lax.psum(flat[0], names)
    every = jax.lax.all_gather(flat[0], names, tiled=False)  # (D, total)
    out, start = [], 0
    for op, size in zip(ops, sizes):
        part = every[:, start:start + size]
        out.append(_OPS[op](part, axis=0))
        start += size
    return jnp.concatenate(out)


def _evaluate(fn, args, state):
    """``fn(*args)`` with ``state`` (a :class:`_Collect` or :class:`_Replay`) active."""
    _STATE.active = state
    try:
        return fn(*args)
    finally:
        _STATE.active = None


def _replayed(fn, mesh, values, args):
    """``fn(*args)`` with the reductions' ``values`` (in the order the first evaluation took them)."""
    replay = _Replay(mesh, list(values))
    out = _evaluate(fn, args, replay)
    if replay.next != len(replay.values):
        raise RuntimeError(f"fused: a later evaluation took {replay.next} reductions, the first "
                           f"{len(replay.values)}")
    return out


def _replay_jaxpr(fn, mesh, like, args):
    """The second evaluation as a jaxpr (the reductions' values its first inputs, then the leaves of ``args``),
    its output tree, and which of the values its results depend on: a backward pass over its equations. A sum
    nothing uses (the row's CFL number, which the driver fills in from the step's own rate) stays out of the
    collective, so XLA can still drop the work behind it (a transform)."""
    closed, shape = jax.make_jaxpr(lambda v, *a: _replayed(fn, mesh, v, a), return_shape=True)(like, *args)
    jaxpr = closed.jaxpr
    live = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    for eqn in reversed(jaxpr.eqns):
        if eqn.effects or any(v in live for v in eqn.outvars):
            live.update(v for v in eqn.invars if not isinstance(v, Literal))
    return closed, jax.tree.structure(shape), [v in live for v in jaxpr.invars[:len(like)]]


def fused(fn: Callable[..., Any], mesh: Mesh, *args) -> Any:
    """``fn(*args)`` with its reductions over the devices (:func:`total`) on ``mesh`` done in one collective per
    dtype and set of mesh axes (see the module). ``fn`` must take the same reductions, in the same order, each
    time it is traced (it is traced twice: to collect them, and into a jaxpr of their values that shows which of
    them its results use and is replayed with them); it is called as it is on one device and inside another
    :func:`fused`.

    Raises:
      RuntimeError: ``fn`` took other reductions in a later evaluation.
    """
    if mesh.size == 1 or getattr(_STATE, "active", None) is not None:
        return fn(*args)
    collect = _Collect(mesh)
    first = _evaluate(fn, args, collect)
    partials = collect.partials
    if not partials:  # no reduction through total: the first evaluation is the result
        return first
    like = [jax.ShapeDtypeStruct(p.shape[1:], p.dtype) for _, _, p in partials]
    closed, tree, used = _replay_jaxpr(fn, mesh, like, args)
    groups: dict[tuple, list[int]] = {}
    for i, (names, _, p) in enumerate(partials):
        if used[i]:
            groups.setdefault((names, jnp.dtype(p.dtype)), []).append(i)
    values: list[Any] = [jnp.zeros(x.shape, x.dtype) for x in like]  # what nothing uses stays zero
    for (names, _), members in groups.items():
        parts = [partials[i][2] for i in members]
        ops = [partials[i][1] for i in members]
        flat = jnp.concatenate([p.reshape(p.shape[0], -1) for p in parts], axis=1)
        joined = jax.shard_map(functools.partial(_join, names=names, ops=tuple(ops), sizes=tuple(
            math.prod(p.shape[1:]) for p in parts)), mesh=mesh, in_specs=PartitionSpec(names),
            out_specs=PartitionSpec(), check_vma=False)(flat)  # an all-gather's result is the same everywhere
        start = 0
        for i, p in zip(members, parts):
            size = math.prod(p.shape[1:])
            values[i] = joined[start:start + size].reshape(p.shape[1:])
            start += size
    # the third evaluation replays the second's jaxpr with the values (no second trace of ``fn``)
    out = jaxpr_as_fun(closed)(*values, *jax.tree.leaves(args))
    return jax.tree.unflatten(tree, out)
