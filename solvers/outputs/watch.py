"""Outputs that watch a run and end it when it has become pointless: a turbulent wall flow that relaminarized."""

from __future__ import annotations

import math

from .base import Output, Row, RunInfo, StopRun

__all__ = ["RelaminarizationStop"]


class RelaminarizationStop(Output):
    """Ends a channel run (:class:`~solvers.outputs.StopRun`) whose friction Reynolds number has fallen back to
    near the laminar value ``sqrt(2 Re)`` (``U = 1 - y^2``: wall shear ``2 nu``): below ``factor`` times it in every
    row for ``patience`` time units after ``after``.

    Args:
      factor: the fraction above the laminar ``Re_tau`` a turbulent flow stays (default 1.2: a turbulent channel
        at ``Re_tau = 180`` has about twice its laminar value). after: the transition time to wait.
      patience: how long (time units) the flow must stay laminar. every: rows every this many steps.
    """

    def __init__(self, factor: float = 1.2, after: float = 50.0, patience: float = 20.0, every: int = 10):
        self.factor, self.after, self.patience, self.row_every = float(factor), float(after), float(patience), every
        self.since: float | None = None
        self.laminar = math.nan

    def start(self, run: RunInfo, event) -> None:
        self.laminar = math.sqrt(2.0 / float(run.equation.nu))

    def on_rows(self, rows: list[Row]) -> None:
        for r in rows:
            re_tau = r.values.get("re_tau")
            if re_tau is None or r.t < self.after:
                continue
            if re_tau < self.factor * self.laminar:
                self.since = r.t if self.since is None else self.since
                if r.t - self.since >= self.patience:
                    raise StopRun(f"the flow relaminarized: Re_tau = {re_tau:.4g} at t = {r.t:.6g} (laminar "
                                  f"{self.laminar:.4g}) since t = {self.since:.6g}; start from a stronger "
                                  "perturbation or a turbulent checkpoint")
            else:
                self.since = None
