"""Checkpoints with orbax-checkpoint: the store (:class:`Checkpoints`) and the output that writes a run's
(:class:`Checkpoint`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jax

from .base import Event, Output, RunInfo, writable_directory

__all__ = ["Checkpoint", "Checkpoints"]


def _orbax():
    """``orbax.checkpoint``, imported where a checkpoint is first opened: it takes a third of a second, which
    ``import solvers``, ``python -m solvers list`` and runs without checkpoints do not pay."""
    import orbax.checkpoint as ocp

    return ocp


class Checkpoints:
    """Step-numbered checkpoints of a state pytree plus JSON metadata, written with orbax-checkpoint.

    orbax writes each step into a temporary directory and renames it when complete, so a checkpoint is either
    all there or absent (an interrupted write is never picked up as the latest). Every process takes part in
    ``save``/``restore``; arrays are written shard by shard and can be restored onto any mesh or process
    count by passing the target shardings.

    Args:
      directory: where the step directories go (created).
      keep: number of most recent checkpoints to keep (None: all).
    """

    def __init__(self, directory: str | os.PathLike, keep: int | None = 2):
        self.directory = Path(directory).absolute()
        ocp = _orbax()
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, enable_async_checkpointing=False, create=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def save(self, step: int, state: Any, meta: dict, samples: dict | None = None) -> None:
        """Write ``state``, the outputs' device-side ``samples`` (name -> pytree, e.g. statistics) and ``meta`` as
        checkpoint ``step`` (blocks until it is committed). ``meta["samples"]`` lists the samples' names."""
        payload = {"state": state}
        if samples:
            payload["samples"] = dict(samples)
            meta = {**meta, "samples": sorted(samples)}
        ocp = _orbax()
        self._manager.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(payload),
                                                         meta=ocp.args.JsonSave(meta)), force=True)
        self._manager.wait_until_finished()

    def read_meta(self, step: int) -> dict:
        ocp = _orbax()
        return dict(self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())).meta)

    def restore(self, step: int, like: Any, grid: Any = None) -> tuple[Any, dict]:
        """Restore checkpoint ``step`` onto the shapes, dtypes and shardings of ``like``: the mesh may differ from the
        one that wrote it.

        A :class:`Checkpoint` stores the state in natural spectral order with the Nyquist coefficient of a half axis;
        a grid may hold it in another order or without that coefficient (a periodic grid in transposed order, a 2D
        wall grid). Given the grid, the state is read in natural order and returned in the grid's.

        Args:
          step: the checkpoint's step (:meth:`latest_step`, :meth:`steps`).
          like: the state's layout: an :class:`~solvers.Equation` (its :meth:`~solvers.Equation.abstract_state` on
            its grid), or a pytree of arrays or ``jax.ShapeDtypeStruct`` (e.g. a :class:`~solvers.Solution`'s
            ``state``) with ``grid``.
          grid: the :class:`~solvers.Grid` whose spectral layout ``like`` has (None: ``like`` is the stored layout,
            or an Equation, whose grid is taken).

        Returns:
          ``(state, meta)``: the state in the layout of ``like``, and the checkpoint's metadata (``step``, ``t``,
          ``dt``, ``dt_band``, ``controller``, ``points``, and what the run stored).

        Raises:
          ValueError: the checkpoint's shapes are not those of ``like`` (naming both).
        """
        if grid is None and hasattr(like, "abstract_state") and hasattr(like, "grid"):
            like, grid = like.abstract_state(), like.grid
        target = like if grid is None else grid.natural_like(_targets(like))
        try:
            state, _, meta = self.restore_with_samples(step, target)
        except ValueError as e:
            if "shape" not in str(e).lower():
                raise
            shapes = [tuple(a.shape) for a in jax.tree.leaves(target)]
            hint = "" if grid is not None else (
                "; a Checkpoint output stores the state in natural order with the Nyquist coefficient: pass "
                "grid=equation.grid (or the equation as like) to read it in the grid's layout")
            raise ValueError(f"restore: checkpoint {step} in {str(self.directory)!r} does not hold shapes "
                             f"{shapes}: {e}{hint}") from None
        if grid is not None and (grid.order != "natural" or not grid.nyquist):
            with jax.set_mesh(grid.mesh):
                state = jax.jit(lambda s: jax.tree.map(grid.from_natural, s))(state)
        return state, meta

    def restore_with_samples(self, step: int, like: Any, samples_like: dict | None = None, *,
                             truncate: bool = False) -> tuple[Any, dict, dict]:
        """:meth:`restore`, and the samples of ``samples_like`` (name -> abstract pytree) that the checkpoint holds
        (the others are left out of the returned dict): ``(state, samples, meta)``.

        ``truncate``: an array stored larger than ``like`` asks is read as its leading part along each axis (orbax's
        non-strict restore), where a reader knows that this part is the array it wants (a spectrum stored with
        more coefficients than the grid holds); by default shapes must match."""
        ocp = _orbax()
        meta = self.read_meta(step)
        names = [n for n in meta.get("samples", []) if samples_like and n in samples_like]
        target = {"state": _targets(like)}
        if meta.get("samples"):  # the stored tree must be asked for whole: samples not wanted are read and dropped
            if set(names) != set(meta["samples"]):
                names = []
            if names:
                target["samples"] = {n: _targets(samples_like[n]) for n in names}
        if meta.get("samples") and not names:  # read and dropped: their shapes from the checkpoint's own metadata
            reader = ocp.CheckpointManager(self.directory, item_handlers={
                "state": ocp.StandardCheckpointHandler(), "meta": ocp.JsonCheckpointHandler()})
            try:
                item = reader.item_metadata(step).state
            finally:
                reader.close()
            target["samples"] = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype), item["samples"])
        out = self._manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(target, strict=not truncate), meta=ocp.args.JsonRestore()))
        samples = dict(out.state["samples"]) if names else {}
        return out.state["state"], samples, dict(out.meta)

    def close(self) -> None:
        self._manager.close()


