"""Plane Couette flow: no-slip walls at ``y = -1`` and ``y = 1`` moving at ``u = -1`` and ``u = +1``."""

from __future__ import annotations

import numpy as np

from ..grids import Grid
from ..model import InitialCondition, Param
from .channel import ORR_SOMMERFELD_MODE, TURBULENT, Channel, _laminar

#: volume mean of ``U^2 / 2`` for ``U = y``: the energy of laminar Couette flow
LAMINAR_ENERGY = 1.0 / 6.0


class Couette(Channel):
    """Incompressible flow between parallel walls moving in opposite directions (``u = -1`` at ``y = -1``, ``u = 1``
    at ``y = 1``), periodic in x (and z); no pressure gradient, no imposed flow rate.

    Units: half-width ``h`` and wall speed ``U_w``; ``Re = U_w h / nu``; laminar flow ``U = y``. Linearly stable at
    every ``Re`` (Romanov 1973): small perturbations decay at the rate of the least stable Orr-Sommerfeld mode,
    larger ones go turbulent in 3D (from ``Re`` of about 325-400 in long boxes).

    Formulation: that of :class:`~solvers.equations.channel.Channel` (velocity-vorticity, Chebyshev tau in y with
    the influence matrix, IMEX with banded solves) with the wall velocities in a lift: the state holds ``u - y e_x``,
    whose mean vanishes at both walls (the channel's homogeneous conditions), and the nonlinear term, the
    diagnostics, the CFL rate and the snapshots add ``y e_x`` back (its vorticity ``-1`` included; ``y`` is steady
    under viscosity, so the implicit part needs no change).

    Diagnostics: ``energy`` and ``perturbation_energy`` (``<|u - y e_x|^2> / 2``) as the channel's; ``bulk_velocity``
    (0 for the laminar flow); ``wall_shear_bottom``/``wall_shear_top``: ``nu dU/dy`` at each wall (``nu`` for the
    laminar flow, on both).

    Args:
      grid: a wall grid of shape ``(ny, nx[, nz])``, axis 0 Chebyshev on ``[-1, 1]`` (used as it is).
      Re: Reynolds number.

    Raises:
      ValueError: a non-positive ``Re``, a grid whose axis 0 is not Chebyshev on ``[-1, 1]``.
    """

    profile = "couette"
    wall_signs = (1.0, 1.0)
    parameters = (
        Param("Re", 1000.0, "Reynolds number U_w h / nu (wall speed, half-width) of the laminar flow U = y", low=0,
              low_open=True, reciprocal="nu"),
    )
    initial_conditions = {
        "laminar": InitialCondition(_laminar, (), "laminar Couette flow U = y"),
        "orr-sommerfeld": ORR_SOMMERFELD_MODE,
        "turbulent": TURBULENT,
    }
    drive = "none"

    def __init__(self, grid: Grid, Re: float = 1000.0):
        self._walls(grid, Re=Re)

    def laminar(self) -> np.ndarray:
        """Chebyshev coefficients of ``U = y`` (``T_1``), length ``ny``."""
        c = np.zeros(self.grid.shape[0])
        c[1] = 1.0
        return c

    def lift(self) -> np.ndarray:
        """The whole laminar profile ``y``: it carries the walls' velocities, and the state's mean is 0 there."""
        return self.laminar()

    def _flux(self) -> None:
        return None  # no imposed flow rate: the mean is solved with its wall values (0 for the state)

