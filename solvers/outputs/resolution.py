"""The resolution monitor of a run: it watches an equation's ``resolution`` diagnostic and warns once when the
solution piles up at the grid scale (see :func:`solvers.diagnostics.resolution`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

from ..diagnostics import RESOLUTION_THRESHOLD
from .base import Output, Row, RunInfo

#: the diagnostic the monitor watches (equations without it are not monitored)
DIAGNOSTIC = "resolution"


class ResolutionWarning(UserWarning):
    """A run's energy (or norm) reached the outermost resolved wavenumbers: the grid no longer resolves it, and
    its numbers (energies, growth, conservation) are no longer to be trusted."""


class ResolutionMonitor:
    """Watches the ``resolution`` diagnostic of every recorded row; warns once per run when it first passes
    ``threshold`` and summarizes what it saw for ``run.json``.

    The row of the initial condition (step 0) is recorded but not warned about: a noise initial condition
    (Cahn-Hilliard's ``random``, 0.67 of its norm in the outer band) fills every wavenumber on purpose and the
    dynamics damps it within a few steps; an initial condition the grid really cannot hold is still above the
    threshold at the next row.

    Args:
      threshold: the fraction that counts as under-resolved (default :data:`~solvers.diagnostics.RESOLUTION_THRESHOLD`).
      warn: issue the :class:`ResolutionWarning` (False on every process but the first of a multi-process run,
        so that the warning appears once).
    """

    def __init__(self, threshold: float = RESOLUTION_THRESHOLD, warn: bool = True):
        if not (math.isfinite(threshold) and 0 < threshold < 1):
            raise ValueError(f"threshold must lie in (0, 1), got {threshold!r}")
        self.threshold, self.warn = float(threshold), bool(warn)
        self.initial: float | None = None  # the value at step 0
        self.peak: tuple[float, int, float] | None = None  # (value, step, t) of the largest after step 0
        self.passed: tuple[float, int, float] | None = None  # the first row after step 0 above the threshold

    def observe(self, diagnostics: Mapping[str, float], step: int, t: float) -> None:
        """Look at one recorded row (host floats); warns the first time the value passes the threshold."""
        if DIAGNOSTIC not in diagnostics:
            return
        value = float(diagnostics[DIAGNOSTIC])
        if not math.isfinite(value):
            return  # the blow-up check reports non-finite states
        if step == 0:
            self.initial = value
            return
        if self.peak is None or value > self.peak[0]:
            self.peak = (value, step, t)
        if self.passed is None and value > self.threshold:
            self.passed = (value, step, t)
            if self.warn:
                warnings.warn(ResolutionWarning(self.message()), stacklevel=2)

    def message(self) -> str:
        """What the warning says: the diagnostic, its value, the threshold and what to do."""
        value, step, t = self.passed or self.peak or (math.nan, 0, 0.0)
        return (f"under-resolved: the diagnostic {DIAGNOSTIC!r} = {value:.3g} at step {step} (t = {t:.6g}) passed "
                f"the threshold {self.threshold:g}: that fraction of the energy (or norm) lies in the outer third of "
                f"the resolved wavenumbers, so the grid no longer resolves the solution. Raise the resolution "
                f"(--n, RunConfig.n) or end the run earlier (--t-end); the later numbers are not to be trusted.")

    def summary(self) -> dict | None:
        """For ``run.json``: the threshold, the value at step 0, the largest one after it (with its step and time),
        whether the run stayed below the threshold and where it first passed it; None if the equation reports no
        ``resolution`` (or nothing was recorded)."""
        if self.peak is None and self.initial is None:
            return None
        peak = self.peak or (None, None, None)
        first = None if self.passed is None else dict(zip(("value", "step", "t"), self.passed))
        return {"diagnostic": DIAGNOSTIC, "threshold": self.threshold, "initial": self.initial, "max": peak[0],
                "max_step": peak[1], "max_t": peak[2], "resolved": self.passed is None, "first_passed": first}


class ResolutionCheck(Output):
    """A :class:`ResolutionMonitor` as an output of a run: it reads the rows' ``resolution`` (where the equation
    reports one) every ``every`` steps and warns once when the run leaves its resolution.

    Attributes:
      monitor: the :class:`ResolutionMonitor` (its :meth:`~ResolutionMonitor.summary` goes into ``run.json``).
    """

    def __init__(self, every: int = 10, threshold: float = RESOLUTION_THRESHOLD):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"ResolutionCheck: every must be an integer >= 1, got {every!r}")
        self.row_every = every
        self.monitor = ResolutionMonitor(threshold)

    def start(self, run: RunInfo, event) -> None:
        self.monitor.warn = run.lead

    def on_rows(self, rows: list[Row]) -> None:
        for r in rows:
            self.monitor.observe(r.values, r.step, r.t)
