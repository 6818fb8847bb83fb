"""Equations, one per file, each a subclass of :class:`Equation`; ``EQUATIONS`` maps CLI names to classes."""

from ._base import Equation as Equation
from .navier_stokes import NavierStokes as NavierStokes
from .poisson import Poisson as Poisson

#: time-dependent equations runnable from the CLI (``python -m solvers run NAME``)
EQUATIONS: dict[str, type[Equation]] = {NavierStokes.name: NavierStokes}
#: steady solvers (Python API), listed by ``python -m solvers list``
SOLVERS = {Poisson.name: Poisson}

__all__ = ["EQUATIONS", "SOLVERS", "Equation", "NavierStokes", "Poisson"]
