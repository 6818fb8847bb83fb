"""solvers: pseudo-spectral PDE solvers on sharded JAX arrays, built only on the xfft public API.

Public API: :class:`Grid` (a tensor product of :mod:`solvers.bases` on a mesh) and :class:`SpectralGrid` (the
periodic box); equations (:class:`Equation`, :class:`NavierStokes`, :class:`Poisson`,
``EQUATIONS``); integrators (:class:`Integrator`, :class:`RK4`, :class:`LSRK4`, :class:`ETDRK4`, :class:`IFRK4`,
:class:`IMEX`, ``INTEGRATORS``, :class:`FixedStep`, :class:`CFLStep`); :mod:`solvers.diagnostics`; :func:`simulate`
(the main job's driver: diagnostics CSV, orbax checkpoints, resume, plots; :class:`ResolutionWarning` when a run
leaves its resolution) with :class:`RunConfig`; :func:`rollout`
(a pure, differentiable, checkpointed run of fixed steps: gradients through sharded simulations); :class:`Param`
and :class:`InitialCondition` (declared parameters of equations and initial conditions; see the README, "Your own
equation"). Command line: ``python -m solvers``.
"""

from . import bases as bases
from . import diagnostics as diagnostics
from . import initial_conditions as initial_conditions
from ._config import ConfigError as ConfigError
from ._config import RunConfig as RunConfig
from ._grid import Grid as Grid
from ._params import InitialCondition as InitialCondition
from ._params import Param as Param
from ._resolution import ResolutionWarning as ResolutionWarning
from ._rollout import Rollout as Rollout
from ._rollout import rollout as rollout
from ._run import BlowUpError as BlowUpError
from ._run import Output as Output
from ._run import simulate as simulate
from ._spectral_grid import SpectralGrid as SpectralGrid
from .equations import EQUATIONS as EQUATIONS
from .equations import SOLVERS as SOLVERS
from .equations import Equation as Equation
from .equations import NavierStokes as NavierStokes
from .equations import Poisson as Poisson
from .equations import PoissonChebyshev as PoissonChebyshev
from .equations import PoissonWalls as PoissonWalls
from .equations import RayleighBenard as RayleighBenard
from .integrators import ETDRK4 as ETDRK4
from .integrators import IFRK4 as IFRK4
from .integrators import IMEX as IMEX
from .integrators import INTEGRATORS as INTEGRATORS
from .integrators import LSRK4 as LSRK4
from .integrators import RK4 as RK4
from .integrators import CFLStep as CFLStep
from .integrators import FixedStep as FixedStep
from .integrators import Integrator as Integrator

__all__ = [
    "EQUATIONS",
    "ETDRK4",
    "IFRK4",
    "IMEX",
    "INTEGRATORS",
    "LSRK4",
    "RK4",
    "SOLVERS",
    "BlowUpError",
    "CFLStep",
    "ConfigError",
    "Equation",
    "FixedStep",
    "Grid",
    "InitialCondition",
    "Integrator",
    "NavierStokes",
    "Output",
    "Param",
    "Poisson",
    "PoissonChebyshev",
    "PoissonWalls",
    "RayleighBenard",
    "ResolutionWarning",
    "Rollout",
    "RunConfig",
    "SpectralGrid",
    "bases",
    "diagnostics",
    "initial_conditions",
    "rollout",
    "simulate",
]
