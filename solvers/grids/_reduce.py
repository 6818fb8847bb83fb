"""The grid's reductions over the devices: means, Parseval sums, maxima, replicated planes."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from ..bases import Chebyshev
from . import reductions as _reductions


class Reductions:
    """Mixin of :class:`~solvers.Grid`: reductions of fields over the grid (sharded, replicated results)."""

    def mean(self, f: jax.Array) -> jax.Array:
        """Volume mean of a physical field (quadrature weights of every axis; sums over leading axes)."""
        w = functools.reduce(lambda a, b: a * b, [self.along(b.weights() / b.length, d)
                                                  for d, b in enumerate(self.bases)])
        return self.total(w * f, spectral=False)

    def mean_square(self, c: jax.Array) -> jax.Array:
        """Volume mean of ``|f|^2`` from the coefficients (summed over leading axes): Parseval on orthogonal
        axes, the basis's Gram matrix on a Chebyshev axis."""
        return self.inner(c, c)

    def inner(self, a: jax.Array, b: jax.Array) -> jax.Array:
        """Volume mean of ``Re(f conj(g))`` for the fields with coefficients ``a`` and ``b`` (summed over leading
        axes; both on this grid's bases): Parseval on orthogonal axes, the Gram matrix on a Chebyshev axis."""
        weight = 1.0
        for d, basis in enumerate(self.bases):
            p = basis.parseval()
            if p is not None:
                weight = weight * self.spectral_along(p, d)
            elif isinstance(basis, Chebyshev):
                ax = b.ndim - self.ndim + d
                g = jnp.asarray(basis.quadrature_matrix(), self.dtype)
                b = jnp.moveaxis(jnp.tensordot(g, jnp.moveaxis(b, ax, 0), axes=1), 0, ax)
            else:
                raise NotImplementedError(f"inner products on a {type(basis).__name__} axis")
        return self.total(weight * (a.real * b.real + a.imag * b.imag))

    def total(self, x: jax.Array, spectral: bool = True) -> jax.Array:
        """``jnp.sum(x)`` of an array sharded as this grid's spectra (``spectral=False``: as its physical fields),
        any leading batch axes: inside :func:`solvers._reductions.fused` (the diagnostics row) it shares one
        collective with the row's other reductions.

        Raises:
          ValueError: ``x`` does not end with the grid's spectral (physical) shape.
        """
        return _reductions.total(jnp.sum, self.mesh, (self._spec_of(x, spectral, "total"),), x, plain=jnp.sum)

    def maximum(self, x: jax.Array, spectral: bool = False) -> jax.Array:
        """``jnp.max(x)`` of a real array sharded as this grid's physical fields (``spectral=True``: as its
        spectra), any leading batch axes; shares the row's one collective like :meth:`total`.

        Raises:
          ValueError: ``x`` does not end with the grid's physical (spectral) shape.
          TypeError: ``x`` is complex (a maximum of complex numbers means nothing; take ``jnp.abs`` first).
        """
        spec = self._spec_of(x, spectral, "maximum")
        if jnp.iscomplexobj(x):
            raise TypeError(f"maximum: x must be real, got {jnp.result_type(x)} (take jnp.abs(x) first)")
        return _reductions.total(jnp.max, self.mesh, (spec,), x, plain=jnp.max, op="max")

    def _spec_of(self, x: jax.Array, spectral: bool, name: str) -> PartitionSpec:
        """The partition spec of ``x``: the grid's spectral (or physical) one after ``x``'s leading batch axes."""
        want = tuple(self.spectral_shape if spectral else self.shape)
        shape = tuple(jnp.shape(x))
        if len(shape) < self.ndim or shape[len(shape) - self.ndim:] != want:
            raise ValueError(f"{name}: x must end with the grid's {'spectral' if spectral else 'physical'} shape "
                             f"{want}, got shape {shape}")
        return (self.spectral_sharding if spectral else self.real_sharding)(len(shape) - self.ndim).spec

    # ----- replicated small arrays (plots, diagnostics) ------------------------------------------
    def replicate(self, x: jax.Array) -> jax.Array:
        """``x`` made identical on every device (so every process can read it): for small arrays only."""
        if self.mesh.size == 1:
            return x
        rep = NamedSharding(self.mesh, PartitionSpec())
        return jax.sharding.reshard(x, rep) if self.explicit else jax.lax.with_sharding_constraint(x, rep)

    def mid_plane(self, field: jax.Array, axis: int = -1, index: int | None = None) -> jax.Array:
        """The plane ``index`` (default the middle) normal to grid ``axis`` of a physical ``field`` (leading batch
        axes kept), replicated; on a 2D grid the whole field, replicated."""
        if self.ndim == 3:
            axis = axis % self.ndim
            index = self.shape[axis] // 2 if index is None else int(index)
            field = jax.lax.index_in_dim(field, index, axis=field.ndim - self.ndim + axis, keepdims=False)
        return self.replicate(field)

