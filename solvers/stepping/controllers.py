"""Time-step controllers: the :class:`Controller` protocol and its two built-ins, :class:`FixedStep` and :class:`CFL`.

A controller chooses each step's dt on the devices, inside the compiled loop, from what the previous step already
computed (its :class:`StepAux`) and a state of its own (a pytree the run carries and checkpoints):

- ``init(y0) -> cstate``: its state before the first step;
- ``choose(aux, cstate, t, t_stop) -> (dt, cstate)``: the next step's dt at time ``t``, given the previous step's
  ``aux`` (before the first step: the same quantities of ``y0``) and the next time the run must land on;
- ``wants_rate`` (a class attribute, default False): whether ``aux.rate`` (the advective rate of the state a step
  started from, ``sum_i |u_i| / dx_i``) is computed; a step computes it from its first stage's physical fields.

The run lands every controller on its stop times: a segment never takes a step that would come within 1.5 steps of
``t_stop``, and the host takes the step that lands, in float64, with the one landing rule (:func:`lands`). A
controller's dt is never clipped otherwise. Where a scheme's coefficients depend on dt (``etdrk4``, ``ifrk4``,
``imex``, split-step) the run computes them again whenever the chosen dt changes, so such a controller should keep
dt over many steps (as :class:`CFL` does with its band).

Rules of the built-ins:

- :class:`FixedStep`: every step takes ``dt`` (the landing step is the run's);
- :class:`CFL`: ``dt = min(cfl / rate, dt_cap)`` from the rate of the state the previous step started from (a lagged
  rate, as DNS codes use: the rate costs no transform of its own), where schemes without dt-dependent coefficients
  (``rk4``, ``lsrk4``) take a new dt every step; schemes whose coefficients depend on dt keep dt while the CFL
  number ``dt * rate`` stays in ``band * cfl`` (default ``[0.8, 1.2]``, and below ``dt_cap``), the dt held being
  the controller's state. ``dt_cap`` is ``min(dt_max, 0.9 * stable_dt)``, ``stable_dt`` the explicit scheme's
  linear stability limit (:meth:`CFL.resolve`).

Both built-ins are pytrees whose numbers are leaves: a run compiled for ``FixedStep(1e-3)`` serves
``FixedStep(2e-3)`` without compiling again. A user controller that is a pytree gets the same; any other object
is part of the compiled program's key (compared by ``==``/hash, or by identity where unhashable).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

__all__ = ["BAND", "CFL", "CFLStep", "Controller", "FixedStep", "StepAux", "lands", "steps_before"]

#: the default CFL band (fractions of the target) in which schemes with dt-dependent coefficients keep their dt
BAND = (0.8, 1.2)
#: why a segment of steps stopped (the core's checks of a chosen dt and its blow-up checks)
RAN, NEAR_STOP, NEW_DT, NONFINITE, BOUND, AT_REST, BAD_DT = range(7)
#: the relative margin of the landing rule: a step within ``(1 + LANDING) dt`` of a stop time lands on it
LANDING = 1e-6


class StepAux(NamedTuple):
    """What a step hands its controller: ``rate``, the advective rate of the state the step started from (a
    replicated scalar of the state's real dtype), or None where the controller does not ask for it."""

    rate: Any = None


@runtime_checkable
class Controller(Protocol):
    """The time-step controller protocol (see the module): ``init`` and ``choose``, pure and jit-able, and the
    static ``wants_rate``. Optional: ``resolve(integrator, stable_dt) -> Controller``, called once by a run to bind
    it to the scheme (the linear stability limit of an explicit scheme given where ``wants_rate``)."""

    def init(self, y0: Any) -> Any:
        """The controller's state before the first step (a pytree of arrays; ``y0`` may be abstract)."""

    def choose(self, aux: StepAux, cstate: Any, t: jax.Array, t_stop: jax.Array) -> tuple[jax.Array, Any]:
        """The next step's ``dt`` (positive) at time ``t`` and the new state; ``aux``: the previous step's."""


def _positive(value, name: str, owner: str, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a positive number, got {value!r}")
    v = float(value)
    if not (v > 0 and (allow_inf or math.isfinite(v))):
        raise ValueError(f"{owner}: {name} must be positive{'' if allow_inf else ' and finite'}, got {value!r}")
    return v


def _real(y0) -> Any:
    return jnp.finfo(jax.tree.leaves(y0)[0].dtype).dtype


@dataclass(frozen=True)
class FixedStep:
    """Every step takes ``dt`` (a run shortens the last step to land on its end and stop times).

    Raises:
      TypeError, ValueError: ``dt`` not a positive finite number.
    """

    dt: float
    wants_rate: ClassVar[bool] = False

    def __post_init__(self):
        object.__setattr__(self, "dt", _positive(self.dt, "dt", "FixedStep"))

    def resolve(self, integrator, stable_dt: float = math.inf) -> FixedStep:
        """This controller (a fixed dt ignores the stability limit: the run reports a blow-up if it is unstable)."""
        return self

    def init(self, y0) -> tuple:
        """No state: the dt is the controller's own (a leaf of its pytree, so an argument of the program)."""
        return ()

    def choose(self, aux: StepAux, cstate, t, t_stop):
        """``dt`` as given, in float64 where JAX has it (the run rounds it to the state's dtype for the step)."""
        return jnp.asarray(self.dt), cstate


@dataclass(frozen=True)
class CFL:
    """``dt = cfl / max(sum_i |u_i| / dx_i)``, capped by ``dt_max`` and the scheme's linear stability limit.

    The rate is the one the previous step's first stage computed from the physical velocity it holds anyway (the
    first step's: the initial state's), so the dt sequence depends only on the states and the controller's state
    (which checkpoints hold): a resumed run takes exactly the same steps.

    Args:
      cfl: the target CFL number. dt_max: the largest step (``inf``: none; a flow at rest then has no dt).
      band: ``(lo, hi)``: keep dt while ``dt * rate`` stays in ``[lo, hi] * cfl``; ``"auto"`` (default):
        :data:`BAND` for schemes whose coefficients depend on dt, none for the others (:meth:`resolve`); None: a
        new dt every step.

    Raises:
      TypeError, ValueError: a value that is not a positive number, or a band that is not ``0 < lo <= 1 <= hi``.
    """

    cfl: float = 0.5
    dt_max: float = math.inf
    band: tuple[float, float] | str | None = "auto"
    wants_rate: ClassVar[bool] = True

    def __post_init__(self):
        object.__setattr__(self, "cfl", _positive(self.cfl, "cfl", "CFL"))
        object.__setattr__(self, "dt_max", _positive(self.dt_max, "dt_max", "CFL", allow_inf=True))
        if self.band not in ("auto", None):
            try:
                lo, hi = (float(v) for v in self.band)
            except (TypeError, ValueError):
                raise TypeError(f"CFL: band must be 'auto', None or (lo, hi), got {self.band!r}") from None
            if not (0 < lo <= 1 <= hi < math.inf):
                raise ValueError(f"CFL: band must satisfy 0 < lo <= 1 <= hi, got {self.band!r}")
            object.__setattr__(self, "band", (lo, hi))

    def resolve(self, integrator, stable_dt: float = math.inf) -> CFL:
        """This controller for ``integrator``: the band where its coefficients depend on dt (``"auto"``), the cap
        ``min(dt_max, 0.9 * stable_dt)``."""
        band = self.band
        if band == "auto":
            band = BAND if integrator.dt_coefficients else None
        return CFL(self.cfl, min(self.dt_max, 0.9 * stable_dt), band)

    def init(self, y0) -> dict:
        """The dt the band holds (0: none yet)."""
        return {"dt": jnp.zeros((), _real(y0))}

    def choose(self, aux: StepAux, cstate, t, t_stop):
        """``min(cfl / rate, dt_cap)``, or the dt held while the CFL number stays in the band (an infinite dt
        where the flow is at rest and there is no cap; the run then stops with an error)."""
        rate = aux.rate
        real = rate.dtype
        cand = jnp.where(rate > 0, self.cfl / jnp.where(rate > 0, rate, 1), jnp.inf).astype(real)
        cand = jnp.minimum(cand, jnp.asarray(self.dt_max, real))
        band = None if self.band == "auto" else self.band
        if band is None:
            return cand, cstate
        lo, hi = band
        held = cstate["dt"]
        now = held * rate
        change = (held <= 0) | (now > hi * self.cfl) | ((now < lo * self.cfl) & (held < cand))
        dt = jnp.where(change, cand, held)
        return dt, {"dt": dt}


#: the earlier name of :class:`CFL`
CFLStep = CFL


def _flatten_fixed(c: FixedStep):
    return (c.dt,), None


def _unflatten_fixed(_, leaves) -> FixedStep:
    out = object.__new__(FixedStep)
    object.__setattr__(out, "dt", leaves[0])
    return out


def _flatten_cfl(c: CFL):
    return (c.cfl, c.dt_max), c.band


def _unflatten_cfl(band, leaves) -> CFL:
    out = object.__new__(CFL)
    for name, v in zip(("cfl", "dt_max", "band"), (*leaves, band)):
        object.__setattr__(out, name, v)
    return out


jax.tree_util.register_pytree_node(FixedStep, _flatten_fixed, _unflatten_fixed)
jax.tree_util.register_pytree_node(CFL, _flatten_cfl, _unflatten_cfl)


def lands(remaining: float, dt: float) -> bool:
    """The landing rule (host, float64): whether a step of ``dt`` with ``remaining`` time to a stop ends on it."""
    return remaining <= dt * (1 + LANDING)


def steps_before(t: float, target: float, dt: float, limit: int) -> int:
    """Fixed dt: how many whole steps from ``t`` come before the one that lands on ``target`` (at most ``limit``),
    the host's clock summed step by step in float64 as the run sums it."""
    k = 0
    while k < limit and not lands(target - t, dt):
        t += dt
        k += 1
    return k
