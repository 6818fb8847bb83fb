"""Rayleigh-Benard convection (Boussinesq) between fixed-temperature plates, periodic horizontally: the declared
equation (parameters, initial conditions, grid) and its two wall conditions, free-slip and no-slip."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from .._grid import Grid
from .._params import InitialCondition, Param
from ._base import Equation

#: critical Rayleigh number and wavenumber of free-slip plates (Rayleigh 1916; Chandrasekhar 1961, ch. II)
RA_CRITICAL = 27 * math.pi ** 4 / 4
K_CRITICAL = math.pi / math.sqrt(2)
#: the same for no-slip (rigid) plates (Chandrasekhar 1961, ch. II, table III; Reid & Harris 1958)
RA_CRITICAL_NO_SLIP = 1707.762
K_CRITICAL_NO_SLIP = 3.117
WALLS = ("free-slip", "no-slip")


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
    """Boussinesq convection in ``0 < z < 1`` between fixed-temperature plates, periodic horizontally.

    Units: depth ``d``, thermal time ``d^2 / kappa``, temperature difference ``dT``. With ``T = 1 - z + theta``:
    ``u_t + u.grad u = -grad p + Pr lap u + Ra Pr theta z_hat``, ``div u = 0``,
    ``theta_t + u.grad theta = w + lap theta``, ``theta = 0`` at the plates, and

    - ``walls="free-slip"`` (default): ``w = d_z u_h = 0`` (stress-free plates; sine/cosine series in z, a
      diagonal linear part, any integrator; :class:`~solvers.equations.rayleigh_benard_free_slip.FreeSlip`);
    - ``walls="no-slip"``: ``u = 0`` (rigid plates; Chebyshev in z with tau boundary conditions, the
      velocity-vorticity form of Kim, Moin & Moser, IMEX with banded implicit solves;
      :class:`~solvers.equations.rayleigh_benard_no_slip.NoSlip`).

    Free-slip is the default so that the commands, checkpoints and results of earlier versions keep their
    meaning (onset ``27 pi^4 / 4``); rigid plates (onset 1707.762) are one parameter away.
    ``RayleighBenard(grid, walls=...)`` returns the instance of the matching subclass; ``grid`` may be any grid
    of shape ``(nz, nx[, ny])`` and box ``(1, Lx[, Ly])`` (z first), the wall basis is chosen here.

    Args:
      grid: a grid of shape ``(nz, nx[, ny])`` and box ``(1, Lx[, Ly])``: its mesh, shape, box, dtype and
        dealiasing rule define the grid of the wall condition (:meth:`grid_for`).
      Ra, Pr: Rayleigh and Prandtl numbers. amplitude: initial perturbation. walls: ``free-slip`` or ``no-slip``.

    Raises:
      ValueError: bad parameters (naming them), a depth other than 1.
    """

    name = "rayleigh-benard"
    description = ("Rayleigh-Benard convection between free-slip or no-slip plates (--param walls=...; z first, "
                   "Fourier in x, y; 2D or 3D)")
    plot_file = "temperature.png"
    energy_label = "kinetic energy E"
    default_integrator = "etdrk4"
    ndims = (2, 3)
    parameters = (
        Param("Ra", 2000.0, "Rayleigh number g alpha dT d^3 / (nu kappa)", low=0, low_open=True),
        Param("Pr", 1.0, "Prandtl number nu / kappa", low=0, low_open=True),
        Param("amplitude", 1e-2, "initial temperature perturbation amplitude", low=0),
        Param("walls", "free-slip", "plates: free-slip (stress-free) or no-slip (rigid)", str, choices=WALLS,
              legacy="free-slip"),
    )
    initial_conditions = {
        "single-mode": InitialCondition(_single_mode, (), "A cos(2 pi x / Lx) sin(pi z), fluid at rest"),
        "random": InitialCondition(_random, (Param("seed", 0, "random seed", int, low=0, flag="--seed"),),
                                   "A * white noise * sin(pi z), fluid at rest"),
    }

    def __new__(cls, grid: Grid | None = None, *args: Any, walls: str = "free-slip", **params: Any):
        if cls is RayleighBenard:
            cls = _variant(walls)
        return super().__new__(cls)

    def __init__(self, grid: Grid, Ra: float = 2000.0, Pr: float = 1.0, amplitude: float = 1e-2,
                 walls: str = "free-slip"):
        if grid.box_length[0] != 1.0:
            raise ValueError(f"rayleigh-benard: the depth (box length of the first axis, z) must be 1, got "
                             f"{grid.box_length[0]}")
        wall_grid = type(self).grid_for(grid.modes, grid.mesh, box_length=grid.box_length, dtype=grid.dtype,
                                        dealias=grid.dealias_rule, backend=grid.backend, params={"walls": walls},
                                        points=grid.shape if grid.stored_on_more_points else None)
        super().__init__(wall_grid, Ra=Ra, Pr=Pr, amplitude=amplitude, walls=walls)
        self.dim = wall_grid.ndim

    @classmethod
    def default_box_length(cls, ndim: int, params: dict[str, Any] | None = None) -> tuple[float, ...]:
        """Depth 1 (z, the first axis) and one critical wavelength ``2 pi / k_c`` of the wall condition
        horizontally (two rolls)."""
        kc = K_CRITICAL_NO_SLIP if (params or {}).get("walls") == "no-slip" else K_CRITICAL
        return (1.0,) + (2 * math.pi / kc,) * (ndim - 1)

    @classmethod
    def default_integrator_for(cls, params: dict[str, Any]) -> str:
        """ETDRK4 for free-slip plates (diagonal linear part), IMEX for no-slip ones (implicit solves)."""
        return "imex" if params.get("walls") == "no-slip" else cls.default_integrator

    @classmethod
    def grid_for(cls, shape, mesh, *, box_length, dtype, dealias, backend, params, points=None) -> Grid:
        """The wall grid of the variant ``params["walls"]`` names; ``points``: the horizontal axes' modes on more
        points (the vertical axis keeps its own)."""
        variant = _variant(params.get("walls", "free-slip")) if cls is RayleighBenard else cls
        return variant.wall_grid(tuple(shape), mesh, box_length=tuple(box_length), dtype=dtype, dealias=dealias,
                                 backend=backend, points=points)

    @classmethod
    def check_shape(cls, shape: tuple[int, ...], params: dict[str, Any]) -> None:
        """``nz`` points between the plates (at least 4, 5 for no-slip Chebyshev points), even horizontal sizes."""
        nz_min = 5 if params.get("walls") == "no-slip" else 4
        if shape[0] < nz_min or any(n < 4 or n % 2 for n in shape[1:]):
            raise ValueError(f"rayleigh-benard takes NZ NX [NY]: NZ >= {nz_min} points between the plates and even "
                             f"horizontal sizes >= 4, got {' '.join(map(str, shape))}")

    @classmethod
    def check_box(cls, box_length: tuple[float, ...], params: dict[str, Any]) -> None:
        if box_length[0] != 1.0:
            raise ValueError(f"rayleigh-benard: the depth (the first entry, z) must be 1, got {box_length[0]:g}")

    @classmethod
    def wall_grid(cls, shape, mesh, *, box_length, dtype, dealias, backend, points=None) -> Grid:  # pragma: no cover
        raise NotImplementedError

    def energy_bound(self, initial: float) -> float:
        """An upper bound of the kinetic energy ``<|u|^2> / 2`` that no physical solution exceeds.

        The energy budget ``dE/dt = Ra Pr <w theta> - Pr <|grad u|^2>``, with ``|theta| <= 1 + amplitude``
        (maximum principle), ``<w theta> <= (1 + amplitude) sqrt(2 E)`` and the Poincare inequality
        ``<|grad u|^2> >= 2 k_min^2 E`` (``k_min`` the smallest wavenumber the velocity can have: ``pi`` between
        the plates, ``2 pi / L`` horizontally; the horizontal mean flow is conserved), gives
        ``E <= max(E(0), (Ra (1 + amplitude))^2 / (2 k_min^4))``; the bound returned is 4 times that.
        """
        kmin = min([math.pi] + [2 * math.pi / L for L in self.grid.box_length[1:]])
        return 4 * max(initial, (self.Ra * (1 + self.amplitude)) ** 2 / (2 * kmin ** 4))

    def plot_field(self, s) -> tuple[str, jax.Array, dict[str, tuple[str, Any]]]:
        """The temperature in the x-z plane (``y = 0`` in 3D), x horizontal and z vertical, on the true points
        of the wall condition's grid (cell centres for free-slip, Chebyshev points for no-slip plates)."""
        g = self.grid
        T = self.temperature(s)
        plane = T if self.dim == 2 else T[..., 0]
        label = "temperature T" + (f", plane y = {g.bases[2].points()[0]:.3g}" if self.dim == 3 else "")
        axes = {"horizontal": (g.axis_names[1], g.bases[1].points()),
                "vertical": (g.axis_names[0], g.bases[0].points())}
        return label, g.replicate(plane.T), axes

    def temperature(self, s) -> jax.Array:
        """Total temperature ``1 - z + theta`` in physical space (real sharding)."""
        raise NotImplementedError


def _variant(walls: str) -> type[RayleighBenard]:
    if walls == "free-slip":
        from .rayleigh_benard_free_slip import FreeSlip
        return FreeSlip
    if walls == "no-slip":
        from .rayleigh_benard_no_slip import NoSlip
        return NoSlip
    raise ValueError(f"rayleigh-benard parameter walls must be one of {', '.join(WALLS)}, "
                     f"got {walls!r}")
