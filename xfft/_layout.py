"""Layouts and transform plans: which mesh axes shard which array axes, and how a transform moves them.

A *layout* is a tuple with one entry per array axis; each entry is a tuple of mesh-axis names (major to minor)
that shard that array axis, exactly like a ``PartitionSpec`` written out in full. A *plan* is the sequence of
local FFT stages and all-to-all moves that transforms every requested array axis; it is computed from static
information only (global shape, layout, mesh-axis sizes), so it is made once per trace.

Planning rule (forward): transform every axis that is local; then, for each sharded transform axis (last
first), move its mesh axes onto another transform axis with one all-to-all and transform it. The target is
chosen to keep the output evenly divisible (JAX arrays cannot be sharded unevenly); when no target divides,
the data is padded for the move and moved back after the transform (one extra all-to-all). Slab inputs need
1 all-to-all and pencil inputs 2. When the transformed axes cannot hold the mesh axes (all of them sharded, or a
sharded half axis whose mesh axes no other transformed axis takes evenly), the mesh axes move onto
non-transformed (batch) axes for the transforms and back afterwards (:func:`_plan_batch`), as MPI FFT libraries do.

A plan speaks of array axes by their *logical* (natural) index. :func:`lower_plan` turns it into a *program*
over physical axes: XLA's FFT op only transforms the minor-most axes, so each run of local transforms becomes one
multi-axis FFT op over the trailing axes, preceded by a local :class:`Transpose` only when those axes are not
already trailing; the axis order is then kept as it is (no transpose back) until the end, where the natural
order costs at most one transpose and the ``"transposed"`` order none.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

from jax.sharding import PartitionSpec

Layout = tuple[tuple[str, ...], ...]
MeshSizes = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Fft:
    """Local complex FFT (or inverse) over ``axes``."""

    axes: tuple[int, ...]
    inverse: bool = False


@dataclass(frozen=True)
class Rfft:
    """Local real-to-complex FFT along ``axis`` (inverse: complex-to-real of length ``n``)."""

    axis: int
    n: int
    inverse: bool = False


@dataclass(frozen=True)
class Move:
    """All-to-all over ``mesh_axes``: split array axis ``dst``, gather array axis ``src``.

    ``src_len`` is the true local length of ``src`` afterwards (anything past it is padding to drop);
    ``dst_len`` is the true local length of ``dst`` before the move (needed to invert the move).
    """

    mesh_axes: tuple[str, ...]
    src: int
    dst: int
    src_len: int
    dst_len: int

    def inverted(self) -> Move:
        return Move(self.mesh_axes, self.dst, self.src, self.dst_len, self.src_len)


Step = Fft | Rfft | Move


@dataclass(frozen=True)
class Transpose:
    """Local transpose (no communication): physical axis ``i`` of the result is physical axis ``perm[i]`` of the
    input. Appears only in lowered programs (:func:`lower_plan`), never in a :class:`Plan`."""

    perm: tuple[int, ...]


@dataclass(frozen=True)
class TrailingFft:
    """One XLA FFT op over the last ``count`` physical axes (complex, or real-to-complex on the last one).

    ``real_n`` is 0 for a complex transform; otherwise the last axis is real of length ``real_n`` (forward:
    ``rfftn``, inverse: ``irfftn`` back to that length). Appears only in lowered programs.
    """

    count: int
    inverse: bool = False
    real_n: int = 0


LocalStep = Transpose | TrailingFft | Move


@dataclass(frozen=True)
class Program:
    """A plan lowered to physical axes: steps, and the axis order on entry and exit.

    ``in_perm[i]`` / ``out_perm[i]`` is the logical (natural) axis held by physical axis ``i`` of the input /
    output; ``in_layout`` / ``out_layout`` are the layouts of the physical arrays (the plan's, permuted).
    """

    steps: tuple[LocalStep, ...]
    in_perm: tuple[int, ...]
    out_perm: tuple[int, ...]
    in_layout: Layout
    out_layout: Layout


@dataclass(frozen=True)
class Plan:
    """A transform plan: input layout, steps, output layout and output global shape."""

    in_layout: Layout
    steps: tuple[Step, ...]
    out_layout: Layout
    out_shape: tuple[int, ...]

    @property
    def num_all_to_all(self) -> int:
        return sum(isinstance(s, Move) for s in self.steps)

    def inverted(self) -> Plan:
        steps = []
        for s in reversed(self.steps):
            if isinstance(s, Move):
                steps.append(s.inverted())
            elif isinstance(s, Rfft):
                steps.append(Rfft(s.axis, s.n, not s.inverse))
            else:
                steps.append(Fft(s.axes, not s.inverse))
        return Plan(self.out_layout, tuple(steps), self.in_layout, ())


def spec_to_layout(spec: PartitionSpec, ndim: int) -> Layout:
    """Expand a PartitionSpec into a layout of length ``ndim``."""
    entries = tuple(spec) + (None,) * (ndim - len(tuple(spec)))
    if len(entries) > ndim:
        raise ValueError(f"PartitionSpec {spec} has more entries than the array has axes ({ndim})")
    out = []
    for e in entries:
        if e is None or e == PartitionSpec.UNCONSTRAINED:
            out.append(())
        elif isinstance(e, str):
            out.append((e,))
        else:
            out.append(tuple(e))
    return tuple(out)


def layout_to_spec(layout: Layout) -> PartitionSpec:
    """Inverse of :func:`spec_to_layout` (single axes written as plain names)."""
    return PartitionSpec(*[None if not g else (g[0] if len(g) == 1 else g) for g in layout])


def _size(group: tuple[str, ...], sizes: dict[str, int]) -> int:
    return math.prod(sizes[a] for a in group)


def _check_even(shape: tuple[int, ...], layout: Layout, sizes: dict[str, int]) -> None:
    for ax, (n, g) in enumerate(zip(shape, layout)):
        if n % _size(g, sizes):
            raise ValueError(
                f"array axis {ax} of size {n} cannot be split evenly over mesh axes {g} "
                f"({_size(g, sizes)} devices): the mesh has more devices than this axis has planes "
                "or does not divide it"
            )


def _stack(existing: tuple[str, ...], group: tuple[str, ...], sizes: dict[str, int]) -> tuple[str, ...]:
    """Mesh axes of an array axis after ``group`` arrives (as minor axes, ahead of size-1 axes)."""
    big = tuple(a for a in existing if sizes[a] > 1)
    return big + group + tuple(a for a in existing if sizes[a] == 1)


class _NeedsBatch(ValueError):
    """The transformed axes cannot hold the mesh axes: plan through the batch axes (:func:`_plan_batch`)."""


@lru_cache(maxsize=512)
def plan_forward(shape: tuple[int, ...], layout: Layout, axes: tuple[int, ...], mesh_sizes: MeshSizes,
                 real: bool) -> Plan:
    """Plan a forward transform over ``axes`` (the last one is the half-spectrum axis if ``real``).

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
    _check_even(shape, layout, sizes)
    state = [tuple(g) for g in layout]
    shp = list(shape)
    steps: list[Step] = []
    done: set[int] = set()

    def eff(d: int) -> int:
        return _size(state[d], sizes)

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
        p = _size(g, sizes)
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
        steps.append(Rfft(r, shp[r]))
        shp[r] = shp[r] // 2 + 1
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
    if not batch and real and _size(tuple(a for a in layout[axes[-1]] if sizes[a] > 1), sizes) > 1:
        return _plan_half_first(shape, layout, axes, mesh_sizes, why)
    if not batch:
        raise ValueError(
            f"{why}; nor can they move to a non-transformed axis: all {ndim} axes of shape {tuple(shape)} "
            f"(layout {spec}) are transformed. Leave one transformed axis unsharded, or add a batch axis"
        )
    state = [tuple(g) for g in layout]
    shp = list(shape)
    loc = [shape[d] // _size(state[d], sizes) for d in range(ndim)]  # local lengths (padded on batch axes)
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
        p = _size(g, sizes)
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
        steps.append(Rfft(r, shp[r]))
        shp[r] = loc[r] = shp[r] // 2 + 1
        rest = tuple(d for d in axes if d != r)
    if rest:
        steps.append(Fft(tuple(rest)))
    for g, d, b, pre in reversed(moved):
        p = _size(g, sizes)
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
                     why: str) -> Plan:
    """r2c with every axis transformed and the half axis sharded: lend its mesh axes to another transformed axis.

    The half axis's mesh axes move (padded in transit) onto the transformed axis they divide best, the half axis
    is transformed, and they move back when its ``n // 2 + 1`` coefficients divide evenly (2 all-to-alls); the
    other axes are then planned as a c2c transform (:func:`plan_forward`).

    Raises:
      ValueError: the coefficients do not divide evenly (no even output layout without a batch axis).
    """
    sizes = dict(mesh_sizes)
    r = axes[-1]
    g = tuple(a for a in layout[r] if sizes[a] > 1)
    p = _size(g, sizes)
    state = [tuple(gr) for gr in layout]
    loc = [shape[d] // _size(state[d], sizes) for d in range(len(shape))]
    m = shape[r] // 2 + 1
    if m % p:
        raise ValueError(
            f"{why}; every axis of shape {tuple(shape)} (layout {layout_to_spec(layout)}) is transformed, and the "
            f"half axis {r} has {m} coefficients, which {p} devices do not divide: shard another axis, or add a "
            "batch axis"
        )
    t = min((d for d in axes if d != r), key=lambda d: (loc[d] % p != 0, -loc[d], d))
    pre = loc[t]
    full = loc[r] * p
    steps: list[Step] = [Move(g, r, t, full, pre), Rfft(r, shape[r]), Move(g, t, r, pre, m)]
    shp = list(shape)
    shp[r] = m
    rest = plan_forward(tuple(shp), layout, axes[:-1], mesh_sizes, False)
    return Plan(tuple(layout), tuple(steps) + rest.steps, rest.out_layout, rest.out_shape)


def canonical_layout(shape: tuple[int, ...], axes: tuple[int, ...], mesh_sizes: MeshSizes) -> Layout:
    """The layout xfft picks when it cannot see the input's sharding (Auto mesh under ``jax.jit``).

    Mesh axes (in mesh order, size-1 axes skipped) go to the leading transformed axes, one each, skipping axes
    they do not divide and keeping the last transformed axis unsharded if possible; extra mesh axes stack on an
    already sharded axis. Raises ``ValueError`` when the grid cannot be split evenly.
    """
    sizes = dict(mesh_sizes)
    layout: list[tuple[str, ...]] = [() for _ in shape]
    slots = list(axes[:-1]) + [axes[-1]]
    for a in (a for a, n in mesh_sizes if n > 1):
        # First slot that stays even, preferring unsharded ones; the last transformed axis only as a last resort.
        ok = [d for d in slots if (shape[d] // _size(layout[d], sizes)) % sizes[a] == 0]
        if not ok:
            raise ValueError(
                f"grid of shape {tuple(shape)} cannot be split over mesh axis {a!r} ({sizes[a]} devices) along "
                f"any of the transformed axes {axes}: the mesh has more devices than the grid has planes"
            )
        free = [d for d in ok if not layout[d]]
        if sum(not layout[d] for d in axes) <= 1:
            free = []  # keep one transformed axis unsharded: stack on a sharded axis instead
        stacked = [d for d in ok if layout[d]]
        if not (free or stacked):
            raise ValueError(f"grid of shape {tuple(shape)} cannot hold mesh axis {a!r} ({sizes[a]} devices) "
                             f"while keeping one of the transformed axes {axes} unsharded")
        d = (free or stacked)[0]
        layout[d] = layout[d] + (a,)
    out = tuple(layout)
    _check_even(shape, out, sizes)
    return out


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
                fwd = (plan_forward if batch else _plan_direct)(shape, layout, axes, mesh_sizes, real)
            except ValueError:
                continue
            if fwd.out_layout != tuple(spec_layout):
                continue
            # Prefer one array axis per mesh axis (a pencil over a stacked slab: r2c pencil P('x', 'y') and
            # slab P(('x', 'y')) share a spectral layout), then fewer all-to-alls, then leading axes.
            n_sharded = sum(_size(g, sizes) > 1 for g in layout)
            key = (-n_sharded, fwd.num_all_to_all, [[-len(g)] for g in layout], perm)
            if best is None or key < best[0]:
                best = (key, fwd)
    return best


def _local_groups(steps: tuple[Step, ...]) -> list[list[Fft | Rfft] | Move]:
    """Split plan steps into moves and runs of local transforms that one XLA FFT op can do.

    A run holds transforms of one direction with at most one real axis: first for a forward run (``rfftn`` does
    the real axis, then the others), last for an inverse run (``irfftn``).
    """
    out: list = []
    run: list[Fft | Rfft] = []

    def fits(s: Fft | Rfft) -> bool:
        if not run or run[0].inverse != s.inverse:
            return False
        if any(isinstance(r, Rfft) and r.inverse for r in run):
            return False  # an inverse real axis closes its run
        return not (isinstance(s, Rfft) and not s.inverse)  # a forward real axis opens one

    for s in steps:
        if isinstance(s, Move):
            if run:
                out.append(run)
                run = []
            out.append(s)
        elif fits(s):
            run.append(s)
        else:
            if run:
                out.append(run)
            run = [s]
    if run:
        out.append(run)
    return out


def _permute(layout: Layout, perm: tuple[int, ...]) -> Layout:
    return tuple(layout[p] for p in perm)


def invert_perm(perm: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``perm`` (``argsort``)."""
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return tuple(out)


@lru_cache(maxsize=512)
def lower_plan(plan: Plan, in_perm: tuple[int, ...] | None = None, natural_out: bool = True) -> Program:
    """Lower ``plan`` to a :class:`Program` over physical axes with as few transposes and FFT ops as possible.

    Args:
      plan: the logical plan.
      in_perm: the logical axis held by each physical input axis (default: natural order).
      natural_out: end in natural order (at most one final transpose); False keeps the order the transforms
        leave (the ``"transposed"`` spectral order).

    Returns:
      The program; ``out_perm`` says which logical axis each output axis is.
    """
    ndim = len(plan.in_layout)
    start = tuple(range(ndim)) if in_perm is None else tuple(in_perm)
    perm = list(start)
    steps: list[LocalStep] = []
    for g in _local_groups(plan.steps):
        if isinstance(g, Move):
            steps.append(Move(g.mesh_axes, perm.index(g.src), perm.index(g.dst), g.src_len, g.dst_len))
            continue
        axes = [a for s in g for a in (s.axes if isinstance(s, Fft) else (s.axis,))]
        real = next((s for s in g if isinstance(s, Rfft)), None)
        want = set(axes)
        # Bring the run's axes to the end, keeping the physical order of the others and of the run's own axes
        # (the real axis last): a no-op when they are trailing already.
        keep = [a for a in perm if a not in want]
        moved = [a for a in perm if a in want and (real is None or a != real.axis)]
        if real is not None:
            moved.append(real.axis)
        new = keep + moved
        if new != perm:
            steps.append(Transpose(tuple(perm.index(a) for a in new)))
            perm = new
        steps.append(TrailingFft(len(axes), g[0].inverse, 0 if real is None else real.n))
    if natural_out and perm != sorted(perm):
        steps.append(Transpose(invert_perm(tuple(perm))))
        perm = sorted(perm)
    out = tuple(perm)
    return Program(tuple(steps), start, out, _permute(plan.in_layout, start), _permute(plan.out_layout, out))
