"""Inverse plans: the forward plan of the real layout that leads to a given spectral layout, inverted.

:func:`inverse_plan` is the one place that plans an inverse (every backend and the transposed order use it): the
inverse of the forward plan of the real layout that leads to the given spectral layout (:func:`plan_inverse`),
else of the layout xfft assumes when it cannot see one (:func:`guess_layout`).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

from ._layout import Layout, MeshSizes, Plan, canonical_layout, group_size, with_kinds
from ._plan import Kinds, _plan_direct, _plan_moves


@lru_cache(maxsize=512)
def plan_inverse(shape: tuple[int, ...], spec_layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                 real: bool) -> Plan | None:
    """Plan the inverse whose forward maps some real layout of ``shape`` onto ``spec_layout``.

    ``shape`` is the real-space (output) shape. Returns None if no real layout's forward plan ends in
    ``spec_layout``; among several, the one that shards most array axes, then the one with fewest
    all-to-alls, then the one sharding leading axes wins.
    """
    sizes = dict(mesh_sizes)
    names = tuple(a for d in axes for a in spec_layout[d] if sizes[a] > 1)
    fixed = [tuple(a for a in g if sizes[a] == 1) if d in axes else g for d, g in enumerate(spec_layout)]
    best = _search_inverse(shape, spec_layout, axes, mesh_sizes, real, names, fixed, range(len(shape)), False)
    names = tuple(a for g in spec_layout for a in g if sizes[a] > 1)
    unused = tuple(a for a, n in mesh_sizes if n > 1 and a not in names)
    if best is None or unused:
        # Plans through the batch axes, lending or gathering (:func:`xfft._plan._plan_batch`): their real layouts
        # may shard any axis, also with mesh axes the spectrum is replicated over (a gathered output).
        fixed = [tuple(a for a in g if sizes[a] == 1) for g in spec_layout]
        more = _search_inverse(shape, spec_layout, axes, mesh_sizes, real, names + unused, fixed,
                               range(len(shape)), True)
        if more is not None and (best is None or more[0] < best[0]):
            best = more
    return None if best is None else best[1].inverted()


def _search_inverse(shape: tuple[int, ...], spec_layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                    real: bool, names: tuple[str, ...], fixed: list, dims, batch: bool) -> tuple | None:
    """The best ``(key, forward plan)`` among real layouts putting ``names`` on ``axes`` (``dims`` if ``batch``).

    Without ``batch`` only the direct planner (:func:`xfft._plan._plan_direct`) is tried, so that a direct plan,
    where one exists, is always the one chosen.
    """
    sizes = dict(mesh_sizes)
    best = None
    for perm in itertools.permutations(names):
        for assign in itertools.product(tuple(dims) if batch else axes, repeat=len(names)):
            cand = [list(g) for g in fixed]
            for a, d in zip(perm, assign):
                cand[d].append(a)
            layout = tuple(tuple(g) for g in cand)
            try:
                fwd = (_plan_moves if batch else _plan_direct)(shape, layout, axes, mesh_sizes, real)
            except ValueError:
                continue
            if fwd.out_layout != tuple(spec_layout):
                continue
            # Prefer one array axis per mesh axis (a pencil over a stacked slab: r2c pencil P('x', 'y') and
            # slab P(('x', 'y')) share a spectral layout), then fewer all-to-alls, then leading axes.
            n_sharded = sum(group_size(g, sizes) > 1 for g in layout)
            key = (-n_sharded, fwd.num_all_to_all, [[-len(g)] for g in layout], perm)
            if best is None or key < best[0]:
                best = (key, fwd)
    return best



@lru_cache(maxsize=512)
def guess_layout(shape: tuple[int, ...], axes: tuple[int, ...], mesh_sizes: MeshSizes, real: bool) -> Layout:
    """The input layout xfft assumes when it cannot see the real one (an Auto mesh under ``jax.jit``).

    The layout :func:`xfft.real_sharding` gives the grid (the last ``min(ndim, 3)`` axes) when a plan over
    ``axes`` exists from it, else the canonical layout of the transformed axes themselves.

    Raises:
      ValueError: the grid cannot be split evenly over the mesh.
    """
    nd = len(shape)
    grid = tuple(range(nd - min(nd, 3), nd))
    try:
        layout = canonical_layout(shape, grid, mesh_sizes)
        _plan_moves(shape, layout, axes, mesh_sizes, real)
        return layout
    except ValueError:
        return canonical_layout(shape, axes, mesh_sizes)


def inverse_plan(shape: tuple[int, ...], spec_layout: Layout | None, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                 real: bool, kinds: Kinds = ()) -> Plan:
    """The plan of an inverse transform to the real shape ``shape``: the one place where xfft plans inverses.

    It inverts the forward plan of the real layout that leads to ``spec_layout`` (:func:`plan_inverse`), so a
    round trip returns the input's layout; for an unknown (None) or foreign spectral layout, the forward plan of
    :func:`guess_layout` (XLA then reshards the spectrum to that plan's spectral layout).

    Raises:
      ValueError: no plan exists for the guessed layout either.
    """
    if not any(n > 1 for _, n in mesh_sizes):
        plan = _plan_moves(shape, ((),) * len(shape), axes, (), real).inverted()
        return with_kinds(plan, kinds)
    plan = None if spec_layout is None else plan_inverse(shape, spec_layout, axes, mesh_sizes, real)
    if plan is None:
        guess = guess_layout(shape, axes, mesh_sizes, real)
        plan = _plan_moves(shape, guess, axes, mesh_sizes, real).inverted()
    return with_kinds(plan, kinds)
