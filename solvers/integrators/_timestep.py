"""Time-step controllers: a fixed dt, or the largest dt a CFL number allows (adaptive)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax

from .._tree import State
from ..equations._base import Equation


@dataclass
class FixedStep:
    """Always ``dt`` (the driver shortens the last step to land on ``t_end``)."""

    dt: float

    def __post_init__(self):
        if not (self.dt > 0 and math.isfinite(self.dt)):
            raise ValueError(f"dt must be positive and finite, got {self.dt}")

    def __call__(self, equation: Equation, state: State, stable_dt: float = math.inf) -> float:
        return self.dt


@dataclass
class CFLStep:
    """``dt = cfl / max(sum_i |u_i| / dx_i)``, capped by ``dt_max`` and the integrator's linear stability limit.

    The rate is a sharded max-reduction of the state at the start of every step, so the dt sequence depends only
    on the state: a resumed run takes exactly the same steps. The main job evaluates this rule on the devices
    inside its compiled loop (:mod:`solvers._stepper`), with the rate taken from the physical velocity the step's
    first evaluation already holds; schemes whose coefficients depend on dt (``etdrk4``, ``ifrk4``, ``imex``)
    keep their dt while ``dt * rate`` stays within ``[0.8, 1.2] * cfl`` and take ``cfl / rate`` when it leaves
    that band, so their coefficients are rebuilt only then. Calling the object applies the plain rule on the host.
    """

    cfl: float
    dt_max: float = math.inf
    _rate: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not (self.cfl > 0 and math.isfinite(self.cfl)):
            raise ValueError(f"cfl must be positive and finite, got {self.cfl}")
        if not self.dt_max > 0:
            raise ValueError(f"dt_max must be positive, got {self.dt_max}")

    def __call__(self, equation: Equation, state: State, stable_dt: float = math.inf) -> float:
        fn = self._rate.get(id(equation))
        if fn is None:
            if equation.max_rate(state) is None:
                raise ValueError(f"{equation.name} has no advective rate: use a fixed dt")
            fn = self._rate[id(equation)] = jax.jit(equation.max_rate)
        rate = float(fn(state))
        if not math.isfinite(rate):
            return math.nan  # the driver reports the blow-up
        dt = self.cfl / rate if rate > 0 else math.inf
        dt = min(dt, self.dt_max, 0.9 * stable_dt)
        if not math.isfinite(dt):
            raise ValueError("CFL step: the flow is at rest and no dt_max is set; pass a fixed dt or dt_max")
        return dt
