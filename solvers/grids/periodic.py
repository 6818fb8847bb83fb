"""SpectralGrid: the periodic box, a :class:`~solvers.Grid` of Fourier bases, with its spectral operators."""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

import xfft

from ..bases.fourier import keep_modes, periodic_bases
from . import reductions as _reductions
from .grid import Grid, rmul, safe_inverse, times_i


def _as_shape(shape: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    out = (int(shape),) * ndim if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    if len(out) == 1:
        out = out * ndim
    if len(out) not in (2, 3):
        raise ValueError(f"grid shape must have 2 or 3 sizes, got {shape!r}")
    if any(n < 4 or n % 2 for n in out):
        raise ValueError(f"grid sizes must be even integers >= 4, got {' '.join(map(str, out))}")
    return out


def _as_points(points, shape: tuple[int, ...]) -> tuple[int, ...]:
    try:
        out = _as_shape(points, len(shape))
    except (TypeError, ValueError):
        out = None
    if out is None or len(out) != len(shape) or any(p < n for p, n in zip(out, shape)):
        raise ValueError(f"points must be even sizes >= the grid shape {shape} (one or one per axis), got {points!r}")
    return out


def _as_lengths(box_length, ndim: int) -> tuple[float, ...]:
    lengths = (box_length,) * ndim if np.ndim(box_length) == 0 else tuple(box_length)
    if len(lengths) == 1:
        lengths = lengths * ndim
    if len(lengths) != ndim or any(not (math.isfinite(float(v)) and float(v) > 0) for v in lengths):
        raise ValueError(f"box_length must be positive (one value or one per axis), got {box_length!r}")
    return tuple(float(v) for v in lengths)


class SpectralGrid(Grid):
    """A periodic box of ``shape`` points on ``mesh``: Fourier bases on every axis, a half spectrum on the last
    (real fields), with the box's spectral operators (gradient, curl, Leray projection, radial spectra).

    Spectral fields use ``norm="forward"``: ``f_hat`` holds the Fourier coefficients themselves, so padding or
    truncating a spectrum does not rescale it. Every transform goes through :mod:`xfft` with ``backend``.

    Args:
      shape: points per axis (one int for a cube, or 2 or 3 even ints; any box: ``(256, 128, 64)``).
      mesh: a ``jax.sharding.Mesh`` from :func:`xfft.make_mesh` (explicit axes), or None for one device.
      box_length: side length(s) of the box (default ``2 pi``; one per axis for any box: ``(4 pi, 2 pi, 2 pi)``).
      dtype: real dtype of the fields (``float32``, or ``float64`` with ``jax_enable_x64`` on).
      dealias: ``"2/3"`` (truncation rule), ``"3/2"`` (products on a zero-padded grid) or ``"none"``.
      backend: xfft backend name passed to every transform (None: ``xfft.default_backend()``).
      complex_fields: complex fields (a wavefunction): full spectra (``fft`` on every axis) instead of half ones.
      order: ``"natural"`` (default: index ``[i, j, k]`` of a spectrum is mode ``(i, j, k)``) or ``"transposed"``
        (the axis order the distributed transforms leave, one local transpose fewer per transform: what the main
        job uses). Wavenumbers, masks and every operator follow the order; :meth:`to_natural` gives the natural
        view (``spectral_shape`` is permuted, ``natural_spectral_shape`` is not).
      points: points per axis the fields are stored and evaluated on, at least ``shape`` (default: ``shape``).
        For a grid the mesh cannot split evenly (JAX shards arrays evenly: ``30^3`` on 8 devices), hold its modes
        on the next sizes the mesh can (``points=32``): :attr:`shape` is then ``points`` and :attr:`modes` the
        resolution; dealiasing keeps the modes of the ``modes``-point grid (the coefficients above stay zero:
        :meth:`truncate`). Products of two dealiased fields (``"2/3"`` or ``"3/2"``) are exact on either number of
        points, so a quadratic equation (Navier-Stokes, Burgers) computes the ``modes``-point run to round-off;
        only what is read off the points (the CFL maximum, snapshots) sees the finer sampling. Not with
        ``dealias="none"`` (its aliasing depends on the points).

    Shardings: real fields ``real_sharding(batch)`` (slab ``P('x', None, None)``, pencil ``P('x', 'y', None)``
    after ``batch`` leading ``None``), spectra ``spectral_sharding(batch)`` (slab ``P(None, 'x', None)``).

    Raises:
      ValueError: bad shape, box, dealias rule, float64 without 64-bit mode, or a mesh that cannot hold the grid
        (or its padded grid); ``points`` smaller than ``shape``, odd, or with ``dealias="none"``.
      TypeError: a dtype that is not a real floating dtype.
    """

    def __init__(self, shape: int | Sequence[int], mesh: Mesh | None = None, *, ndim: int = 3,
                 box_length: float | Sequence[float] = 2 * np.pi, dtype=jnp.float32,
                 dealias: str = "2/3", backend: str | None = None, complex_fields: bool = False,
                 order: str = "natural", points: int | Sequence[int] | None = None):
        shape = _as_shape(shape, ndim)
        stored = shape if points is None else _as_points(points, shape)
        lengths = _as_lengths(box_length, len(shape))
        bases = periodic_bases(shape, lengths, points=stored, real_last=not complex_fields)
        super().__init__(bases, mesh, dtype=dtype, dealias=dealias, backend=backend, complex_fields=complex_fields,
                         order=order)
        self.padded_shape = tuple(3 * n // 2 for n in self.shape) if dealias == "3/2" else self.shape

    # The wavenumber arrays are rebuilt (from host data, by xfft.wavenumbers) wherever they are used instead of
    # being stored: inside jit they become constants, and a jitted function may not close over a global array
    # that spans other processes' devices.
    @property
    def k_full(self) -> tuple[jax.Array, ...]:
        """Angular wavenumbers (sparse, broadcastable, sharded like the spectrum), Nyquist included (where the
        spectrum holds it: :attr:`~solvers.Grid.nyquist`)."""
        return xfft.wavenumbers(self._real, self.shape, real=not self.complex_fields, box_length=self.box_length,
                                dtype=self.dtype, order=self.order, drop_nyquist=not self.nyquist)

    def _modes(self) -> list[tuple[jax.Array, jax.Array, int]]:
        """(k, |integer mode number|, n) per axis."""
        return [(k, jnp.abs(jnp.rint(k * (L / (2 * np.pi)))), n)
                for k, n, L in zip(self.k_full, self.shape, self.box_length)]

    @property
    def k(self) -> tuple[jax.Array, ...]:
        """Wavenumbers for odd derivatives: the Nyquist mode's is 0 (its derivative is not a real field)."""
        return tuple(jnp.where(m == n // 2, 0, k).astype(self.dtype) for k, m, n in self._modes())

    def keep_tables(self, rule: str | None = None) -> list[jax.Array]:
        rule = self.dealias_rule if rule is None else rule
        return [keep_modes(m, n, kept, rule).astype(self.dtype)
                for (_, m, n), kept in zip(self._modes(), self.modes)]

    @property
    def _weight(self) -> jax.Array:
        """Parseval weight of the half spectrum: 1 on the kz = 0 and Nyquist planes, 2 elsewhere (1 for full
        spectra)."""
        if self.complex_fields:
            return jnp.ones((), self.dtype)
        m = self._modes()[-1][1]
        return jnp.where((m == 0) | (m == self.shape[-1] // 2), 1, 2).astype(self.dtype)

    # ----- transforms (the names of the periodic box) --------------------------------------------------
    def rfft(self, f: jax.Array) -> jax.Array:
        """Fourier coefficients of real ``f`` (leading axes are batch axes), one batched xfft call."""
        return self.forward(f)

    def irfft(self, f_hat: jax.Array) -> jax.Array:
        """Real field from Fourier coefficients (inverse of :meth:`rfft`)."""
        return self.backward(f_hat)

    def dealias_by_axis(self, f_hat: jax.Array) -> jax.Array:
        """:meth:`dealias` (one 1D factor per axis): no full-size mask is ever formed, so XLA has no grid-sized
        constant to hoist out of a time-step loop and keep alive (4 bytes per point in float32)."""
        return self.dealias(f_hat)

    # ----- spectral operators (all act on Fourier coefficients, any leading batch axes) ---------
    def k2(self) -> jax.Array:
        """|k|^2 with the true (Nyquist-included) wavenumbers, spectral sharding."""
        return sum(k * k for k in self.k_full)

    def grad(self, f_hat: jax.Array) -> jax.Array:
        """Gradient of a scalar spectrum: new leading axis of length ``ndim``."""
        return jnp.stack([times_i(rmul(k, f_hat)) for k in self.k])

    def div(self, v_hat: jax.Array) -> jax.Array:
        """Divergence of a vector spectrum (leading axis of length ``ndim``)."""
        return times_i(sum(rmul(k, v_hat[i]) for i, k in enumerate(self.k)))

    def curl(self, v_hat: jax.Array) -> jax.Array:
        """Curl of a 3D vector spectrum ``(3, ...)``; in 2D the scalar vorticity of ``(2, ...)``."""
        if self.ndim == 2:
            kx, ky = self.k
            return times_i(rmul(kx, v_hat[1]) - rmul(ky, v_hat[0]))
        kx, ky, kz = self.k
        return jnp.stack([times_i(rmul(ky, v_hat[2]) - rmul(kz, v_hat[1])),
                          times_i(rmul(kz, v_hat[0]) - rmul(kx, v_hat[2])),
                          times_i(rmul(kx, v_hat[1]) - rmul(ky, v_hat[0]))])

    def laplacian(self, f_hat: jax.Array) -> jax.Array:
        return rmul(-self.k2(), f_hat)

    def inv_k2(self) -> jax.Array:
        """``1 / |k|^2`` with 0 at ``k = 0`` (spectral sharding): the safe inverse Laplacian's multiplier."""
        return safe_inverse(self.k2())

    def inv_laplacian(self, f_hat: jax.Array) -> jax.Array:
        """Solution of lap(phi) = f with zero mean (the k = 0 coefficient is set to 0)."""
        return rmul(-self.inv_k2(), f_hat)

    def project(self, v_hat: jax.Array) -> jax.Array:
        """Leray projection onto divergence-free fields: v - k (k.v) / |k|^2."""
        ks = self.k
        k2 = sum(k * k for k in ks)
        kdotv = rmul(safe_inverse(k2), sum(rmul(k, v_hat[i]) for i, k in enumerate(ks)))
        return jnp.stack([v_hat[i] - rmul(k, kdotv) for i, k in enumerate(ks)])

    def project_lean(self, v_hat: jax.Array) -> jax.Array:
        """:meth:`project` with real factors kept real: ``1/|k|^2`` scales real and imaginary parts separately,
        so the only grid-sized constant XLA may hoist out of a time-step loop is one real array (not complex)."""
        ks = self.k
        kdotv = sum(rmul(k, v_hat[i]) for i, k in enumerate(ks))
        k2 = 0 * kdotv.real  # |k|^2 built on the data: XLA computes it in the fusion, never as a hoisted table
        for k in ks:
            k2 = k2 + k * k
        inv = safe_inverse(k2)
        s = jax.lax.complex(kdotv.real * inv, kdotv.imag * inv)
        return jnp.stack([v_hat[i] - rmul(k, s) for i, k in enumerate(ks)])

    # ----- reductions --------------------------------------------------------------------------------
    def mean_square(self, f_hat: jax.Array, multiplier: jax.Array | None = None) -> jax.Array:
        """Volume mean of |f|^2 (summed over any leading axes) from the spectrum, by Parseval.

        ``multiplier`` (a real spectral array, e.g. ``k2()``) weights each mode: ``sum_k m_k |f_k|^2``.
        """
        w = self._weight if multiplier is None else self._weight * multiplier
        return self.total(w * (f_hat.real ** 2 + f_hat.imag ** 2))

    @property
    def dk(self) -> float:
        """Shell width of radial spectra, ``2 pi / max(box_length)`` (the smallest nonzero wavenumber)."""
        return 2 * np.pi / max(self.box_length)

    def shell_index(self) -> jax.Array:
        """Integer shell ``round(|k| / dk)`` of each mode, ``dk = 2 pi / max(box_length)``."""
        return jnp.rint(jnp.sqrt(self.k2()) / self.dk).astype(jnp.int32)

    def shell_lookup(self, table: jax.Array) -> jax.Array:
        """``table[shell_index()]``: a per-shell value (replicated, length ``num_shells``) on every mode."""
        idx = self.shell_index()
        if self.explicit and self.mesh.size > 1:
            return table.at[idx].get(out_sharding=self.spectral_sharding())
        return table[idx]

    @property
    def num_shells(self) -> int:
        """Shells ``0 .. ceil(|k|_max / dk)``: every mode's shell, on any box."""
        top = max(self.box_length)
        return int(np.ceil(np.sqrt(sum((n // 2 * top / L) ** 2 for n, L in zip(self.shape, self.box_length))))) + 1

    def radial_sum(self, density: jax.Array) -> jax.Array:
        """Sum a spectral density (spectral sharding, r2c weights applied here) over shells |k| ~ j dk.

        Each device bins its own block and one ``psum`` combines them (inside :func:`solvers._reductions.fused`,
        the row's one psum); the result is replicated.
        """
        nb = self.num_shells
        dens = density * self._weight
        shell = jnp.broadcast_to(self.shell_index(), dens.shape)
        spec = self.spectral_sharding(dens.ndim - self.ndim).spec
        return _reductions.total(lambda d, s: jnp.zeros((nb,), d.dtype).at[s.ravel()].add(d.ravel()),
                                 self.mesh, (spec, spec), dens, shell)
