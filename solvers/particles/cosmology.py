"""Gravitational particle-mesh N-body in comoving coordinates, Einstein-de Sitter, with the scale factor as time.

Units: ``H_0 = 1``, the box in any length unit, mass in units of the mean density (``Omega_m = 1``). With comoving
positions ``x``, canonical momenta ``p = a^2 dx/dt`` and the scale factor ``a`` as the time variable
(``H(a) = a^(-3/2)``): ``dx/da = a^(-3/2) p`` and ``dp/da = -(3/2) a^(-1/2) grad(laplacian^-1 delta)``, so the
kick-drift-kick leapfrog takes the exact integrals ``2 (a_0^(-1/2) - a_1^(-1/2))`` (drift) and
``2 (a_1^(1/2) - a_0^(1/2))`` (kick) of the factors over a step. The linear growth factor is ``D(a) = a``.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp

from ..model import InitialCondition, Param
from .equation import ParticleEquation
from .loading import lagrangian_lattice
from .state import Particles

__all__ = ["ComovingNBody"]


def _lattice(eq: ComovingNBody) -> jax.Array:
    blocks = eq.mesh.sharding if eq.mesh.halo is not None else None  # through halos: each device its own block
    return lagrangian_lattice(eq.lattice_index(), eq.lattice_shape, eq.grid.box_length, eq.grid.dtype, blocks)


def _zeldovich(eq: ComovingNBody, psi: jax.Array, q: jax.Array, a0: float) -> Particles:
    """The Zel'dovich state at ``a0`` of the displacement ``psi`` (per unit growth) at the lattice ``q``."""
    return eq.particle_state(q + a0 * psi, a0**1.5 * psi)


def _plane_wave(eq: ComovingNBody, a0: float, amplitude: float, mode: int) -> Particles:
    """A plane wave along axis 0: ``psi = -(A / k) sin(k q)`` (``delta = A a cos(k q)`` while linear; the first shell
    crossing at ``a = 1 / A``)."""
    q = _lattice(eq)
    k = 2 * math.pi * mode / eq.grid.box_length[0]
    psi = jnp.zeros_like(q).at[:, 0].set(-(amplitude / k) * jnp.sin(k * q[:, 0]))
    return _zeldovich(eq, psi, q, a0)


def _gaussian(eq: ComovingNBody, a0: float, sigma: float, index: float, seed: int) -> Particles:
    """A Gaussian random field of power spectrum ``P(k) ~ k^index`` (cut off above half the mesh's Nyquist
    wavenumber), scaled so that the linear density contrast at ``a0`` has rms ``sigma``, displaced by Zel'dovich."""
    m = eq.mesh
    dtype = eq.grid.dtype
    noise = jax.random.normal(jax.random.key(seed), m.shape, dtype)
    if m.sharding is not None:
        noise = jax.sharding.reshard(noise, m.sharding)
    k = m.wavenumbers(dtype)
    kk = jnp.sqrt(sum(ki * ki for ki in k))
    cut = 0.5 * math.pi * min(n / L for n, L in zip(m.shape, m.box_length))
    amp = jnp.where((kk > 0) & (kk <= cut), jnp.where(kk > 0, kk, 1) ** (index / 2), 0)
    delta = m._inverse(m.spectrum(noise) * amp)
    delta = delta * (sigma / a0 / jnp.sqrt(jnp.mean(delta * delta)))  # rms sigma at a0 (D = a)
    q = _lattice(eq)
    psi = -m.at_particles(m.potential_gradient(delta), q)  # div(psi) = -delta
    return _zeldovich(eq, psi, q, a0)


_A0 = Param("a0", 0.1, "the scale factor of the initial state (the run's t0)", low=0, low_open=True)


