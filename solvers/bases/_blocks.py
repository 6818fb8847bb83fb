"""The Chebyshev operations on explicitly sharded arrays: each device works on its own block.

A :class:`~solvers.Grid` gives spectral arrays sharded over the mesh along the periodic (trailing) axes, the
wall-normal axis whole on each device. The solves along axis 0 need no communication there, but their scans and
selects mix those arrays with replicated tables, which JAX's explicit sharding refuses. :func:`on_blocks` runs such
an operation in a ``jax.shard_map`` over the arrays' mesh instead, as :meth:`~solvers.Grid.local_map` does, with
every argument resharded to the blocks of the others (a replicated table is sliced, nothing is gathered); inputs
that carry no explicit sharding (one device, ``grid.local_map``'s blocks, plain arrays) run the operation as it is.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

__all__ = ["leads_of", "on_blocks"]


def leads_of(x):
    """The leading axes of each array of a factor (a dataclass whose ``LEADS`` maps field -> leading axes; nested
    factors give their own): a pytree of ints of ``x``'s structure, for :func:`on_blocks`."""
    if not hasattr(type(x), "LEADS"):
        return x
    out = {}
    for name, lead in type(x).LEADS.items():
        v = getattr(x, name)
        out[name] = None if v is None else leads_of(v) if hasattr(type(v), "LEADS") else lead
    return dataclasses.replace(x, **out)


def _spec(x) -> tuple | None:
    """The explicit sharding of ``x``'s type per axis, or None where it has none (unsharded, Auto or Manual axes)."""
    try:
        sharding = getattr(jax.typeof(x), "sharding", None)
    except TypeError:
        return None
    spec = tuple(getattr(sharding, "spec", ()) or ())
    return spec + (None,) * (np.ndim(x) - len(spec)) if any(s is not None for s in spec) else None


def _mesh(leaves: list):
    """The mesh of the first explicitly sharded leaf (a concrete one where the leaf is a concrete array)."""
    for x in leaves:
        if _spec(x) is not None:
            if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
                return x.sharding.mesh
            return jax.typeof(x).sharding.mesh
    return None


def on_blocks(**leads: int | Callable) -> Callable:
    """Decorator: run the operation on each device's block where its array arguments are explicitly sharded.

    Args:
      leads: for each array argument by name, its leading axes (that must stay whole on each device: the Chebyshev
        coefficients, a factor's rows): an int for every leaf of the argument, or a function of the argument
        returning a pytree of ints of its structure. The axes after them are aligned on the right (numpy
        broadcasting), as the operation's results are; ``"out"`` gives the results' leading axes the same way. The
        other arguments are static (passed as they are).

    Returns:
      The decorator. The operation it wraps raises ValueError where a leading axis is sharded.
    """
    out_leads = leads.pop("out")

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def inner(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            given = {k: bound.arguments[k] for k in leads}
            mesh = _mesh(jax.tree.leaves(given))
            if mesh is None:
                return fn(*args, **kwargs)
            flat, tree = jax.tree.flatten(given)
            ndims = jax.tree.leaves({k: jax.tree.map(lambda _, n=lead: n, given[k]) if isinstance(lead, int)
                                     else lead(given[k]) for k, lead in leads.items()})
            names = jax.tree.leaves({k: jax.tree.map(lambda _, k=k: k, v) for k, v in given.items()})
            # JAX arrays and numpy tables travel through shard_map; Python scalars and 0-d numpy stay in the closure
            flat = [jnp.asarray(a) if isinstance(a, np.ndarray) and a.ndim else a for a in flat]
            moving = [i for i, a in enumerate(flat) if isinstance(a, jax.Array)]
            trail, specs = _trailing([(flat[i], ndims[i], names[i]) for i in moving], fn.__name__)
            in_specs = [_aligned(flat[i].shape, ndims[i], trail, specs) for i in moving]
            arrays = [jax.sharding.reshard(flat[i], NamedSharding(mesh, s)) for i, s in zip(moving, in_specs)]

            def body(blocks):
                leaves = list(flat)
                for i, b in zip(moving, blocks):
                    leaves[i] = b
                return fn(**{**bound.arguments, **jax.tree.unflatten(tree, leaves)})

            def run(out_specs):
                return jax.shard_map(body, mesh=mesh, in_specs=(in_specs,), out_specs=out_specs,
                                     check_vma=False)(arrays)

            local = jax.eval_shape(lambda: run(PartitionSpec()))  # the results' shapes on one device
            out_n = jax.tree.map(lambda _: out_leads, local) if isinstance(out_leads, int) else out_leads(local)
            local_trail = tuple(d // _size(mesh, s) for d, s in zip(trail, specs))
            return run(jax.tree.map(lambda a, n: _aligned(a.shape, n, local_trail, specs), local, out_n))
        return inner
    return wrap


def _size(mesh, entry) -> int:
    """The number of devices a spec entry splits an axis over."""
    names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    return int(np.prod([sizes[n] for n in names])) if names else 1


def _trailing(pairs: list, name: str) -> tuple[tuple[int, ...], tuple]:
    """The broadcast trailing shape of the arrays and the mesh axes that split it (the first array's that is sharded
    along each axis); ValueError where an array is sharded along one of its leading axes."""
    rank = max((len(a.shape) - n for a, n, _ in pairs), default=0)
    trail, specs = [1] * rank, [None] * rank
    for a, n, k in pairs:
        spec = _spec(a) or (None,) * a.ndim
        for i, s in enumerate(spec[:n]):
            if s is not None:
                raise ValueError(f"{name}: {k} is sharded along its axis {i} over mesh axis {s!r}; the Chebyshev "
                                 f"coefficients (axis 0) must be whole on each device, as a wall grid's spectral "
                                 f"layout keeps them")
        for j, (d, s) in enumerate(zip(a.shape[n:], spec[n:])):
            pos = rank - (a.ndim - n) + j
            trail[pos] = max(trail[pos], d)
            used = {x for e in specs if e is not None for x in ((e,) if isinstance(e, str) else e)}
            if s is not None and specs[pos] is None and d > 1 and not used & set((s,) if isinstance(s, str) else s):
                specs[pos] = s
    return tuple(trail), tuple(specs)


def _aligned(shape: tuple, lead: int, trail: tuple, specs: tuple) -> PartitionSpec:
    """The spec of an array of ``shape`` with ``lead`` whole leading axes, its other axes aligned on the right with
    ``trail`` (split as ``specs`` where the array spans the axis; broadcast axes of length 1 whole)."""
    rest = shape[lead:]
    off = len(trail) - len(rest)
    return PartitionSpec(*((None,) * lead), *(specs[off + j] if d == trail[off + j] else None
                                              for j, d in enumerate(rest)))
