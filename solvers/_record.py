"""The main job's diagnostics rows: computed on the devices at once, fetched and written one segment later.

:class:`Recorder` dispatches one program for a row (an equation's ``diagnostics`` and ``spectrum`` together)
and returns without waiting; the values are fetched (one transfer) and written when the next row is asked for,
before a checkpoint, and at the end of the run (:meth:`Recorder.flush`). The previous row is written after the
new one is dispatched, so the host writes while the devices compute: the devices go from a segment of steps to
the row and straight on to the next segment, and the host never holds them up for a row (issue 18: the main job
at the speed of its bare step). A row is written before any checkpoint that follows it, so a resumed run's CSV
is the same as a straight run's, and on a blow-up the rows already computed are still written.
"""

from __future__ import annotations

from typing import Any

import jax

from ._resolution import ResolutionMonitor


class Recorder:
    """Diagnostics rows of a run (every process calls it; the lead process writes).

    Args:
      eq: the equation (``diagnostics(state, t, dt)``, ``spectrum(state)`` or None).
      diag_log, spec_log: the :class:`~solvers.io.CsvLog` files (``spec_log`` unused without a spectrum).
      lead: whether this process writes.
      has_spec: whether the equation has a spectrum.
    """

    def __init__(self, eq, diag_log, spec_log, lead: bool, has_spec: bool):
        self._row = jax.jit(lambda s, t, dt: (eq.diagnostics(s, t, dt), eq.spectrum(s) if has_spec else None))
        self.logs = (diag_log, spec_log)
        self.resolution = ResolutionMonitor(warn=lead)
        self.lead, self.has_spec = lead, has_spec
        self.last: dict | None = None  # the last row written (diagnostics only)
        self._pending: tuple[Any, int, float, float] | None = None

    def submit(self, state, step: int, t: float, dt: float) -> None:
        """Dispatch the row of ``state`` (no wait), then write the previous pending row (rows keep their order)."""
        arrays = self._row(state, t, dt)
        self.flush()
        self._pending = (arrays, step, t, dt)

    def flush(self) -> dict | None:
        """Fetch and write the pending row, if any; returns its diagnostics (else None)."""
        if self._pending is None:
            return None
        arrays, step, t, dt = self._pending
        self._pending = None
        d, spec = jax.device_get(arrays)  # one transfer
        d = {k: float(v) for k, v in d.items()}
        self.resolution.observe(d, step, t)  # warns once when the run leaves its resolution
        if self.lead:
            diag_log, spec_log = self.logs
            diag_log.write({"step": step, "t": t, "dt": dt, **d})
            if spec is not None:
                spec_log.write({"step": step, "t": t, **{f"E_{j}": float(v) for j, v in enumerate(spec)}})
        self.last = d
        return d

    def __call__(self, state, step: int, t: float, dt: float) -> dict:
        """The row of ``state``, written now; returns its diagnostics."""
        self.submit(state, step, t, dt)
        return self.flush()
