"""Points for a grid the mesh cannot split: the smallest sizes at least as large that it can.

JAX shards arrays evenly, so ``30^3`` on 8 devices fits no layout (:mod:`xfft` pads only in transit). A periodic
grid of ``n`` modes is then stored on ``p > n`` points (:class:`~solvers.SpectralGrid`'s ``points``): dealiased
products are exact on either, so the run is the ``n``-point run (``--n 30`` on 8 devices).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from .grid import Grid

#: how far above each size the search looks (even sizes only), and at most how many combinations it tries
REACH, MAX_TRIES = 16, 400


def storage_points(shape: tuple[int, ...], build: Callable[[tuple[int, ...]], Grid]) -> Grid | None:
    """The grid of ``shape`` modes on the fewest points (then the most even sizes) that ``build(points)`` can
    hold, trying even sizes from ``shape`` to ``shape + REACH`` per axis; None if none of them fits."""
    sizes = [range(n, n + REACH + 1, 2) for n in shape]
    tries = sorted((p for p in itertools.product(*sizes) if p != tuple(shape)),
                   key=lambda p: (math.prod(p), max(p) - min(p), p))
    for points in tries[:MAX_TRIES]:
        try:
            return build(points)
        except ValueError:
            continue
    return None
