"""The native backend: plans from :mod:`xfft._layout`, executed by :mod:`xfft._partition` (shard_map)."""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import jax

from .._layout import (
    Layout,
    MeshSizes,
    Plan,
    canonical_layout,
    invert_perm,
    lower_plan,
    plan_forward,
    plan_inverse,
)
from .._partition import Placement, execute, input_layout, placement, run_program

ORDERS = ("natural", "transposed")


class NativeBackend:
    """Local FFTs plus ``jax.lax.all_to_all`` inside ``jax.shard_map``.

    Spectral axis order: ``"natural"`` (default) or ``"transposed"`` (the order the transforms leave, see
    :func:`xfft.spectral_axes`); ``supports_order`` tells the dispatcher so.
    """

    name = "native"
    supports_order = True

    def forward(self, x: jax.Array, axes: tuple[int, ...], norm: str, real: bool,
                order: str = "natural") -> jax.Array:
        shape = tuple(x.shape)
        natural = order == "natural"
        pl = placement(x)
        if pl is None:
            plan = plan_forward(shape, ((),) * len(shape), axes, (), real)
            return run_program(x, lower_plan(plan, None, natural), norm, {})
        plan = plan_forward(shape, input_layout(pl, shape, axes), axes, pl.mesh_sizes, real)
        return execute(x, plan, pl, norm, natural_out=natural)

    def inverse(self, k: jax.Array, axes: tuple[int, ...], norm: str, real: bool,
                real_shape: tuple[int, ...], order: str = "natural") -> jax.Array:
        pl = placement(k)
        if order != "natural":
            perm, _, plan = transposed_spectrum(k, axes, real, real_shape[axes[-1]] if real else None)
            if pl is None:
                return run_program(k, lower_plan(plan, perm, True), norm, {})
            return execute(k, plan, pl, norm, in_perm=perm)
        if pl is None:
            return run_program(k, lower_plan(plan_forward(real_shape, ((),) * len(real_shape), axes, (),
                                                          real).inverted()), norm, {})
        plan = None
        if pl.layout is not None:
            plan = plan_inverse(real_shape, pl.layout, axes, pl.mesh_sizes, real)
        if plan is None:
            # Unknown or foreign spectral layout: invert the canonical real layout's plan (XLA reshards to it).
            canon = input_layout(Placement(pl.mesh, None, pl.explicit), real_shape, axes)
            plan = plan_forward(real_shape, canon, axes, pl.mesh_sizes, real).inverted()
        return execute(k, plan, pl, norm)


def transposed_spectrum(k: jax.Array, axes: tuple[int, ...], real: bool,
                        real_len: int | None) -> tuple[tuple[int, ...], tuple[int, ...], Plan]:
    """Read a spectrum in ``"transposed"`` order: which axis order it has, its real shape, the inverse plan.

    The order is the one the forward transform of some real layout would leave with this shape and sharding
    (the spectrum's own layout first, then the canonical one, which XLA reshards to).

    Args:
      k: the spectrum (axes permuted as :func:`xfft.spectral_axes` says).
      axes: transformed axes, logical (natural) numbering.
      real: half spectrum on the last transformed axis.
      real_len: real length of that axis (None: ``2 (m - 1)``); ignored for complex transforms.

    Returns:
      ``(perm, real_shape, plan)``: ``perm[i]`` is the natural axis of ``k``'s axis ``i``; ``real_shape`` is the
      natural real-space shape; ``plan`` the logical inverse plan.

    Raises:
      ValueError: no forward transform leaves a spectrum of this shape and sharding.
    """
    pl = placement(k)
    sizes: MeshSizes = () if pl is None else pl.mesh_sizes
    known = None if pl is None else pl.layout
    shape = tuple(k.shape)
    # Several orders can fit one shape and sharding (a cube's half-spectrum axis may sit anywhere): rank them
    # like plan_inverse does (most sharded real axes, fewest all-to-alls, mesh axes in mesh order, leading axes
    # sharded); a sharding no forward leaves is read with the canonical real layout (XLA reshards to it).
    for layout in ((known, None) if known is not None else (None,)):
        found = _find_perm(shape, layout, sizes, axes, real, real_len)
        if found is not None:
            return found
    raise ValueError(f"k of shape {shape} is not a spectrum in 'transposed' order: no forward transform over axes "
                     f"{axes} leaves this shape and sharding (pass order='natural' for a natural-order spectrum)")


@lru_cache(maxsize=256)
def _find_perm(shape: tuple[int, ...], layout: Layout | None, sizes: MeshSizes, axes: tuple[int, ...], real: bool,
               real_len: int | None) -> tuple[tuple[int, ...], tuple[int, ...], Plan] | None:
    """The best-ranked axis order whose forward leaves ``shape`` (and ``layout``, when given)."""
    ndim = len(shape)
    rank = {a: i for i, (a, _) in enumerate(sizes)}  # mesh order: real layouts that keep it rank first
    best = None
    for perm in itertools.permutations(range(ndim)):
        back = invert_perm(perm)
        nat = [shape[back[d]] for d in range(ndim)]
        rshape = list(nat)
        if real:
            m = nat[axes[-1]]
            n = real_len if real_len is not None else 2 * (m - 1)
            if n < 1 or n // 2 + 1 != m:
                continue
            rshape[axes[-1]] = n
        rs = tuple(rshape)
        cands = []
        try:
            cands.append(plan_forward(rs, canonical_layout(rs, axes, sizes) if sizes else ((),) * ndim, axes,
                                      sizes, real))
        except ValueError:
            pass
        if layout is not None:
            inv = plan_inverse(rs, tuple(layout[back[d]] for d in range(ndim)), axes, sizes, real)
            if inv is not None:
                cands.append(inv.inverted())
        for fwd in cands:
            program = lower_plan(fwd, None, False)
            if program.out_perm != perm or (layout is not None and program.out_layout != layout):
                continue
            n_sharded = sum(math.prod(dict(sizes)[a] for a in g) > 1 for g in fwd.in_layout)
            names = [rank[a] for g in fwd.in_layout for a in g]
            inversions = sum(a > b for i, a in enumerate(names) for b in names[i + 1:])
            key = (-n_sharded, fwd.num_all_to_all, inversions, [[-len(g)] for g in fwd.in_layout], perm)
            if best is None or key < best[0]:
                best = (key, (perm, rs, fwd.inverted()))
    return None if best is None else best[1]
