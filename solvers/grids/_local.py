"""The grid's coefficient-space operations along one axis: wavenumbers, derivatives, and maps over each device's
block (the wall-normal solves)."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from ..bases import Chebyshev, Cosine, Fourier, Sine

#: sign of the ``order``-th derivative (by ``order % 4``): cos -> -sin -> -cos -> sin, sin -> cos -> -sin -> -cos
_COSINE_SIGNS = (1.0, -1.0, -1.0, 1.0)
_SINE_SIGNS = (1.0, 1.0, -1.0, -1.0)


class LocalOps:
    """Mixin of :class:`~solvers.Grid`: operations on coefficients along one axis."""

    def wavenumbers(self, axis: int, odd: bool = True) -> jax.Array:
        """The multiplier ``k`` of a diagonal basis along ``axis`` (broadcastable; for odd derivatives the
        Fourier Nyquist mode's is 0, its derivative not being a real field)."""
        b = self.bases[axis]
        k = b.wavenumbers()
        if odd and isinstance(b, Fourier) and b.n % 2 == 0:
            k = np.where(np.abs(b.modes()) == b.n // 2, 0.0, k)
        return self.spectral_along(k, axis)

    def derivative(self, c: jax.Array, axis: int, order: int = 1) -> jax.Array:
        """Coefficients of ``d^order f / dx_axis^order``.

        Fourier: ``(i k)^order c``. Cosine/Sine: ``d/dx`` maps a cosine series to the sine series of the same
        index (``-k c``) and a sine series to the cosine series (``+k c``): the result belongs to the other
        parity's grid (:meth:`with_basis`) for odd orders. Chebyshev: the recurrence on the coefficients.
        """
        b = self.bases[axis]
        if isinstance(b, Chebyshev):  # a recurrence along the (unsharded) axis: run on each device's block
            ax = c.ndim - self.ndim + axis
            return self.local_map(lambda a: b.derivative(a, ax, order), c)
        k = self.wavenumbers(axis, odd=order % 2 == 1)
        if isinstance(b, Fourier):
            return (1j * k) ** order * c
        if isinstance(b, (Cosine, Sine)):
            sign = (_SINE_SIGNS if isinstance(b, Sine) else _COSINE_SIGNS)[order % 4]
            return sign * k ** order * c
        raise NotImplementedError(f"no derivative for {type(b).__name__}")

    # ----- per-device work on the spectral layout ----------------------------------------------------------
    def local_map(self, fn: Callable, *args, scalars: tuple = ()):
        """Run ``fn(*blocks, *scalars)`` on each device's block of ``args`` and return its result on the same
        layout: for work along an unsharded axis that must not communicate (implicit solves along the wall-normal
        axis). ``args`` are arrays or pytrees of arrays in the spectral layout, aligned on the right: a leaf's
        trailing axes are the grid's last axes (``(3, ny, nx, nz)`` or a per-wavenumber ``(k, 2, nx, nz)`` table
        whose wall-normal axis is gone), leading axes unsharded; the result's leaves follow the same rule.
        ``scalars`` (a step size, small replicated tables, pytrees too) are passed whole to every device. Inside
        ``fn``, :meth:`local_table` gives the device's slice of a per-axis table."""
        if self.mesh.size == 1:
            return fn(*args, *scalars)
        rep = PartitionSpec()
        scalars = jax.tree.map(lambda v: self.replicate(jnp.asarray(v)), scalars)
        args = jax.tree.map(lambda a: self.reshard(a, NamedSharding(self.mesh, self._aligned(a.ndim))), args)
        in_specs = jax.tree.map(lambda a: self._aligned(a.ndim), args) + jax.tree.map(lambda _: rep, scalars)
        shapes = jax.eval_shape(jax.shard_map(fn, mesh=self.mesh, in_specs=in_specs, out_specs=rep, check_vma=False),
                                *args, *scalars)  # the result's ranks (blocks read as replicated: same rank)
        out_specs = jax.tree.map(lambda a: self._aligned(a.ndim), shapes)
        return jax.shard_map(fn, mesh=self.mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=False)(*args, *scalars)

    def _aligned(self, rank: int) -> PartitionSpec:
        """The spectral spec of an array of ``rank`` axes aligned on the right with the grid's axes."""
        spec = tuple(self._spec.spec) + (None,) * (self.ndim - len(tuple(self._spec.spec)))
        if rank >= self.ndim:
            return PartitionSpec(*((None,) * (rank - self.ndim)), *spec)
        return PartitionSpec(*spec[self.ndim - rank:])

    def local_table(self, table: np.ndarray, axis: int, real: bool = True) -> jax.Array:
        """Inside :meth:`local_map`: this device's entries of the 1D spectral ``table`` of ``axis``, shaped to
        broadcast against the local block (outside it, or on one device: the whole table)."""
        table = np.asarray(table)
        pos = self.perm.index(axis)
        entry = (tuple(self._spec.spec) + (None,) * self.ndim)[pos]
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        if self.mesh.size == 1 or not names:
            return self.spectral_along(table, axis, real)
        sizes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes))
        block = table.shape[0] // math.prod(sizes[n] for n in names)
        index = 0
        for n in names:  # the position of this device's block along the axis (mesh axes in the spec's order)
            index = index * sizes[n] + jax.lax.axis_index(n)
        local = jax.lax.dynamic_slice_in_dim(jnp.asarray(table, self.dtype if real else self.cdtype),
                                             index * block, block)
        return local.reshape([-1 if d == pos else 1 for d in range(self.ndim)])

    # ----- means -----------------------------------------------------------------------------------
