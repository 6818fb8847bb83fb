"""The base class of particle equations: a Hamiltonian system of particles whose force comes from a mesh.

A particle equation is an :class:`~solvers.Equation` whose state is :class:`~solvers.particles.Particles` instead
of spectra: ``dx/dt = drift(t) v``, ``dv/dt = kick(t) strength(t) grad(laplacian^-1 delta)(x)`` with ``delta`` the
particles' density contrast on the grid's mesh (:class:`~solvers.particles.ParticleMesh`). The scheme that advances
it is :class:`~solvers.particles.Leapfrog` (kick-drift-kick), which asks the equation for the time integrals of the
drift and kick factors over a step (exact, so a time-dependent system such as comoving gravity keeps its order).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding

from ..bases import Fourier, RealFourier
from ..grids import Grid
from ..model import Equation, Param
from .mesh import ParticleMesh
from .state import Particles, particle_sharding

__all__ = ["ParticleEquation", "periodic_grid", "place_particles"]

#: the parameters every particle equation declares
PARTICLE_PARAMS = (
    Param("particles", 4096, "number of particles (divisible by the number of devices)", type=int, low=1),
    Param("kernel", "cic", "mass-assignment kernel of paint and readout", type=str, choices=("ngp", "cic", "tsc")),
)


def periodic_grid(shape, box_length, mesh: Mesh | None = None, *, dtype=jnp.float32) -> Grid:
    """The periodic :class:`~solvers.Grid` of a particle simulation, 1D to 3D: Fourier bases (a half spectrum on
    the last axis) of ``shape`` cells on a box of ``box_length``, no dealiasing.

    Args:
      shape: cells per axis (an int: 1D). box_length: the side per axis (one number or one per axis).
      mesh: the device mesh (:func:`xfft.make_mesh`; a 1D grid needs a 1-axis mesh), or None. dtype: the
        particles' and fields' real dtype.

    Raises:
      ValueError: as :class:`~solvers.Grid` (a mesh that cannot split the shape, float64 without 64-bit mode).
    """
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    lengths = np.broadcast_to(np.asarray(box_length, float), (len(shape),))
    bases = [Fourier(n, float(L)) for n, L in zip(shape, lengths)]
    if len(shape) > 1:  # (a sharded 1D axis has no real transform in xfft: its grid keeps the full spectrum)
        bases[-1] = RealFourier(shape[-1], float(lengths[-1]))
    return Grid(bases, mesh, dtype=dtype, dealias="none")


def place_particles(x: jax.Array, sharding: NamedSharding | None) -> jax.Array:
    """``x`` (inside a traced builder) constrained to ``sharding``: each device then computes its own particles."""
    if sharding is None:
        return x
    explicit = any(t == jax.sharding.AxisType.Explicit for t in sharding.mesh.axis_types)
    if explicit:
        return jax.sharding.reshard(x, sharding)
    return jax.lax.with_sharding_constraint(x, sharding)


class ParticleEquation(Equation):
    """Particles moving in the field of their own density contrast on a periodic mesh.

    Subclasses set :attr:`strength` (or override :meth:`acceleration`), :meth:`drift_factor` and
    :meth:`kick_factor` where the system depends on time, and ``initial_conditions`` that return
    :class:`~solvers.particles.Particles`.

    Args:
      grid: a periodic :class:`~solvers.Grid` (1D to 3D, Fourier bases: :func:`periodic_grid`, or a
        :class:`~solvers.SpectralGrid`): its shape is the mesh of the field solve, its box the particles' box, its
        mesh the devices, its dtype the particles'.
      particles: the number of particles (a multiple of the devices). kernel: ``"ngp"``, ``"cic"`` or ``"tsc"``.
      capacity: the exchange's slots per device pair (:func:`xfft.paint`; None: its default).
      deconvolve: undo the kernel's smoothing of the force (:class:`~solvers.particles.ParticleMesh`).
      halo: paint and read out through halos of this many cells (:class:`~solvers.particles.ParticleMesh`;
        excludes ``capacity``): for particles that stay near the block of the device holding them.

    State: :class:`~solvers.particles.Particles`, two ``(particles, D)`` arrays of the grid's dtype sharded
    :func:`~solvers.particles.particle_sharding`.

    Raises:
      TypeError: ``grid`` is not a :class:`~solvers.Grid`.
      ValueError: a grid with a non-periodic axis, a parameter out of range, a particle count the devices do not
        divide, both ``capacity`` and ``halo``.
    """

    parameters: ClassVar[tuple[Param, ...]] = PARTICLE_PARAMS
    #: the state is particles, not spectra: checkpoints store it as it is
    spectral_state: ClassVar[bool] = False
    #: the coefficient of ``grad(laplacian^-1 delta)`` in the acceleration (``omega_p^2`` of a plasma's electrons)
    strength: ClassVar[float] = 1.0

    def __init__(self, grid: Grid, capacity: int | None = None, deconvolve: bool = False,
                 halo: int | None = None, **params: Any):
        if not isinstance(grid, Grid):
            raise TypeError(f"{self.label()}: grid must be a solvers.Grid (the periodic mesh), got "
                            f"{type(grid).__name__}")
        if any(k not in ("fft", "rfft") for k in grid.kinds):
            raise ValueError(f"{self.label()}: the grid must be periodic on every axis (Fourier bases), got kinds "
                             f"{grid.kinds}")
        super().__init__(grid, **params)
        devices = 1 if grid.mesh is None else grid.mesh.size
        if self.particles % devices:
            raise ValueError(f"{self.label()}: particles must be a multiple of the {devices} devices, got "
                             f"{self.particles}")
        self.mesh = ParticleMesh(grid.shape, grid.box_length, grid.mesh, kernel=self.kernel, capacity=capacity,
                                 deconvolve=deconvolve, halo=halo)
        self.sharding = particle_sharding(grid.mesh)

    # ----- the Hamiltonian system ---------------------------------------------------------------------
    def drift_factor(self, t0: jax.Array, t1: jax.Array) -> jax.Array:
        """``integral drift(t) dt`` from ``t0`` to ``t1`` (positions move by it times the velocity): ``t1 - t0``."""
        return t1 - t0

    def kick_factor(self, t0: jax.Array, t1: jax.Array) -> jax.Array:
        """``integral kick(t) dt`` from ``t0`` to ``t1`` (velocities change by it times the acceleration)."""
        return t1 - t0

    def acceleration(self, positions: jax.Array, t: jax.Array, weights: jax.Array | None = None) -> jax.Array:
        """``strength * grad(laplacian^-1 delta)`` at the particles, ``(N, D)`` sharded like them (``weights``: the
        particles' masses, None: equal)."""
        return self.strength * self.mesh.field(positions, weights)

    def wrap(self, positions: jax.Array) -> jax.Array:
        """Positions taken back into the box ``[0, L_d)`` (periodic)."""
        box = jnp.asarray(self.grid.box_length, positions.dtype)
        return jnp.mod(positions, box)

    # ----- what runs and outputs use ------------------------------------------------------------------
    def nonlinear(self, state: Particles, t: jax.Array) -> Particles:
        """The right-hand side ``(drift v, kick a(x))`` at ``t`` (rates; :class:`Leapfrog` does not use it)."""
        one = jnp.ones((), state.positions.dtype)
        acc = self.acceleration(state.positions, t, state.weights) * self.kick_factor(t, t + one)
        return Particles(state.velocities * self.drift_factor(t, t + one), acc,
                         None if state.weights is None else jnp.zeros_like(state.weights))

    def energy(self, state: Particles) -> jax.Array:
        """The particles' kinetic energy per unit volume, ``(1/2) mean(|v|^2)`` times the mean density 1 (what a
        run's blow-up check watches: a reduction, no field solve), weighted by the particles' weights."""
        v2 = jnp.sum(state.velocities**2, -1)
        return 0.5 * jnp.mean(v2 if state.weights is None else state.weights * v2)

    def diagnostics(self, state: Particles, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        """``energy`` (kinetic, :meth:`energy`), ``field_energy`` (``(1/2) integral |grad(phi)|^2`` per unit
        volume), ``momentum`` (mean velocity along axis 0) and ``outer_power`` (the share of the density
        contrast's power in the outer half of the mesh's wavenumbers: particles clustered at the mesh scale, or
        the particles' shot noise; not named ``resolution``, whose watch is for spectral fields)."""
        delta = self.mesh.contrast(state.positions, state.weights)
        return {"energy": self.energy(state),
                "field_energy": self.mesh.field_energy(delta) / self.mesh.volume,
                "momentum": jnp.mean(state.velocities[:, 0] * (1 if state.weights is None else state.weights)),
                "outer_power": self._outer_share(delta)}

    def _outer_share(self, delta: jax.Array) -> jax.Array:
        m = self.mesh
        d_hat = m.spectrum(delta)
        k = m.wavenumbers(delta.dtype)
        outer, k2 = False, 0
        for d, ki in enumerate(k):
            outer = outer | (jnp.abs(ki) > 0.5 * np.pi * m.shape[d] / m.box_length[d])
            k2 = k2 + ki * ki
        power = d_hat.real**2 + d_hat.imag**2
        total = jnp.sum(jnp.where(k2 > 0, power, 0))  # without the mean
        share = jnp.sum(jnp.where(outer, power, 0))
        return jnp.where(total > 0, share / jnp.where(total > 0, total, 1), 0)

    def physical_fields(self, state: Particles) -> dict[str, jax.Array]:
        """``delta``: the density contrast on the mesh (what snapshots store and plots draw)."""
        return {"delta": self.mesh.contrast(state.positions, state.weights)}

    def lattice_index(self, dtype=jnp.int32) -> jax.Array:
        """``arange(particles)`` sharded over the devices (inside a traced builder): each device makes its own."""
        return place_particles(jnp.arange(self.particles, dtype=dtype), _flat(self.sharding))

    def particle_state(self, positions: jax.Array, velocities: jax.Array,
                       weights: jax.Array | None = None) -> Particles:
        """A :class:`Particles` of the grid's dtype on :func:`particle_sharding` (inside a traced builder)."""
        dtype = self.grid.dtype
        w = None if weights is None else place_particles(weights.astype(dtype), _flat(self.sharding))
        return Particles(place_particles(self.wrap(positions.astype(dtype)), self.sharding),
                         place_particles(velocities.astype(dtype), self.sharding), w)

    @property
    def volume(self) -> float:
        return math.prod(self.grid.box_length)


def _flat(sharding: NamedSharding | None) -> NamedSharding | None:
    if sharding is None:
        return None
    return NamedSharding(sharding.mesh, jax.sharding.PartitionSpec(sharding.spec[0]))
