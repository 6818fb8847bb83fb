"""The main job's statistics settings (``stats_every``, ``stats_start``) checked before any compute: a window that
takes no sample, a start without statistics on, or an equation whose statistics cannot be taken is refused."""

from __future__ import annotations

from typing import Any

from ..model import Equation
from .spec import RunSpec

__all__ = ["statistics_problem"]


def statistics_problem(cfg: Any, spec: RunSpec, name: str, shape: tuple[int, ...], box: tuple[float, ...],
                       from_preset: frozenset[str] = frozenset()) -> tuple[str, tuple[str, ...]] | None:
    """What is wrong with ``cfg``'s statistics, or None.

    Args:
      cfg: the :class:`~solvers.RunConfig` (its preset applied). spec: the variant the run's parameters pick.
      name: the equation's name in messages. shape, box: the run's grid sizes and box (the grid is built on one
        device only where the spec gives no reading of the averages). from_preset: the fields the preset set.

    Returns:
      ``(message, fields)``: the message names the :class:`~solvers.RunConfig` fields in ``fields`` (the command
      line prints their flags); None where the settings are fine.
    """
    preset = f" (from preset {cfg.preset})" if "stats_start" in from_preset else ""
    if not cfg.stats_every:
        if cfg.stats_start and not preset:  # a preset's start stays quiet when its statistics are off
            return (f"stats_start {cfg.stats_start:g} given, but statistics are off: give stats_every N too (a sample "
                    "every N steps)", ("stats_start", "stats_every"))
        return None
    if cfg.stats_start >= cfg.t_end:
        return (f"stats_start {cfg.stats_start:g}{preset} is at or past t_end {cfg.t_end:g}: no statistics sample "
                "would be taken; start them earlier, end the run later, or turn them off with stats_every 0",
                ("stats_start", "t_end", "stats_every"))
    if spec.statistics is not None:
        return None
    if spec.equation.physical_fields is Equation.physical_fields:
        return (f"stats_every: {name} has no physical_fields to average: implement {spec.equation.__name__}."
                "physical_fields (give its RunSpec(statistics=...) the reading of the averages, e.g. "
                "solvers.outputs.wall_units.channel)", ("stats_every",))
    try:
        grid = spec.grid(shape, None, box, dtype="float32", dealias="2/3", backend=None)
    except ValueError:
        return None  # the grid's own check names what it refuses
    if getattr(grid.bases[0], "kind", "fft") in ("fft", "rfft"):
        return (f"stats_every: {name} has no walls (its grid's axis 0 is periodic): statistics average over planes "
                "parallel to walls; an equation between walls runs on a wall grid (RunSpec(grid=...)) and reads "
                "its averages with RunSpec(statistics=...)", ("stats_every",))
    return None
