"""Lowering: a :class:`~xfft._layout.Plan` over logical axes becomes a :class:`Program` over physical axes.

XLA's FFT op only transforms the minor-most axes, so each run of local transforms becomes one multi-axis FFT op
over the trailing axes (:class:`TrailingFft`), preceded by a local :class:`Transpose` only when those axes are not
already trailing; the axis order is then kept as it is (no transpose back) until the end, where the natural
order costs at most one transpose and the ``"transposed"`` order none. With ``matrix_dft`` (CPU devices, where a
transpose that changes the minor-most axis costs more than a matrix product), the natural order costs none either:
the last run of a forward program (the first of an inverse) runs in natural axis order, each of its axes that is
not trailing transformed where it lies by matrix products (:class:`AxisDft`), and the transpose to natural order
that it needs comes right after an all-to-all, where XLA fuses it with the all-to-all's own copy. A half axis
without its Nyquist coefficient (:data:`xfft._layout.NO_NYQUIST`) is cropped after its ``rfftn`` and zero-padded
before its ``irfftn``, where it is local (a :class:`~xfft._layout.Resize` beside the stage). Real-to-real axes
(DCT/DST) of a run are lowered the same way (the physical axis order never depends on the kinds, so
:func:`xfft.spectral_axes` holds for every kind); within the run they are computed along their own axis, the
Fourier axes by one FFT op. :class:`~xfft._layout.FourStep` and :class:`~xfft._layout.Gather` steps keep the
axis order (their axis is renumbered physically). With ``send_transposed`` (CPU devices), a move that a transpose
follows becomes one :class:`SendTransposed` step. What the two choices are and where they apply is a
:class:`~xfft.LoweringOptions` value; the program lists every step the interpreter
(:func:`xfft._partition.run_program`) runs, one operation each.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ._layout import Fft, FourStep, Gather, Layout, Move, Plan, Resize, Rfft, Step, invert_perm, permute
from ._matdft import factors
from ._options import LoweringOptions


@dataclass(frozen=True)
class Transpose:
    """Local transpose (no communication): physical axis ``i`` of the result is physical axis ``perm[i]`` of the
    input. Appears only in lowered programs (:func:`lower_plan`), never in a :class:`~xfft._layout.Plan`."""

    perm: tuple[int, ...]


@dataclass(frozen=True)
class TrailingFft:
    """One local transform stage over the last ``count`` physical axes: for FFTs, one XLA FFT op.

    ``real_n`` is 0 for a complex transform; otherwise the last axis is real of length ``real_n`` (forward:
    ``rfftn``, inverse: ``irfftn`` back to that length). ``kinds`` is empty when every axis is Fourier, else one
    entry of :data:`xfft._layout.KINDS` per trailing axis (``"rfft"`` for the real axis). Appears only in lowered
    programs.
    """

    count: int
    inverse: bool = False
    real_n: int = 0
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class AxisDft:
    """The DFT (or inverse) along physical axis ``axis`` where it lies, by matrix products of its factors
    (:func:`xfft._matdft.dft_along`; the FFT op where the length has no small factors). Appears only in lowered
    programs."""

    axis: int
    inverse: bool = False


@dataclass(frozen=True)
class SendTransposed:
    """The all-to-all of ``move`` followed by the local transpose ``perm`` (as :class:`Transpose`), run as one
    exchange whose sender puts each destination chunk in the output's axis order first
    (:func:`xfft._exchange.move_then_transpose`): the same array, without the strided pass that stacks the
    received chunks. Appears only in lowered programs (``LoweringOptions.send_transposed``)."""

    move: Move
    perm: tuple[int, ...]


LocalStep = Transpose | TrailingFft | AxisDft | Move | SendTransposed | Resize | FourStep | Gather


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


def _local_groups(steps: tuple[Step, ...]) -> list[list[Fft | Rfft] | Move | Resize | FourStep | Gather]:
    """Split plan steps into moves, resizes, four-steps, gathers and runs of local transforms that one stage can do.

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
        if isinstance(s, (Move, Resize, FourStep, Gather)):
            if run:
                out.append(run)
                run = []
            out.append(s)
        elif isinstance(s, (Fft, Rfft)):
            if fits(s):
                run.append(s)
            else:
                if run:
                    out.append(run)
                run = [s]
        else:
            raise TypeError(f"unknown plan step {s!r} (expected Fft, Rfft, Move, Resize, FourStep or Gather)")
    if run:
        out.append(run)
    return out


def _kinds(run: list[Fft | Rfft], order: list[int]) -> tuple[str, ...]:
    """Per-axis kinds of a run in the physical ``order`` of its axes (empty when all are Fourier)."""
    kind: dict[int, str] = {}
    for s in run:
        if isinstance(s, Rfft):
            kind[s.axis] = "rfft"
        else:
            kind.update((a, s.kind(a)) for a in s.axes)
    if all(k in ("fft", "rfft") for k in kind.values()):
        return ()
    return tuple(kind[a] for a in order)


