"""The kick-drift-kick leapfrog: the symplectic, time-reversible second-order scheme of particle codes."""

from __future__ import annotations

from typing import ClassVar

import jax

from ._base import Integrator

__all__ = ["Leapfrog"]

#: what a particle equation gives the scheme
_PARTICLE_METHODS = ("kick_factor", "drift_factor", "acceleration", "wrap")


class Leapfrog(Integrator):
    """Kick-drift-kick for a particle equation (:class:`~solvers.particles.ParticleEquation`: its state a
    :class:`~solvers.particles.Particles`): half a kick, a drift, half a kick.

    ``v += K(t, t + dt/2) a(x)``; ``x += D(t, t + dt) v``; ``v += K(t + dt/2, t + dt) a(x)``, with the equation's
    exact integrals ``K`` (:meth:`~solvers.particles.ParticleEquation.kick_factor`) and ``D``
    (:meth:`~solvers.particles.ParticleEquation.drift_factor`) of its time-dependent factors. Symplectic and
    second order; two force evaluations per step (the state holds no acceleration, so a step depends on the
    positions and velocities alone, and a resumed run is the same run to the bit).

    It lives with the other schemes (``INTEGRATORS["leapfrog"]``, ``--integrator leapfrog``) and asks the
    equation only for what it uses: ``kick_factor``, ``drift_factor``, ``acceleration`` and ``wrap``.

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
        if not all(callable(getattr(equation, m, None)) for m in _PARTICLE_METHODS):
            raise TypeError(f"Leapfrog: equation must be a solvers.particles.ParticleEquation (with "
                            f"{', '.join(_PARTICLE_METHODS)}), got {type(equation).__name__}")

    def coefficients(self, dt: jax.Array) -> tuple:
        return ()

    def step(self, state, t: jax.Array, dt: jax.Array, coeffs: tuple = ()):
        """Advance ``state`` from ``t`` to ``t + dt`` (pure, jit-able)."""
        eq = self.equation
        half, end = t + dt / 2, t + dt
        w = state.weights
        v = state.velocities + eq.kick_factor(t, half) * eq.acceleration(state.positions, t, w)
        x = eq.wrap(state.positions + eq.drift_factor(t, end) * v)
        v = v + eq.kick_factor(half, end) * eq.acceleration(x, end, w)
        return state._replace(positions=x, velocities=v)

    def stable_dt(self) -> float:
        return float("inf")
