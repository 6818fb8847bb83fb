"""SpectralGrid: a periodic box on a device mesh, its r2c transforms, wavenumbers and spectral operators."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

import xfft

DEALIAS = ("2/3", "3/2", "none")


def _as_shape(shape: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    out = (int(shape),) * ndim if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    if len(out) == 1:
        out = out * ndim
    if len(out) not in (2, 3) or any(n < 4 or n % 2 for n in out):
        raise ValueError(f"grid shape must have 2 or 3 even entries >= 4, got {shape!r}")
    return out


class SpectralGrid:
    """A periodic box of ``shape`` points on ``mesh`` with real-to-complex spectral operators.

    Spectral fields use ``norm="forward"``: ``f_hat`` holds the Fourier coefficients themselves, so padding or
    truncating a spectrum does not rescale it. Every transform goes through :mod:`xfft` with ``backend``.

    Args:
      shape: points per axis (one int for a cube, or 2 or 3 even ints; any box: ``(256, 128, 64)``).
      mesh: a ``jax.sharding.Mesh`` from :func:`xfft.make_mesh` (explicit axes), or None for one device.
      box_length: side length(s) of the box (default ``2 pi``; one per axis for any box: ``(4 pi, 2 pi, 2 pi)``).
      dtype: real dtype of the fields (``float32``, or ``float64`` with ``jax_enable_x64`` on).
      dealias: ``"2/3"`` (truncation rule), ``"3/2"`` (products on a zero-padded grid) or ``"none"``.
      backend: xfft backend name passed to every transform (None: ``xfft.default_backend()``).

    Shardings: real fields ``real_sharding(batch)`` (slab ``P('x', None, None)``, pencil ``P('x', 'y', None)``
    after ``batch`` leading ``None``), spectra ``spectral_sharding(batch)`` (slab ``P(None, 'x', None)``).

    Raises:
      ValueError: bad shape, box, dealias rule, float64 without 64-bit mode, or a mesh that cannot hold the grid
        (or its padded grid).
      TypeError: a dtype that is not a real floating dtype.
    """

    def __init__(self, shape: int | Sequence[int], mesh: Mesh | None = None, *, ndim: int = 3,
                 box_length: float | Sequence[float] = 2 * np.pi, dtype=jnp.float32,
                 dealias: str = "2/3", backend: str | None = None):
        self.shape = _as_shape(shape, ndim)
        self.ndim = len(self.shape)
        self.dtype = jnp.dtype(dtype)
        if not jnp.issubdtype(self.dtype, jnp.floating):
            raise TypeError(f"dtype must be a real floating dtype, got {self.dtype}")
        if jax.dtypes.canonicalize_dtype(self.dtype) != self.dtype:
            raise ValueError(f"dtype {self.dtype} needs JAX's 64-bit mode, which is off: call "
                             "jax.config.update('jax_enable_x64', True) first (or set JAX_ENABLE_X64=1), "
                             "or use dtype=float32")
        self.cdtype = jnp.result_type(self.dtype, jnp.complex64)
        if dealias not in DEALIAS:
            raise ValueError(f"dealias must be one of {DEALIAS}, got {dealias!r}")
        self.dealias_rule = dealias
        self.backend = backend
        lengths = (box_length,) * self.ndim if np.ndim(box_length) == 0 else tuple(box_length)
        if len(lengths) == 1:
            lengths = lengths * self.ndim
        if len(lengths) != self.ndim or any(not (math.isfinite(float(v)) and float(v) > 0) for v in lengths):
            raise ValueError(f"box_length must be positive (one value or one per axis), got {box_length!r}")
        self.box_length = tuple(float(v) for v in lengths)
        self.mesh = mesh if mesh is not None else xfft.make_mesh((1,), devices=jax.devices()[:1])
        self.explicit = all(t == AxisType.Explicit for t in self.mesh.axis_types)
        self.spectral_shape = self.shape[:-1] + (self.shape[-1] // 2 + 1,)
        self.padded_shape = tuple(3 * n // 2 for n in self.shape) if dealias == "3/2" else self.shape
        self._real = xfft.real_sharding(self.mesh, self.shape, ndim=self.ndim)
        self._spec = xfft.spectral_sharding(self._real, self.shape, real=True, ndim=self.ndim)
        self._real_pad = xfft.real_sharding(self.mesh, self.padded_shape, ndim=self.ndim)
        xfft.spectral_sharding(self._real_pad, self.padded_shape, real=True, ndim=self.ndim)

    # The wavenumber arrays are rebuilt (from host data, by xfft.wavenumbers) wherever they are used instead of
    # being stored: inside jit they become constants, and a jitted function may not close over a global array
    # that spans other processes' devices.
    @property
    def k_full(self) -> tuple[jax.Array, ...]:
        """Angular wavenumbers (sparse, broadcastable, sharded like the spectrum), Nyquist included."""
        return xfft.wavenumbers(self._real, self.shape, real=True, box_length=self.box_length, dtype=self.dtype)

    def _modes(self) -> list[tuple[jax.Array, jax.Array, int]]:
        """(k, |integer mode number|, n) per axis."""
        return [(k, jnp.abs(jnp.rint(k * (L / (2 * np.pi)))), n)
                for k, n, L in zip(self.k_full, self.shape, self.box_length)]

    @property
    def k(self) -> tuple[jax.Array, ...]:
        """Wavenumbers for odd derivatives: the Nyquist mode's is 0 (its derivative is not a real field)."""
        return tuple(jnp.where(m == n // 2, 0, k).astype(self.dtype) for k, m, n in self._modes())

    def _keep(self) -> list[jax.Array]:
        rule = self.dealias_rule
        return [(m < n / 3 if rule == "2/3" else (m != n // 2) if rule == "3/2" else m >= 0).astype(self.dtype)
                for _, m, n in self._modes()]

    @property
    def _weight(self) -> jax.Array:
        """Parseval weight of the half spectrum: 1 on the kz = 0 and Nyquist planes, 2 elsewhere."""
        m = self._modes()[-1][1]
        return jnp.where((m == 0) | (m == self.shape[-1] // 2), 1, 2).astype(self.dtype)

    # ----- shardings and coordinates -------------------------------------------------------------
    def real_sharding(self, batch: int = 0) -> NamedSharding:
        """Sharding of a real field with ``batch`` leading (unsharded) axes, e.g. 1 for a vector field."""
        return NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *self._real.spec))

    def spectral_sharding(self, batch: int = 0) -> NamedSharding:
        """Sharding of a half spectrum (what :meth:`rfft` returns) with ``batch`` leading axes."""
        return NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *self._spec.spec))

    @property
    def spacing(self) -> tuple[float, ...]:
        return tuple(L / n for L, n in zip(self.box_length, self.shape))

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def coordinates(self) -> tuple[jax.Array, ...]:
        """Sharded coordinate arrays ``x, y(, z)`` of the grid points (``real_sharding()``)."""
        axes = [np.arange(n) * (L / n) for n, L in zip(self.shape, self.box_length)]
        return xfft.xmeshgrid(*[a.astype(self.dtype) for a in axes], sharding=self._real)

    def zeros_spectral(self, batch: tuple[int, ...] = ()) -> jax.Array:
        shape = tuple(batch) + self.spectral_shape
        return jax.jit(lambda: jnp.zeros(shape, self.cdtype), out_shardings=self.spectral_sharding(len(batch)))()

    # ----- transforms -----------------------------------------------------------------------------
    def rfft(self, f: jax.Array) -> jax.Array:
        """Fourier coefficients of real ``f`` (leading axes are batch axes), one batched xfft call."""
        return xfft.xrfftn(f.astype(self.dtype), ndim=self.ndim, norm="forward", backend=self.backend)

    def irfft(self, f_hat: jax.Array) -> jax.Array:
        """Real field from Fourier coefficients (inverse of :meth:`rfft`)."""
        return xfft.ixrfftn(f_hat, s=self.shape, ndim=self.ndim, norm="forward", backend=self.backend)

    def to_physical(self, f_hat: jax.Array) -> jax.Array:
        """Real field on the grid where products are formed (the 3/2 padded grid for ``dealias="3/2"``)."""
        if self.dealias_rule != "3/2":
            return self.irfft(f_hat)
        padded = self._resize(f_hat, self.padded_shape)
        return xfft.ixrfftn(padded, s=self.padded_shape, ndim=self.ndim, norm="forward", backend=self.backend)

    def from_physical(self, f: jax.Array) -> jax.Array:
        """Dealiased spectrum of a product formed by :meth:`to_physical` fields."""
        if self.dealias_rule != "3/2":
            return self.dealias_by_axis(self.rfft(f))
        big = xfft.xrfftn(f.astype(self.dtype), ndim=self.ndim, norm="forward", backend=self.backend)
        return self.dealias_by_axis(self._resize(big, self.shape))

    def _resize(self, f_hat: jax.Array, shape: tuple[int, ...]) -> jax.Array:
        """Zero-pad or truncate a half spectrum to the grid ``shape`` (Fourier coefficients kept in place)."""
        batch = f_hat.ndim - self.ndim
        src = f_hat.shape[batch:]
        dst = shape[:-1] + (shape[-1] // 2 + 1,)

        def body(a):
            for ax in range(self.ndim - 1):
                n, m = src[ax], dst[ax]
                h = min(n, m) // 2
                a = jnp.take(a, np.r_[0:h, n - h:n], axis=batch + ax)
                if m > n:
                    zeros = list(a.shape)
                    zeros[batch + ax] = m - 2 * h
                    a = jnp.concatenate([a[(slice(None),) * (batch + ax) + (slice(0, h),)],
                                         jnp.zeros(zeros, a.dtype),
                                         a[(slice(None),) * (batch + ax) + (slice(h, 2 * h),)]], axis=batch + ax)
            last = batch + self.ndim - 1
            keep = min(src[-1], dst[-1])
            a = jax.lax.slice_in_dim(a, 0, keep, axis=last)
            if dst[-1] > keep:
                width = [(0, 0)] * a.ndim
                width[last] = (0, dst[-1] - keep)
                a = jnp.pad(a, width)
            return a

        real = xfft.real_sharding(self.mesh, shape, ndim=self.ndim)
        spec = xfft.spectral_sharding(real, shape, real=True, ndim=self.ndim)
        out = NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *spec.spec))
        return _sharded(body, out, self.explicit)(f_hat)

    # ----- spectral operators (all act on Fourier coefficients, any leading batch axes) ---------
    def k2(self) -> jax.Array:
        """|k|^2 with the true (Nyquist-included) wavenumbers, spectral sharding."""
        return sum(k * k for k in self.k_full)

    def dealias_mask(self) -> jax.Array:
        """1 for kept modes, 0 for removed ones (2/3 rule; Nyquist modes only for "3/2"; none for "none")."""
        keep = self._keep()
        out = keep[0]
        for m in keep[1:]:
            out = out * m
        return out

    def dealias(self, f_hat: jax.Array) -> jax.Array:
        return f_hat * self.dealias_mask()

    def grad(self, f_hat: jax.Array) -> jax.Array:
        """Gradient of a scalar spectrum: new leading axis of length ``ndim``."""
        return jnp.stack([1j * k * f_hat for k in self.k])

    def div(self, v_hat: jax.Array) -> jax.Array:
        """Divergence of a vector spectrum (leading axis of length ``ndim``)."""
        return sum(1j * k * v_hat[i] for i, k in enumerate(self.k))

    def curl(self, v_hat: jax.Array) -> jax.Array:
        """Curl of a 3D vector spectrum ``(3, ...)``; in 2D the scalar vorticity of ``(2, ...)``."""
        if self.ndim == 2:
            kx, ky = self.k
            return 1j * (kx * v_hat[1] - ky * v_hat[0])
        kx, ky, kz = self.k
        return jnp.stack([1j * (ky * v_hat[2] - kz * v_hat[1]),
                          1j * (kz * v_hat[0] - kx * v_hat[2]),
                          1j * (kx * v_hat[1] - ky * v_hat[0])])

    def laplacian(self, f_hat: jax.Array) -> jax.Array:
        return -self.k2() * f_hat

    def inv_k2(self) -> jax.Array:
        """``1 / |k|^2`` with 0 at ``k = 0`` (spectral sharding): the safe inverse Laplacian's multiplier."""
        return safe_inverse(self.k2())

    def inv_laplacian(self, f_hat: jax.Array) -> jax.Array:
        """Solution of lap(phi) = f with zero mean (the k = 0 coefficient is set to 0)."""
        return -self.inv_k2() * f_hat

    def project(self, v_hat: jax.Array) -> jax.Array:
        """Leray projection onto divergence-free fields: v - k (k.v) / |k|^2."""
        ks = self.k
        k2 = sum(k * k for k in ks)
        kdotv = sum(k * v_hat[i] for i, k in enumerate(ks)) * safe_inverse(k2)
        return jnp.stack([v_hat[i] - k * kdotv for i, k in enumerate(ks)])

    # ----- reductions --------------------------------------------------------------------------------
    def mean_square(self, f_hat: jax.Array, multiplier: jax.Array | None = None) -> jax.Array:
        """Volume mean of |f|^2 (summed over any leading axes) from the half spectrum, by Parseval.

        ``multiplier`` (a real spectral array, e.g. ``k2()``) weights each mode: ``sum_k m_k |f_k|^2``.
        """
        w = self._weight if multiplier is None else self._weight * multiplier
        return jnp.sum(w * (f_hat.real ** 2 + f_hat.imag ** 2))

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

    # ----- replicated small arrays (plots, diagnostics) ------------------------------------------
    def replicate(self, x: jax.Array) -> jax.Array:
        """``x`` made identical on every device (so every process can read it): for small arrays only."""
        if self.mesh.size == 1:
            return x
        rep = NamedSharding(self.mesh, PartitionSpec())
        return jax.sharding.reshard(x, rep) if self.explicit else jax.lax.with_sharding_constraint(x, rep)

    def mid_plane(self, field: jax.Array, axis: int = -1, index: int | None = None) -> jax.Array:
        """The plane ``index`` (default the middle) normal to grid ``axis`` of a real ``field`` (leading batch axes
        kept), replicated; on a 2D grid the whole field, replicated."""
        if self.ndim == 3:
            axis = axis % self.ndim
            index = self.shape[axis] // 2 if index is None else int(index)
            field = jax.lax.index_in_dim(field, index, axis=field.ndim - self.ndim + axis, keepdims=False)
        return self.replicate(field)

    def radial_sum(self, density: jax.Array) -> jax.Array:
        """Sum a spectral density (spectral sharding, r2c weights applied here) over shells |k| ~ j dk.

        Each device bins its own block and one ``psum`` combines them; the result is replicated.
        """
        nb = self.num_shells
        dens = density * self._weight
        shell = jnp.broadcast_to(self.shell_index(), dens.shape)

        def local(d, s):
            out = jnp.zeros((nb,), d.dtype).at[s.ravel()].add(d.ravel())
            names = tuple(n for n, size in zip(self.mesh.axis_names, self.mesh.axis_sizes) if size > 1)
            return jax.lax.psum(out, names) if names else out

        if self.mesh.size == 1:
            return local(dens, shell)
        spec = self.spectral_sharding().spec
        return jax.shard_map(local, mesh=self.mesh, in_specs=(spec, spec), out_specs=PartitionSpec())(dens, shell)

    # ----- fused operators (element-wise work arranged for few passes over memory) ----------------------------
    def dealias_by_axis(self, f_hat: jax.Array) -> jax.Array:
        """:meth:`dealias` as one 1D factor per axis (same result): no full-size mask is ever formed, so XLA has
        no grid-sized constant to hoist out of a time-step loop and keep alive (4 bytes per point in float32)."""
        for m in self._keep():
            f_hat = f_hat * m
        return f_hat

    def project_lean(self, v_hat: jax.Array) -> jax.Array:
        """:meth:`project` with real factors kept real: ``1/|k|^2`` scales real and imaginary parts separately,
        so the only grid-sized constant XLA may hoist out of a time-step loop is one real array (not complex)."""
        ks = self.k
        kdotv = sum(k * v_hat[i] for i, k in enumerate(ks))
        k2 = 0 * kdotv.real  # |k|^2 built on the data: XLA computes it in the fusion, never as a hoisted table
        for k in ks:
            k2 = k2 + k * k
        inv = jnp.where(k2 > 0, 1 / jnp.where(k2 > 0, k2, 1), 0)
        s = jax.lax.complex(kdotv.real * inv, kdotv.imag * inv)
        return jnp.stack([v_hat[i] - k * s for i, k in enumerate(ks)])


def safe_inverse(a: jax.Array) -> jax.Array:
    """``1 / a`` where ``a > 0``, else 0 (no division by zero is ever evaluated, so gradients stay finite)."""
    return jnp.where(a > 0, 1 / jnp.where(a > 0, a, 1), 0)


def _sharded(fn: Callable, out: NamedSharding, explicit: bool) -> Callable:
    """Apply ``fn`` (which moves data across shards) and land on ``out``, on explicit or auto meshes."""
    if explicit and out.mesh.size > 1:
        return jax.sharding.auto_axes(fn, out_sharding=out)
    if out.mesh.size > 1:
        return lambda a: jax.lax.with_sharding_constraint(fn(a), out)
    return fn
