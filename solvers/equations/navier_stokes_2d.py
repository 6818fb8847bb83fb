"""2D incompressible Navier-Stokes in vorticity form, pseudo-spectral, dealiased, optional Kolmogorov forcing."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .. import diagnostics as diag
from .. import initial_conditions as ics
from ..grids import SpectralGrid, rmul, times_i
from ..model import Equation, InitialCondition, Param


def _from_physical(eq: NavierStokes2D, fn) -> jax.Array:
    g = eq.grid
    return jax.jit(lambda x, y: g.dealias(g.rfft(fn(x, y))))(*g.coordinates())


def _taylor_green(eq: NavierStokes2D) -> jax.Array:
    """``u = v0 (sin kx cos ky, -cos kx sin ky)``, ``omega = 2 k v0 sin kx sin ky`` (k = ``mode``, 2 pi box)."""
    k, v0 = eq.mode, eq.amplitude
    return _from_physical(eq, lambda x, y: 2 * k * v0 * jnp.sin(k * x) * jnp.sin(k * y))


def _kolmogorov(eq: NavierStokes2D, seed: int = 0, k0: float = 4.0) -> jax.Array:
    """The laminar Kolmogorov state plus ``amplitude`` times a random unit-energy field (``seed``, ``k0``)."""
    if eq.forcing <= 0 or eq.nu + eq.drag <= 0:
        raise ValueError(f"navier-stokes-2d initial condition kolmogorov needs a forcing: parameter forcing > 0 "
                         f"(got {eq.forcing:g}) and nu or drag > 0 (got nu={eq.nu:g}, drag={eq.drag:g})")
    lam = _from_physical(eq, eq.laminar)
    if eq.amplitude == 0:
        return lam
    return lam + eq.amplitude * _random(eq, seed=seed, k0=k0, energy=1.0)


def _random(eq: NavierStokes2D, seed: int = 0, k0: float = 4.0, energy: float = 0.5) -> jax.Array:
    """Vorticity of :func:`~solvers.initial_conditions.random_isotropic` in 2D (shell spectrum peaked at k0)."""
    u_hat = ics.random_isotropic(eq.grid, seed=seed, k0=k0, energy=energy)
    return jax.jit(eq.grid.curl)(u_hat)


class NavierStokes2D(Equation):
    """``omega_t + u . grad omega = nu lap omega - mu omega + f_omega`` for the vorticity spectrum ``w_hat``.

    ``u = (d_y psi, -d_x psi)`` with ``lap psi = -omega``. The nonlinear term ``-u . grad omega`` is dealiased by
    the grid's rule and takes one batched inverse and one forward transform, in one of two forms:

    - float32: the advective form. ``u`` and ``grad omega`` go to physical space (4 fields) and
      ``u . grad omega`` comes back (1 field).
    - float64: Basdevant's reduction, four transforms instead of five. As ``div u = 0``,
      ``u . grad omega = (d_xx - d_yy)(u v) + d_x d_y (v^2 - u^2)``: ``u`` goes to physical space (2 fields) and
      ``u v``, ``v^2 - u^2`` come back (2 fields). With ``"2/3"`` or ``"3/2"`` the kept modes of both forms are
      exact, so they agree to rounding (with ``"none"`` they alias differently). The reduction differentiates
      the products' rounding twice (``k^2`` up to the dealiasing cutoff): on a turbulent 512^2 state it is
      within 5e-14 (rms, relative) of the alias-free term in float64, against 2e-15 for the advective form,
      but 3e-5 against 1e-6 in float32, which is why float32 keeps the advective form. The
      float64 ETDRK4 step on one device at 256^2 takes 0.78 of the advective form's time.

    Kolmogorov forcing ``f = F sin(k_f y) x_hat`` enters as ``f_omega = -F k_f cos(k_f y)``; its laminar state
    ``omega = -F k_f / (nu k_f^2 + mu) cos(k_f y)`` is an exact steady solution.

    Args:
      grid: a 2D :class:`~solvers.SpectralGrid` (axes x, y).
      nu: kinematic viscosity (>= 0). drag: linear (Ekman) drag ``mu`` (>= 0).
      forcing: ``F`` (0: decaying). kf: forcing mode number (``k_f = 2 pi kf / Ly``).
      amplitude, mode: initial-condition parameters (Taylor-Green speed and mode; Kolmogorov perturbation).

    State: ``w_hat`` complex ``grid.spectral_shape`` with ``grid.spectral_sharding()``.

    Raises:
      ValueError: a grid that is not 2D, negative or non-finite nu/drag, or a bad kf.
    """

    grid_ndims = (2,)
    parameters = (
        Param("nu", 1 / 1600, "kinematic viscosity", low=0, reciprocal="Re"),
        Param("forcing", 0.0, "Kolmogorov forcing amplitude F (0: decaying)"),
        Param("kf", 4, "forcing mode number (k_f = 2 pi kf / Ly), below ny/3", int, low=1),
        Param("drag", 0.0, "linear (Ekman) drag mu", low=0),
        Param("amplitude", 1.0, "Taylor-Green speed; Kolmogorov perturbation size"),
        Param("mode", 1, "Taylor-Green mode number", int, low=1),
    )
    _seed_k0 = (Param("seed", 0, "random seed", int, low=0),
                Param("k0", 4.0, "spectral peak", low=0, low_open=True))
    initial_conditions = {
        "taylor-green": InitialCondition(_taylor_green, (), "2 k v0 sin(kx) sin(ky), k = mode, v0 = amplitude"),
        "kolmogorov": InitialCondition(_kolmogorov, _seed_k0, "laminar Kolmogorov state + amplitude * noise"),
        "random": InitialCondition(_random, _seed_k0 + (Param("energy", 0.5, "initial energy", low=0, low_open=True),),
                                   "random vorticity"),
    }

    def __init__(self, grid: SpectralGrid, nu: float = 1 / 1600, forcing: float = 0.0, kf: int = 4,
                 drag: float = 0.0, amplitude: float = 1.0, mode: int = 1):
        super().__init__(grid, nu=nu, forcing=forcing, kf=kf, drag=drag, amplitude=amplitude, mode=mode)
        if not self.kf < grid.shape[1] // 3:
            raise ValueError(f"navier-stokes-2d parameter kf must be an integer in "
                             f"1..{grid.shape[1] // 3 - 1} on a grid with ny = {grid.shape[1]}, got {kf}")
        self.kf_phys = 2 * math.pi * self.kf / grid.box_length[1]

    def abstract_state(self) -> jax.ShapeDtypeStruct:
        g = self.grid
        return jax.ShapeDtypeStruct(g.spectral_shape, g.cdtype, sharding=g.spectral_sharding())

    # ----- physics ---------------------------------------------------------------------------------
    def laminar(self, x: jax.Array, y: jax.Array) -> jax.Array:
        """Laminar Kolmogorov vorticity ``-F k_f / (nu k_f^2 + mu) cos(k_f y)`` (physical space, steady)."""
        amp = self.forcing * self.kf_phys / (self.nu * self.kf_phys ** 2 + self.drag)
        return -amp * jnp.cos(self.kf_phys * y) + 0 * x

    def velocity(self, w_hat: jax.Array) -> jax.Array:
        """Velocity spectrum ``(2, ...)`` from the vorticity: ``psi = omega / k^2``, ``u = (d_y psi, -d_x psi)``."""
        g = self.grid
        kx, ky = g.k
        psi = -g.inv_laplacian(w_hat)
        return jnp.stack([times_i(rmul(ky, psi)), -times_i(rmul(kx, psi))])

    def forcing_hat(self) -> jax.Array:
        """Spectrum of ``f_omega = -F k_f cos(k_f y)``: ``-F k_f / 2`` on the mode ``(0, kf)`` of the half spectrum."""
        g = self.grid
        kx, ky = g.k_full
        my = jnp.rint(ky * (g.box_length[1] / (2 * math.pi)))
        return jnp.where((kx == 0) & (my == self.kf), -0.5 * self.forcing * self.kf_phys, 0).astype(g.cdtype)

    def linear(self) -> jax.Array:
        return (-self.nu * self.grid.k2() - self.drag).astype(self.grid.dtype)

    def nonlinear(self, w_hat: jax.Array, t: jax.Array) -> jax.Array:
        return self._nonlinear(w_hat, None, rate=False)

    def nonlinear_and_rate(self, w_hat: jax.Array, t: jax.Array, reduce=None):
        """The nonlinear term and the CFL rate of the physical velocity it already holds
        (:class:`~solvers.FusedRate`; the rate is None with 3/2 padding)."""
        if self.grid.dealias_rule == "3/2":
            return self._nonlinear(w_hat, None, rate=False), None
        return self._nonlinear(w_hat, reduce, rate=True)

    def _nonlinear(self, w_hat: jax.Array, reduce, rate: bool):
        g = self.grid
        if self.four_transforms:  # -u . grad omega (see the class)
            u, v = g.to_physical(self.velocity(w_hat))
            products = jnp.stack([u * v, v * v - u * u])
        else:
            u, v, wx, wy = g.to_physical(jnp.concatenate([self.velocity(w_hat), g.grad(w_hat)]))
            products = u * wx + v * wy
        if rate:  # the maximum rides in the forward all-to-all where the grid can (Grid.from_physical_and_max)
            hx, hy = g.spacing
            p, r = g.from_physical_and_max(products, jnp.abs(u) / hx + jnp.abs(v) / hy, reduce)
        else:
            p = g.from_physical(products)
        if self.four_transforms:
            kx, ky = g.k
            out = rmul(kx * kx - ky * ky, p[0]) + rmul(kx * ky, p[1])
        else:
            out = -p
        if self.forcing != 0:
            out = out + self.forcing_hat()
        return (out, r) if rate else out

    @property
    def four_transforms(self) -> bool:
        """Whether the nonlinear term takes Basdevant's four transforms (float64) instead of the advective
        form's five (float32; see the class for why)."""
        return jnp.dtype(self.grid.dtype) == jnp.float64

    # ----- diagnostics -------------------------------------------------------------------------------
    def energy(self, w_hat: jax.Array) -> jax.Array:
        """``E = <|u|^2> / 2 = sum_k |omega_k|^2 / (2 k^2)``."""
        return 0.5 * self.grid.mean_square(w_hat, self.grid.inv_k2())

    def max_rate(self, w_hat: jax.Array) -> jax.Array:
        return diag.max_rate(self.grid, self.velocity(w_hat))

    def diagnostics(self, w_hat: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        g = self.grid
        e, z = self.energy(w_hat), 0.5 * g.mean_square(w_hat)
        out = {"energy": e, "enstrophy": z, "palinstrophy": 0.5 * g.mean_square(w_hat, g.k2()),
               "dissipation": 2 * self.nu * z + 2 * self.drag * e,
               "resolution": diag.resolution(g, w_hat, g.inv_k2())}
        if self.forcing != 0:  # <f . u> = <f_omega psi> (polarization of Parseval sums)
            f, psi = self.forcing_hat(), -g.inv_laplacian(w_hat)
            out["injection"] = 0.25 * (g.mean_square(f + psi) - g.mean_square(f - psi))
        return out

    def spectrum(self, w_hat: jax.Array) -> jax.Array:
        return self.grid.radial_sum(0.5 * (w_hat.real ** 2 + w_hat.imag ** 2) * self.grid.inv_k2())

    def physical_fields(self, w_hat: jax.Array) -> dict[str, jax.Array]:
        """Vorticity and stream function ``psi`` (``lap psi = -omega``, zero mean)."""
        g = self.grid
        f = g.irfft(jnp.stack([w_hat, -g.inv_laplacian(w_hat)]))
        return {"vorticity": f[0], "stream_function": f[1]}
