"""Rayleigh-Benard convection (Boussinesq) between fixed-temperature plates, periodic horizontally: the parts its
two wall conditions (free-slip, no-slip: one module each) share."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ..bases import Basis
from ..grids import Grid, wall_grid
from ..model import Equation, InitialCondition, Param

#: critical Rayleigh number and wavenumber of free-slip plates (Rayleigh 1916; Chandrasekhar 1961, ch. II)
RA_CRITICAL = 27 * math.pi ** 4 / 4
K_CRITICAL = math.pi / math.sqrt(2)
#: the same for no-slip (rigid) plates (Chandrasekhar 1961, ch. II, table III; Reid & Harris 1958)
RA_CRITICAL_NO_SLIP = 1707.762
K_CRITICAL_NO_SLIP = 3.117


def growth_rate(k: float, Ra: float, Pr: float, m: int = 1) -> float:
    """Closed-form growth rate of the free-slip mode ``(k, m)``: the larger root of
    ``(s + Pr K^2)(s + K^2) = Ra Pr k^2 / K^2``, ``K^2 = k^2 + (m pi)^2`` (time unit ``d^2 / kappa``)."""
    K2 = k * k + (m * math.pi) ** 2
    b = (1 + Pr) * K2
    c = Pr * K2 * K2 - Ra * Pr * k * k / K2
    return (-b + math.sqrt(b * b - 4 * c)) / 2


def _single_mode(eq: RayleighBenard) -> Any:
    """``theta = A cos(2 pi x / Lx) sin(pi z)``, fluid at rest."""
    k = 2 * math.pi / eq.grid.box_length[1]
    return eq.from_physical(
        lambda z, *h: (0 * z,) * eq.dim + (eq.amplitude * jnp.cos(k * h[0]) * jnp.sin(math.pi * z),))


def _random(eq: RayleighBenard, seed: int) -> Any:
    """Fluid at rest, ``theta = A * noise(seed) * sin(pi z)`` (white noise, dealiased)."""
    def theta(z, *h):
        noise = jax.random.normal(jax.random.key(seed), z.shape, z.dtype)
        return (0 * z,) * eq.dim + (eq.amplitude * noise * jnp.sin(math.pi * z),)
    return eq.from_physical(theta)


class RayleighBenard(Equation):
    """Boussinesq convection in ``0 < z < 1`` between fixed-temperature plates, periodic horizontally: the common
    parts (parameters, initial conditions, grid) of its two wall conditions.

    Units: depth ``d``, thermal time ``d^2 / kappa``, temperature difference ``dT``. With ``T = 1 - z + theta``:
    ``u_t + u.grad u = -grad p + Pr lap u + Ra Pr theta z_hat``, ``div u = 0``,
    ``theta_t + u.grad theta = w + lap theta``, ``theta = 0`` at the plates, and

    - :class:`~solvers.equations.RayleighBenardFreeSlip`: ``w = d_z u_h = 0`` (stress-free plates; sine/cosine
      series in z, a diagonal linear part, any integrator; onset ``27 pi^4 / 4``);
    - :class:`~solvers.equations.RayleighBenardNoSlip`: ``u = 0`` (rigid plates; Chebyshev in z with tau boundary
      conditions, the velocity-vorticity form of Kim, Moin & Moser, IMEX with banded implicit solves; onset
      1707.762).

    This class is not instantiated itself: build one of the two.

    Args:
      grid: a grid of shape ``(nz, nx[, ny])`` (z first) whose axis 0 is the wall condition's basis on ``[0, 1]``
        (:meth:`make_grid` builds it), used as it is; free-slip plates also take a periodic grid of depth 1, whose
        sizes, mesh and rules their sine/cosine grid is built with.
      Ra, Pr: Rayleigh and Prandtl numbers. amplitude: initial perturbation.

    Raises:
      TypeError: ``RayleighBenard`` itself instantiated.
      ValueError: bad parameters (naming them), a depth other than 1, a no-slip grid whose axis 0 is not
        Chebyshev on ``[0, 1]``.
    """

    #: the wall-normal basis of the wall condition, and whether the last horizontal axis is a half spectrum
    wall_basis: ClassVar[type[Basis] | None] = None
    half_spectrum: ClassVar[bool] = False
    #: the wavenumber of the onset of the wall condition (the default box is one wavelength: two rolls)
    critical_wavenumber: ClassVar[float] = K_CRITICAL
    grid_ndims = (2, 3)
    parameters = (
        Param("Ra", 2000.0, "Rayleigh number g alpha dT d^3 / (nu kappa)", low=0, low_open=True),
        Param("Pr", 1.0, "Prandtl number nu / kappa", low=0, low_open=True),
        Param("amplitude", 1e-2, "initial temperature perturbation amplitude", low=0),
    )
    initial_conditions = {
        "single-mode": InitialCondition(_single_mode, (), "A cos(2 pi x / Lx) sin(pi z), fluid at rest"),
        "random": InitialCondition(_random, (Param("seed", 0, "random seed", int, low=0),),
                                   "A * white noise * sin(pi z), fluid at rest"),
    }

    def __init__(self, grid: Grid, Ra: float = 2000.0, Pr: float = 1.0, amplitude: float = 1e-2):
        if self.wall_basis is None:
            raise TypeError("RayleighBenard holds the common parts of convection between plates: build "
                            "RayleighBenardFreeSlip or RayleighBenardNoSlip")
        super().__init__(self._convection_grid(grid), Ra=Ra, Pr=Pr, amplitude=amplitude)
        self.dim = self.grid.ndim

    @classmethod
    def make_grid(cls, shape, mesh=None, *, lengths=None, dtype=jnp.float32, dealias: str = "2/3",
             backend: str | None = None, points=None) -> Grid:
        """The wall condition's grid: its basis on ``0 <= z <= 1`` (axis 0), Fourier horizontally with ``lengths``
        (default one critical wavelength ``2 pi / k_c`` of the wall condition: two rolls). ``points``: the horizontal
        axes' modes on more points.

        Raises:
          TypeError: called on ``RayleighBenard`` itself. ValueError: as :func:`~solvers.grids.wall_grid`.
        """
        if cls.wall_basis is None:
            raise TypeError("RayleighBenard.make_grid: call it on RayleighBenardFreeSlip or RayleighBenardNoSlip")
        lengths = (2 * math.pi / cls.critical_wavenumber,) * (len(shape) - 1) if lengths is None else lengths
        return wall_grid(shape, mesh, walls=(0.0, 1.0), lengths=lengths, basis=cls.wall_basis, dtype=dtype,
                         dealias=dealias, backend=backend, axis_names=("z", "x", "y")[:len(shape)], points=points,
                         real_last=None if cls.half_spectrum else False)

    def _convection_grid(self, grid: Grid) -> Grid:
        """``grid``, checked: its first axis is the wall condition's basis on ``[0, 1]`` (the plates). A grid is
        never replaced: a periodic grid is refused with the call that builds the right one."""
        first = grid.bases[0]
        if type(first) is self.wall_basis and first.domain == (0.0, 1.0):
            return grid
        got = f"the interval {first.domain}" if type(first) is self.wall_basis else type(first).__name__
        raise ValueError(f"{self.label()}: grid axis 0 must be {self.wall_basis.__name__} on [0, 1] (the plates), "
                         f"got {got}; build the grid with {self.label()}.make_grid(shape, mesh, lengths=...)")

    def temperature(self, s) -> jax.Array:
        """Total temperature ``1 - z + theta`` in physical space (real sharding)."""
        raise NotImplementedError
