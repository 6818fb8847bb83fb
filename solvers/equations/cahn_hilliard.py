"""Cahn-Hilliard phase separation (and the shared phase-field machinery of Allen-Cahn), stabilized split."""

from __future__ import annotations

import math
from typing import ClassVar

import jax
import jax.numpy as jnp

from .. import diagnostics as diag
from ..grids import SpectralGrid
from ..model import Equation, InitialCondition, Param


def _random(eq: PhaseField, seed: int = 0) -> jax.Array:
    """``c0 + amplitude * U(-1, 1)`` noise of zero mean (threefry: independent of the mesh), dealiased."""
    g = eq.grid
    noise = g.place(lambda s: jax.random.uniform(jax.random.key(int(seed)), g.shape, g.dtype, -1.0, 1.0,
                                                 out_sharding=s), g.real_sharding())
    return jax.jit(lambda f: g.dealias(g.rfft(eq.c0 + eq.amplitude * (f - jnp.mean(f)))))(noise)


def _perturbation(eq: PhaseField) -> jax.Array:
    """``c0 + amplitude * cos(mode * 2 pi x / Lx)``: one Fourier mode on a uniform state (linear stability)."""
    g = eq.grid
    kx = 2 * math.pi * eq.mode / g.box_length[0]
    return jax.jit(lambda x: g.dealias(g.rfft(eq.c0 + eq.amplitude * jnp.cos(kx * x))))(g.coordinates()[0])


