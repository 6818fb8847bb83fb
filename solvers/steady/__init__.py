"""Steady (elliptic) solvers: Poisson on the periodic box, between walls (sine/cosine series) and with a Chebyshev
axis; ``SOLVERS`` maps their names."""

from .poisson import Poisson as Poisson
from .poisson_chebyshev import PoissonChebyshev as PoissonChebyshev
from .poisson_walls import PoissonWalls as PoissonWalls

#: steady solvers (Python API), listed by ``python -m solvers list``
SOLVERS = {c.name: c for c in (Poisson, PoissonWalls, PoissonChebyshev)}

__all__ = ["SOLVERS", "Poisson", "PoissonChebyshev", "PoissonWalls"]
