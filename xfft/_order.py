"""Spectral axis orders: ``"natural"`` and ``"transposed"``, and reading a spectrum given in transposed order."""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import jax

from ._layout import NO_NYQUIST, Layout, MeshSizes, Move, Plan, half_length, invert_perm, layout_to_spec
from ._lower import lower_plan
from ._partition import placement
from ._plan import plan_forward
from ._plan_inverse import guess_layout, plan_inverse

#: spectral axis orders: natural (index ``[i, j, k]`` is ``(kx[i], ky[j], kz[k])``) or the order the moves leave
ORDERS = ("natural", "transposed")


def check_order(order: object) -> str:
    """Validate the spectral axis order argument: ``"natural"`` or ``"transposed"``.

    Raises:
      ValueError: anything else.
    """
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    return order


def transposed_spectrum(k: jax.Array, axes: tuple[int, ...], real: bool, s: tuple[int, ...] | None,
                        real_layout: Layout | None = None) -> tuple[tuple[int, ...], tuple[int, ...], Plan]:
    """Read a spectrum in ``"transposed"`` order: which axis order it has, its real shape, the inverse plan.

    The order is the one the forward transform of some real layout would leave with this shape and sharding
    (the spectrum's own layout first, then the guessed one, which XLA reshards to). Several orders can fit
    one shape and sharding; they are ranked like :func:`xfft._plan_inverse.plan_inverse` ranks real layouts (most
    sharded real axes, fewest all-to-alls, mesh axes in mesh order, leading axes sharded), after the guessed
    real layout of each shape (:func:`xfft.real_sharding`) and plans without padding, and the first is taken. A
    spectrum's shape and sharding do not tell which real layout it came from: where the fitting orders disagree
    on the real shape, ``s`` must say it (``(16, 24, 32)`` sharded ``P('x')`` and ``(24, 16, 32)`` sharded
    ``P(None, 'x')`` leave the same spectrum on 8 devices: the likelier would return the other's spectrum with
    its axes permuted), and where they agree on it but not on the order (a 16^3 grid sharded ``P('x')`` or
    ``P(None, 'x')``), only ``real_layout`` tells.

    Args:
      k: the spectrum (axes permuted as :func:`xfft.spectral_axes` says).
      axes: transformed axes, logical (natural) numbering.
      real: half spectrum on the last transformed axis.
      s: real-space lengths of the transformed axes in natural order, or None.
      real_layout: the layout of the forward transform's input (the inverse's ``out_sharding``), or None: then
        only the forward of that layout is read, and the ranking above is not needed.

    Returns:
      ``(perm, real_shape, plan)``: ``perm[i]`` is the natural axis of ``k``'s axis ``i``; ``real_shape`` is the
      natural real-space shape; ``plan`` the logical inverse plan (kinds not attached).

    Raises:
      ValueError: no forward transform leaves a spectrum of this shape and sharding, or several real shapes fit
        and ``s`` is not given.
    """
    pl = placement(k)
    sizes: MeshSizes = () if pl is None else pl.mesh_sizes
    known = None if pl is None else pl.layout
    shape = tuple(k.shape)
    if real_layout is not None:
        found = _from_layout(shape, known, sizes, axes, real, s, real_layout)
        shapes = sorted({f[1] for f in found})
        if len(shapes) > 1 and s is None:
            raise ValueError(f"k of shape {shape} in 'transposed' order can be the spectrum of real shapes "
                             f"{shapes} sharded as out_sharding: pass s= (the real lengths of the transformed axes)")
        if found:
            return min(found)
        raise ValueError(f"k of shape {shape} is not the 'transposed' spectrum of an array sharded as out_sharding "
                         f"({layout_to_spec(real_layout)}): no forward transform over axes {axes} from that layout "
                         "leaves this shape"
                         + ("" if known is None else " and sharding") + ("" if s is None else f" with s={s}"))
    for layout in ((known, None) if known is not None else (None,)):
        found = _find_perm(shape, layout, sizes, axes, real, s)
        if not found:
            continue
        # Several real shapes, whichever real layouts lead to them, is ambiguous: the best-ranked one (a guessed
        # real layout, unpadded moves) is only the likelier, and a spectrum of the other would come back permuted.
        shapes = sorted({f[1][1] for f in found})
        if len(shapes) > 1 and s is None:
            raise ValueError(f"k of shape {shape} in 'transposed' order can be the spectrum of real shapes "
                             f"{shapes}: pass s= (the real lengths of the transformed axes, natural order)")
        return min(found)[1]
    raise ValueError(f"k of shape {shape} is not a spectrum in 'transposed' order: no forward transform over axes "
                     f"{axes} leaves this shape and sharding" + ("" if s is None else f" with s={s}")
                     + " (pass order='natural' for a natural-order spectrum)")


