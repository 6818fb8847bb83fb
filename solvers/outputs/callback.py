"""Your own function as an output: called with the rows, or with the state, every N steps."""

from __future__ import annotations

from collections.abc import Callable

from .base import Event, Output, Row

__all__ = ["Callback"]


class Callback(Output):
    """``fn`` called every ``every`` steps: with each diagnostics :class:`~solvers.Row` (``on="rows"``: computed on
    the devices inside the compiled loop, no extra host stop), or with the :class:`~solvers.Event` of the state
    (``on="states"``: the run stops on the host at those steps; copy what you keep, the state is donated on).

    Example: record the enstrophy every 50 steps::

        seen = []
        solvers.simulate(eq, t_end=1.0, controller=solvers.FixedStep(1e-3),
                         outputs=[solvers.Callback(lambda row: seen.append(row.values["enstrophy"]), every=50)])

    Raises:
      TypeError: ``fn`` not callable. ValueError: ``every`` not a positive integer, ``on`` not rows/states.
    """

    def __init__(self, fn: Callable, every: int, on: str = "rows"):
        if not callable(fn):
            raise TypeError(f"Callback: fn must be callable, got {fn!r}")
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"Callback: every must be an integer >= 1, got {every!r}")
        if on not in ("rows", "states"):
            raise ValueError(f"Callback: on must be 'rows' or 'states', got {on!r}")
        self.fn, self.every, self.on = fn, every, on
        self.row_every = every if on == "rows" else None

    def on_rows(self, rows: list[Row]) -> None:
        for r in rows:
            self.fn(r)

    def next_step(self, step: int) -> int | None:
        return (step // self.every + 1) * self.every if self.on == "states" else None

    def start(self, run, event: Event) -> None:
        if self.on == "states":
            self.fn(event)

    def on_event(self, event: Event) -> None:
        if self.on == "states" and event.step % self.every == 0 and event.step != getattr(self, "_last", None):
            self._last = event.step
            self.fn(event)
