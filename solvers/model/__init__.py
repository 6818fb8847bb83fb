"""The model: what an equation is (:class:`Equation`, its declared :class:`Param` and :class:`InitialCondition`),
tree arithmetic on states, and reusable physics blocks (:class:`VelocityEquation` for periodic velocities,
:class:`WallVelocity` for the velocity-vorticity form between no-slip walls; the implicit blocks
:class:`Diffusion` and :class:`NoSlipVelocity` that a :class:`WallEquation` composes)."""

from .equation import Equation as Equation
from .params import InitialCondition as InitialCondition
from .params import Param as Param
from .tree import State as State
from .tree import apply_linear as apply_linear
from .tree import tree_add as tree_add
from .tree import tree_axpy as tree_axpy
from .tree import tree_scale as tree_scale
from .velocity import VelocityEquation as VelocityEquation
from .velocity import cross as cross
from .velocity_vorticity import WallVelocity as WallVelocity
from .velocity_vorticity import laminar_profile as laminar_profile
from .wall_parts import Diffusion as Diffusion
from .wall_parts import NoSlipVelocity as NoSlipVelocity
from .wall_parts import WallEquation as WallEquation

__all__ = ["Diffusion", "Equation", "InitialCondition", "NoSlipVelocity", "Param", "State", "VelocityEquation",
           "WallEquation", "WallVelocity", "apply_linear", "cross", "laminar_profile", "tree_add", "tree_axpy",
           "tree_scale"]
