"""Time integrators, one per file, each a subclass of :class:`Integrator`; ``INTEGRATORS`` maps names."""

from ._base import Integrator as Integrator
from ._base import phi_functions as phi_functions
from ._timestep import CFLStep as CFLStep
from ._timestep import FixedStep as FixedStep
from .etdrk4 import ETDRK4 as ETDRK4
from .ifrk4 import IFRK4 as IFRK4
from .imex import ARS443 as ARS443
from .imex import IMEX as IMEX
from .imex import Tableau as Tableau
from .lsrk4 import LSRK4 as LSRK4
from .rk4 import RK4 as RK4
from .split_step import ImaginaryTimeSplitStep as ImaginaryTimeSplitStep
from .split_step import SplitStep as SplitStep

INTEGRATORS: dict[str, type[Integrator]] = {c.name: c for c in (RK4, LSRK4, ETDRK4, IFRK4, IMEX)}
INTEGRATORS.update({c.name: c for c in (SplitStep, ImaginaryTimeSplitStep)})

__all__ = ["ARS443", "CFLStep", "ETDRK4", "FixedStep", "IFRK4", "IMEX", "INTEGRATORS", "Integrator", "LSRK4", "RK4",
           "Tableau", "phi_functions"]
__all__ += ["ImaginaryTimeSplitStep", "SplitStep"]
