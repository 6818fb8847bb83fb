"""solvers: pseudo-spectral PDE solvers on sharded JAX arrays, built only on the xfft public API.

The parts, by role (each a subpackage):

- discretization: :mod:`solvers.bases` (one-dimensional bases, Chebyshev coefficient operators and tau solves) and
  :mod:`solvers.grids` (:class:`Grid`, the periodic :class:`SpectralGrid`, :func:`wall_grid`);
- model: :mod:`solvers.model` (:class:`Equation`, :class:`Param`, :class:`InitialCondition`, the linear-part
  protocols, reusable blocks such as :class:`WallVelocity`); :mod:`solvers.equations` (one PDE per file);
  :mod:`solvers.steady` (Poisson solvers);
- time stepping: :mod:`solvers.integrators` (one scheme per file), :mod:`solvers.stepping` (the stepping core,
  :class:`Controller`, :class:`FixedStep`, :class:`CFL`), :mod:`solvers.simulation` (:func:`simulate`, :func:`rollout`);
- outputs: :mod:`solvers.outputs` (the :class:`Output` protocol; checkpoints, CSV, plots, snapshots, progress);
- the main job and its command line: :mod:`solvers.job` (:class:`RunConfig`, :class:`RunSpec`, :data:`REGISTRY`,
  :func:`run`, :func:`build`, :class:`WallBuilder`) and :mod:`solvers.cli` (``python -m solvers``);
- particles: :mod:`solvers.particles` (particle-in-cell and particle-mesh N-body on sharded meshes, advanced by
  :func:`simulate` like the fields);
- references: :mod:`solvers.stability` (linear stability), :mod:`solvers.diagnostics`,
  :mod:`solvers.initial_conditions`, :mod:`solvers.reference`.
"""

from . import bases as bases
from . import diagnostics as diagnostics
from . import initial_conditions as initial_conditions
from . import particles as particles
from .bases.bc import Dirichlet as Dirichlet
from .bases.bc import Neumann as Neumann
from .bases.bc import Robin as Robin
from .equations import AllenCahn as AllenCahn
from .equations import Burgers as Burgers
from .equations import CahnHilliard as CahnHilliard
from .equations import Channel as Channel
from .equations import Couette as Couette
from .equations import GrossPitaevskii as GrossPitaevskii
from .equations import NavierStokes as NavierStokes
from .equations import NavierStokes2D as NavierStokes2D
from .equations import RayleighBenard as RayleighBenard
from .equations import RayleighBenardFreeSlip as RayleighBenardFreeSlip
from .equations import RayleighBenardNoSlip as RayleighBenardNoSlip
from .equations import SchrodingerPoisson as SchrodingerPoisson
from .grids import Grid as Grid
from .grids import SpectralGrid as SpectralGrid
from .grids import wall_grid as wall_grid
from .integrators import ETDRK4 as ETDRK4
from .integrators import IFRK4 as IFRK4
from .integrators import IMEX as IMEX
from .integrators import INTEGRATORS as INTEGRATORS
from .integrators import LSRK4 as LSRK4
from .integrators import RK4 as RK4
from .integrators import ImaginaryTimeSplitStep as ImaginaryTimeSplitStep
from .integrators import Integrator as Integrator
from .integrators import SplitStep as SplitStep
from .job import REGISTRY as REGISTRY
from .job import Built as Built
from .job import ConfigError as ConfigError
from .job import RunConfig as RunConfig
from .job import RunSpec as RunSpec
from .job import WallBuilder as WallBuilder
from .job import build as build
from .job import dry_run as dry_run
from .job import register as register
from .job import run as run
from .model import Diffusion as Diffusion
from .model import Equation as Equation
from .model import InitialCondition as InitialCondition
from .model import NoSlipVelocity as NoSlipVelocity
from .model import Param as Param
from .model import VelocityEquation as VelocityEquation
from .model import WallEquation as WallEquation
from .model import WallVelocity as WallVelocity
from .model.linear import DiagonalLinear as DiagonalLinear
from .model.linear import FusedRate as FusedRate
from .model.linear import ImplicitLinear as ImplicitLinear
from .outputs import Callback as Callback
from .outputs import Checkpoint as Checkpoint
from .outputs import DiagnosticsCSV as DiagnosticsCSV
from .outputs import Event as Event
from .outputs import Output as Output
from .outputs import Plots as Plots
from .outputs import PlotSpec as PlotSpec
from .outputs import Progress as Progress
from .outputs import ResolutionCheck as ResolutionCheck
from .outputs import ResolutionWarning as ResolutionWarning
from .outputs import Row as Row
from .outputs import SnapshotWriter as SnapshotWriter
from .outputs import Statistics as Statistics
from .simulation import BlowUpError as BlowUpError
from .simulation import Rollout as Rollout
from .simulation import Solution as Solution
from .simulation import rollout as rollout
from .simulation import simulate as simulate
from .steady import SOLVERS as SOLVERS
from .steady import Poisson as Poisson
from .steady import PoissonChebyshev as PoissonChebyshev
from .steady import PoissonWalls as PoissonWalls
from .stepping import CFL as CFL
from .stepping import CFLStep as CFLStep
from .stepping import Controller as Controller
from .stepping import FixedStep as FixedStep

__all__ = [
    "CFL", "ETDRK4", "IFRK4", "IMEX", "INTEGRATORS", "LSRK4", "REGISTRY", "RK4", "SOLVERS", "AllenCahn", "BlowUpError",
    "Built", "Burgers", "CFLStep", "CahnHilliard", "Callback", "Channel", "Checkpoint", "ConfigError", "Controller",
    "Couette",
    "DiagnosticsCSV", "DiagonalLinear", "Equation", "Event", "FixedStep", "FusedRate", "Grid", "GrossPitaevskii",
    "ImaginaryTimeSplitStep", "ImplicitLinear", "InitialCondition", "Integrator", "NavierStokes", "NavierStokes2D",
    "Output", "Param", "PlotSpec", "Plots", "Poisson", "PoissonChebyshev", "PoissonWalls", "Progress",
    "RayleighBenard", "RayleighBenardFreeSlip", "RayleighBenardNoSlip", "ResolutionCheck", "ResolutionWarning",
    "Rollout", "Row", "RunConfig", "RunSpec", "SchrodingerPoisson", "Solution", "SnapshotWriter", "SpectralGrid",
    "SplitStep", "Statistics", "VelocityEquation", "WallBuilder", "WallVelocity", "bases", "build", "diagnostics",
    "dry_run", "initial_conditions", "particles", "register", "rollout", "run", "simulate", "wall_grid",
]
__all__ += ["Diffusion", "Dirichlet", "Neumann", "NoSlipVelocity", "Robin", "WallEquation"]  # the wall path's parts