def _targets(like: Any) -> Any:
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, "sharding", None)), like)


class Checkpoint(Output):
    """Writes a checkpoint of the state every ``every`` steps and at the end of the run, with the clock (``step``,
    ``t``, ``dt``, ``dt_band``, and the controller's state ``controller``: a resumed run given it as
    ``controller_state`` takes the same steps to the bit), the grid's points, the outputs' device-side samples
    (statistics continue where they stopped) and ``meta``.

    The state is stored in natural spectral order with the Nyquist coefficient of a half axis (the format every
    version wrote): restorable on any mesh or process count (:meth:`Checkpoints.restore`). A state that is not
    spectral (``equation.spectral_state`` False: particles) is stored as it is.

    Args:
      directory: the checkpoint directory (created). every: steps between checkpoints (0: only at the end).
      keep: how many recent checkpoints to keep. meta: JSON-ready settings stored with each (e.g. the run's
        physics, which a resume compares).

    Attributes:
      last: the step of the last checkpoint written (None: none yet).

    Raises:
      ValueError: ``every`` or ``keep`` out of range, a ``directory`` that cannot be written.
    """

    def __init__(self, directory: str | os.PathLike, every: int = 0, keep: int = 2, meta: dict | None = None):
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise ValueError(f"Checkpoint: every must be an integer >= 0, got {every!r}")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"Checkpoint: keep must be an integer >= 1, got {keep!r}")
        self.store = Checkpoints(writable_directory(directory, "Checkpoint"), keep=keep)
        self.every, self.meta = every, dict(meta or {})
        self.last: int | None = None
        self._natural = None
        self._grid = None
        self._spectral = True

    @property
    def directory(self) -> Path:
        return self.store.directory

    def start(self, run: RunInfo, event: Event) -> None:
        self._grid = run.equation.grid
        self._spectral = getattr(run.equation, "spectral_state", True)
        self.last = self.store.latest_step() if run.resumed else None

    def next_step(self, step: int) -> int | None:
        return (step // self.every + 1) * self.every if self.every else None

    def on_event(self, event: Event) -> None:
        if self.every and event.step % self.every == 0 and event.step != self.last:
            self.save(event)

    def finish(self, event: Event) -> None:
        if event.step != self.last:
            self.save(event)

    def save(self, event: Event) -> None:
        """Write a checkpoint of ``event``'s state and clock."""
        grid, state = self._grid, event.state
        if self._spectral and (grid.order != "natural" or not grid.nyquist):
            if self._natural is None:
                self._natural = jax.jit(lambda s: jax.tree.map(grid.to_natural, s))
            state = self._natural(state)
        meta = {"step": event.step, "t": event.t, "dt": event.dt, "dt_band": event.dt_band,
                "points": list(grid.shape), **self.meta}
        if event.controller_state is not None:
            meta["controller"] = event.controller_state
        self.store.save(event.step, state, meta, event.samples or None)
        self.last = event.step

    def close(self) -> None:
        self.store.close()
