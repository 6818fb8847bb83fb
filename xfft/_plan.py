"""Transform planning: the local stages and all-to-all moves of a transform, from static information only.

Planning rule (forward): transform every axis that is local; then, for each sharded transform axis (last
first), move its mesh axes onto another transform axis with one all-to-all and transform it. The target is
chosen to keep the output evenly divisible (JAX arrays cannot be sharded unevenly); when no target divides,
the data is padded for the move and moved back after the transform (one extra all-to-all). Slab inputs need
1 all-to-all and pencil inputs 2. When the transformed axes cannot hold the mesh axes (all of them sharded, or a
sharded half axis whose mesh axes no other transformed axis takes evenly), the mesh axes move onto
non-transformed (batch) axes for the transforms and back afterwards (:func:`_plan_batch`), as MPI FFT libraries do.
Without a batch axis, a sharded transformed axis lends its mesh axes to another transformed axis, stacked on its
own and padded in transit (:func:`_plan_lend`, :func:`_plan_half_first`); a single sharded axis (a 1D array) is
transformed where it lies, across the devices (:class:`~xfft._layout.FourStep`). Where a real-to-complex output
has no even layout at all (``n // 2 + 1`` coefficients and every other length not divisible by the devices), the
mesh axes are gathered (:class:`~xfft._layout.Gather`: the output is replicated over them).

``real`` is False (complex), True (the last transformed axis is the half axis, ``n // 2 + 1`` coefficients) or
:data:`~xfft._layout.NO_NYQUIST` (the half axis leaves out its Nyquist coefficient: ``n // 2``, which the mesh
divides where ``n // 2 + 1`` needs padding and a move back; :func:`xfft.xrfftn`'s ``drop_nyquist``).

Inverses are planned in :mod:`xfft._plan_inverse`, crops and pads in :mod:`xfft._plan_resize`. Per-axis kinds
(DCT/DST) do not change the moves: they are attached to the plan's :class:`~xfft._layout.Fft` stages
(:func:`xfft._layout.with_kinds`).
"""

from __future__ import annotations

from functools import lru_cache

