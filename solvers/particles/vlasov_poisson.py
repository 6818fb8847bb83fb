"""Electrostatic particle-in-cell: the Vlasov-Poisson system of electrons on a neutralizing ion background.

Plasma units: time ``1 / omega_p``, length the Debye length ``lambda_D = v_th / omega_p`` of the Maxwellian
(``v_th = 1``), density the mean electron density. The electrons' acceleration is ``-E = grad(phi)`` with
``laplacian(phi) = n / n_0 - 1`` (Gauss's law with the ions' charge), so like charges repel.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..model import InitialCondition, Param
from .equation import ParticleEquation
from .loading import lattice, quiet_maxwellian
from .state import Particles

__all__ = ["VlasovPoisson"]


def _displaced(eq: VlasovPoisson, x0: jax.Array, alpha: float, mode: int) -> jax.Array:
    """Positions ``x0`` displaced so that the density is ``1 + alpha cos(k x)`` along axis 0 (``k = 2 pi mode /
    L_x``) to first order in ``alpha``: ``x = x0 - (alpha / k) sin(k x0)``."""
    k = 2 * math.pi * mode / eq.grid.box_length[0]
    return x0.at[:, 0].add(-(alpha / k) * jnp.sin(k * x0[:, 0]))


def _landau(eq: VlasovPoisson, alpha: float, mode: int, beams: int) -> Particles:
    """A multi-beam quiet Maxwellian (:func:`~solvers.particles.loading.quiet_maxwellian`) with the density
    perturbation."""
    n = eq.particles
    if beams == 0:  # about sqrt(N) beams, a power of two that divides N
        beams = 1
        while n % (2 * beams) == 0 and (2 * beams) ** 2 <= 2 * n:
            beams *= 2
    if n % beams:
        raise ValueError(f"{eq.label()} initial condition landau: beams={beams} must divide particles={n}")
    x0, v, w = quiet_maxwellian(eq.lattice_index(), n, beams, eq.grid.box_length, 1.0, eq.grid.dtype)
    return eq.particle_state(_displaced(eq, x0, alpha, mode), v, w)


def _two_stream(eq: VlasovPoisson, alpha: float, mode: int, v0: float) -> Particles:
    """Two cold beams at ``+-v0`` along axis 0 (alternate particles of one lattice: each beam on a regular
    lattice of its own), each of half the density; weights 1 (every state of the equation has weights)."""
    i = eq.lattice_index()
    x0 = lattice(i, eq.particles, eq.grid.box_length, eq.grid.dtype)
    v = jnp.where(i % 2 == 0, v0, -v0).astype(eq.grid.dtype)
    v = jnp.stack([v] + [jnp.zeros_like(v)] * (eq.grid.ndim - 1), -1)
    return eq.particle_state(_displaced(eq, x0, alpha, mode), v, jnp.ones(i.shape, eq.grid.dtype))


_ALPHA = Param("alpha", 0.01, "relative density perturbation of the mode", low=0, high=1, high_open=True)
_MODE = Param("mode", 1, "the perturbed mode along axis 0 (k = 2 pi mode / L_x)", type=int, low=1)


class VlasovPoisson(ParticleEquation):
    """Electrons (charge -1, mass 1) on a fixed neutralizing background, periodic, 1D to 3D, in plasma units.

    ``dx/dt = v``, ``dv/dt = grad(phi)(x)``, ``laplacian(phi) = n - 1`` on the grid's mesh (paint, FFT, readout:
    :class:`~solvers.particles.ParticleMesh`). Advance it with :class:`~solvers.particles.Leapfrog`.

    Args:
      grid: a :class:`~solvers.SpectralGrid` whose box is in Debye lengths (e.g. ``4 pi`` for ``k = 0.5``).
      particles, kernel: as :class:`~solvers.particles.ParticleEquation`. capacity: the exchange's slots per
        device pair; None: all of a device's particles (a thermal plasma mixes over the whole box, so any device
        may have to send most of its particles to one other).

    Initial conditions:
      ``landau``: a quiet-start Maxwellian (``v_th = 1``) with density ``1 + alpha cos(k x)`` (``alpha``,
      ``mode``); ``two-stream``: two cold beams at ``+-v0`` along axis 0 with the same perturbation.

    Diagnostics (besides :meth:`~solvers.particles.ParticleEquation.diagnostics`): ``mode_amplitude``, the
    amplitude ``|E_k|`` of the electric field's Fourier coefficient of the fundamental mode along axis 0 (``k = 2
    pi / L_x``), its real and imaginary parts ``mode_re``, ``mode_im`` (a ``cos(k x)`` density perturbation has
    an imaginary ``E_k``), and ``total_energy`` (kinetic plus field, conserved to ``O(dt^2)``).
    """

    initial_conditions = {
        "landau": InitialCondition(_landau, (_ALPHA, _MODE, Param(
            "beams", 0, "velocity groups of the quiet start (0: about sqrt(particles))", type=int, low=0)),
            "quiet Maxwellian, density 1 + alpha cos(k x)"),
        "two-stream": InitialCondition(_two_stream, (_ALPHA, _MODE, Param(
            "v0", 1.0, "beam speed", low=0, low_open=True)), "two cold beams at +-v0"),
    }

    def __init__(self, grid, particles: int = 4096, kernel: str = "cic", capacity: int | None = None):
        if capacity is None:  # a thermal plasma mixes over the whole box: a device may send all its particles
            capacity = max(1, particles // (1 if grid.mesh is None else grid.mesh.size))
        super().__init__(grid, capacity=capacity, particles=particles, kernel=kernel)

    def max_rate(self, state: Particles) -> jax.Array:
        """``max over the particles of sum_d |v_d| / dx_d``: the CFL rate of a particle crossing cells (a run's
        ``--cfl`` keeps ``dt`` times it below the number; the plasma oscillation, ``omega_p = 1``, needs only
        ``dt < 2`` with the leapfrog)."""
        inv = jnp.asarray([1 / h for h in self.mesh.cell], state.velocities.dtype)
        return jnp.max(jnp.sum(jnp.abs(state.velocities) * inv, -1))

    def diagnostics(self, state: Particles, t, dt) -> dict:
        out = super().diagnostics(state, t, dt)
        e_k = self.mode_amplitude(state)
        out["mode_amplitude"] = jnp.abs(e_k)
        out["mode_re"], out["mode_im"] = e_k.real, e_k.imag
        out["total_energy"] = out["energy"] + out["field_energy"]
        return out

    def mode_amplitude(self, state: Particles, mode: int = 1) -> jax.Array:
        """The complex Fourier coefficient ``E_k`` of the electric field of mode ``mode`` along axis 0
        (``E_k = -i delta_k / k`` in these units): a replicated scalar."""
        delta = self.mesh.contrast(state.positions, state.weights)
        k = 2 * math.pi * mode / self.grid.box_length[0]
        return -1j * self.mesh.mode(delta, (mode,) + (0,) * (self.grid.ndim - 1)) / k