class PhaseField(Equation):
    """``c_t = -M(k) [f'(c) - eps^2 lap c]`` with ``f(c) = (c^2 - 1)^2 / 4``; ``M = k^2`` (CH) or 1 (AC).

    Stabilized linear splitting (Shen & Yang 2010): ``L = -M (eps^2 k^2 + S)`` is integrated exactly by the
    exponential / integrating-factor schemes and ``N = -M F[f'(c) - S c]`` explicitly (one inverse and one
    forward transform per evaluation, products dealiased by the grid's rule). The split is exact for any
    ``S``; ``S ~ max f'' = 2`` keeps the explicit part small. Works on 2D and 3D grids.

    Args:
      grid: a 2D or 3D :class:`~solvers.SpectralGrid`.
      eps: interface parameter (gradient-energy coefficient ``eps^2``), > 0.
      stabilization: ``S`` >= 0.
      c0, amplitude, mode: parameters of the initial conditions (mean, noise/perturbation size, mode number).

    State: ``c_hat`` complex ``grid.spectral_shape`` with ``grid.spectral_sharding()``.

    Raises:
      ValueError: non-positive ``eps``, negative ``stabilization``, a non-integer ``mode`` or a 1D grid.
    """

    #: whether ``<c>`` is conserved (mobility ``k^2``: Cahn-Hilliard) or not (mobility 1: Allen-Cahn)
    conserved: ClassVar[bool] = True
    grid_ndims = (2, 3)
    parameters = (
        Param("eps", 0.1, "interface parameter (gradient energy eps^2)", low=0, low_open=True),
        Param("stabilization", 2.0, "S of the stabilized split", low=0),
        Param("c0", 0.0, "mean concentration of the initial conditions"),
        Param("amplitude", 0.05, "noise / perturbation size of the initial conditions"),
        Param("mode", 1, "mode number of the perturbation initial condition", int),
    )
    initial_conditions = {
        "random": InitialCondition(_random, (Param("seed", 0, "random seed", int, low=0),),
                                   "c0 + amplitude * uniform noise"),
        "perturbation": InitialCondition(_perturbation, (), "c0 + amplitude * cos(mode * 2 pi x / Lx)"),
    }

    def __init__(self, grid: SpectralGrid, eps: float = 0.1, stabilization: float = 2.0, c0: float = 0.0,
                 amplitude: float = 0.05, mode: int = 1):
        super().__init__(grid, eps=eps, stabilization=stabilization, c0=c0, amplitude=amplitude, mode=mode)

    # ----- the operator split ------------------------------------------------------------------------
    def mobility(self) -> jax.Array:
        """``M(k)``: ``k^2`` for the conserved (Cahn-Hilliard) dynamics, 1 for Allen-Cahn."""
        return self.grid.k2()

    def linear(self) -> jax.Array:
        g = self.grid
        return (-self.mobility() * (self.eps ** 2 * g.k2() + self.stabilization)).astype(g.dtype)

    def nonlinear(self, c_hat: jax.Array, t: jax.Array) -> jax.Array:
        g = self.grid
        c = g.to_physical(c_hat)
        return -self.mobility() * g.from_physical(c * c * c - (1 + self.stabilization) * c)

    def growth_rate(self, k2: jax.Array | float, c0: float | None = None) -> jax.Array | float:
        """Linear-stability rate of a mode ``|k|^2 = k2`` about the uniform state ``c0``:
        ``sigma = -M(k) (eps^2 k^2 + f''(c0))``, ``f''(c) = 3 c^2 - 1``."""
        c0 = self.c0 if c0 is None else c0
        m = k2 if self.conserved else 1.0
        return -m * (self.eps ** 2 * k2 + 3 * c0 ** 2 - 1)

    # ----- diagnostics -------------------------------------------------------------------------------
    def free_energy(self, c_hat: jax.Array) -> jax.Array:
        """``F = < (c^2 - 1)^2 / 4 + eps^2 |grad c|^2 / 2 >`` (volume mean; non-increasing in time)."""
        g = self.grid
        c = g.irfft(c_hat)
        bulk = jnp.mean(0.25 * (c * c - 1) ** 2)
        return bulk + 0.5 * self.eps ** 2 * g.mean_square(c_hat, g.k2())

    def mass(self, c_hat: jax.Array) -> jax.Array:
        """``<c>``: the k = 0 coefficient, by a sharded reduction."""
        return self.grid.total(jnp.where(self.grid.k2() == 0, c_hat.real, 0))

    def energy(self, c_hat: jax.Array) -> jax.Array:
        return self.free_energy(c_hat)

    def max_rate(self, c_hat: jax.Array) -> jax.Array:
        """Stiffness of the explicit part, ``max M(k) * max |f''(c) - S|`` (``--cfl`` bounds dt times it)."""
        g = self.grid
        c = g.irfft(c_hat)
        kmax2 = jnp.max(self.mobility() * g.dealias_mask())
        return kmax2 * jnp.max(jnp.abs(3 * c * c - 1 - self.stabilization))

    def diagnostics(self, c_hat: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        """``energy`` (the free energy ``F``, non-increasing), ``mass`` ``<c>``, ``c_min``, ``c_max`` and
        ``resolution`` (:func:`~solvers.diagnostics.resolution` of ``c - <c>``)."""
        g = self.grid
        c = g.irfft(c_hat)
        return {"energy": self.free_energy(c_hat), "mass": self.mass(c_hat), "c_min": -g.maximum(-c),
                "c_max": g.maximum(c), "resolution": diag.resolution(g, c_hat, (g.k2() > 0).astype(g.dtype))}

    def abstract_state(self) -> jax.ShapeDtypeStruct:
        g = self.grid
        return jax.ShapeDtypeStruct(g.spectral_shape, g.cdtype, sharding=g.spectral_sharding())

    def spectrum(self, c_hat: jax.Array) -> jax.Array:
        """Radial structure factor ``S(k_j) = sum_shell |c_k|^2`` (k = 0 excluded)."""
        g = self.grid
        return g.radial_sum(jnp.where(g.k2() > 0, c_hat.real ** 2 + c_hat.imag ** 2, 0))

    def physical_fields(self, c_hat: jax.Array) -> dict[str, jax.Array]:
        """The phase field ``c``."""
        return {"c": self.grid.irfft(c_hat)}


class CahnHilliard(PhaseField):
    """Cahn-Hilliard ``c_t = lap(c^3 - c - eps^2 lap c)``: conserves ``<c>``, free energy decreases.

    Linear stability of a uniform ``c0``: ``sigma(k) = -k^2 (eps^2 k^2 + 3 c0^2 - 1)`` (spinodal for
    ``|c0| < 1/sqrt(3)``). See :class:`PhaseField` for the scheme and the parameters.
    """

