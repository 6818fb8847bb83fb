"""A progress bar of a run (tqdm): the simulated time, the step, the energy and the last dt."""

from __future__ import annotations

from .base import Event, Output, RunInfo

__all__ = ["Progress"]


class Progress(Output):
    """A tqdm bar over the simulated time, moved after every segment (on the lead process only).

    Args:
      mininterval: seconds between redraws. time_label: what the run's time is (``"a"``: a comoving run's scale
        factor), in the bar and its step ``d<time_label>``.
    """

    def __init__(self, mininterval: float = 0.5, time_label: str = "t"):
        self.mininterval = float(mininterval)
        self.time_label = str(time_label)
        self.bar = None
        self.t = 0.0

    def start(self, run: RunInfo, event: Event) -> None:
        if not run.lead:
            return
        from tqdm import tqdm

        self.t = run.t0
        t = self.time_label
        self.bar = tqdm(total=run.t_end, initial=run.t0, unit=t, mininterval=self.mininterval, dynamic_ncols=True,
                        bar_format="{l_bar}{bar}| " + t + "={n:.3f}/{total:.3g} [{elapsed}<{remaining}] {postfix}")

    def on_event(self, event: Event) -> None:
        if self.bar is None:
            return
        self.bar.update(event.t - self.t)
        self.t = event.t
        self.bar.set_postfix_str(f"step {event.step}, E={event.energy:.6g}, d{self.time_label}={event.dt:.3g}",
                                 refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
