"""Schroedinger-Poisson (self-gravitating scalar field, fuzzy dark matter) and the Schroedinger base class.

``i dpsi/dt = -1/2 lap psi + V psi`` with ``lap V = 4 pi G (|psi|^2 - rho0)`` (hbar = m = 1, ``rho0`` the mean
density: the Jeans swindle). The potential comes from :class:`~solvers.Poisson` on the sharded grid.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import diagnostics as diag
from ..grids import SpectralGrid
from ..model import Equation, InitialCondition, Param
from ..model.params import as_initial_condition
from ..steady import Poisson


class Schrodinger(Equation):
    """``i dpsi/dt = -1/2 lap psi + V(psi, t) psi`` for a complex wavefunction; subclasses define :meth:`potential`.

    State: the full (c2c) spectrum ``psi_hat = xfftn(psi, norm="forward")``, complex ``grid.shape``, sharded
    like :attr:`spectral_sharding` (slab ``P(None, 'x', None)``). ``linear() = -i k^2 / 2`` and
    ``nonlinear = -i F[V psi]``, so every integrator runs it; the unitary split-step schemes
    (:class:`~solvers.integrators.split_step.SplitStep`) use :meth:`to_real`, :meth:`from_real` and
    :meth:`potential` directly. Integrals (mass, energies) are over the box volume.
    """


    def __init__(self, grid: SpectralGrid, ic_params: dict[str, float] | None = None, **params: float):
        """``grid``: the box (a real-field :class:`~solvers.SpectralGrid` is turned into the complex-field grid of
        the same points); ``params``: the declared :attr:`parameters`; ``ic_params``: this instance's defaults for
        the initial conditions' parameters (``initial_state(ic, **overrides)`` takes the rest)."""
        if not grid.complex_fields:
            grid = _complex_grid(grid.shape, grid.mesh, grid.box_length, grid.dtype, grid.dealias_rule, grid.backend,
                                 grid.order)
        super().__init__(grid, **params)
        ic_decl = {p.name: p for ic in self.initial_conditions.values() for p in as_initial_condition(ic).params}
        given = dict(ic_params or {})
        unknown = sorted(set(given) - set(ic_decl))
        if unknown:
            raise ValueError(f"{self.label()}: unknown initial-condition parameter(s) {unknown}; "
                             f"known: {sorted(ic_decl)}")
        self.ic_params = {k: ic_decl[k].check(given[k], self.label()) if k in given else p.default
                          for k, p in ic_decl.items()}
        self.real_sharding = grid.real_sharding()
        self.spectral_sharding = grid.spectral_sharding()
        self.volume = math.prod(grid.box_length)

    def real_grid(self) -> SpectralGrid:
        """The same box for real fields (densities, potentials: half spectra)."""
        g = self.grid
        return SpectralGrid(g.shape, g.mesh, ndim=g.ndim, box_length=g.box_length, dtype=g.dtype,
                            dealias=g.dealias_rule, backend=g.backend, order=g.order)

    def ic_defaults(self) -> dict[str, float]:
        return self.ic_params

    # ----- transforms and operators -------------------------------------------------------------
    def to_real(self, psi_hat: jax.Array) -> jax.Array:
        """``psi`` on the grid (complex, real-space sharding) from its spectrum."""
        return self.grid.backward(psi_hat)

    def from_real(self, psi: jax.Array) -> jax.Array:
        """Spectrum (Fourier coefficients, :attr:`spectral_sharding`) of the complex field ``psi``."""
        return self.grid.forward(psi)

    def k2(self) -> jax.Array:
        """``|k|^2`` on the full spectrum (sparse wavenumbers, :attr:`spectral_sharding`)."""
        return self.grid.k2()

    def centered_coordinates(self) -> tuple[jax.Array, ...]:
        """Grid coordinates shifted so that the box centre is 0 (real-space sharding)."""
        return tuple(x - L / 2 for x, L in zip(self.grid.coordinates(), self.grid.box_length))

    def potential(self, psi: jax.Array, t: jax.Array) -> jax.Array:
        """The real potential ``V`` acting on ``psi`` (real-space sharding)."""
        raise NotImplementedError

    def potential_energy(self, psi: jax.Array) -> dict[str, jax.Array]:
        """Named potential-energy integrals of ``psi`` (their sum is the potential part of the energy)."""
        raise NotImplementedError

    # ----- Equation interface -------------------------------------------------------------------
    def abstract_state(self) -> jax.ShapeDtypeStruct:
        g = self.grid
        return jax.ShapeDtypeStruct(g.spectral_shape, g.cdtype, sharding=self.spectral_sharding)

    def linear(self) -> jax.Array:
        return (-0.5j * self.k2()).astype(self.grid.cdtype)

    def nonlinear(self, psi_hat: jax.Array, t: jax.Array) -> jax.Array:
        psi = self.to_real(psi_hat)
        return -1j * self.from_real(self.potential(psi, t) * psi)

    def mass(self, psi_hat: jax.Array) -> jax.Array:
        """``N = int |psi|^2 dV`` (Parseval on the spectrum)."""
        return self.volume * self.grid.total(psi_hat.real ** 2 + psi_hat.imag ** 2)

    def kinetic_energy(self, psi_hat: jax.Array) -> jax.Array:
        """``int |grad psi|^2 / 2 dV``."""
        return self.volume * self.grid.total(0.5 * self.k2() * (psi_hat.real ** 2 + psi_hat.imag ** 2))

    def energy(self, psi_hat: jax.Array) -> jax.Array:
        """Total energy ``K + W`` (conserved by the real-time dynamics)."""
        return self.kinetic_energy(psi_hat) + sum(self.potential_energy(self.to_real(psi_hat)).values())

    def max_rate(self, psi_hat: jax.Array) -> jax.Array:
        """``max |V|``, the fastest potential phase rate (``dt = cfl / max|V|``; the kinetic phase is exact in
        split-step, and explicit schemes are further capped by their linear stability limit)."""
        return jnp.max(jnp.abs(self.potential(self.to_real(psi_hat), 0.0)))

    def diagnostics(self, psi_hat: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        """Mass, kinetic and potential energies, their sum, ``max |psi|^2`` and ``resolution``: the fraction of the
        norm in the outer third of all wavenumbers up to Nyquist (the split-step schemes truncate none)."""
        psi = self.to_real(psi_hat)
        kin = self.kinetic_energy(psi_hat)
        pot = self.potential_energy(psi)
        rho = psi.real ** 2 + psi.imag ** 2
        return {"mass": self.mass(psi_hat), "kinetic": kin, **pot, "energy": kin + sum(pot.values()),
                "max_density": self.grid.maximum(rho), "resolution": diag.resolution(self.grid, psi_hat, rule="none")}

    def _state(self, build) -> jax.Array:
        """Spectrum of the complex field ``build()`` evaluated straight into the real-space sharding."""
        psi = jax.jit(lambda: build().astype(self.grid.cdtype), out_shardings=self.real_sharding)()
        return self.from_real(psi)

    def physical_fields(self, psi_hat: jax.Array) -> dict[str, jax.Array]:
        """Density ``|psi|^2`` and phase ``arg psi`` (in ``(-pi, pi]``)."""
        psi = self.to_real(psi_hat)
        return {"density": psi.real ** 2 + psi.imag ** 2, "phase": jnp.angle(psi)}


def _complex_grid(shape, mesh, box_length, dtype, dealias, backend, order="natural") -> SpectralGrid:
    return SpectralGrid(shape, mesh, ndim=len(shape), box_length=box_length, dtype=dtype, dealias=dealias,
                        backend=backend, complex_fields=True, order=order)


def jeans(eq: SchrodingerPoisson, rho0: float = 1.0, eps: float = 1e-6, mode: float = 1.0) -> jax.Array:
    """``psi = sqrt(rho0) (1 + eps cos(k x))``, ``k = 2 pi mode / Lx``, at rest: density contrast
    ``delta(t) = 2 eps cos(k x) cos(omega t)`` (or ``cosh(gamma t)``) with ``omega^2 = k^4/4 - 4 pi G rho0``."""
    k = 2 * np.pi * mode / eq.grid.box_length[0]
    return eq._state(lambda: math.sqrt(rho0) * (1 + eps * jnp.cos(k * eq.grid.coordinates()[0])))


def gaussian_collapse(eq: SchrodingerPoisson, rho0: float = 1.0, eps: float = 1.0, width: float = 0.5) -> jax.Array:
    """A uniform background ``rho0`` plus a Gaussian overdensity of relative height ``eps`` and ``width`` (in units
    of the box) at the centre, at rest: gravitational collapse into a solitonic core."""
    r2 = sum((x / (width * L)) ** 2 for x, L in zip(eq.centered_coordinates(), eq.grid.box_length))
    return eq._state(lambda: jnp.sqrt(rho0 * (1 + eps * jnp.exp(-r2 / 2))))


_RHO0 = Param("rho0", 1.0, "mean density", low=0, low_open=True)


class SchrodingerPoisson(Schrodinger):
    """Self-gravitating scalar field: ``i psi_t = -lap psi / 2 + V psi``, ``lap V = 4 pi G (|psi|^2 - <|psi|^2>)``.

    Args:
      grid: a 2D or 3D :class:`~solvers.SpectralGrid` (``float64`` for validation work).
      G: gravitational constant (code units, hbar = m = 1), >= 0.
      **ic_params: defaults for the initial conditions (``rho0``, ``eps``, ``mode``, ``width``).

    The potential is solved each kick by :class:`~solvers.Poisson` (one r2c transform pair on the sharded grid).
    Diagnostics: ``mass`` (conserved to round-off by split-step), ``kinetic``, ``gravity`` (``int V rho / 2``),
    ``energy``, ``max_density``, ``resolution`` (of the norm; see :meth:`Schrodinger.diagnostics`). Linear theory
    of a uniform state: ``omega^2 = k^4 / 4 - 4 pi G rho0``.
    """

    grid_ndims = (2, 3)
    parameters = (Param("G", 1.0, "gravitational constant (code units)", low=0),)
    initial_conditions = {
        "jeans": InitialCondition(jeans, (_RHO0, Param("eps", 1e-3, "relative amplitude"),
                                          Param("mode", 1.0, "mode number along x")), "perturbed uniform state"),
        "gaussian-collapse": InitialCondition(gaussian_collapse, (
            _RHO0, Param("eps", 1e-3, "relative height of the overdensity"),
            Param("width", 0.1, "width in units of the box", low=0, low_open=True)), "Gaussian overdensity"),
    }

    def __init__(self, grid: SpectralGrid, G: float = 1.0, **ic_params: float):
        super().__init__(grid, ic_params, G=G)
        self.poisson = Poisson(self.real_grid())

    def potential(self, psi: jax.Array, t: jax.Array) -> jax.Array:
        rho = psi.real ** 2 + psi.imag ** 2
        return self.poisson.solve((4 * np.pi * self.G) * rho)

    def potential_energy(self, psi: jax.Array) -> dict[str, jax.Array]:
        rho = psi.real ** 2 + psi.imag ** 2
        v = self.poisson.solve((4 * np.pi * self.G) * rho)
        return {"gravity": 0.5 * self.volume * jnp.mean(v * rho)}

    def jeans_omega2(self, k: float, rho0: float) -> float:
        """Linear dispersion relation ``omega^2 = k^4 / 4 - 4 pi G rho0`` (negative: Jeans unstable)."""
        return k ** 4 / 4 - 4 * np.pi * self.G * rho0
