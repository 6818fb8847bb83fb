"""The grid's natural spectral order: the view of a spectrum in natural axis order with the Nyquist coefficient of a
half axis (what checkpoints and outputs hold), and back."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec


class NaturalOrder:
    """Mixin of :class:`~solvers.Grid`: conversions between the grid's spectral order and the natural one."""

    def natural_sharding(self, batch: int = 0) -> NamedSharding:
        """Sharding of the coefficients in natural order (:meth:`to_natural`), ``batch`` leading axes."""
        return NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *self._nat_spec.spec))

    # ----- spectral axis order ---------------------------------------------------------------------------
    def to_natural(self, c: jax.Array) -> jax.Array:
        """Coefficients ``c`` (this grid's order, any leading batch axes) in natural order: index ``[..., i, j, k]``
        is mode ``(i, j, k)``, sharded like :meth:`natural_sharding` (one all-to-all where the orders differ), the
        half axis with its Nyquist coefficient (zero where the grid leaves it out: :attr:`nyquist`) as
        ``numpy.fft.rfftn`` has it."""
        if self.order == "natural" and self.nyquist:
            return c
        lead = c.ndim - self.ndim
        axes = tuple(range(lead)) + tuple(lead + self.perm.index(d) for d in range(self.ndim))
        c = jnp.transpose(c, axes)
        if not self.nyquist:  # the half axis is local in the natural layout: append its zero Nyquist coefficient
            c = self.reshard(c, self.natural_sharding(lead))
            c = jnp.pad(c, [(0, 0)] * (c.ndim - 1) + [(0, 1)])
        return self.reshard(c, self.natural_sharding(lead))

    def from_natural(self, c: jax.Array) -> jax.Array:
        """Inverse of :meth:`to_natural`: natural-order coefficients in this grid's order and sharding (without
        the Nyquist coefficient where the grid leaves it out)."""
        if self.order == "natural" and self.nyquist:
            return c
        lead = c.ndim - self.ndim
        if not self.nyquist:
            c = self.reshard(c, self.natural_sharding(lead))[..., :-1]
        axes = tuple(range(lead)) + tuple(lead + p for p in self.perm)
        return self.reshard(jnp.transpose(c, axes), self.spectral_sharding(lead))

    def natural_like(self, like):
        """``jax.ShapeDtypeStruct`` pytree of a state ``like`` (this grid's order) in natural order."""
        def one(a):
            lead = len(a.shape) - self.ndim
            shape = tuple(a.shape[:lead]) + tuple(a.shape[lead + self.perm.index(d)] for d in range(self.ndim))
            if not self.nyquist:
                shape = shape[:-1] + (shape[-1] + 1,)
            return jax.ShapeDtypeStruct(shape, a.dtype, sharding=self.natural_sharding(lead))
        return like if self.order == "natural" and self.nyquist else jax.tree.map(one, like)

