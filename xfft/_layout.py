"""Layouts and plan steps: which mesh axes shard which array axes, and the data types of a transform plan.

A *layout* is a tuple with one entry per array axis; each entry is a tuple of mesh-axis names (major to minor)
that shard that array axis, exactly like a ``PartitionSpec`` written out in full. A *plan* (:class:`Plan`) is the
sequence of steps that transforms every requested array axis: local transform stages (:class:`Fft`,
:class:`Rfft`), local crops/pads (:class:`Resize`), all-to-all moves (:class:`Move`), transforms of an axis that
stays sharded (:class:`FourStep`) and, where no even layout of the output exists, all-gathers (:class:`Gather`).
Plans are made by the pure, cached planning functions of :mod:`xfft._plan`, lowered to programs over physical
axes by :mod:`xfft._lower` and run by the one executor in :mod:`xfft._partition`. Everything here is static
information (frozen dataclasses).

Per-axis transform kinds: an :class:`Fft` stage transforms each of its axes with a kind from :data:`KINDS`
(``"fft"`` unless ``kinds`` says otherwise: a DCT or DST of type 1-4); the real-to-complex axis is an
:class:`Rfft` stage. The planner's moves do not depend on the kinds, so a DCT plan moves data exactly like the
complex FFT plan over the same axes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from jax.sharding import PartitionSpec

Layout = tuple[tuple[str, ...], ...]
MeshSizes = tuple[tuple[str, int], ...]

#: transform kinds, one per transformed axis (``xfft.xr2rn``): complex FFT, real FFT (at most one axis), DCT/DST 1-4
KINDS = ("fft", "rfft") + tuple(f"{k}{t}" for k in ("dct", "dst") for t in (1, 2, 3, 4))
#: the real-to-real kinds (DCT and DST of types 1-4)
DCT_DST_KINDS = KINDS[2:]


@dataclass(frozen=True)
class Fft:
    """Local transform (or inverse) over ``axes``: complex FFT, or per axis the kind in ``kinds``.

    ``kinds`` is empty (every axis ``"fft"``) or holds one entry of :data:`KINDS` (not ``"rfft"``) per axis.
    """

    axes: tuple[int, ...]
    inverse: bool = False
    kinds: tuple[str, ...] = ()

    def kind(self, axis: int) -> str:
        """The kind of ``axis`` (one of ``axes``)."""
        return self.kinds[self.axes.index(axis)] if self.kinds else "fft"


@dataclass(frozen=True)
class Rfft:
    """Local real-to-complex FFT along ``axis`` (inverse: complex-to-real of length ``n``).

    ``nyquist=False`` (a plan with ``real=``:data:`NO_NYQUIST`): the half axis holds ``n // 2`` coefficients,
    the Nyquist one left out (forward: dropped; inverse: taken as zero)."""

    axis: int
    n: int
    inverse: bool = False
    nyquist: bool = True


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


@dataclass(frozen=True)
class FourStep:
    """DFT (or inverse) of ``n`` points along array axis ``axis``, which stays sharded over ``mesh_axes``: three
    all-to-alls and local transforms (:mod:`xfft._fourstep`); the layout does not change."""

    axis: int
    mesh_axes: tuple[str, ...]
    n: int
    inverse: bool = False


@dataclass(frozen=True)
class Gather:
    """All-gather of array axis ``axis`` over ``mesh_axes``, cropped to its true length ``n`` (the last blocks may
    be padding): the axis becomes replicated. Only where no even layout of a transform's output exists (JAX shards
    arrays evenly). ``scatter=True`` is its inverse: each device keeps its block of the replicated axis (padded to
    a multiple of the devices), no communication."""

    mesh_axes: tuple[str, ...]
    axis: int
    n: int
    scatter: bool = False

    def inverted(self) -> Gather:
        return Gather(self.mesh_axes, self.axis, self.n, not self.scatter)


@dataclass(frozen=True)
class Resize:
    """Local crop or zero-pad of array axis ``axis`` (unsharded at this step) to length ``n``, like the ``s`` of
    ``numpy.fft``: keep the first ``n`` entries, or append zeros."""

    axis: int
    n: int


Step = Fft | Rfft | Move | Resize | FourStep | Gather

#: the ``real`` argument of the planners for a real transform whose half axis leaves out the Nyquist coefficient
#: (``xrfftn(..., drop_nyquist=True)``); it is truthy, so every ``if real`` treats it as a real transform
NO_NYQUIST = "no-nyquist"


def half_length(n: int, real: bool | str) -> int:
    """Coefficients on the half axis of a real transform of ``n`` points: ``n // 2 + 1``, or ``n // 2`` when
    ``real`` is :data:`NO_NYQUIST`."""
    return n // 2 if real == NO_NYQUIST else n // 2 + 1


@dataclass(frozen=True)
class Plan:
    """A transform plan: input layout, steps, output layout and output global shape."""

    in_layout: Layout
    steps: tuple[Step, ...]
    out_layout: Layout
    out_shape: tuple[int, ...]

    @property
    def num_all_to_all(self) -> int:
        return sum(isinstance(s, Move) + 3 * isinstance(s, FourStep) for s in self.steps)

    def inverted(self) -> Plan:
        """The plan that undoes this one (steps reversed and inverted; the output shape is not tracked).

        Raises:
          ValueError: the plan crops or pads (:class:`Resize` loses data).
        """
        steps: list[Step] = []
        for s in reversed(self.steps):
            if isinstance(s, (Move, Gather)):
                steps.append(s.inverted())
            elif isinstance(s, FourStep):
                steps.append(FourStep(s.axis, s.mesh_axes, s.n, not s.inverse))
            elif isinstance(s, Rfft):
                steps.append(Rfft(s.axis, s.n, not s.inverse, s.nyquist))
            elif isinstance(s, Fft):
                steps.append(Fft(s.axes, not s.inverse, s.kinds))
            else:
                raise ValueError(f"a plan with {s!r} cannot be inverted (cropping or padding loses data)")
        return Plan(self.out_layout, tuple(steps), self.in_layout, ())


def with_kinds(plan: Plan, kinds: tuple[tuple[int, str], ...]) -> Plan:
    """``plan`` with the per-axis ``kinds`` (``(axis, kind)`` pairs of real-to-real axes) on its :class:`Fft` steps.

    Axes not named stay ``"fft"``; the moves and layouts are unchanged (they do not depend on the kinds).

    Raises:
      ValueError: a real-to-real kind on an axis the plan transforms with :class:`FourStep` (a DCT or DST needs
        its whole axis on one device).
    """
    if not kinds:
        return plan
    kind = dict(kinds)
    for s in plan.steps:
        if isinstance(s, FourStep) and kind.get(s.axis, "fft") != "fft":
            raise ValueError(
                f"kind {kind[s.axis]!r} along axis {s.axis}: the axis is sharded and no other axis can take its "
                f"mesh axes {s.mesh_axes}, so it would be transformed across the devices (four-step), which only "
                "the Fourier kind 'fft' allows; shard another axis, or add one for the mesh axes to move to"
            )
    steps = tuple(Fft(s.axes, s.inverse, tuple(kind.get(a, "fft") for a in s.axes)) if isinstance(s, Fft) else s
                  for s in plan.steps)
    return Plan(plan.in_layout, steps, plan.out_layout, plan.out_shape)


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


def group_size(group: tuple[str, ...], sizes: dict[str, int]) -> int:
    """Number of devices of the mesh axes ``group``."""
    return math.prod(sizes[a] for a in group)


def check_even(shape: tuple[int, ...], layout: Layout, sizes: dict[str, int]) -> None:
    """Raise ``ValueError`` when ``layout`` does not split ``shape`` evenly (JAX arrays are sharded evenly)."""
    for ax, (n, g) in enumerate(zip(shape, layout)):
        if n % group_size(g, sizes):
            raise ValueError(
                f"array axis {ax} of size {n} cannot be split evenly over mesh axes {g} "
                f"({group_size(g, sizes)} devices): the mesh has more devices than this axis has planes "
                "or does not divide it"
            )


def canonical_layout(shape: tuple[int, ...], axes: tuple[int, ...], mesh_sizes: MeshSizes) -> Layout:
    """The layout xfft picks for a grid whose sharding it cannot see (:func:`xfft.real_sharding`).

    Mesh axes (in mesh order, size-1 axes skipped) go to the leading ``axes``, one each, skipping axes they do not
    divide and keeping the last of ``axes`` unsharded if possible (a 1D grid shards its one axis); extra mesh axes
    stack on an already sharded axis. Raises ``ValueError`` when the grid cannot be split evenly.
    """
    sizes = dict(mesh_sizes)
    layout: list[tuple[str, ...]] = [() for _ in shape]
    slots = list(axes[:-1]) + [axes[-1]]
    for a in (a for a, n in mesh_sizes if n > 1):
        # First slot that stays even, preferring unsharded ones; the last transformed axis only as a last resort.
        ok = [d for d in slots if (shape[d] // group_size(layout[d], sizes)) % sizes[a] == 0]
        if not ok:
            few = all(shape[d] // group_size(layout[d], sizes) < sizes[a] for d in slots)
            why = ("the mesh has more devices than the grid has planes" if few else
                   f"none of their sizes {tuple(shape[d] for d in axes)} is divisible by {sizes[a]} "
                   "(JAX shards arrays evenly)")
            raise ValueError(
                f"grid of shape {tuple(shape)} cannot be split over mesh axis {a!r} ({sizes[a]} devices) along "
                f"any of the transformed axes {axes}: {why}"
            )
        free = [d for d in ok if not layout[d]]
        if len(axes) > 1 and sum(not layout[d] for d in axes) <= 1:
            free = []  # keep one transformed axis unsharded: stack on a sharded axis instead
        stacked = [d for d in ok if layout[d]]
        if not (free or stacked):
            raise ValueError(f"grid of shape {tuple(shape)} cannot hold mesh axis {a!r} ({sizes[a]} devices) "
                             f"while keeping one of the transformed axes {axes} unsharded")
        d = (free or stacked)[0]
        layout[d] = layout[d] + (a,)
    out = tuple(layout)
    check_even(shape, out, sizes)
    return out


def permute(layout: Layout, perm: tuple[int, ...]) -> Layout:
    """The layout of an array whose axis ``i`` is axis ``perm[i]`` of an array laid out as ``layout``."""
    return tuple(layout[p] for p in perm)


def invert_perm(perm: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``perm`` (``argsort``)."""
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return tuple(out)
