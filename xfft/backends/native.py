"""The native backend: plans from :mod:`xfft._layout`, executed by :mod:`xfft._partition` (shard_map)."""

from __future__ import annotations

import jax

from .._layout import plan_forward, plan_inverse
from .._partition import Placement, execute, input_layout, placement, run_local


class NativeBackend:
    """Local FFTs plus ``jax.lax.all_to_all`` inside ``jax.shard_map``; natural axis order everywhere."""

    name = "native"

    def forward(self, x: jax.Array, axes: tuple[int, ...], norm: str, real: bool) -> jax.Array:
        shape = tuple(x.shape)
        pl = placement(x)
        if pl is None:
            return run_local(x, plan_forward(shape, ((),) * len(shape), axes, (), real), norm, {})
        plan = plan_forward(shape, input_layout(pl, shape, axes), axes, pl.mesh_sizes, real)
        return execute(x, plan, pl, norm)

    def inverse(self, k: jax.Array, axes: tuple[int, ...], norm: str, real: bool,
                real_shape: tuple[int, ...]) -> jax.Array:
        pl = placement(k)
        if pl is None:
            return run_local(k, plan_forward(real_shape, ((),) * len(real_shape), axes, (), real).inverted(),
                             norm, {})
        plan = None
        if pl.layout is not None:
            plan = plan_inverse(real_shape, pl.layout, axes, pl.mesh_sizes, real)
        if plan is None:
            # Unknown or foreign spectral layout: invert the canonical real layout's plan (XLA reshards to it).
            canon = input_layout(Placement(pl.mesh, None, pl.explicit), real_shape, axes)
            plan = plan_forward(real_shape, canon, axes, pl.mesh_sizes, real).inverted()
        return execute(k, plan, pl, norm)
