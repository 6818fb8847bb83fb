"""Transform planning: the local stages and all-to-all moves of a transform, from static information only.

Planning rule (forward): transform every axis that is local; then, for each sharded transform axis (last
first), move its mesh axes onto another transform axis with one all-to-all and transform it. The target is
chosen to keep the output evenly divisible (JAX arrays cannot be sharded unevenly); when no target divides,
the data is padded for the move and moved back after the transform (one extra all-to-all). Slab inputs need
1 all-to-all and pencil inputs 2. When the transformed axes cannot hold the mesh axes (all of them sharded, or a
sharded half axis whose mesh axes no other transformed axis takes evenly), the mesh axes move onto
non-transformed (batch) axes for the transforms and back afterwards (:func:`_plan_batch`), as MPI FFT libraries do.

``real`` is False (complex), True (the last transformed axis is the half axis, ``n // 2 + 1`` coefficients) or
:data:`~xfft._layout.NO_NYQUIST` (the half axis leaves out its Nyquist coefficient: ``n // 2``, which the mesh
divides where ``n // 2 + 1`` needs padding and a move back; :func:`xfft.xrfftn`'s ``drop_nyquist``).

Inverses: :func:`inverse_plan` is the one place that plans an inverse (every backend and the transposed order use
it): the inverse of the forward plan of the real layout that leads to the given spectral layout
(:func:`plan_inverse`), else of the layout xfft assumes when it cannot see one (:func:`guess_layout`).
:func:`plan_resize` plans the crops and pads of ``numpy.fft``'s ``s=``. Per-axis kinds (DCT/DST) do not change
the moves: they are attached to the plan's :class:`~xfft._layout.Fft` stages (:func:`xfft._layout.with_kinds`).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

from ._layout import (
    NO_NYQUIST,
    Fft,
    Layout,
    MeshSizes,
    Move,
    Plan,
    Resize,
    Rfft,
    Step,
    canonical_layout,
    check_even,
    group_size,
    half_length,
    layout_to_spec,
    with_kinds,
)

Kinds = tuple[tuple[int, str], ...]  # (array axis, kind) pairs of the real-to-real axes of a transform


def _stack(existing: tuple[str, ...], group: tuple[str, ...], sizes: dict[str, int]) -> tuple[str, ...]:
    """Mesh axes of an array axis after ``group`` arrives (as minor axes, ahead of size-1 axes)."""
    big = tuple(a for a in existing if sizes[a] > 1)
    return big + group + tuple(a for a in existing if sizes[a] == 1)


class _NeedsBatch(ValueError):
    """The transformed axes cannot hold the mesh axes: plan through the batch axes (:func:`_plan_batch`)."""


@lru_cache(maxsize=512)
def plan_forward(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                 real: bool, kinds: Kinds = ()) -> Plan:
    """Plan a forward transform over ``axes`` (the last one is the half-spectrum axis if ``real``).

    ``kinds`` names the real-to-real axes (``(axis, "dct2")`` pairs); the others are Fourier axes. The moves are
    those of the complex FFT over the same axes.

    Raises:
      ValueError: the layout does not split ``shape`` evenly, or no plan exists (see :func:`_plan_batch`).
    """
    return with_kinds(_plan_moves(shape, layout, axes, mesh_sizes, real), kinds)


@lru_cache(maxsize=512)
def _plan_moves(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                real: bool) -> Plan:
    """:func:`plan_forward` without kinds.

    When the transformed axes cannot hold the mesh axes (every transformed axis is sharded, or the half axis of
    a real transform is sharded and no other transformed axis takes its mesh axes evenly), the mesh axes of each
    sharded transformed axis move onto a non-transformed (batch) axis for the local transforms and move back
    afterwards, like MPI FFT libraries do (:func:`_plan_batch`; 2 all-to-alls per sharded transformed axis).

    Raises:
      ValueError: the layout does not split ``shape`` evenly, or no plan exists (see :func:`_plan_batch`).
    """
    try:
        return _plan_direct(shape, layout, axes, mesh_sizes, real)
    except _NeedsBatch as e:
        why = str(e)
    return _plan_batch(shape, layout, axes, mesh_sizes, real, why)


@lru_cache(maxsize=512)
def _plan_direct(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                 real: bool) -> Plan:
    """Plan with the moves between transformed axes only; raises :class:`_NeedsBatch` where they cannot."""
    sizes = dict(mesh_sizes)
    check_even(shape, layout, sizes)
    state = [tuple(g) for g in layout]
    shp = list(shape)
    steps: list[Step] = []
    done: set[int] = set()

    def eff(d: int) -> int:
        return group_size(state[d], sizes)

    def local_len(d: int) -> int:
        return shp[d] // eff(d)

    def movable(d: int) -> tuple[str, ...]:
        return tuple(a for a in state[d] if sizes[a] > 1)

    def choose_target(d: int, p: int, allow_pad: bool) -> int | None:
        cands = []
        for t in axes:
            if t == d:
                continue
            divisible = local_len(t) % p == 0
            if not divisible and not allow_pad:
                continue
            cands.append(((not divisible, t not in done, eff(t) > 1, abs(t - d), t), t))
        return min(cands)[1] if cands else None

    def move(d: int, t: int) -> bool:
        g = movable(d)
        p = group_size(g, sizes)
        pad = local_len(t) % p != 0
        dst_len = local_len(t)
        state[d] = tuple(a for a in state[d] if a not in g)
        state[t] = _stack(state[t], g, sizes)
        steps.append(Move(g, d, t, local_len(d), dst_len))
        return pad

    n_sharded = sum(eff(d) > 1 for d in axes)
    if n_sharded and n_sharded >= len(axes):
        raise _NeedsBatch(
            f"layout {layout_to_spec(layout)} shards all {len(axes)} transformed axes {axes}; a distributed "
            "transform needs at least one of them unsharded (shard at most ndim-1 transformed axes, or put "
            "several mesh axes on one array axis, e.g. P(('x', 'y')))"
        )

    if real:
        r = axes[-1]
        if eff(r) > 1:
            t = choose_target(r, eff(r), allow_pad=False)
            if t is None:
                raise _NeedsBatch(
                    f"the real-to-complex axis {r} is sharded over {eff(r)} devices and no other transformed "
                    f"axis of shape {tuple(shape)} can take that sharding evenly"
                )
            move(r, t)
        steps.append(Rfft(r, shp[r], nyquist=real != NO_NYQUIST))
        shp[r] = half_length(shp[r], real)
        done.add(r)
    local = tuple(d for d in axes if d not in done and eff(d) == 1)
    if local:
        steps.append(Fft(local))
        done.update(local)
    while len(done) < len(axes):
        d = max(d for d in axes if d not in done)
        t = choose_target(d, eff(d), allow_pad=True)
        assert t is not None
        padded = move(d, t)
        steps.append(Fft((d,)))
        done.add(d)
        if padded:
            # Uneven target: bring the mesh axes back to ``d`` (now transformed) so the output stays even.
            g = steps[-2].mesh_axes
            dst_len = local_len(d)
            state[t] = tuple(a for a in state[t] if a not in g)
            state[d] = _stack(state[d], g, sizes)
            steps.append(Move(g, t, d, local_len(t), dst_len))
    return Plan(tuple(layout), tuple(steps), tuple(state), tuple(shp))


def _plan_batch(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                real: bool, why: str) -> Plan:
    """Plan through the batch axes: the mesh axes of every sharded transformed axis move onto a batch axis.

    Each sharded transformed axis (the half axis first) sends its mesh axes to the non-transformed axis whose
    local length they divide (else the longest, padded in transit), one all-to-all each; all transforms are then
    local; the mesh axes move back in reverse order. Output layout: the input layout (c2c always; r2c when the
    half axis's ``n // 2 + 1`` coefficients still divide evenly); otherwise the half axis's mesh axes go to another
    transformed axis that they divide, or stay on their batch axis if it divides evenly (one all-to-all less).

    Raises:
      ValueError: every axis is transformed (no batch axis), or the half axis's mesh axes have no even place.
    """
    sizes = dict(mesh_sizes)
    ndim = len(shape)
    spec = layout_to_spec(layout)
    batch = [b for b in range(ndim) if b not in axes]
    if not batch and real and group_size(tuple(a for a in layout[axes[-1]] if sizes[a] > 1), sizes) > 1:
        return _plan_half_first(shape, layout, axes, mesh_sizes, why, real)
    if not batch:
        raise ValueError(
            f"{why}; nor can they move to a non-transformed axis: all {ndim} axes of shape {tuple(shape)} "
            f"(layout {spec}) are transformed. Leave one transformed axis unsharded, or add a batch axis"
        )
    state = [tuple(g) for g in layout]
    shp = list(shape)
    loc = [shape[d] // group_size(state[d], sizes) for d in range(ndim)]  # local lengths (padded on batch axes)
    steps: list[Step] = []

    def movable(d: int) -> tuple[str, ...]:
        return tuple(a for a in state[d] if sizes[a] > 1)

    sharded = [d for d in axes if movable(d)]
    if real and axes[-1] in sharded:
        # Half axis first: its mesh axes are then the major ones on their batch axis and can stay there.
        sharded = [axes[-1]] + [d for d in sharded if d != axes[-1]]
    moved = []
    for d in sharded:
        g = movable(d)
        p = group_size(g, sizes)
        b = min(batch, key=lambda b: (loc[b] % p != 0, -loc[b], b))
        pre = loc[b]
        state[d] = tuple(a for a in state[d] if a not in g)
        state[b] = _stack(state[b], g, sizes)
        loc[b] = -(-pre // p)
        loc[d] *= p
        steps.append(Move(g, d, b, loc[d], pre))
        moved.append((g, d, b, pre))
    rest = axes
    if real:
        r = axes[-1]
        steps.append(Rfft(r, shp[r], nyquist=real != NO_NYQUIST))
        shp[r] = loc[r] = half_length(shp[r], real)
        rest = tuple(d for d in axes if d != r)
    if rest:
        steps.append(Fft(tuple(rest)))
    for g, d, b, pre in reversed(moved):
        p = group_size(g, sizes)
        t: int | None = d
        if loc[d] % p:  # only the half axis can turn uneven
            even = [t for t in axes if t != d and loc[t] % p == 0]
            if even:
                t = min(even, key=lambda t: (abs(t - d), t))
            elif pre % p == 0:
                t = None  # stays on its batch axis, evenly
            else:
                raise ValueError(
                    f"{why}. Moving mesh axes {g} onto batch axis {b} does not help: after the transform the half "
                    f"axis {d} has {shp[d]} coefficients, which {p} devices do not divide, and no other axis of "
                    f"shape {tuple(shape)} (layout {spec}) takes them evenly; shard another axis, or pick sizes "
                    f"that {p} divides"
                )
        if t is None:
            continue
        dst = loc[t]
        state[b] = tuple(a for a in state[b] if a not in g)
        state[t] = _stack(state[t], g, sizes)
        loc[b] = pre
        loc[t] = dst // p
        steps.append(Move(g, b, t, pre, dst))
    return Plan(tuple(layout), tuple(steps), tuple(state), tuple(shp))


def _plan_half_first(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                     why: str, real: bool | str = True) -> Plan:
    """r2c with every axis transformed and the half axis sharded: lend its mesh axes to another transformed axis.

    The half axis's mesh axes move (padded in transit) onto the transformed axis they divide best, the half axis
    is transformed, and they move back when its ``n // 2 + 1`` coefficients divide evenly (2 all-to-alls); the
    other axes are then planned as a c2c transform (:func:`_plan_moves`).

    Raises:
      ValueError: the coefficients do not divide evenly (no even output layout without a batch axis).
    """
    sizes = dict(mesh_sizes)
    r = axes[-1]
    g = tuple(a for a in layout[r] if sizes[a] > 1)
    p = group_size(g, sizes)
    state = [tuple(gr) for gr in layout]
    loc = [shape[d] // group_size(state[d], sizes) for d in range(len(shape))]
    m = half_length(shape[r], real)
    if m % p:
        raise ValueError(
            f"{why}; every axis of shape {tuple(shape)} (layout {layout_to_spec(layout)}) is transformed, and the "
            f"half axis {r} has {m} coefficients, which {p} devices do not divide: shard another axis, or add a "
            "batch axis"
        )
    t = min((d for d in axes if d != r), key=lambda d: (loc[d] % p != 0, -loc[d], d))
    pre = loc[t]
    full = loc[r] * p
    steps: list[Step] = [Move(g, r, t, full, pre), Rfft(r, shape[r], nyquist=real != NO_NYQUIST),
                         Move(g, t, r, pre, m)]
    shp = list(shape)
    shp[r] = m
    rest = _plan_moves(tuple(shp), layout, axes[:-1], mesh_sizes, False)
    return Plan(tuple(layout), tuple(steps) + rest.steps, rest.out_layout, rest.out_shape)



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
    if best is None:
        # Plans through the batch axes (:func:`_plan_batch`): their real layouts may shard any axis.
        names = tuple(a for g in spec_layout for a in g if sizes[a] > 1)
        fixed = [tuple(a for a in g if sizes[a] == 1) for g in spec_layout]
        best = _search_inverse(shape, spec_layout, axes, mesh_sizes, real, names, fixed, range(len(shape)), True)
    return None if best is None else best[1].inverted()


def _search_inverse(shape: tuple[int, ...], spec_layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                    real: bool, names: tuple[str, ...], fixed: list, dims, batch: bool) -> tuple | None:
    """The best ``(key, forward plan)`` among real layouts putting ``names`` on ``axes`` (``dims`` if ``batch``).

    Without ``batch`` only the direct planner (:func:`_plan_direct`) is tried, so that plans found before the
    batch-axis planner existed stay the same.
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


@lru_cache(maxsize=256)
def plan_resize(shape: tuple[int, ...], layout: Layout, lengths: tuple[tuple[int, int], ...],
                mesh_sizes: MeshSizes) -> Plan:
    """Crop or zero-pad array axes to new lengths (``numpy.fft``'s ``s``), each where it is local.

    An unsharded axis is resized in place. A sharded one first lends its mesh axes to another axis that takes
    them evenly (one all-to-all), so no device ever holds more than its block. The order of the resizes and the
    targets are searched for the fewest all-to-alls (few axes: a small search) with an even result.

    Args:
      shape, layout, mesh_sizes: the array's global shape and layout, and the mesh.
      lengths: ``(axis, new length)`` pairs.

    Returns:
      A plan of :class:`~xfft._layout.Move` and :class:`~xfft._layout.Resize` steps; ``out_shape`` is the new shape.

    Raises:
      ValueError: no order of moves gives every resized axis a local turn and an evenly split result.
    """
    sizes = dict(mesh_sizes)
    new = dict(lengths)
    todo = frozenset(d for d, n in new.items() if shape[d] != n)
    best = _search_resize(tuple(shape), tuple(tuple(g) for g in layout), todo, new, sizes)
    if best is None:
        raise ValueError(
            f"cannot crop or pad the array of shape {tuple(shape)} (layout {layout_to_spec(layout)}) to lengths "
            f"{dict(sorted(new.items()))}: a sharded axis that changes length must first lend its mesh axes to an "
            "axis they divide, and the result must split evenly over the mesh; reshard the array, or choose "
            "lengths that the mesh divides"
        )
    steps, state, shp = best
    return Plan(tuple(layout), steps, state, shp)


def _search_resize(shp: tuple[int, ...], state: Layout, todo: frozenset[int], new: dict[int, int],
                   sizes: dict[str, int]) -> tuple[tuple[Step, ...], Layout, tuple[int, ...]] | None:
    """The resize steps with the fewest moves from ``(shp, state)``, or None (see :func:`plan_resize`)."""
    if not todo:
        try:
            check_even(shp, state, sizes)
        except ValueError:
            return None
        return (), state, shp
    best: tuple | None = None
    for d in sorted(todo):
        g = tuple(a for a in state[d] if sizes[a] > 1)
        options: list[tuple[Step, ...]] = []
        if not g:
            options.append(())
        else:
            p = group_size(g, sizes)
            for t in range(len(shp)):
                local = shp[t] // group_size(state[t], sizes)
                if t != d and local % p == 0:
                    options.append((Move(g, d, t, shp[d] // group_size(tuple(a for a in state[d] if a not in g),
                                                                        sizes), local),))
        for pre in options:
            lst = list(state)
            if pre:
                mv = pre[0]
                assert isinstance(mv, Move)
                lst[d] = tuple(a for a in state[d] if a not in g)
                lst[mv.dst] = _stack(state[mv.dst], g, sizes)
            nshp = shp[:d] + (new[d],) + shp[d + 1:]
            rest = _search_resize(nshp, tuple(lst), todo - {d}, new, sizes)
            if rest is None:
                continue
            steps = pre + (Resize(d, new[d]),) + rest[0]
            key = (sum(isinstance(x, Move) for x in steps), [(type(x).__name__, x.axis if isinstance(x, Resize)
                                                               else (x.src, x.dst)) for x in steps])
            if best is None or key < best[0]:
                best = (key, (steps, rest[1], rest[2]))
    return None if best is None else best[1]