def _real_shapes(shape: tuple[int, ...], axes: tuple[int, ...], real: bool, s: tuple[int, ...] | None):
    """``(perm, real shape)`` for every axis order of a spectrum of ``shape`` that ``s`` (if given) allows."""
    ndim = len(shape)
    for perm in itertools.permutations(range(ndim)):
        back = invert_perm(perm)
        nat = [shape[back[d]] for d in range(ndim)]
        rshape = list(nat)
        if s is not None and any(nat[d] != n for d, n in zip(axes[:-1], s[:-1])):
            continue
        if real:
            m = nat[axes[-1]]
            n = s[-1] if s is not None else 2 * (m - 1) if real != NO_NYQUIST else 2 * m
            if n < 1 or half_length(n, real) != m or (real == NO_NYQUIST and n % 2):
                continue
            rshape[axes[-1]] = n
        elif s is not None and nat[axes[-1]] != s[-1]:
            continue
        yield perm, tuple(rshape)


@lru_cache(maxsize=256)
def _from_layout(shape: tuple[int, ...], layout: Layout | None, sizes: MeshSizes, axes: tuple[int, ...], real: bool,
                 s: tuple[int, ...] | None, real_layout: Layout) -> tuple:
    """``(perm, real shape, inverse plan)`` of every real shape whose forward from ``real_layout`` leaves a
    spectrum of ``shape`` (and ``layout``, when given) in transposed order."""
    out = []
    for perm, rs in _real_shapes(shape, axes, real, s):
        try:
            fwd = plan_forward(rs, real_layout, axes, sizes, real)
        except ValueError:
            continue
        program = lower_plan(fwd, None, False)
        if program.out_perm == perm and (layout is None or program.out_layout == layout):
            out.append((perm, rs, fwd.inverted()))
    return tuple(out)


@lru_cache(maxsize=256)
def _find_perm(shape: tuple[int, ...], layout: Layout | None, sizes: MeshSizes, axes: tuple[int, ...], real: bool,
               s: tuple[int, ...] | None) -> tuple:
    """Every axis order whose forward leaves ``shape`` (and ``layout``, when given), as ``(rank, found)`` pairs."""
    ndim = len(shape)
    rank = {a: i for i, (a, _) in enumerate(sizes)}  # mesh order: real layouts that keep it rank first
    out = []
    for perm, rs in _real_shapes(shape, axes, real, s):
        back = invert_perm(perm)
        cands = []
        try:
            cands.append((0, plan_forward(rs, guess_layout(rs, axes, sizes, real), axes, sizes, real)))
        except ValueError:
            pass
        if layout is not None:
            inv = plan_inverse(rs, tuple(layout[back[d]] for d in range(ndim)), axes, sizes, real)
            if inv is not None:
                cands.append((1, inv.inverted()))
        for tier, fwd in cands:
            program = lower_plan(fwd, None, False)
            if program.out_perm != perm or (layout is not None and program.out_layout != layout):
                continue
            n_sharded = sum(math.prod(dict(sizes)[a] for a in g) > 1 for g in fwd.in_layout)
            names = [rank[a] for g in fwd.in_layout for a in g]
            inversions = sum(a > b for i, a in enumerate(names) for b in names[i + 1:])
            padded = any(isinstance(st, Move) and st.dst_len % math.prod(dict(sizes)[a] for a in st.mesh_axes)
                         for st in fwd.steps)
            key = (tier, padded, -n_sharded, fwd.num_all_to_all, inversions, [[-len(g)] for g in fwd.in_layout], perm)
            out.append((key, (perm, rs, fwd.inverted())))
    return tuple(out)
