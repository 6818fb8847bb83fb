"""Spectral axis orders: ``"natural"`` and ``"transposed"``, and reading a spectrum given in transposed order."""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import jax

from ._layout import NO_NYQUIST, Layout, MeshSizes, Move, Plan, half_length, invert_perm
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


def transposed_spectrum(k: jax.Array, axes: tuple[int, ...], real: bool,
                        s: tuple[int, ...] | None) -> tuple[tuple[int, ...], tuple[int, ...], Plan]:
    """Read a spectrum in ``"transposed"`` order: which axis order it has, its real shape, the inverse plan.

    The order is the one the forward transform of some real layout would leave with this shape and sharding
    (the spectrum's own layout first, then the guessed one, which XLA reshards to). Several orders can fit
    one shape and sharding; they are ranked like :func:`xfft._plan_inverse.plan_inverse` ranks real layouts (most
    sharded real axes, fewest all-to-alls, mesh axes in mesh order, leading axes sharded), after the guessed
    real layout of each shape (:func:`xfft.real_sharding`) and plans without padding. Where the fitting
    orders disagree on the real shape (a non-cubic grid whose sharding is not visible, e.g. an Auto mesh under
    ``jax.jit``), ``s`` must say it.

    Args:
      k: the spectrum (axes permuted as :func:`xfft.spectral_axes` says).
      axes: transformed axes, logical (natural) numbering.
      real: half spectrum on the last transformed axis.
      s: real-space lengths of the transformed axes in natural order, or None.

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
    for layout in ((known, None) if known is not None else (None,)):
        found = _find_perm(shape, layout, sizes, axes, real, s)
        if not found:
            continue
        # Guessed real layouts and unpadded moves first; several real shapes among the best is ambiguous.
        tier = min(f[0][:2] for f in found)
        shapes = sorted({f[1][1] for f in found if f[0][:2] == tier})
        if len(shapes) > 1 and s is None:
            raise ValueError(f"k of shape {shape} in 'transposed' order can be the spectrum of real shapes "
                             f"{shapes}: pass s= (the real lengths of the transformed axes, natural order)")
        return min(found)[1]
    raise ValueError(f"k of shape {shape} is not a spectrum in 'transposed' order: no forward transform over axes "
                     f"{axes} leaves this shape and sharding" + ("" if s is None else f" with s={s}")
                     + " (pass order='natural' for a natural-order spectrum)")


@lru_cache(maxsize=256)
def _find_perm(shape: tuple[int, ...], layout: Layout | None, sizes: MeshSizes, axes: tuple[int, ...], real: bool,
               s: tuple[int, ...] | None) -> tuple:
    """Every axis order whose forward leaves ``shape`` (and ``layout``, when given), as ``(rank, found)`` pairs."""
    ndim = len(shape)
    rank = {a: i for i, (a, _) in enumerate(sizes)}  # mesh order: real layouts that keep it rank first
    out = []
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
        rs = tuple(rshape)
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
