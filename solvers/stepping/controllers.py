"""Time-step controllers: a fixed dt (:class:`FixedStep`) or the largest dt a CFL number allows (:class:`CFL`).

A controller is a description; :meth:`resolve` turns it into a :class:`Control` for one integrator, whose
:meth:`Control.choose` is the one rule that picks every step's dt, on the device, inside the compiled loop. The
landing rule (:func:`lands`: the step that ends exactly on a stop time) is the host's, in float64.

Rules:

- fixed ``dt``: every step takes it, except a landing step, whose dt the host forces;
- CFL, schemes without dt-dependent coefficients (``rk4``, ``lsrk4``): ``dt = min(cfl / rate, dt_cap)`` every step;
- CFL, schemes whose coefficients depend on dt (``etdrk4``, ``ifrk4``, ``imex``, split-step): dt is kept while the
  CFL number ``dt * rate`` stays in ``band * cfl`` (default ``[0.8, 1.2]``, and below ``dt_cap``), and reset to
  ``cfl / rate`` when it leaves the band, as DNS codes do: their coefficients are rebuilt only then.

``dt_cap`` is ``min(dt_max, 0.9 * stable_dt)``, ``stable_dt`` the explicit scheme's linear stability limit.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import jax.numpy as jnp

__all__ = ["BAND", "CFL", "CFLStep", "Control", "FixedStep", "lands", "steps_before"]

#: the default CFL band (fractions of the target) in which schemes with dt-dependent coefficients keep their dt
BAND = (0.8, 1.2)
#: why a segment of steps stopped (``Control.choose``'s reasons and the loop's blow-up checks)
RAN, NEAR_STOP, NEW_DT, NONFINITE, BOUND, AT_REST = range(6)
#: the relative margin of the landing rule: a step within ``(1 + LANDING) dt`` of a stop time lands on it
LANDING = 1e-6


def _positive(value, name: str, owner: str, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a positive number, got {value!r}")
    v = float(value)
    if not (v > 0 and (allow_inf or math.isfinite(v))):
        raise ValueError(f"{owner}: {name} must be positive{'' if allow_inf else ' and finite'}, got {value!r}")
    return v


@dataclass(frozen=True)
class FixedStep:
    """Every step takes ``dt`` (a run shortens the last step to land on its end and stop times).

    Raises:
      TypeError, ValueError: ``dt`` not a positive finite number.
    """

    dt: float

    def __post_init__(self):
        object.__setattr__(self, "dt", _positive(self.dt, "dt", "FixedStep"))

    def resolve(self, integrator, stable_dt: float = math.inf) -> Control:
        """The :class:`Control` of this controller for ``integrator`` (a fixed dt ignores the stability limit:
        the run reports a blow-up if it is unstable). Runs pass the step itself to their programs as the forced dt
        (an argument, not a constant the compiler folds), so every way of taking fixed steps rounds alike."""
        return Control(self.dt, 0.0, math.inf, None)


@dataclass(frozen=True)
class CFL:
    """``dt = cfl / max(sum_i |u_i| / dx_i)``, capped by ``dt_max`` and the scheme's linear stability limit.

    The rate comes from the state at the start of every step (from the physical velocity the step's first stage
    holds anyway), so the dt sequence depends only on the state: a resumed run takes exactly the same steps.

    Args:
      cfl: the target CFL number. dt_max: the largest step (``inf``: none; a flow at rest then has no dt).
      band: ``(lo, hi)``: schemes whose coefficients depend on dt keep it while ``dt * rate`` stays in
        ``[lo, hi] * cfl``; ``"auto"`` (default): :data:`BAND` for those schemes, none for the others; None: a new
        dt every step.

    Raises:
      TypeError, ValueError: a value that is not a positive number, or a band that is not ``0 < lo <= 1 <= hi``.
    """

    cfl: float = 0.5
    dt_max: float = math.inf
    band: tuple[float, float] | str | None = "auto"

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

    def resolve(self, integrator, stable_dt: float = math.inf) -> Control:
        """The :class:`Control` for ``integrator``: the band where its coefficients depend on dt, the cap."""
        band = self.band
        if band == "auto":
            band = BAND if integrator.dt_coefficients else None
        return Control(None, self.cfl, min(self.dt_max, 0.9 * stable_dt), band)


#: the earlier name of :class:`CFL`
CFLStep = CFL


@dataclass(frozen=True)
class Control:
    """A controller resolved for one integrator: what :meth:`choose` needs.

    Attributes:
      dt: the fixed step, or None for CFL control. cfl: target CFL number. dt_cap: largest step.
      band: keep dt while the CFL number is in ``band * cfl``, or None.
    """

    dt: float | None
    cfl: float
    dt_cap: float
    band: tuple[float, float] | None

    def choose(self, rate, dt_band, remaining, dt_force):
        """The next step's ``(dt, go, (reason, dt_next, rate))`` (device arrays; ``rate`` is None or 0 under a fixed
        dt). ``dt_band``: the dt a band holds (0: none yet); ``remaining``: time to the next stop (the step is not
        taken where it comes within 1.5 steps of it: the host lands); ``dt_force > 0``: that dt, as it is.

        ``go`` is False where the step is not taken: a new dt for coefficients that depend on it (``NEW_DT``), a
        stop ahead (``NEAR_STOP``), a non-finite rate (``NONFINITE``) or a flow at rest without a cap
        (``AT_REST``); ``dt_next`` is then the dt the step would take.
        """
        real = remaining.dtype
        forced = dt_force > 0
        if self.dt is not None:  # go is a Python True: a stage loop then has a static trip count (differentiable)
            dt = jnp.where(forced, dt_force, jnp.asarray(self.dt, real))
            return dt, True, (jnp.int32(RAN), dt, jnp.zeros((), real))
        cand = jnp.where(rate > 0, self.cfl / jnp.where(rate > 0, rate, 1), jnp.inf).astype(real)
        cand = jnp.minimum(cand, jnp.asarray(self.dt_cap, real))
        if self.band is not None:
            lo, hi = self.band
            now = dt_band * rate
            change = (dt_band <= 0) | (now > hi * self.cfl) | ((now < lo * self.cfl) & (dt_band < cand))
            dt = jnp.where(change, cand, dt_band)
        else:
            change, dt = jnp.array(False), cand
        reason = jnp.where(~jnp.isfinite(rate), NONFINITE, jnp.where(
            ~jnp.isfinite(cand), AT_REST, jnp.where(change, NEW_DT, jnp.where(remaining <= 1.5 * dt, NEAR_STOP, RAN))))
        dt = jnp.where(forced, dt_force, dt)
        reason = jnp.where(forced & jnp.isfinite(rate), RAN, reason)
        return dt, reason == RAN, (reason.astype(jnp.int32), dt, rate)


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
