"""WallGrid: a box with walls at ``z = 0`` and ``z = Lz`` (array axis 0), periodic in the other axes, on a mesh.

Fields are sine or cosine series in z (free-slip / fixed-value walls) times Fourier series horizontally, sampled on
the cell-centred grid ``z_j = (j + 1/2) Lz / nz``. One :func:`xfft.xr2rn` per parity group (``dct2`` or ``dst2`` in
z, ``fft`` horizontally) takes a batch of fields to spectral space. Coefficients are stored as series amplitudes
with a common index ``m = 0 .. nz-1`` for both parities: ``f = sum_m c_m cos(m pi z / Lz)`` or
``sum_m c_m sin(m pi z / Lz)`` (``c_0 = 0`` for sines), times ``exp(i k.x)`` with ``norm="forward"`` horizontally.
So ``d/dz`` is diagonal: ``cos -> -kz sin``, ``sin -> +kz cos`` with ``kz = m pi / Lz``.

Why z is array axis 0: the planner leaves the leading axis unsharded in spectral space (slab ``P('x')`` ->
``P(None, 'x')``, pencil ``P('x', 'y')`` -> ``P(None, 'x', 'y')``), so the index shift between the DST-II output
(``sin((k+1) pi z)``) and the common index is a local slice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import xfft

PARITIES = ("cos", "sin")


class WallGrid:
    """Walls in z (axis 0), periodic horizontally; sine/cosine-Fourier transforms and spectral operators.

    Args:
      shape: ``(nz, nx)`` or ``(nz, nx, ny)``; ``nz >= 4``, horizontal sizes even and ``>= 4``.
      mesh: a mesh from :func:`xfft.make_mesh`, or None for one device.
      box_length: ``(Lz, Lx[, Ly])``.
      dtype: real dtype of physical fields.

    Shardings: physical fields ``real_sharding(batch)`` (canonical: slab ``P('x', None)``), spectra
    ``spectral_sharding(batch)`` (z unsharded). Raises ``ValueError`` for bad shapes or a mesh that cannot hold
    the grid.
    """

    def __init__(self, shape: Sequence[int], mesh: Mesh | None = None, *, box_length: Sequence[float],
                 dtype=jnp.float64):
        self.shape = tuple(int(n) for n in shape)
        self.ndim = len(self.shape)
        if self.ndim not in (2, 3) or self.shape[0] < 4 or any(n < 4 or n % 2 for n in self.shape[1:]):
            raise ValueError(f"shape must be (nz, nx) or (nz, nx, ny) with nz >= 4 and even horizontal sizes "
                             f">= 4, got {shape!r}")
        self.box_length = tuple(float(v) for v in box_length)
        if len(self.box_length) != self.ndim or not all(v > 0 for v in self.box_length):
            raise ValueError(f"box_length must hold {self.ndim} positive lengths (Lz, Lx[, Ly]), got {box_length!r}")
        self.dtype = jnp.dtype(dtype)
        self.cdtype = jnp.result_type(self.dtype, jnp.complex64)
        self.mesh = mesh if mesh is not None else xfft.make_mesh((1,), devices=jax.devices()[:1])
        self._real = xfft.real_sharding(self.mesh, self.shape, ndim=self.ndim)
        self._spec = xfft.spectral_sharding(self._real, self.shape, ndim=self.ndim)
        spec0 = tuple(self._spec.spec)[:1]
        if spec0 and spec0[0] is not None:
            raise ValueError(f"the spectral layout {self._spec.spec} shards the wall axis; use a grid whose "
                             "horizontal sizes the mesh divides")

    # ----- layout ----------------------------------------------------------------------------------
    def real_sharding(self, batch: int = 0) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *self._real.spec))

    def spectral_sharding(self, batch: int = 0) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *self._spec.spec))

    def coordinates(self) -> tuple[jax.Array, ...]:
        """Sharded ``z, x(, y)`` of the grid points (cell-centred in z)."""
        lz = self.box_length[0]
        axes = [(np.arange(self.shape[0]) + 0.5) * lz / self.shape[0]]
        axes += [np.arange(n) * (L / n) for n, L in zip(self.shape[1:], self.box_length[1:])]
        return xfft.xmeshgrid(*[a.astype(self.dtype) for a in axes], sharding=self._real)

    # ----- wavenumbers -----------------------------------------------------------------------------
    def _along(self, v: np.ndarray, axis: int) -> jax.Array:
        return jnp.asarray(v.reshape([-1 if d == axis else 1 for d in range(self.ndim)]), self.dtype)

    @property
    def kz(self) -> jax.Array:
        """``m pi / Lz`` for ``m = 0 .. nz-1`` (broadcastable along axis 0)."""
        return self._along(np.arange(self.shape[0]) * math.pi / self.box_length[0], 0)

    @property
    def kh(self) -> tuple[jax.Array, ...]:
        """Horizontal angular wavenumbers (Nyquist set to 0, the mode has no real derivative)."""
        out = []
        for d in range(1, self.ndim):
            n = self.shape[d]
            m = np.fft.fftfreq(n, 1.0 / n)
            m[n // 2] = 0
            out.append(self._along(2 * math.pi / self.box_length[d] * m, d))
        return tuple(out)

    def k2(self) -> jax.Array:
        """``kz^2 + |k_h|^2``."""
        return self.kz ** 2 + sum(k ** 2 for k in self.kh)

    def dealias_mask(self) -> jax.Array:
        """2/3 rule in every direction: ``m < 2 nz / 3`` and ``|n_i| < n_i / 3``."""
        mask = self._along(np.arange(self.shape[0]) < 2 * self.shape[0] / 3, 0)
        for d in range(1, self.ndim):
            n = self.shape[d]
            mask = mask * self._along(np.abs(np.fft.fftfreq(n, 1.0 / n)) < n / 3, d)
        return mask

    def horizontal_mean_mask(self) -> jax.Array:
        """1 on the horizontal mean (``k_h = 0``), 0 elsewhere."""
        mask = self._along(np.ones(self.shape[0]), 0)
        for d in range(1, self.ndim):
            mask = mask * self._along(np.arange(self.shape[d]) == 0, d)
        return mask

    def z_weight(self, parity: str) -> jax.Array:
        """Parseval weight in z: ``<cos^2> = 1/2`` (1 for ``m = 0``), ``<sin^2> = 1/2``."""
        w = np.full(self.shape[0], 0.5)
        if parity == "cos":
            w[0] = 1.0
        return self._along(w, 0)

    # ----- transforms ------------------------------------------------------------------------------
    def _kinds(self, parity: str) -> tuple[str, ...]:
        if parity not in PARITIES:
            raise ValueError(f"parity must be one of {PARITIES}, got {parity!r}")
        return ("dct2" if parity == "cos" else "dst2",) + ("fft",) * (self.ndim - 1)

    def forward(self, f: jax.Array, parity: str) -> jax.Array:
        """Series amplitudes of real ``f`` (leading axes batched): real sharding in, spectral sharding out."""
        axes = tuple(range(f.ndim - self.ndim, f.ndim))
        y = xfft.xr2rn(f, self._kinds(parity), axes=axes, norm="forward")
        z = axes[0]
        if parity == "cos":
            return y * self._scale_z(z, f.ndim, first=1.0, rest=2.0)
        lead = jax.lax.slice_in_dim(y, 0, 1, axis=z)
        return jnp.concatenate([jnp.zeros_like(lead), 2 * jax.lax.slice_in_dim(y, 0, self.shape[0] - 1, axis=z)],
                               axis=z)

    def inverse(self, c: jax.Array, parity: str) -> jax.Array:
        """Real field from series amplitudes ``c`` (inverse of :meth:`forward` on band-limited fields)."""
        axes = tuple(range(c.ndim - self.ndim, c.ndim))
        z = axes[0]
        if parity == "cos":
            y = c * self._scale_z(z, c.ndim, first=1.0, rest=0.5)
        else:
            tail = jax.lax.slice_in_dim(c, 0, 1, axis=z)
            y = jnp.concatenate([0.5 * jax.lax.slice_in_dim(c, 1, self.shape[0], axis=z), jnp.zeros_like(tail)],
                                axis=z)
        return xfft.ixr2rn(y, self._kinds(parity), axes=axes, norm="forward").real.astype(self.dtype)

    def _scale_z(self, z: int, ndim: int, first: float, rest: float) -> jax.Array:
        w = np.full(self.shape[0], rest)
        w[0] = first
        return jnp.asarray(w.reshape([-1 if d == z else 1 for d in range(ndim)]), self.dtype)

    # ----- reductions ------------------------------------------------------------------------------
    def mean_square(self, c: jax.Array, parity: str) -> jax.Array:
        """Volume average of ``f^2`` from its amplitudes (sums over leading axes too)."""
        return jnp.sum((c.real ** 2 + c.imag ** 2) * self.z_weight(parity))

    def mean_product(self, a: jax.Array, b: jax.Array, parity: str) -> jax.Array:
        """Volume average of ``f g`` for real fields with amplitudes ``a``, ``b`` of the same parity."""
        return jnp.sum((a.real * b.real + a.imag * b.imag) * self.z_weight(parity))