class ComovingNBody(ParticleEquation):
    """Cold dark matter in an Einstein-de Sitter universe: a particle-mesh N-body code in comoving coordinates.

    The time of a run is the scale factor ``a`` (``simulate(eq, Leapfrog, t0=a0, t_end=a1, controller=
    FixedStep(da))``); the velocities are the canonical momenta ``p = a^2 dx/dt`` (``H_0 = 1``). Particles start on
    a Lagrangian lattice of ``grid.shape * r`` points (``particles = prod(grid.shape) * r^D``), displaced by the
    Zel'dovich approximation.

    Args:
      grid: a periodic :class:`~solvers.Grid` (:func:`~solvers.particles.periodic_grid`), the PM mesh and box.
      particles: ``prod(grid.shape) * r^D`` (None: one per cell). kernel: as
        :class:`~solvers.particles.ParticleEquation`; TSC by default: with the window deconvolved, CIC amplifies
        the mesh's shortest waves (its window squared is 0.16 per axis at the Nyquist wavenumber; a Gaussian field
        of rms contrast 0.005 at ``a = 0.1`` on 32^3 cells reaches an rms of 0.05 at ``a = 0.4`` instead of the
        0.02 linear theory gives, the excess in a checkerboard at the mesh's scale), where TSC grows the contrast
        as linear theory does (0.019) on every scale. capacity: the exchange's slots per device pair; None: all
        of a device's particles (the lattice is ordered row-major, not by the mesh's blocks, so a device may send
        a whole share of its particles to one other). deconvolve: undo the kernel's smoothing of the force
        (default True: the large scales then grow as linear theory says; :class:`~solvers.particles.ParticleMesh`).
      halo: paint and read out through halos of this many cells instead of the exchange (excludes
        ``capacity``): each device holds the lattice of its own block of the mesh, and its particles must stay
        within ``halo`` cells of that block (kernel included). Fits a run while displacements stay small against
        a block (a Gaussian field before much clustering); a particle that leaves its halo stops the run with a
        ``ValueError`` that says so. Every mesh axis of more than one device must split the mesh.

    Initial conditions:
      ``plane-wave``: the Zel'dovich pancake along axis 0 (``a0``, ``amplitude`` A: shell crossing at ``1 / A``,
      ``mode``), exact until shell crossing (:func:`~solvers.particles.zeldovich_plane_wave`); ``gaussian``: a
      Gaussian random field (``a0``, ``sigma``: the rms density contrast at ``a0``, ``index``: ``P ~ k^index``,
      ``seed``).

    Raises:
      ValueError: as :class:`~solvers.particles.ParticleEquation`, or a particle count that is not
        ``prod(grid.shape) * r^D`` for an integer ``r``.
    """

    parameters = (Param("particles", None, "number of particles: prod(n) * r^D for an integer r (default: one per "
                        "cell)", type=int, low=1),
                  Param("kernel", "tsc", "mass-assignment kernel of paint and readout (tsc: see the class's notes on "
                        "cic)", type=str, choices=("ngp", "cic", "tsc")))
    strength = -1.5  # dp/da = -(3/2) a^(-1/2) grad(laplacian^-1 delta): Poisson with 4 pi G rho_0 = 3/2

    initial_conditions = {
        "plane-wave": InitialCondition(_plane_wave, (_A0, Param(
            "amplitude", 1.0, "A: delta = A a cos(k q) while linear, shell crossing at a = 1/A", low=0, low_open=True),
            Param("mode", 1, "the wave's mode along axis 0", type=int, low=1)), "Zel'dovich pancake"),
        "gaussian": InitialCondition(_gaussian, (_A0, Param(
            "sigma", 0.01, "rms linear density contrast at a0", low=0, low_open=True),
            Param("index", -1.0, "spectral index: P(k) ~ k^index"),
            Param("seed", 0, "random seed", type=int, low=0)), "Gaussian random field, Zel'dovich"),
    }

    def __init__(self, grid, particles: int | None = None, kernel: str = "tsc", capacity: int | None = None,
                 deconvolve: bool = True, halo: int | None = None):
        cells = math.prod(grid.shape)
        particles = cells if particles is None else particles
        if capacity is None and halo is None:  # the lattice is ordered row-major, not by the mesh's blocks
            capacity = max(1, particles // (1 if grid.mesh is None else grid.mesh.size))
        super().__init__(grid, capacity=capacity, deconvolve=deconvolve, particles=particles, kernel=kernel,
                         halo=halo)
        if self.kernel == "cic" and deconvolve:
            warnings.warn(f"{self.label()}: kernel='cic' with deconvolve=True amplifies the mesh's shortest waves "
                          "into a growing checkerboard (a Gaussian field's rms contrast grew 8-fold where linear "
                          "theory gives 4); use kernel='tsc' (the default) or deconvolve=False", stacklevel=2)
        if halo is not None and self.mesh.sharding is not None:
            spec = self.mesh.sharding.spec
            used = {a for e in spec if e is not None for a in ((e,) if isinstance(e, str) else e)}
            idle = [a for a, n in zip(grid.mesh.axis_names, grid.mesh.axis_sizes) if n > 1 and a not in used]
            if idle:
                raise ValueError(f"{self.label()}: halo needs every mesh axis of more than one device to split the "
                                 f"mesh (each device holds the particles of its block); {idle} split nothing")
        r = round((particles / cells) ** (1 / grid.ndim))
        if r < 1 or cells * r**grid.ndim != particles:
            raise ValueError(f"{self.label()}: particles must be prod(grid.shape) * r^{grid.ndim} for an integer r "
                             f"(a lattice of r^{grid.ndim} particles per cell), got {particles} on {grid.shape}")
        self.lattice_shape = tuple(n * r for n in grid.shape)

    @staticmethod
    def growth_factor(a: float) -> float:
        """The linear growth factor ``D(a) = a`` of Einstein-de Sitter (a small contrast grows as ``D``, its power
        spectrum as ``D^2``)."""
        return a

    @classmethod
    def initial_time(cls, ic: str, **params) -> float:
        """The scale factor ``a0`` of the initial condition (a run's ``t0``)."""
        return float(params.get("a0", _A0.default))

    def drift_factor(self, t0: jax.Array, t1: jax.Array) -> jax.Array:
        """``integral a^(-3/2) da`` from ``t0`` to ``t1`` (scale factors)."""
        return 2 * (t0**-0.5 - t1**-0.5)

    def kick_factor(self, t0: jax.Array, t1: jax.Array) -> jax.Array:
        """``integral a^(-1/2) da`` from ``t0`` to ``t1`` (scale factors)."""
        return 2 * (jnp.sqrt(t1) - jnp.sqrt(t0))
