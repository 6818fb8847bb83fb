"""Strang (kick-drift-kick) split-step Fourier schemes for Schroedinger-type equations, real and imaginary time."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..model.tree import State
from ._base import Integrator


class SplitStep(Integrator):
    """Kick-drift-kick Strang splitting of ``i psi_t = -lap psi / 2 + V(psi) psi``: 2nd order, unitary.

    One step: ``psi <- exp(-i V dt/2) psi`` (kick, real space), ``psi_hat <- exp(-i k^2 dt/2) psi_hat`` (drift,
    exact), kick again with the updated potential. Each factor is a pure phase and the transforms are unitary,
    so the norm is conserved to round-off. The kick is exact when ``V`` depends on ``psi`` only through
    ``|psi|^2`` (Gross-Pitaevskii, Schroedinger-Poisson), which the kick leaves unchanged.

    The equation must provide ``linear()`` (``-i k^2/2``), ``to_real``, ``from_real`` and ``potential(psi, t)``
    (see :class:`~solvers.equations.schrodinger_poisson.Schrodinger`). Cost: 4 complex transforms plus those of
    two potential evaluations per step.
    """

    name = "split-step"
    description = "Strang kick-drift-kick split-step Fourier (Schroedinger-type equations), unitary"
    order = 2
    dt_coefficients = True
    #: only for Schroedinger-type equations (``potential``, ``to_real``, ``from_real``); generic tests skip it
    requires_potential = True
    #: True: imaginary time ``t = -i tau`` (``exp(-H dtau)``) with the norm restored every step
    imaginary = False

    def coefficients(self, dt: jax.Array):
        lin = self.equation.linear()
        z = -1j * dt if self.imaginary else dt
        drift = jnp.exp(lin * z)
        return {"drift": drift.real.astype(lin.real.dtype) if self.imaginary else drift}

    def _kick(self, psi: jax.Array, t: jax.Array, h: jax.Array) -> jax.Array:
        v = self.equation.potential(psi, t)
        return psi * (jnp.exp(-v * h) if self.imaginary else jnp.exp(-1j * v * h))

    def first_evaluation(self, state: State, t: jax.Array, rate: bool):
        return None, None  # the first kick needs dt

    def finish(self, state: State, first, t: jax.Array, dt: jax.Array, c) -> State:
        eq = self.equation
        psi = self._kick(eq.to_real(state), t, dt / 2)
        psi_hat = eq.from_real(psi) * c["drift"]
        psi = self._kick(eq.to_real(psi_hat), t + dt, dt / 2)
        out = eq.from_real(psi)
        if self.imaginary:  # restore the norm the step started with (Parseval on the spectrum)
            n0 = jnp.sum(state.real ** 2 + state.imag ** 2)
            n1 = jnp.sum(out.real ** 2 + out.imag ** 2)
            out = out * jnp.sqrt(n0 / n1).astype(out.real.dtype)
        return out

    def __init__(self, equation):
        missing = [m for m in ("potential", "to_real", "from_real") if not hasattr(equation, m)]
        if missing:
            raise TypeError(f"{self.name} needs a Schroedinger-type equation (with {', '.join(missing)}); "
                            f"{type(equation).__name__} is not one: use rk4, etdrk4, ifrk4 or imex")
        super().__init__(equation)


class ImaginaryTimeSplitStep(SplitStep):
    """Imaginary-time split-step (``dt`` is ``dtau``): relaxes any state to the ground state at fixed norm.

    ``exp(-V dtau/2) exp(-k^2 dtau/2) exp(-V dtau/2)`` then rescaling to the initial norm (normalised gradient
    flow); the excited components decay as ``exp(-(E_n - E_0) tau)``. The fixed point differs from the exact
    ground state by ``O(dtau^2)``.
    """

    name = "split-step-imaginary"
    description = "imaginary-time split-step at fixed norm (ground states; dt is d tau)"
    imaginary = True
