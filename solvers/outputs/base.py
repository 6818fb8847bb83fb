"""The one protocol every output of a run follows: :class:`Output`, and what a run hands it (:class:`RunInfo`,
:class:`Row`, :class:`Event`).

A run (:func:`~solvers.simulate`) steps in compiled segments; the host sees the state only between them. An output
says when it needs the host (``next_step``: a step whose state it wants; ``stop_time``: a time the run must land
on exactly) and what it needs computed on the devices (``row_every``: diagnostics rows, computed inside the
compiled loop and handed over after each segment; ``sampler``: an accumulation carried in the loop, e.g.
statistics). Everything an output does not override does nothing, so a user's output is a small subclass::

    class Recorder(solvers.Output):
        row_every = 5
        def __init__(self):
            self.energies = []
        def on_rows(self, rows):
            self.energies += [(r.step, r.values["energy"]) for r in rows]

Outputs never change the steps a run takes: the same run with or without them gives the same states to the bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Event", "Output", "Row", "RunInfo", "StopRun"]


class StopRun(Exception):  # noqa: N818  (a request, not an error)
    """Raised by an output (from :meth:`Output.on_rows` or :meth:`Output.on_event`) to end the run early: the run
    finishes cleanly at the current step (outputs' ``finish``: last checkpoint, plots) and its
    :class:`~solvers.Solution` says why (``stopped``)."""


@dataclass(frozen=True)
class RunInfo:
    """What a run tells its outputs when it starts.

    Attributes:
      equation, integrator: what it advances. control: the resolved controller
        (:class:`~solvers.Controller`). t0, step0: where it starts; t_end, max_steps: where it stops.
      resumed: it continues an earlier run (``step0 > 0`` from a checkpoint): files of that run are kept up to
        ``step0``. lead: this process writes files (process 0 of a multi-process run).
      columns: the names of a diagnostics row's values, in order. shells: the length of the spectrum rows carry (0:
        none).
    """

    equation: Any
    integrator: Any
    control: Any
    t0: float
    t_end: float
    step0: int
    max_steps: int | None
    resumed: bool
    lead: bool
    columns: tuple[str, ...] = ()
    shells: int = 0


@dataclass(frozen=True)
class Row:
    """One diagnostics row: the step it follows, the host's float64 time and that step's dt, the equation's
    diagnostics (``values``, with ``cfl`` where the equation has a CFL rate) and its spectrum (or None)."""

    step: int
    t: float
    dt: float
    values: dict[str, float]
    spectrum: np.ndarray | None = None


@dataclass
class Event:
    """The host between two segments: the state after ``step`` at time ``t`` (in the grid's spectral order; it is
    donated to the next segment, so copy what you keep, e.g. ``jax.device_get``), the last step's ``dt``, the dt
    a CFL band holds (``dt_band``, 0 for other controllers), the energy, whether this is the run's last event, the
    outputs' device-side samples (name -> pytree; see :meth:`Output.sampler`), and the controller's state as
    JSON-ready lists (``controller_state``, from ``controller()``: what a checkpoint needs, with the clock, to
    resume bit for bit; pass it to :func:`~solvers.simulate`'s ``controller_state``)."""

    state: Any
    step: int
    t: float
    dt: float
    dt_band: float
    energy: float
    last: bool
    samples: dict[str, Any] = field(default_factory=dict)
    controller: Callable[[], dict] | None = field(default=None, repr=False)

    @property
    def controller_state(self) -> dict | None:
        """The controller's state after this event's step (read from the devices when asked)."""
        return None if self.controller is None else self.controller()


class Output:
    """Something a run feeds. Subclass it and override what you need; every hook is a no-op by default.

    Attributes:
      row_every: compute a diagnostics row every this many steps (and after the last step) and hand them to
        :meth:`on_rows`; None: no rows. A run computes rows at the greatest common divisor of its outputs'
        intervals; each output receives those at its own multiples (and the last).
      name: the key of this output's samples in :attr:`Event.samples` (default: the class name).
    """

    row_every: int | None = None

    @property
    def name(self) -> str:
        return type(self).__name__

    def start(self, run: RunInfo, event: Event) -> None:
        """Called once before the first step, with the initial (or restored) state as an event."""

    def stop_time(self, t: float) -> float | None:
        """The next time after ``t`` the run must land on exactly (its step is shortened), or None."""
        return None

    def next_step(self, step: int) -> int | None:
        """The next step after ``step`` whose state this output wants to see (:meth:`on_event`), or None."""
        return None

    def on_rows(self, rows: list[Row]) -> None:
        """The diagnostics rows due to this output since the last call, in order (after each segment)."""

    def on_event(self, event: Event) -> None:
        """Called at every host event (after each segment, at this output's steps and stop times, and at the end
        with ``event.last``). Check ``event.step``/``event.t`` to act on your own schedule."""

    def sampler(self, equation: Any):
        """A :class:`~solvers.stepping.Sampler` (device-side accumulation inside the compiled loop), or None."""
        return None

    def finish(self, event: Event) -> None:
        """Called once after the last step (not after a failure), with the final state."""

    def close(self) -> None:
        """Called once when the run ends, also after a failure: release files."""


def writable_directory(directory, owner: str):
    """``directory`` as a Path, created and checked writable.

    Raises:
      ValueError: it cannot be created or written (naming ``owner``'s ``directory`` argument).
    """
    import os
    from pathlib import Path

    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise ValueError(f"{owner}: directory {str(path)!r} cannot be written: {e.strerror or e}") from None
    return path
