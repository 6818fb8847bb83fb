"""Rayleigh-Benard convection between free-slip plates: sine/cosine series in z, Fourier horizontally."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..bases import Cosine, Sine
from ..grids import Grid, safe_inverse
from .rayleigh_benard import RayleighBenard


class RayleighBenardFreeSlip(RayleighBenard):
    """Free-slip plates (``w = d_z u_h = theta = 0``): horizontal velocities are cosine series in z, ``w`` and
    ``theta`` sine series, all Fourier series horizontally (complex ``fft``), sharing one index per axis so every
    linear operator is diagonal. One planned transform per parity group (``dct2`` / ``dst2`` in z).

    State: complex ``(dim + 1, nz, nx[, ny])`` coefficients ``(u_x[, u_y], w, theta)`` on
    ``grid.spectral_sharding(1)`` (the cosine grid; the sine fields share its layout).

    The linear part (diffusion) is diagonal. Buoyancy ``Ra Pr theta`` and the base gradient ``w`` are in the
    nonlinear part and are taken, like the advection products, from the **physical** fields transformed back:
    the spectrum of a real field is Hermitian, and only what the physical fields show may drive the flow. (Taken
    from the raw coefficients, as before version 0.3, the anti-Hermitian part that no physical field shows grew
    from round-off at the linear growth rate of the conduction state: the README's 2D run reached an energy of
    4.9e34 by t = 12 with a steady-looking plate Nusselt number.) The anti-Hermitian part now only decays by
    diffusion, so the state stays Hermitian to round-off and the energy from the coefficients is the energy of
    the physical fields.
    """

    wall_basis = Cosine
    half_spectrum = False

    def __init__(self, grid: Grid, Ra: float = 2000.0, Pr: float = 1.0, amplitude: float = 1e-2):
        super().__init__(grid, Ra=Ra, Pr=Pr, amplitude=amplitude)
        g = self.grid
        self.sines = g.with_basis(0, Sine(g.shape[0], g.bases[0].domain))

    def abstract_state(self) -> jax.ShapeDtypeStruct:
        g = self.grid
        return jax.ShapeDtypeStruct((self.dim + 1,) + g.spectral_shape, g.cdtype, sharding=g.spectral_sharding(1))

    # ----- operators ---------------------------------------------------------------------------------
    @property
    def kz(self) -> jax.Array:
        """``m pi / Lz``, broadcastable along axis 0 (the index shared by cosines and sines)."""
        return self.grid.wavenumbers(0)

    @property
    def kh(self) -> tuple[jax.Array, ...]:
        """Horizontal angular wavenumbers (Nyquist 0: the mode has no real derivative)."""
        return tuple(self.grid.wavenumbers(d) for d in range(1, self.dim))

    def k2(self) -> jax.Array:
        return self.kz ** 2 + sum(k ** 2 for k in self.kh)

    def horizontal_mean_mask(self) -> jax.Array:
        """1 on the horizontal mean (``k_h = 0``), 0 elsewhere."""
        mask = self.grid.along(np.ones(self.grid.shape[0]), 0)
        for d in range(1, self.dim):
            mask = mask * self.grid.along(np.arange(self.grid.shape[d]) == 0, d)
        return mask

    def to_physical(self, s: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(u_h, (w, theta))`` in physical space (on the product grid for ``dealias="3/2"``)."""
        d = self.dim
        return self.grid.to_physical(s[: d - 1]), self.sines.to_physical(s[d - 1:])

    def project(self, s: jax.Array) -> jax.Array:
        """Remove the gradient part of the velocity (exact: every operator is diagonal in the shared index)."""
        d, kz, kh, k2 = self.dim, self.kz, self.kh, self.k2()
        div = sum(1j * k * s[i] for i, k in enumerate(kh)) + kz * s[d - 1]
        phi = div * safe_inverse(k2)
        vel = [s[i] + 1j * k * phi for i, k in enumerate(kh)] + [s[d - 1] - kz * phi]
        return jnp.stack(vel + [s[d]])

    def from_physical(self, fn) -> jax.Array:
        """State from ``fn(z, x[, y]) -> (u_x[, u_y], w, theta)`` in physical space, dealiased and projected onto
        solenoidal velocities."""
        g, d = self.grid, self.dim

        def build(*xyz):
            fields = fn(*xyz)
            if len(fields) != d + 1:
                raise ValueError(f"{self.label()}: the field function must return {d + 1} fields, got {len(fields)}")
            cos = g.dealias(g.forward(jnp.stack(fields[: d - 1])))
            sin = self.sines.dealias(self.sines.forward(jnp.stack(fields[d - 1:])))
            return self.project(jnp.concatenate([cos, sin]))
        if not jax.sharding.get_abstract_mesh().empty:  # already under a mesh (e.g. traced by the driver's checks)
            return jax.jit(build)(*g.coordinates())
        with jax.set_mesh(g.mesh):
            return jax.jit(build)(*g.coordinates())

    # ----- equation ----------------------------------------------------------------------------------
    def linear(self) -> jax.Array:
        coef = jnp.asarray([self.Pr] * self.dim + [1.0], self.grid.dtype)
        return -coef.reshape((-1,) + (1,) * self.dim) * self.k2()[None]

    def nonlinear(self, s: jax.Array, t: jax.Array) -> jax.Array:
        d, kz, kh = self.dim, self.kz, self.kh
        uh, sins = self.to_physical(s)
        vw, th = sins[0], sins[1]
        n = d - 1
        # products: cosine parity (u_i u_j, w w, w theta), sine parity (u_i w, u_i theta, and w, theta themselves:
        # the linear couplings act on what the physical fields show)
        cos_p = [uh[i] * uh[j] for i in range(n) for j in range(i, n)] + [vw * vw, vw * th]
        sin_p = [uh[i] * vw for i in range(n)] + [uh[i] * th for i in range(n)] + [vw, th]
        c = self.grid.from_physical(jnp.stack(cos_p))
        sn = self.sines.from_physical(jnp.stack(sin_p))
        pairs = {(i, j): k for k, (i, j) in enumerate((i, j) for i in range(n) for j in range(i, n))}
        uu = lambda i, j: c[pairs[min(i, j), max(i, j)]]  # noqa: E731
        ww, wt = c[len(pairs)], c[len(pairs) + 1]
        uw, ut, w_h, th_h = sn[:n], sn[n:2 * n], sn[2 * n], sn[2 * n + 1]
        out = []
        for i in range(n):  # -(sum_j d_j(u_j u_i) + d_z(w u_i)); d_z of a sine series: +kz (to cosines)
            out.append(-(sum(1j * kh[j] * uu(i, j) for j in range(n)) + kz * uw[i]))
        out.append(-(sum(1j * kh[j] * uw[j] for j in range(n)) - kz * ww) + self.Ra * self.Pr * th_h)
        out.append(-(sum(1j * kh[j] * ut[j] for j in range(n)) - kz * wt) + w_h)
        return self.project(jnp.stack(out))

    # ----- diagnostics ---------------------------------------------------------------------------------
    def energy(self, s: jax.Array) -> jax.Array:
        """Kinetic energy ``<|u|^2> / 2``."""
        d = self.dim
        return 0.5 * (self.grid.mean_square(s[: d - 1]) + self.sines.mean_square(s[d - 1]))

    def plate_nusselt(self, s: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Nusselt numbers ``-d_z <T>`` at the bottom (z = 0) and top (z = 1) plates."""
        mean = s[self.dim] * self.horizontal_mean_mask()
        m = jnp.arange(self.grid.shape[0]).reshape((-1,) + (1,) * (self.dim - 1))
        dz = (self.kz * mean).real  # d_z theta of the horizontal mean at z = 0, per mode (sin' = kz cos)
        return 1 - jnp.sum(dz), 1 - jnp.sum(dz * (1 - 2 * (m % 2)))

    def nusselt(self, s: jax.Array) -> jax.Array:
        """Volume-averaged Nusselt number ``1 + <w theta>``."""
        return 1 + self.sines.inner(s[self.dim - 1], s[self.dim])

    def max_rate(self, s: jax.Array) -> jax.Array:
        """Advective rate ``max sum |u_i| / dx_i`` plus the buoyancy frequency bound ``sqrt(Ra Pr)``."""
        g = self.grid
        uh, sins = self.grid.backward(s[: self.dim - 1]), self.sines.backward(s[self.dim - 1:])
        h = g.spacing
        adv = jnp.abs(sins[0]) / h[0] + sum(jnp.abs(uh[i]) / h[i + 1] for i in range(self.dim - 1))
        return jnp.max(adv) + math.sqrt(self.Ra * self.Pr)

    def diagnostics(self, s: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        bottom, top = self.plate_nusselt(s)
        return {"energy": self.energy(s), "nusselt": self.nusselt(s), "nusselt_bottom": bottom,
                "nusselt_top": top}

    def temperature(self, s: jax.Array) -> jax.Array:
        z = self.grid.coordinates()[0]
        return 1 - z + self.sines.backward(s[self.dim])

    def physical_fields(self, s: jax.Array) -> dict[str, jax.Array]:
        """Velocity ``u`` (x), ``v`` (y, 3D), ``w`` (z, vertical) and the total temperature ``temperature``
        (``1 - z + theta``) on the cell-centred points."""
        d = self.dim
        uh, sins = self.grid.backward(s[: d - 1]), self.sines.backward(s[d - 1:])
        out = {"u": uh[0]}
        if d == 3:
            out["v"] = uh[1]
        out["w"] = sins[0]
        out["temperature"] = 1 - self.grid.coordinates()[0] + sins[1]
        return out
