"""The stepping core (one step on a named carry, the two loops over it) and the time-step controllers."""

from .controllers import BAND as BAND
from .controllers import CFL as CFL
from .controllers import CFLStep as CFLStep
from .controllers import Controller as Controller
from .controllers import FixedStep as FixedStep
from .controllers import StepAux as StepAux
from .controllers import lands as lands
from .controllers import steps_before as steps_before
from .core import Carry as Carry
from .core import Clock as Clock
from .core import ControllerState as ControllerState
from .core import Core as Core
from .core import OutputsState as OutputsState
from .core import RowBuffer as RowBuffer
from .core import Rows as Rows
from .core import Sampler as Sampler
from .core import Window as Window
from .core import first_aux as first_aux
from .core import fixed_steps as fixed_steps
from .core import host_control_flow as host_control_flow
from .core import pack_dtype as pack_dtype
from .core import segment as segment
from .core import start as start
from .core import step as step

__all__ = ["BAND", "CFL", "CFLStep", "Carry", "Clock", "Controller", "ControllerState", "Core", "FixedStep",
           "OutputsState", "RowBuffer", "Rows", "Sampler", "StepAux", "Window",
           "first_aux", "fixed_steps", "host_control_flow", "lands", "pack_dtype", "segment", "start", "step",
           "steps_before"]