def _in_place(groups: list, start: tuple[int, ...], natural_out: bool, lengths: tuple[int, ...]) -> int | None:
    """The index of the run of ``groups`` that runs in natural order in place (see the module docstring), or None.

    Forward with a natural output: the last run, right after an all-to-all (which then also does the transpose to
    natural order). Inverse from a natural input: the first run, if it is the first step and an all-to-all follows
    it. The run must hold Fourier axes only (complex FFTs: no real axis, no DCT/DST), whose ``lengths`` (by logical
    axis; empty: not known) have small factors (:func:`xfft._matdft.factors`).
    """
    runs = [i for i, g in enumerate(groups) if isinstance(g, list)]
    if not runs:
        return None
    first, last = runs[0], runs[-1]
    if natural_out and not groups[last][0].inverse and last > 0 and isinstance(groups[last - 1], Move):
        pick = last
    elif (start == tuple(sorted(start)) and first == 0 and groups[0][0].inverse and len(groups) > 1
          and isinstance(groups[1], Move)):
        pick = first
    else:
        return None
    run = groups[pick]
    if any(isinstance(s, Rfft) or any(k != "fft" for k in s.kinds) for s in run):
        return None
    if lengths and any(factors(lengths[a]) is None for a in _split(run, len(start))[0]):
        return None
    return pick


def _split(run: list[Fft], ndim: int) -> tuple[list[int], int]:
    """The axes of ``run`` that are not trailing in natural order, and how many trailing axes it holds."""
    axes = {a for s in run for a in s.axes}
    trailing = 0
    while trailing < ndim and ndim - 1 - trailing in axes:
        trailing += 1
    return sorted(a for a in axes if a < ndim - trailing), trailing


def _lower_in_place(run: list[Fft], perm: list[int], steps: list[LocalStep]) -> list[int]:
    """Lower ``run`` in natural axis order: a transpose to it if needed, an :class:`AxisDft` per axis that is not
    trailing, one FFT op over the trailing ones. Returns the (natural) axis order."""
    natural = sorted(perm)
    if perm != natural:
        steps.append(Transpose(invert_perm(tuple(perm))))
    inner, trailing = _split(run, len(perm))
    steps.extend(AxisDft(a, run[0].inverse) for a in inner)
    if trailing:
        steps.append(TrailingFft(trailing, run[0].inverse))
    return natural


def _send_transposed(steps: list[LocalStep]) -> list[LocalStep]:
    """``steps`` with each :class:`~xfft._layout.Move` that a :class:`Transpose` follows made one
    :class:`SendTransposed`."""
    out: list[LocalStep] = []
    for s in steps:
        if isinstance(s, Transpose) and out and isinstance(out[-1], Move):
            out[-1] = SendTransposed(out[-1], s.perm)
        else:
            out.append(s)
    return out


#: the lowering that assumes nothing of the devices (no matrix DFTs, plain exchanges): one device, and layouts
PLAIN = LoweringOptions()


@lru_cache(maxsize=512)
def lower_plan(plan: Plan, in_perm: tuple[int, ...] | None = None, natural_out: bool = True,
               options: LoweringOptions = PLAIN, shape: tuple[int, ...] = ()) -> Program:
    """Lower ``plan`` to a :class:`Program` over physical axes with as few transposes and FFT ops as possible.

    Args:
      plan: the logical plan.
      in_perm: the logical axis held by each physical input axis (default: natural order).
      natural_out: end in natural order (at most one final transpose); False keeps the order the transforms
        leave (the ``"transposed"`` spectral order).
      options: the lowering choices (part of the cache key). ``matrix_dft``: run the last run of a natural-order
        program (the first of an inverse from natural order) in place (:class:`AxisDft`), so that the natural
        order costs no transpose of its own (module docstring); ``send_transposed``: a move that a transpose
        follows is one :class:`SendTransposed` step.
      shape: the global shape of the input in natural order, if known: a run whose lengths have no small factors
        keeps its FFT op and transposes.

    Returns:
      The program; ``out_perm`` says which logical axis each output axis is.

    Raises:
      TypeError: a plan step that is not a :class:`~xfft._layout.Fft`, ``Rfft``, ``Move``, ``Resize``,
        ``FourStep`` or ``Gather``.
    """
    ndim = len(plan.in_layout)
    start = tuple(range(ndim)) if in_perm is None else tuple(in_perm)
    perm = list(start)
    steps: list[LocalStep] = []
    groups = _local_groups(plan.steps)
    lengths = plan.out_shape if plan.out_shape and natural_out else shape  # a forward's last run, an inverse's first
    in_place = _in_place(groups, start, natural_out, tuple(lengths)) if options.matrix_dft else None
    for i, g in enumerate(groups):
        if isinstance(g, Move):
            steps.append(Move(g.mesh_axes, perm.index(g.src), perm.index(g.dst), g.src_len, g.dst_len))
            continue
        if isinstance(g, Resize):
            steps.append(Resize(perm.index(g.axis), g.n))
            continue
        if isinstance(g, FourStep):
            steps.append(FourStep(perm.index(g.axis), g.mesh_axes, g.n, g.inverse))
            continue
        if isinstance(g, Gather):
            steps.append(Gather(g.mesh_axes, perm.index(g.axis), g.n, g.scatter))
            continue
        if i == in_place:
            perm = _lower_in_place(g, perm, steps)
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
        trim = real is not None and not real.nyquist  # the half axis (last here) without its Nyquist coefficient
        if trim and real.inverse:
            steps.append(Resize(ndim - 1, real.n // 2 + 1))  # a zero Nyquist coefficient for irfftn
        steps.append(TrailingFft(len(axes), g[0].inverse, 0 if real is None else real.n, _kinds(g, moved)))
        if trim and not real.inverse:
            steps.append(Resize(ndim - 1, real.n // 2))
    if natural_out and perm != sorted(perm):
        steps.append(Transpose(invert_perm(tuple(perm))))
        perm = sorted(perm)
    out = tuple(perm)
    if options.send_transposed:
        steps = _send_transposed(steps)
    return Program(tuple(steps), start, out, permute(plan.in_layout, start), permute(plan.out_layout, out))