from ._layout import (
    NO_NYQUIST,
    Fft,
    FourStep,
    Gather,
    Layout,
    MeshSizes,
    Move,
    Plan,
    Rfft,
    Step,
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
                 real: bool, done_axes: tuple[int, ...] = ()) -> Plan:
    """Plan with the moves between transformed axes only; raises :class:`_NeedsBatch` where they cannot.

    ``done_axes``: axes of ``axes`` already transformed (by :func:`_plan_lend`); they only take mesh axes.
    """
    sizes = dict(mesh_sizes)
    check_even(shape, layout, sizes)
    state = [tuple(g) for g in layout]
    shp = list(shape)
    steps: list[Step] = []
    done: set[int] = set(done_axes)

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
    if n_sharded and n_sharded >= len(axes) and not done:
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
    transformed axis that they divide, or stay on their batch axis if it divides evenly (one all-to-all less); with
    no even place at all, the plan is :func:`_plan_gathered`'s. Without a batch axis:
    :func:`_plan_half_first` (r2c), :func:`_plan_lend` (c2c over several axes) or :func:`_plan_four_step`.

    Raises:
      ValueError: as :func:`_plan_half_first` and :func:`_plan_four_step`.
    """
    sizes = dict(mesh_sizes)
    ndim = len(shape)
    batch = [b for b in range(ndim) if b not in axes]
    if not batch and real and group_size(tuple(a for a in layout[axes[-1]] if sizes[a] > 1), sizes) > 1:
        return _plan_half_first(shape, layout, axes, mesh_sizes, why, real)
    if not batch:
        return _plan_lend(shape, layout, axes, mesh_sizes) if len(axes) > 1 else _plan_four_step(shape, layout,
                                                                                                    axes, mesh_sizes)
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
            t = min(even, key=lambda t: (abs(t - d), t)) if even else None
        if t is None and pre % p == 0:
            continue  # stays on its batch axis, evenly
        state[b] = tuple(a for a in state[b] if a not in g)
        if t is None:  # no even place: the output is replicated over g
            return _plan_gathered(shape, layout, axes, mesh_sizes, real, d)
        dst = loc[t]
        state[t] = _stack(state[t], g, sizes)
        loc[b] = pre
        loc[t] = dst // p
        steps.append(Move(g, b, t, pre, dst))
    return Plan(tuple(layout), tuple(steps), tuple(state), tuple(shp))


def _plan_half_first(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                     why: str, real: bool | str = True) -> Plan:
    """r2c with every axis transformed and the half axis sharded: lend its mesh axes to another transformed axis.

    The half axis's mesh axes move (padded in transit) onto the transformed axis they divide best, the half axis
    is transformed, and they move back when its ``n // 2 + 1`` coefficients divide evenly (2 all-to-alls), or stay
    on the taker when it holds them evenly; the other axes are then planned as a c2c transform
    (:func:`_plan_moves`). When neither holds them evenly: :func:`_plan_gathered`.

    Raises:
      ValueError: the half axis is the only transformed axis (a 1D real-to-complex transform of a sharded axis).
    """
    sizes = dict(mesh_sizes)
    r = axes[-1]
    g = tuple(a for a in layout[r] if sizes[a] > 1)
    p = group_size(g, sizes)
    if len(axes) == 1:
        raise ValueError(
            f"{why}; the real-to-complex transform (kind 'rfft') of the only axis of shape {tuple(shape)}, sharded "
            f"over {p} devices, is not supported: transform x.astype(complex) with xfftn (complex transforms of a "
            "sharded axis run across the devices) and keep the first n // 2 + 1 coefficients"
        )
    state = [tuple(gr) for gr in layout]
    loc = [shape[d] // group_size(state[d], sizes) for d in range(len(shape))]
    m = half_length(shape[r], real)
    t = min((d for d in axes if d != r), key=lambda d: (loc[d] % p != 0, -loc[d], d))
    pre = loc[t]
    if m % p and pre % p:
        return _plan_gathered(shape, layout, axes, mesh_sizes, real, r)
    steps: list[Step] = [Move(g, r, t, loc[r] * p, pre), Rfft(r, shape[r], nyquist=real != NO_NYQUIST)]
    if m % p:  # the taker holds them evenly: they stay there
        state[r] = tuple(a for a in state[r] if a not in g)
        state[t] = _stack(state[t], g, sizes)
    else:
        steps.append(Move(g, t, r, pre, m))
    shp = list(shape)
    shp[r] = m
    rest = _plan_moves(tuple(shp), tuple(state), axes[:-1], mesh_sizes, False)
    return Plan(tuple(layout), tuple(steps) + rest.steps, rest.out_layout, rest.out_shape)


def _plan_lend(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes) -> Plan:
    """c2c with every axis transformed and sharded: one axis lends its mesh axes to another transformed axis.

    Of the pairs (lender, taker) the one with the least padding wins (the lender preferably last): the lender's
    mesh axes move onto the taker, stacked on the taker's own (padded in transit), the lender is transformed and
    takes them back (2 all-to-alls); the other axes are then planned with the lender as a transformed axis that
    takes their mesh axes (:func:`_plan_direct`, whose output layout this is).
    """
    sizes = dict(mesh_sizes)
    loc = [shape[e] // group_size(layout[e], sizes) for e in range(len(shape))]

    def group(d: int) -> tuple[str, ...]:
        return tuple(a for a in layout[d] if sizes[a] > 1)

    pairs = [(d, t) for d in axes for t in axes if t != d]
    d, t = min(pairs, key=lambda dt: (loc[dt[1]] % group_size(group(dt[0]), sizes) != 0, -dt[0], -loc[dt[1]],
                                      dt[1]))
    there = Move(group(d), d, t, loc[d] * group_size(group(d), sizes), loc[t])
    rest = _plan_direct(shape, layout, axes, mesh_sizes, False, (d,))
    return Plan(tuple(layout), (there, Fft((d,)), there.inverted()) + rest.steps, rest.out_layout, rest.out_shape)


def _plan_four_step(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes) -> Plan:
    """A complex transform of the one axis of a sharded 1D array, across the devices (:class:`FourStep`)."""
    sizes = dict(mesh_sizes)
    (d,) = axes
    g = tuple(a for a in layout[d] if sizes[a] > 1)
    return Plan(tuple(layout), (FourStep(d, g, shape[d]),), tuple(layout), tuple(shape))


def _plan_gathered(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                   real: bool, d: int) -> Plan:
    """r2c whose output has no even layout over the mesh axes of the half axis ``d`` (its ``n // 2 + 1``
    coefficients, and every other length, not divisible by their devices): gather ``d`` first (one all-gather of
    the input, :class:`~xfft._layout.Gather`), then plan the transform of the layout without those mesh axes: its
    output is replicated over them. The inverse transforms, then keeps each device's block (no communication)."""
    sizes = dict(mesh_sizes)
    g = tuple(a for a in layout[d] if sizes[a] > 1)
    state = list(layout)
    state[d] = tuple(a for a in layout[d] if a not in g)
    rest = _plan_moves(shape, tuple(state), axes, mesh_sizes, real)
    gather = Gather(g, d, shape[d] // group_size(state[d], sizes))
    return Plan(tuple(layout), (gather,) + rest.steps, rest.out_layout, rest.out_shape)
