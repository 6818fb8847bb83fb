"""Equations, one per file, each a subclass of :class:`Equation`; ``EQUATIONS`` maps CLI names to classes."""

from ._base import Equation as Equation
from .allen_cahn import AllenCahn as AllenCahn
from .burgers import Burgers as Burgers
from .cahn_hilliard import CahnHilliard as CahnHilliard
from .channel import Channel as Channel
from .couette import Couette as Couette
from .gross_pitaevskii import GrossPitaevskii as GrossPitaevskii
from .navier_stokes import NavierStokes as NavierStokes
from .navier_stokes_2d import NavierStokes2D as NavierStokes2D
from .poisson import Poisson as Poisson
from .poisson_chebyshev import PoissonChebyshev as PoissonChebyshev
from .poisson_walls import PoissonWalls as PoissonWalls
from .rayleigh_benard import RayleighBenard as RayleighBenard
from .schrodinger_poisson import SchrodingerPoisson as SchrodingerPoisson

#: time-dependent equations runnable from the CLI (``python -m solvers run NAME``)
EQUATIONS: dict[str, type[Equation]] = {NavierStokes.name: NavierStokes}
EQUATIONS.update({c.name: c for c in (SchrodingerPoisson, GrossPitaevskii)})
EQUATIONS.update({c.name: c for c in (CahnHilliard, AllenCahn, NavierStokes2D, Burgers)})
#: steady solvers (Python API), listed by ``python -m solvers list``
SOLVERS = {Poisson.name: Poisson}
EQUATIONS[RayleighBenard.name] = RayleighBenard
EQUATIONS[Channel.name] = Channel
EQUATIONS[Couette.name] = Couette
SOLVERS[PoissonWalls.name] = PoissonWalls
SOLVERS[PoissonChebyshev.name] = PoissonChebyshev

__all__ = ["EQUATIONS", "SOLVERS", "Equation", "NavierStokes", "Poisson"]
__all__ += ["GrossPitaevskii", "SchrodingerPoisson"]
__all__ += ["AllenCahn", "Burgers", "CahnHilliard", "NavierStokes2D"]
__all__ += ["Channel", "Couette", "PoissonChebyshev", "PoissonWalls", "RayleighBenard"]
