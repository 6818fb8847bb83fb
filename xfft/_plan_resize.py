"""Crops and zero-pads of sharded axes (``numpy.fft``'s ``s=``): plans of moves and local resizes.

A sharded axis that changes length first lends its mesh axes to an axis they divide (one all-to-all), so no
device ever holds more than its block; the order of resizes and targets is searched for the fewest moves.
"""

from __future__ import annotations

from functools import lru_cache

from ._layout import Layout, MeshSizes, Move, Plan, Resize, Step, check_even, group_size, layout_to_spec
from ._plan import _stack


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
