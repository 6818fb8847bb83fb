"""Gross-Pitaevskii: a Bose-Einstein condensate in a harmonic trap (trap units, hbar = m = 1)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..grids import SpectralGrid
from ..model import InitialCondition, Param
from .schrodinger_poisson import Schrodinger

_X0 = Param("x0", 0.0, "centre along x (box centre = 0)")


class GrossPitaevskii(Schrodinger):
    """``i psi_t = -lap psi / 2 + V_trap psi + g |psi|^2 psi``, ``V_trap = sum_i omega_i^2 x_i^2 / 2``.

    Coordinates are centred on the box (``x_i`` in ``[-L_i/2, L_i/2)``). ``g > 0`` is repulsive (defocusing),
    ``g < 0`` attractive (focusing); ``omega = 0`` removes the trap (free NLS, solitons).

    Args:
      grid: a 2D or 3D :class:`~solvers.SpectralGrid` (the box must hold the condensate: e.g. L = 16, n = 32).
      g: interaction strength.
      omega: trap frequency, one value or one per axis (>= 0).
      **ic_params: defaults for the initial conditions (``norm``, ``width``, ``x0``, ``a``, ``v``).

    Diagnostics: ``mass`` (the norm, conserved to round-off by split-step), ``kinetic``, ``trap``,
    ``interaction`` (``g/2 int |psi|^4``), ``energy``, ``chemical_potential`` (``mu = (K + U + 2 I) / N``),
    ``x_mean`` (centre of mass along x), ``max_density``, ``resolution`` (of the norm). Ground states:
    imaginary-time split-step (``--integrator split-step-imaginary``); for ``g = 0`` the energy per particle is
    ``sum omega_i / 2``.
    """

    parameters = (Param("g", 0.0, "interaction strength (> 0 repulsive, < 0 attractive)"),
                  Param("omega", 1.0, "trap frequency (Python API: one value per axis)", low=0))
    initial_conditions = {
        "gaussian": InitialCondition(lambda eq, norm, width, x0: gaussian(eq, norm=norm, width=width, x0=x0), (
            Param("norm", 1.0, "particle number", low=0, low_open=True),
            Param("width", 1.0, "Gaussian width", low=0, low_open=True), _X0), "Gaussian at rest"),
        "bright-soliton": InitialCondition(lambda eq, a, v, x0: bright_soliton(eq, 0.0, a=a, v=v, x0=x0), (
            Param("a", 1.0, "amplitude / inverse width", low=0, low_open=True), Param("v", 0.0, "velocity"), _X0),
            "bright soliton along x (needs g < 0, omega = 0)"),
    }

    def __init__(self, grid: SpectralGrid, g: float = 0.0, omega: float | tuple[float, ...] = 1.0,
                 **ic_params: float):
        om = (omega,) * grid.ndim if np.ndim(omega) == 0 else tuple(omega)
        if len(om) != grid.ndim:
            raise ValueError(f"gross-pitaevskii: omega needs one value or one per axis ({grid.ndim}), got {omega}")
        super().__init__(grid, ic_params, g=g, omega=om[0])
        self.omega = tuple(self.parameters[1].check(w, self.label()) for w in om)

    def trap(self) -> jax.Array:
        """``V_trap`` on the grid (real-space sharding)."""
        return sum(0.5 * w * w * x * x for w, x in zip(self.omega, self.centered_coordinates()))

    def potential(self, psi: jax.Array, t: jax.Array) -> jax.Array:
        return self.trap() + self.g * (psi.real ** 2 + psi.imag ** 2)

    def potential_energy(self, psi: jax.Array) -> dict[str, jax.Array]:
        rho = psi.real ** 2 + psi.imag ** 2
        return {"trap": self.volume * jnp.mean(self.trap() * rho),
                "interaction": 0.5 * self.g * self.volume * jnp.mean(rho * rho)}

    def diagnostics(self, psi_hat: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        out = super().diagnostics(psi_hat, t, dt)
        psi = self.to_real(psi_hat)
        rho = psi.real ** 2 + psi.imag ** 2
        out["chemical_potential"] = (out["kinetic"] + out["trap"] + 2 * out["interaction"]) / out["mass"]
        out["x_mean"] = self.volume * jnp.mean(self.centered_coordinates()[0] * rho) / out["mass"]
        return out


def gaussian(eq: GrossPitaevskii, norm: float = 1.0, width: float = 1.0, x0: float = 0.0) -> jax.Array:
    """Isotropic Gaussian ``exp(-|x - x0 e_x|^2 / (2 width^2))`` normalised to ``norm`` (at rest). With
    ``width = 1`` and an isotropic unit trap it is the exact ``g = 0`` ground state (energy ``ndim / 2``)."""
    d = eq.grid.ndim
    amp = math.sqrt(norm) * (np.pi * width ** 2) ** (-d / 4)

    def build():
        x = eq.centered_coordinates()
        r2 = (x[0] - x0) ** 2 + sum(xi ** 2 for xi in x[1:])
        return amp * jnp.exp(-r2 / (2 * width ** 2))

    return eq._state(build)


def bright_soliton_field(x, t, a: float = 1.0, v: float = 0.0, x0: float = 0.0, g: float = -1.0):
    """Closed form of the focusing NLS ``i psi_t = -psi_xx / 2 + g |psi|^2 psi`` (``g < 0``) bright soliton:
    ``psi = (a / sqrt(-g)) sech(a (x - x0 - v t)) exp(i (v x + (a^2 - v^2) t / 2))``; numpy or JAX arrays."""
    xp = jnp if isinstance(x, jax.Array) else np
    amp = a / math.sqrt(-g)
    return amp / xp.cosh(a * (x - x0 - v * t)) * xp.exp(1j * (v * x + 0.5 * (a * a - v * v) * t))


def bright_soliton(eq: GrossPitaevskii, t: float = 0.0, a: float = 1.0, v: float = 0.0, x0: float = 0.0) -> jax.Array:
    """A bright soliton along x (uniform in the other axes): needs ``g < 0`` and ``omega = 0`` (a long thin
    box is the quasi-1D case); its closed form at time ``t`` is :func:`bright_soliton_field`."""
    if not eq.g < 0:
        raise ValueError(f"gross-pitaevskii initial condition bright-soliton needs an attractive interaction: "
                         f"parameter g < 0, got g={eq.g}")
    return eq._state(lambda: bright_soliton_field(eq.centered_coordinates()[0], t, a=a, v=v, x0=x0, g=eq.g))
