"""Resuming a job from its latest checkpoint: the settings it must share with the checkpoint (those of earlier
versions included), the points it holds its fields on, and the restored state and clock."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jax

from ..outputs import Checkpoints
from . import memory as _memory
from .config import ConfigError, RunConfig
from .plan import Plan as Resolved
from .plan import legacy_physics

__all__ = ["Restart", "checkpoint_points", "restore"]


@dataclass
class Restart:
    """Where a resumed run starts: the restored state (in the grid's spectral order), its clock, the outputs'
    samples the checkpoint holds, and the shape the checkpoint was written at where it differs (then the state was
    interpolated spectrally and the samples restarted), and the controller's state (``controller_state``)."""

    state: Any
    step: int
    t: float
    dt: float
    dt_band: float
    samples: dict = field(default_factory=dict)
    resized_from: tuple[int, ...] | None = None
    controller_state: dict | None = None


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


def restore(cfg: RunConfig, res: Resolved, grid, equation, samples_like: dict | None = None) -> Restart | None:
    """The latest checkpoint in ``res.out / "checkpoints"`` restored onto ``grid`` (any mesh), after checking that it
    was written with the same physics; None where there is none. ``samples_like``: the abstract samples of the run's
    outputs (name -> pytree) to restore with it.

    A checkpoint written at another resolution (``shape``) is restored on its own grid and interpolated spectrally
    onto this one: the Fourier and Chebyshev coefficients are zero-padded (a finer grid: the same fields exactly) or
    truncated to the modes the coarser grid's dealiasing rule keeps (those exactly); the samples (statistics)
    restart.

    Raises:
      ConfigError: the checkpoint's settings differ from this run's other than in the grid's sizes, its fields lie
        on points this mesh cannot hold, its sizes change the number of dimensions, or ``t_end`` is not after its
        time.
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
        saved_shape = _check_physics(res.physics(), meta, res, ckdir)
        _check_time(cfg, meta, ckdir)
        if saved_shape == tuple(res.shape):
            _check_points(meta, grid, res, ckdir)
            state, samples, meta = store.restore_with_samples(latest, grid.natural_like(equation.abstract_state()),
                                                              samples_like, truncate=_full_to_half(grid))
            old = grid
        else:
            old = _grid_of(cfg, res, saved_shape, grid.mesh, meta, ckdir)
            like = old.natural_like(type(equation)(old, **res.eq_params).abstract_state())
            state, _, meta = store.restore_with_samples(latest, like, None, truncate=_full_to_half(old))
            samples = {}
    finally:
        store.close()
    state = _onto(old, grid, state)
    control = meta.get("controller")
    return Restart(state, int(meta["step"]), float(meta["t"]), float(meta["dt"]), float(meta.get("dt_band", 0.0)),
                   samples, None if old is grid else saved_shape, control)


def _full_to_half(grid) -> bool:
    """Whether a checkpoint of ``grid`` may hold the full spectrum of a periodic axis where the grid holds a half
    one: 2D wall grids held the full spectrum of their periodic axis before they took a half spectrum (as 3D wall
    grids and periodic grids always did). The half spectrum with its Nyquist coefficient, the natural view a
    checkpoint holds, is the full spectrum's leading ``n // 2 + 1`` coefficients along that axis, so such a
    checkpoint is read by truncating it there."""
    return grid.ndim == 2 and grid.kinds[0] != "fft" and grid.kinds[-1] == "rfft"


def _grid_of(cfg: RunConfig, res: Resolved, shape: tuple[int, ...], mesh, meta: dict, ckdir: Path):
    """The grid a checkpoint of another resolution was written on (on this run's mesh)."""
    from .build import make_grid

    if len(shape) != len(res.shape):
        raise ConfigError(f"resume: the checkpoint in {str(ckdir)!r} is {len(shape)}D ({_memory.shape_text(shape)}), "
                          f"this run is {len(res.shape)}D: a restart changes sizes, not the number of dimensions",
                          fields=("resume", "n"))
    points = tuple(meta.get("points", shape))
    try:
        return make_grid(replace(res, shape=shape), shape, mesh, prefer=points)
    except ValueError as e:
        raise ConfigError(f"resume: the {_memory.shape_text(shape)} checkpoint in {str(ckdir)!r} cannot be read on "
                          f"this mesh: {e}", fields=("resume", "mesh")) from None


def _onto(old, grid, state):
    """``state`` (natural order, as checkpoints hold it) of grid ``old`` in ``grid``'s spectral order and sizes."""
    coarser = old is not grid and any(n < o for n, o in zip(grid.modes, old.modes))

    def convert(s):
        s = jax.tree.map(old.from_natural, s) if old.order != "natural" or not old.nyquist else s
        if old is not grid:
            s = jax.tree.map(lambda a: old.resize(a, grid), s)
        return jax.tree.map(grid.dealias, s) if coarser else s  # the modes a coarser run resolves

    if old is grid and grid.order == "natural" and grid.nyquist:
        return state
    return jax.jit(convert, donate_argnums=0 if (old is grid and grid.nyquist) else ())(state)


def _check_physics(now: dict, meta: dict, res: Resolved, ckdir: Path) -> tuple[int, ...]:
    """Compare the checkpoint's settings with this run's (all but the grid's sizes); returns its sizes."""
    saved = meta.get("config", {})
    if "format" not in saved:  # written before the parameter declarations
        try:
            saved = legacy_physics(saved, res)
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"resume: cannot read the settings of the checkpoint in {str(ckdir)!r}: {e}",
                              fields=("resume",)) from None
    saved, now = json.loads(json.dumps(saved)), json.loads(json.dumps(now))
    shape = tuple(int(n) for n in saved.pop("shape", now["shape"]))
    now.pop("shape")
    sp, np_ = saved.pop("params", {}) or {}, now.pop("params")
    for p in (res.top or res.spec).declared(res.ic):  # parameters added after the checkpoint was written
        if p.legacy is not None and p.name not in sp:
            sp[p.name] = p.legacy
    diff = [f"{k}: checkpoint {saved.get(k)!r} vs now {now[k]!r}" for k in now if saved.get(k) != now[k]]
    diff += [f"{k}: checkpoint {sp.get(k)!r} vs now {np_.get(k)!r}" for k in sorted(set(sp) | set(np_))
             if sp.get(k) != np_.get(k)]
    if diff:
        raise ConfigError(f"resume: the checkpoint in {str(ckdir)!r} was written with other settings ("
                          + "; ".join(diff) + "); resume with the same physics and discretization (the sizes may "
                          "differ)", fields=("resume",))
    return shape


def _check_time(cfg: RunConfig, meta: dict, ckdir: Path) -> None:
    """The run's ``t_end`` lies after the checkpoint's time (a resumed run continues from it)."""
    t, step = float(meta["t"]), int(meta["step"])
    if not cfg.t_end > t:
        raise ConfigError(f"t_end {cfg.t_end:g} is not after the time of the latest checkpoint in {str(ckdir)!r} "
                          f"(t = {t:g}, step {step}), which a resumed run continues from: give a later end time",
                          fields=("t_end",))


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
