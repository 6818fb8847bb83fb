"""The maximum of a field taken only where a flag is set: the CFL rate of a Runge-Kutta stage loop.

A scheme whose dt is chosen from the rate of the state (:meth:`solvers.integrators.Integrator.stage_loop`) needs
the rate's maximum across the devices in its first stage only, while the nonlinear term that forms the rate field
is traced once for all stages. :class:`GatedMax` is the reduction the stage loop passes to the equation
(``nonlinear_with_rate(..., reduce=...)``): the maximum where ``when`` is true, 0 where it is false, in a
``lax.cond``, so the other stages take no maximum and no collective. The maximum is a plain ``jnp.max`` of the
physical field (:meth:`solvers.Grid.from_physical_and_max`): on a sharded field, an all-reduce of a scalar per mesh
axis the field is sharded over.

On a GPU every such branch costs a round trip to the host
(:func:`solvers.integrators._base.host_control_flow`), so there the stage loop passes ``when=True``: every stage
takes the maximum (only the first stage's is used), and no ``lax.cond`` is formed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["GatedMax"]


@dataclass(frozen=True)
class GatedMax:
    """``reduce(field)``: ``max(field)`` (of ``dtype``) where ``when`` (a replicated boolean scalar), else 0."""

    when: jax.Array
    dtype: Any

    def __call__(self, field: jax.Array) -> jax.Array:
        zero = jnp.zeros((), self.dtype)
        if isinstance(self.when, bool):  # known at trace time: no branch (the stage loop on a GPU passes True)
            return jnp.max(field).astype(self.dtype) if self.when else zero
        return jax.lax.cond(self.when, lambda f: jnp.max(f).astype(self.dtype), lambda f: zero, field)
