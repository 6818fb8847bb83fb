"""Equations, one PDE per file, each a subclass of :class:`~solvers.Equation` (physics only; how each runs from the
command line is its :class:`~solvers.RunSpec` in :mod:`solvers.job`)."""

from .allen_cahn import AllenCahn as AllenCahn
from .burgers import Burgers as Burgers
from .cahn_hilliard import CahnHilliard as CahnHilliard
from .cahn_hilliard import PhaseField as PhaseField
from .channel import Channel as Channel
from .couette import Couette as Couette
from .gross_pitaevskii import GrossPitaevskii as GrossPitaevskii
from .navier_stokes import NavierStokes as NavierStokes
from .navier_stokes_2d import NavierStokes2D as NavierStokes2D
from .rayleigh_benard import RayleighBenard as RayleighBenard
from .rayleigh_benard_free_slip import RayleighBenardFreeSlip as RayleighBenardFreeSlip
from .rayleigh_benard_no_slip import RayleighBenardNoSlip as RayleighBenardNoSlip
from .schrodinger_poisson import Schrodinger as Schrodinger
from .schrodinger_poisson import SchrodingerPoisson as SchrodingerPoisson

__all__ = ["AllenCahn", "Burgers", "CahnHilliard", "Channel", "Couette", "GrossPitaevskii", "NavierStokes",
           "NavierStokes2D", "PhaseField", "RayleighBenard", "RayleighBenardFreeSlip", "RayleighBenardNoSlip",
           "Schrodinger", "SchrodingerPoisson"]
