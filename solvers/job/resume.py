"""Resuming a job from its latest checkpoint: the settings it must share with the checkpoint (those of earlier
versions included), the points it holds its fields on, and the restored state and clock."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from ..outputs import Checkpoints
from . import memory as _memory
from .config import ConfigError, Resolved, RunConfig, legacy_physics

__all__ = ["Restart", "checkpoint_points", "restore"]


@dataclass
class Restart:
    """Where a resumed run starts: the restored state (in the grid's spectral order) and its clock."""

    state: Any
    step: int
    t: float
    dt: float
    dt_band: float


def checkpoint_points(ckdir: Path) -> tuple[int, ...] | None:
    """The points the latest checkpoint in ``ckdir`` holds its fields on (None: no checkpoint, or one written
    before points were recorded, which holds them on the grid's own sizes)."""
    if not (ckdir.is_dir() and any(ckdir.iterdir())):
        return None
    ck = Checkpoints(ckdir)
    try:
        latest = ck.latest_step()
        points = None if latest is None else ck.read_meta(latest).get("points")
    finally:
        ck.close()
    return None if points is None else tuple(int(p) for p in points)


def restore(cfg: RunConfig, res: Resolved, grid, equation) -> Restart | None:
    """The latest checkpoint in ``res.out / "checkpoints"`` restored onto ``grid`` (any mesh), after checking that
    it was written with the same physics and on the same points; None where there is none.

    Raises:
      ConfigError: the checkpoint's settings or points differ from this run's (naming what differs).
    """
    ckdir = res.out / "checkpoints"
    if not ckdir.is_dir():
        return None
    store = Checkpoints(ckdir)
    try:
        latest = store.latest_step()
        if latest is None:
            return None
        meta = store.read_meta(latest)
        _check_physics(res.physics(cfg), meta, res, ckdir)
        _check_points(meta, grid, res, ckdir)
        state, meta = store.restore(latest, grid.natural_like(equation.abstract_state()))
    finally:
        store.close()
    if grid.order != "natural" or not grid.nyquist:  # checkpoints hold natural order and the Nyquist coefficient
        state = jax.jit(lambda s: jax.tree.map(grid.from_natural, s), donate_argnums=0 if grid.nyquist else ())(state)
    return Restart(state, int(meta["step"]), float(meta["t"]), float(meta["dt"]), float(meta.get("dt_band", 0.0)))


def _check_physics(now: dict, meta: dict, res: Resolved, ckdir: Path) -> None:
    saved = meta.get("config", {})
    if "format" not in saved:  # written before the parameter declarations
        try:
            saved = legacy_physics(saved, res)
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"resume: cannot read the settings of the checkpoint in {str(ckdir)!r}: {e}",
                              fields=("resume",)) from None
    saved, now = json.loads(json.dumps(saved)), json.loads(json.dumps(now))
    sp, np_ = saved.pop("params", {}) or {}, now.pop("params")
    for p in res.spec.declared(res.ic):  # parameters added after the checkpoint was written: their old value
        if p.legacy is not None and p.name not in sp:
            sp[p.name] = p.legacy
    diff = [f"{k}: checkpoint {saved.get(k)!r} vs now {now[k]!r}" for k in now if saved.get(k) != now[k]]
    diff += [f"{k}: checkpoint {sp.get(k)!r} vs now {np_.get(k)!r}" for k in sorted(set(sp) | set(np_))
             if sp.get(k) != np_.get(k)]
    if diff:
        raise ConfigError(f"resume: the checkpoint in {str(ckdir)!r} was written with other settings ("
                          + "; ".join(diff) + "); resume with the same physics and discretization", fields=("resume",))


def _check_points(meta: dict, grid, res: Resolved, ckdir: Path) -> None:
    """The checkpoint's fields lie on the points of this run's grid (checkpoints written before points were
    recorded lie on the grid's own sizes)."""
    saved = tuple(meta.get("points", res.shape))
    if saved != tuple(grid.shape):
        raise ConfigError(f"resume: the checkpoint in {str(ckdir)!r} holds its fields on "
                          f"{_memory.shape_text(saved)} points, but this mesh holds the "
                          f"{_memory.shape_text(res.shape)} grid on {_memory.shape_text(grid.shape)}; resume on a "
                          f"mesh that splits {_memory.shape_text(saved)} (--mesh, or fewer devices)",
                          fields=("resume", "mesh"))
