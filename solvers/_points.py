"""Points for a grid the mesh cannot split: the smallest sizes at least as large that it can.

JAX shards arrays evenly, so ``30^3`` on 8 devices fits no layout (:mod:`xfft` pads only in transit). A periodic
grid of ``n`` modes is then stored on ``p > n`` points (:class:`~solvers.SpectralGrid`'s ``points``): dealiased
products are exact on either, so the run is the ``n``-point run (issue 16: ``--n 30`` on 8 devices).
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable
from pathlib import Path

from . import io
from ._grid import Grid

#: how far above each size the search looks (even sizes only), and at most how many combinations it tries
REACH, MAX_TRIES = 16, 400


def takes_points(grid_for: Callable) -> bool:
    """True when an equation's ``grid_for`` accepts ``points`` (its grid can hold its modes on more points)."""
    return "points" in inspect.signature(grid_for).parameters


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


def checkpoint_points(ckdir: Path) -> tuple[int, ...] | None:
    """The points the latest checkpoint in ``ckdir`` holds its fields on (None: no checkpoint, or one written
    before points were recorded, which holds them on the grid's own sizes)."""
    if not (ckdir.is_dir() and any(ckdir.iterdir())):
        return None
    ck = io.Checkpoints(ckdir)
    try:
        latest = ck.latest_step()
        points = None if latest is None else ck.read_meta(latest).get("points")
    finally:
        ck.close()
    return None if points is None else tuple(int(p) for p in points)

