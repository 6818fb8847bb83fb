"""Rayleigh-Benard convection (Boussinesq) between free-slip, fixed-temperature plates, periodic horizontally."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .._grid import SpectralGrid
from .._params import InitialCondition, Param
from .._wall_grid import WallGrid
from ._base import Equation

#: critical Rayleigh number and wavenumber of free-slip plates (Rayleigh 1916; Chandrasekhar 1961, ch. II)
RA_CRITICAL = 27 * math.pi ** 4 / 4
K_CRITICAL = math.pi / math.sqrt(2)


def growth_rate(k: float, Ra: float, Pr: float, m: int = 1) -> float:
    """Closed-form growth rate of the free-slip mode ``(k, m)``: the larger root of
    ``(s + Pr K^2)(s + K^2) = Ra Pr k^2 / K^2``, ``K^2 = k^2 + (m pi)^2`` (time unit ``d^2 / kappa``)."""
    K2 = k * k + (m * math.pi) ** 2
    b = (1 + Pr) * K2
    c = Pr * K2 * K2 - Ra * Pr * k * k / K2
    return (-b + math.sqrt(b * b - 4 * c)) / 2


def _single_mode(eq: RayleighBenard) -> jax.Array:
    """``theta = A cos(2 pi x / Lx) sin(pi z)``, fluid at rest."""
    k = 2 * math.pi / eq.walls.box_length[1]
    return eq.from_physical(
        lambda z, *h: (0 * z,) * eq.dim + (eq.amplitude * jnp.cos(k * h[0]) * jnp.sin(math.pi * z),))


def _random(eq: RayleighBenard, seed: int) -> jax.Array:
    """Fluid at rest, ``theta = A * noise(seed) * sin(pi z)`` (white noise, dealiased)."""
    def theta(z, *h):
        noise = jax.random.normal(jax.random.key(seed), z.shape, z.dtype)
        return (0 * z,) * eq.dim + (eq.amplitude * noise * jnp.sin(math.pi * z),)
    return eq.from_physical(theta)


class RayleighBenard(Equation):
    """Boussinesq convection in ``0 < z < 1`` with free-slip, fixed-temperature plates; periodic horizontally.

    Units: depth ``d``, thermal time ``d^2 / kappa``, temperature difference ``dT``. With ``T = 1 - z + theta``:
    ``u_t + u.grad u = -grad p + Pr lap u + Ra Pr theta z_hat``, ``div u = 0``,
    ``theta_t + u.grad theta = w + lap theta``; ``w = d_z u_h = theta = 0`` at the plates. Fields are sine (w,
    theta) or cosine (horizontal velocity) series in z and Fourier series horizontally (:class:`WallGrid`,
    one :func:`xfft.xr2rn` per parity group). The linear part (diffusion) is diagonal; buoyancy, the base
    gradient and advection (flux form, 2/3 dealiased) are ``nonlinear``, followed by the exact projection.

    Args:
      grid: a :class:`~solvers.SpectralGrid` of shape ``(nz, nx[, ny])`` (z first) and box ``(1, Lx[, Ly])``;
        its mesh, shape, box and dtype define the wall grid.
      Ra, Pr: Rayleigh and Prandtl numbers. amplitude: initial perturbation.

    State: complex ``(dim + 1, nz, nx[, ny])`` amplitudes ``(u_x[, u_y], w, theta)``, ``walls.spectral_sharding(1)``.

    Raises:
      ValueError: bad parameters (naming them), a depth other than 1.
    """

    name = "rayleigh-benard"
    description = "Rayleigh-Benard convection, free-slip plates (sine/cosine in z, Fourier in x, y; 2D or 3D)"
    plot_file = "temperature.png"
    default_integrator = "etdrk4"
    ndims = (2, 3)
    parameters = (
        Param("Ra", 2000.0, "Rayleigh number g alpha dT d^3 / (nu kappa)", low=0, low_open=True),
        Param("Pr", 1.0, "Prandtl number nu / kappa", low=0, low_open=True),
        Param("amplitude", 1e-2, "initial temperature perturbation amplitude", low=0),
    )
    initial_conditions = {
        "single-mode": InitialCondition(_single_mode, (), "A cos(2 pi x / Lx) sin(pi z), fluid at rest"),
        "random": InitialCondition(_random, (Param("seed", 0, "random seed", int, low=0, flag="--seed"),),
                                   "A * white noise * sin(pi z), fluid at rest"),
    }

    def __init__(self, grid: SpectralGrid, Ra: float = 2000.0, Pr: float = 1.0, amplitude: float = 1e-2):
        super().__init__(grid, Ra=Ra, Pr=Pr, amplitude=amplitude)
        if grid.box_length[0] != 1.0:
            raise ValueError(f"rayleigh-benard: the depth (--box-length, first entry) must be 1, got "
                             f"{grid.box_length[0]}")
        self.walls = WallGrid(grid.shape, grid.mesh, box_length=grid.box_length, dtype=grid.dtype)
        self.dim = grid.ndim

    @classmethod
    def default_box_length(cls, ndim: int) -> tuple[float, ...]:
        """Depth 1 (z, the first axis) and one critical wavelength ``2 pi / k_c`` horizontally (two rolls)."""
        return (1.0,) + (2 * math.pi / K_CRITICAL,) * (ndim - 1)

    def abstract_state(self) -> jax.ShapeDtypeStruct:
        w = self.walls
        return jax.ShapeDtypeStruct((self.dim + 1,) + w.shape, w.cdtype, sharding=w.spectral_sharding(1))

    # ----- transforms --------------------------------------------------------------------------------
    def to_physical(self, s: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(u_h, (w, theta))`` in physical space: horizontal velocities (cosines) and the sine fields."""
        w, d = self.walls, self.dim
        return w.inverse(s[: d - 1], "cos"), w.inverse(s[d - 1:], "sin")

    def project(self, s: jax.Array) -> jax.Array:
        """Remove the gradient part of the velocity (exact: every operator is diagonal in the shared index)."""
        w, d = self.walls, self.dim
        kz, kh, k2 = w.kz, w.kh, w.k2()
        div = sum(1j * k * s[i] for i, k in enumerate(kh)) + kz * s[d - 1]
        phi = jnp.where(k2 > 0, div / jnp.where(k2 > 0, k2, 1), 0)
        vel = [s[i] + 1j * k * phi for i, k in enumerate(kh)] + [s[d - 1] - kz * phi]
        return jnp.stack(vel + [s[d]])

    def from_physical(self, fn) -> jax.Array:
        """State from ``fn(z, x[, y]) -> (u_x[, u_y], w, theta)`` in physical space, dealiased and projected onto
        solenoidal velocities."""
        w, d = self.walls, self.dim

        def build(*xyz):
            fields = fn(*xyz)
            if len(fields) != d + 1:
                raise ValueError(f"rayleigh-benard: the field function must return {d + 1} fields, got {len(fields)}")
            mask = w.dealias_mask()
            cos = w.forward(jnp.stack(fields[: d - 1]), "cos") * mask
            sin = w.forward(jnp.stack(fields[d - 1:]), "sin") * mask
            return self.project(jnp.concatenate([cos, sin]))
        if not jax.sharding.get_abstract_mesh().empty:  # already under a mesh (e.g. traced by the driver's checks)
            return build(*w.coordinates())
        with jax.set_mesh(w.mesh):
            return jax.jit(build)(*w.coordinates())

    # ----- equation ----------------------------------------------------------------------------------
    def linear(self) -> jax.Array:
        k2 = self.walls.k2()
        coef = jnp.asarray([self.Pr] * self.dim + [1.0], self.walls.dtype)
        return -coef.reshape((-1,) + (1,) * self.dim) * k2[None]

    def nonlinear(self, s: jax.Array, t: jax.Array) -> jax.Array:
        w, d = self.walls, self.dim
        kz, kh = w.kz, w.kh
        uh, sins = self.to_physical(s)
        vw, th = sins[0], sins[1]
        n = d - 1
        # products: cosine parity (u_i u_j, w w, w theta), sine parity (u_i w, u_i theta)
        cos_p = [uh[i] * uh[j] for i in range(n) for j in range(i, n)] + [vw * vw, vw * th]
        sin_p = [uh[i] * vw for i in range(n)] + [uh[i] * th for i in range(n)]
        c = w.forward(jnp.stack(cos_p), "cos")
        sn = w.forward(jnp.stack(sin_p), "sin")
        pairs = {(i, j): k for k, (i, j) in enumerate((i, j) for i in range(n) for j in range(i, n))}
        uu = lambda i, j: c[pairs[min(i, j), max(i, j)]]  # noqa: E731
        ww, wt = c[len(pairs)], c[len(pairs) + 1]
        uw, ut = sn[:n], sn[n:]
        out = []
        for i in range(n):  # -(sum_j d_j(u_j u_i) + d_z(w u_i)); d_z of a sine series: +kz (to cosines)
            out.append(-(sum(1j * kh[j] * uu(i, j) for j in range(n)) + kz * uw[i]))
        out.append(-(sum(1j * kh[j] * uw[j] for j in range(n)) - kz * ww) + self.Ra * self.Pr * s[d])
        out.append(-(sum(1j * kh[j] * ut[j] for j in range(n)) - kz * wt) + s[d - 1])
        return self.project(jnp.stack(out) * w.dealias_mask())

    # ----- diagnostics ---------------------------------------------------------------------------------
    def energy(self, s: jax.Array) -> jax.Array:
        """Kinetic energy ``<|u|^2> / 2``."""
        w, d = self.walls, self.dim
        return 0.5 * (w.mean_square(s[: d - 1], "cos") + w.mean_square(s[d - 1], "sin"))

    def plate_nusselt(self, s: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Nusselt numbers ``-d_z <T>`` at the bottom (z = 0) and top (z = 1) plates."""
        w = self.walls
        mean = s[self.dim] * w.horizontal_mean_mask()
        m = jnp.arange(w.shape[0]).reshape((-1,) + (1,) * (self.dim - 1))
        dz = (w.kz * mean).real  # d_z theta of the horizontal mean at z = 0, per mode (sin' = kz cos)
        return 1 - jnp.sum(dz), 1 - jnp.sum(dz * (1 - 2 * (m % 2)))

    def nusselt(self, s: jax.Array) -> jax.Array:
        """Volume-averaged Nusselt number ``1 + <w theta>``."""
        return 1 + self.walls.mean_product(s[self.dim - 1], s[self.dim], "sin")

    def max_rate(self, s: jax.Array) -> jax.Array:
        """Advective rate ``max sum |u_i| / dx_i`` plus the buoyancy frequency bound ``sqrt(Ra Pr)``."""
        w = self.walls
        uh, sins = self.to_physical(s)
        h = [L / n for L, n in zip(w.box_length, w.shape)]
        adv = jnp.abs(sins[0]) / h[0] + sum(jnp.abs(uh[i]) / h[i + 1] for i in range(self.dim - 1))
        return jnp.max(adv) + math.sqrt(self.Ra * self.Pr)

    def diagnostics(self, s: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        bottom, top = self.plate_nusselt(s)
        return {"energy": self.energy(s), "nusselt": self.nusselt(s), "nusselt_bottom": bottom,
                "nusselt_top": top, "cfl": dt * self.max_rate(s)}

    def temperature(self, s: jax.Array) -> jax.Array:
        """Total temperature ``1 - z + theta`` in physical space (real sharding)."""
        z = self.walls.coordinates()[0]
        return 1 - z + self.walls.inverse(s[self.dim], "sin")

    def plot_field(self, s: jax.Array) -> tuple[str, jax.Array]:
        T = self.temperature(s)
        plane = T if self.dim == 2 else T[..., 0]
        return "temperature (x horizontal, z vertical)", self.grid.replicate(plane.T)
