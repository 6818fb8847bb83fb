"""The state of a particle simulation: positions and velocities, sharded over every device of the mesh."""

from __future__ import annotations

from typing import NamedTuple

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["Particles", "particle_sharding"]


class Particles(NamedTuple):
    """Positions and velocities of ``N`` particles in ``D`` dimensions, and optionally their weights: a pytree of
    two ``(N, D)`` arrays (and an ``(N,)`` one).

    Positions are in the box's units (``[0, L_d)`` along axis ``d``, periodic), velocities in the equation's (for
    the comoving N-body equation: the canonical momentum ``a^2 dx/dt``). Both are sharded over every axis of the
    device mesh along the particle axis (:func:`particle_sharding`), independently of the mesh's field sharding:
    :func:`xfft.paint` and :func:`xfft.readout` route each particle to the block that owns its cells.

    Weights (None: all equal) scale each particle's mass and charge; they have mean 1 (a quiet start's beams
    weighted by the Maxwellian), and stay constant.
    """

    positions: jax.Array
    velocities: jax.Array
    weights: jax.Array | None = None


def particle_sharding(mesh: Mesh | None) -> NamedSharding | None:
    """The sharding of a particle array ``(N, D)``: the particle axis split over every mesh axis (None: no mesh).

    Raises:
      TypeError: ``mesh`` is not a ``jax.sharding.Mesh``.
    """
    if mesh is None:
        return None
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh (xfft.make_mesh), got {type(mesh).__name__}")
    return NamedSharding(mesh, PartitionSpec(tuple(mesh.axis_names), None))
