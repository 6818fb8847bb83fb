"""The main job: a :class:`RunConfig` (what the command line sets) resolved once into a :class:`Plan`
(:func:`resolve`: the equation's :class:`RunSpec` from :data:`REGISTRY`, its preset, every default and check),
built (:func:`build`: the grid, equation, integrator and controller a run uses), checked for memory, resumed, run
with its outputs (:func:`run`) or only checked (:func:`dry_run`)."""

from .build import MIN_POINTS_PER_DEVICE as MIN_POINTS_PER_DEVICE
from .build import Built as Built
from .build import build as build
from .build import default_mesh as default_mesh
from .build import validate as validate
from .cache import enable_compilation_cache as enable_compilation_cache
from .config import DEFAULTS as DEFAULTS
from .config import ConfigError as ConfigError
from .config import RunConfig as RunConfig
from .config import lookup as lookup
from .plan import Plan as Plan
from .plan import resolve as resolve
from .registry import REGISTRY as REGISTRY
from .registry import register as register
from .run import dry_run as dry_run
from .run import run as run
from .spec import RunSpec as RunSpec
from .spec import complex_periodic_grid as complex_periodic_grid
from .spec import periodic_grid as periodic_grid
from .walls import WallBuilder as WallBuilder

__all__ = ["DEFAULTS", "MIN_POINTS_PER_DEVICE", "REGISTRY", "Built", "ConfigError", "Plan", "RunConfig", "RunSpec",
           "WallBuilder", "build", "complex_periodic_grid", "default_mesh", "dry_run", "enable_compilation_cache",
           "lookup", "periodic_grid", "register", "resolve", "run", "validate"]
