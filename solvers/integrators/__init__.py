"""Time integrators, one per file, each a subclass of :class:`Integrator`; ``INTEGRATORS`` maps names."""

from ._base import Integrator as Integrator
from ._base import phi_functions as phi_functions
from .etdrk4 import ETDRK4 as ETDRK4
from .ifrk4 import IFRK4 as IFRK4
from .imex import ARS443 as ARS443
from .imex import IMEX as IMEX
from .imex import Tableau as Tableau
from .leapfrog import Leapfrog as Leapfrog
from .lsrk4 import LSRK4 as LSRK4
from .rk4 import RK4 as RK4
from .split_step import ImaginaryTimeSplitStep as ImaginaryTimeSplitStep
from .split_step import SplitStep as SplitStep

#: the integrators by name (``"rk4"``, ``"lsrk4"``, ``"etdrk4"``, ``"ifrk4"``, ``"imex"``, ``"split-step"``,
#: ``"split-step-imaginary"``, ``"leapfrog"``): what ``integrator=`` and ``--integrator`` take
INTEGRATORS: dict[str, type[Integrator]] = {c.name: c for c in (RK4, LSRK4, ETDRK4, IFRK4, IMEX)}
INTEGRATORS.update({c.name: c for c in (SplitStep, ImaginaryTimeSplitStep, Leapfrog)})



def make_integrator(equation, integrator=None) -> Integrator:
    """``integrator`` bound to ``equation``: a name in :data:`INTEGRATORS`, an :class:`Integrator` subclass, an
    instance (returned as it is when bound to ``equation``, else rebound: same scheme and options), or None (``imex``
    for an equation that solves its linear part implicitly, else ``rk4``).

    Raises:
      ValueError: an unknown name. TypeError: another kind of value, or a scheme that cannot advance the equation.
    """
    import copy

    from ..model.linear import linear_form

    if integrator is None:
        integrator = "imex" if linear_form(equation) == "implicit" else "rk4"
    if isinstance(integrator, str):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator: unknown integrator {integrator!r}; available: {', '.join(INTEGRATORS)}")
        integrator = INTEGRATORS[integrator]
    if isinstance(integrator, type) and issubclass(integrator, Integrator):
        return integrator(equation)
    if isinstance(integrator, Integrator):
        if integrator.equation is equation:
            return integrator
        integrator.check_equation(equation)
        out = copy.copy(integrator)
        out.equation, out._fused, out._jitted = equation, None, None
        out._jitted = None
        return out
    raise TypeError(f"integrator must be a name, an Integrator subclass or instance, got {integrator!r}")


__all__ = ["ARS443", "ETDRK4", "IFRK4", "IMEX", "INTEGRATORS", "Integrator", "LSRK4", "Leapfrog", "RK4",
           "Tableau", "make_integrator", "phi_functions"]
__all__ += ["ImaginaryTimeSplitStep", "SplitStep"]
