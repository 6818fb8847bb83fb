"""The particle-mesh field solve on a sharded periodic mesh: density contrast, Poisson solve, gradient at particles.

Built on xfft's public API only: :func:`xfft.paint` assigns the particles to the mesh, :func:`xfft.xrfftn` and
:func:`xfft.ixrfftn` solve ``laplacian(phi) = delta`` spectrally (``phi_k = -delta_k / k^2``, the mean dropped: a
neutralizing background, or the mean density of a universe), and :func:`xfft.readout` interpolates the gradient
``grad(phi)`` back to the particles with the same kernel (so a particle exerts no force on itself, and momentum
is conserved to round-off).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

import xfft

__all__ = ["ParticleMesh"]


class ParticleMesh:
    """A periodic box of ``shape`` cells on a device mesh, and the particle-mesh solve of ``laplacian(phi) = delta``.

    Args:
      shape: cells per axis (1 to 3 ints; each divisible by the mesh axes that split it, see
        :func:`xfft.real_sharding`).
      box_length: the box's side per axis (one number or one per axis).
      mesh: the device mesh (:func:`xfft.make_mesh`), or None for one device. A 1D mesh needs a 1-axis device
        mesh (``xfft.make_mesh("slab")``).
      kernel: the mass-assignment kernel of :func:`xfft.paint` and :func:`xfft.readout` (``"ngp"``, ``"cic"``,
        ``"tsc"``).
      capacity: the particle slots per device pair of the exchange (:func:`xfft.paint`); None: xfft's default.
      halo: paint and read out through halos of this many cells instead of sending particles to the devices that
        own their cells (:func:`xfft.paint`'s ``halo``; excludes ``capacity``): for particles that stay near the
        block of the device holding them. None: the exchange.
      deconvolve: divide the potential by the square of the kernel's window ``prod_d sinc(k_d dx_d / 2)^p`` (``p``
        = 1, 2, 3 for NGP, CIC, TSC), undoing the smoothing of paint and readout: the force of long waves is then
        exact to ``O((k dx)^4)`` instead of ``O((k dx)^2)`` (the linear growth of a PM run's large scales). It
        also amplifies the force of the mesh's shortest waves, where the window is small (CIC's square is 0.16
        per axis at the Nyquist wavenumber, its inverse ~200 at a corner of the spectrum): with CIC a
        gravitating run grows a checkerboard at the mesh's scale; with TSC the measured runs did not (the corner
        mode stayed at round-off; :class:`~solvers.particles.ComovingNBody`).

    Attributes:
      shape, box_length, ndim, cell (the cell size per axis), sharding (the mesh fields' sharding, None on one
      device), halo.

    Raises:
      ValueError: a shape of other than 1 to 3 positive ints, a box length that is not positive, an unknown
        kernel, a mesh that cannot split the shape, both ``capacity`` and ``halo``.
      TypeError: ``mesh`` is not a ``jax.sharding.Mesh``.
    """

    def __init__(self, shape: int | Sequence[int], box_length: float | Sequence[float], mesh: Mesh | None = None,
                 *, kernel: str = "cic", capacity: int | None = None, deconvolve: bool = False,
                 halo: int | Sequence[int] | None = None):
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
        if not 1 <= len(shape) <= 3 or min(shape) < 2:
            raise ValueError(f"shape must be 1 to 3 ints >= 2 (cells per axis), got {shape}")
        lengths = np.broadcast_to(np.asarray(box_length, float), (len(shape),))
        if not np.all(np.isfinite(lengths)) or np.any(lengths <= 0):
            raise ValueError(f"box_length must be positive, got {box_length!r}")
        if kernel not in ("ngp", "cic", "tsc"):
            raise ValueError(f"kernel must be 'ngp', 'cic' or 'tsc', got {kernel!r}")
        if halo is not None and capacity is not None:
            raise ValueError("capacity and halo exclude each other (halo: no particle is sent anywhere)")
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"mesh must be a jax.sharding.Mesh (xfft.make_mesh), got {type(mesh).__name__}")
        self.shape, self.ndim, self.kernel, self.capacity, self.mesh = shape, len(shape), kernel, capacity, mesh
        self.halo = halo
        self.deconvolve = bool(deconvolve)
        self.box_length = tuple(float(v) for v in lengths)
        self.cell = tuple(L / n for L, n in zip(self.box_length, shape))
        # (a mesh of one device is no mesh: nothing is sharded, paint and readout run there)
        self.sharding = None if mesh is None or mesh.size == 1 else xfft.real_sharding(mesh, shape, ndim=len(shape))
        # xfft has no real-to-complex transform of a lone sharded axis: a 1D sharded mesh takes complex ones
        self.real = self.sharding is None or self.ndim > 1

    @property
    def _halo(self):
        return None if self.sharding is None else self.halo  # (one device: no halo, nothing exchanged)

    @property
    def volume(self) -> float:
        """The box's volume (length in 1D, area in 2D)."""
        return math.prod(self.box_length)

    def _grid_units(self, positions: jax.Array) -> jax.Array:
        return positions / jnp.asarray(self.cell, positions.dtype)

    def contrast(self, positions: jax.Array, weights: jax.Array | None = None) -> jax.Array:
        """The density contrast ``delta = n / mean(n) - 1`` of the particles on the mesh.

        Args:
          positions: ``(N, D)`` positions in box units, sharded over the mesh (:func:`particle_sharding`).
          weights: ``(N,)`` masses of mean 1, sharded like the positions (None: all 1).

        Returns:
          A real array of :attr:`shape`, sharded as :attr:`sharding`.
        """
        n = positions.shape[0]
        counts = xfft.paint(self._grid_units(positions), self.shape, weights, kernel=self.kernel,
                            capacity=self.capacity, out_sharding=self.sharding, halo=self._halo)
        return counts * (math.prod(self.shape) / n) - 1

    def wavenumbers(self, dtype) -> tuple[jax.Array, ...]:
        """The angular wavenumbers of the spectrum :meth:`spectrum` returns (broadcastable, sharded like it)."""
        if self.sharding is None:
            freqs = [np.fft.fftfreq(n, L / n) for n, L in zip(self.shape[:-1], self.box_length)]
            freqs.append(np.fft.rfftfreq(self.shape[-1], self.box_length[-1] / self.shape[-1]))
            return tuple(jnp.asarray(2 * np.pi * f, dtype).reshape([-1 if i == d else 1 for i in range(self.ndim)])
                         for d, f in enumerate(freqs))
        return xfft.wavenumbers(self.sharding, self.shape, real=self.real, box_length=self.box_length, dtype=dtype)

    def spectrum(self, f: jax.Array) -> jax.Array:
        """The Fourier coefficients of a mesh field (``norm="backward"``): the half spectrum of
        :func:`xfft.xrfftn`, or on a sharded 1D mesh the full one of :func:`xfft.xfftn`."""
        if self.sharding is None:
            return jnp.fft.rfftn(f)
        if not self.real:
            return xfft.xfftn(f.astype(jnp.result_type(f.dtype, jnp.complex64)), ndim=1)
        return xfft.xrfftn(f, ndim=self.ndim)

    def _inverse(self, f_hat: jax.Array) -> jax.Array:
        if self.sharding is None:
            return jnp.fft.irfftn(f_hat, s=self.shape)
        if not self.real:
            return xfft.ixfftn(f_hat, ndim=1).real
        return xfft.ixrfftn(f_hat, ndim=self.ndim, s=self.shape)

    def _pair_weight(self, k: tuple[jax.Array, ...], dtype) -> jax.Array | float:
        """2 where a half spectrum's coefficient stands for a conjugate pair, else 1 (1 everywhere: full)."""
        if not self.real:
            return 1.0
        half = jnp.abs(k[-1])
        nyq = np.pi * self.shape[-1] / self.box_length[-1]
        edge = (half == 0) | ((self.shape[-1] % 2 == 0) & (half >= nyq * (1 - 1e-12)))
        return jnp.where(edge, 1.0, 2.0).astype(dtype)

    def potential_gradient(self, delta: jax.Array) -> list[jax.Array]:
        """``grad(phi)`` on the mesh, ``phi`` the periodic solution of ``laplacian(phi) = delta`` with zero mean.

        Spectral: ``(i k / -k^2) delta_k`` per axis (the Nyquist wavenumbers of the derivative taken as zero, so
        each component is real). Returns one array of :attr:`shape` per axis, sharded as :attr:`sharding`.
        """
        real = delta.dtype
        d_hat = self.spectrum(delta)
        k = self.wavenumbers(real)
        k2 = sum(ki * ki for ki in k)
        inv = jnp.where(k2 > 0, -1 / jnp.where(k2 > 0, k2, 1), 0)
        if self.deconvolve:
            p = {"ngp": 1, "cic": 2, "tsc": 3}[self.kernel]
            for ki, h in zip(k, self.cell):
                x = ki * (h / 2)
                sinc = jnp.where(x == 0, 1, jnp.sin(x) / jnp.where(x == 0, 1, x))
                inv = inv / sinc ** (2 * p)
        phi = d_hat * inv
        out = []
        for d, ki in enumerate(k):
            nyq = np.pi * self.shape[d] / self.box_length[d]
            kd = jnp.where(jnp.abs(ki) >= nyq * (1 - 1e-12), 0, ki) if self.shape[d] % 2 == 0 else ki
            out.append(self._inverse(jax.lax.complex(jnp.zeros_like(kd), kd) * phi))
        return out

    def at_particles(self, fields: Sequence[jax.Array], positions: jax.Array) -> jax.Array:
        """Mesh fields (one per axis) interpolated at the particles with the paint kernel: ``(N, D)`` (one readout
        of the fields stacked on a last axis: one stencil, one exchange)."""
        q = self._grid_units(positions)
        return xfft.readout(jnp.stack(list(fields), -1), q, kernel=self.kernel, capacity=self.capacity,
                            halo=self._halo)

    def field(self, positions: jax.Array, weights: jax.Array | None = None) -> jax.Array:
        """``grad(laplacian^-1 delta)`` at the particles, for the density contrast ``delta`` of the particles
        themselves: the acceleration of a plasma's electrons (times ``omega_p^2``), or minus the gravitational one
        (times ``4 pi G rho_mean``). ``(N, D)``, sharded like ``positions``; ``weights`` as :meth:`contrast`."""
        return self.at_particles(self.potential_gradient(self.contrast(positions, weights)), positions)

    def field_energy(self, delta: jax.Array) -> jax.Array:
        """``(1/2) integral |grad(phi)|^2 dV`` for ``laplacian(phi) = delta``: the electrostatic energy (plasma
        units) of the density contrast ``delta`` (Parseval on the half spectrum)."""
        real = delta.dtype
        d_hat = self.spectrum(delta) / math.prod(self.shape)
        k = self.wavenumbers(real)
        k2 = sum(ki * ki for ki in k)
        twice = self._pair_weight(k, real)
        dens = jnp.where(k2 > 0, (d_hat.real**2 + d_hat.imag**2) / jnp.where(k2 > 0, k2, 1), 0)
        return 0.5 * self.volume * jnp.sum(dens * twice)

    def mode(self, delta: jax.Array, index: Sequence[int]) -> jax.Array:
        """The Fourier coefficient ``(1/V) integral delta exp(-i k.x) dV`` of mode ``index`` (integers, one per axis;
        the last one ``>= 0``): a replicated complex scalar (a masked sum, no gather of the spectrum)."""
        index = tuple(int(i) for i in index)
        d_hat = self.spectrum(delta) / math.prod(self.shape)
        k = self.wavenumbers(delta.dtype)
        mask = True
        for d, (ki, i) in enumerate(zip(k, index)):
            mask = mask & (jnp.abs(ki - 2 * np.pi * i / self.box_length[d]) < np.pi / self.box_length[d])
        return jnp.sum(jnp.where(mask, d_hat, 0))
