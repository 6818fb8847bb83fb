"""Outputs that end a run early, cleanly: a turbulent wall flow that relaminarized, a signal to stop."""

from __future__ import annotations

import math

from .base import Output, Row, RunInfo, StopRun

__all__ = ["RelaminarizationStop", "StopOnSignal"]


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


class StopOnSignal(Output):
    """Ends a run cleanly when the process gets ``SIGTERM`` or ``SIGINT`` (a batch system's time limit, Ctrl-C):
    the signal only sets a flag, and the run stops at its next host event (at most one segment later) with its
    outputs finished: the last checkpoint, the statistics and the plots are written, nothing done is lost. The
    previous handlers are back after the run.

    Args:
      signals: the signals to catch (default SIGTERM and SIGINT).
    """

    def __init__(self, signals: tuple[int, ...] | None = None):
        import signal

        self.signals = signals if signals is not None else (signal.SIGTERM, signal.SIGINT)
        self.caught: int | None = None
        self._previous: dict = {}

    def start(self, run: RunInfo, event) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return  # handlers can only be set in the main thread: nothing is caught
        for s in self.signals:
            self._previous[s] = signal.signal(s, self._catch)

    def _catch(self, signum, frame) -> None:
        self.caught = signum

    def on_event(self, event) -> None:
        if self.caught is not None:
            import signal

            raise StopRun(f"stopped by {signal.Signals(self.caught).name} at step {event.step} (t = {event.t:.6g}); "
                          "the last checkpoint is of this step: continue with --resume")

    def close(self) -> None:
        import signal

        for s, h in self._previous.items():
            signal.signal(s, h)
        self._previous = {}
