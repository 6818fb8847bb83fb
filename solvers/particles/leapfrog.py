"""The kick-drift-kick leapfrog: the symplectic, time-reversible second-order scheme of particle codes."""

from __future__ import annotations

from typing import ClassVar

import jax

from ..integrators import Integrator
from .equation import ParticleEquation
from .state import Particles

__all__ = ["Leapfrog"]


class Leapfrog(Integrator):
    """Kick-drift-kick for :class:`~solvers.particles.ParticleEquation`: half a kick, a drift, half a kick.

    ``v += K(t, t + dt/2) a(x)``; ``x += D(t, t + dt) v``; ``v += K(t + dt/2, t + dt) a(x)``, with the equation's
    exact integrals ``K`` (:meth:`~solvers.particles.ParticleEquation.kick_factor`) and ``D``
    (:meth:`~solvers.particles.ParticleEquation.drift_factor`) of its time-dependent factors. Symplectic and
    second order; two force evaluations per step (the state holds no acceleration, so a step depends on the
    positions and velocities alone, and a resumed run is the same run to the bit).

    Raises:
      TypeError: ``equation`` is not a particle equation.
    """

    name: ClassVar[str] = "leapfrog"
    description: ClassVar[str] = "kick-drift-kick leapfrog (particles, symplectic, 2nd order)"
    order: ClassVar[int] = 2
    treats_linear_exactly: ClassVar[bool] = True
    needs_diagonal: ClassVar[bool] = False

    def check_equation(self, equation) -> None:
        """A particle equation only (a particle system has no linear part for the base class to ask for)."""
        if not isinstance(equation, ParticleEquation):
            raise TypeError(f"Leapfrog: equation must be a solvers.particles.ParticleEquation, got "
                            f"{type(equation).__name__}")

    def coefficients(self, dt: jax.Array) -> tuple:
        return ()

    def step(self, state: Particles, t: jax.Array, dt: jax.Array, coeffs: tuple = ()) -> Particles:
        """Advance ``state`` from ``t`` to ``t + dt`` (pure, jit-able)."""
        eq = self.equation
        half, end = t + dt / 2, t + dt
        w = state.weights
        v = state.velocities + eq.kick_factor(t, half) * eq.acceleration(state.positions, t, w)
        x = eq.wrap(state.positions + eq.drift_factor(t, end) * v)
        v = v + eq.kick_factor(half, end) * eq.acceleration(x, end, w)
        return Particles(x, v, w)

    def stable_dt(self) -> float:
        return float("inf")
