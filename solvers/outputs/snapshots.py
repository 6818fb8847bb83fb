"""Field snapshots: per-process HDF5 blocks, a master file of virtual datasets, an XDMF time series.

Layout of a snapshot directory (``RUN/snapshots``)::

    snapshots.xmf            XDMF 2 temporal collection (ParaView, VisIt): grid, box, times, every field
    snapshots.json           the series index (equation, parameters, grid, fields, one entry per snapshot)
    snap_00003.h5            master file of snapshot 3: one virtual dataset per field (global shape) and the
                             points of each axis, ``/coordinates/NAME``
    snap_00003.p0001.h5      the blocks that process 1 holds: ``/FIELD/I_J_K`` (offset of the block)

The index's (and each master file's) ``grid`` is the grid's :meth:`~solvers.Grid.geometry` (shape, box, mean
spacing, domain origin, axis ``names``, each axis's basis with its ``points`` where they are not uniform) plus
``start``, the first point of each axis (a cell-centred axis starts half a cell inside its domain):
:func:`axis_points` turns it into the true coordinates. The XDMF describes uniform grids as a ``CoRectMesh``
(origin and spacing) and grids with a non-uniform axis (Chebyshev points) as a structured mesh whose point
coordinates are written once, in ``coordinates.h5`` (see :mod:`solvers.outputs._xdmf`), so every ParaView XDMF
reader shows the real geometry.

Every process writes only the blocks its devices hold (one block at a time on the host); process 0 writes the
master file, the index and the XDMF file, each to a temporary name that is renamed when complete, so a run
killed while writing leaves every earlier snapshot readable and the XDMF valid. After each phase the processes
agree (one tiny all-gather) on whether every write worked: a failure is a :class:`SnapshotError` on every rank.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ._xdmf import COORDINATES_FILE, has_coordinates, uniform, write_coordinates, xdmf
from .base import Output

XDMF_NAME = "snapshots.xmf"
INDEX_NAME = "snapshots.json"
DTYPES = ("float32", "float64")
#: the group of a master file that holds the points of each axis (``/coordinates/NAME``, float64)
COORDINATES = "coordinates"
_TOL = 1e-9


class SnapshotError(RuntimeError):
    """A snapshot could not be written (disk full, permissions); raised on every process."""


def require_h5py():
    """Import h5py, or raise an ImportError that names the extra to install."""
    try:
        import h5py
    except ImportError:
        raise ImportError('snapshots need h5py: pip install "xfft[io]"') from None
    return h5py


def master_name(index: int) -> str:
    return f"snap_{index:05d}.h5"


def block_name(index: int, process: int) -> str:
    return f"snap_{index:05d}.p{process:04d}.h5"


def block_key(index: tuple[slice, ...]) -> str:
    return "_".join(str(s.start) for s in index)


def _norm(index: tuple, shape: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(*s.indices(n)[:2]) for s, n in zip(index, shape))


def owners(sharding: jax.sharding.Sharding, shape: tuple[int, ...]) -> dict[tuple, tuple[tuple[slice, ...], Any]]:
    """Unique blocks of an array: ``{starts: (index, writing device)}``; a replicated block is written once,
    by the device with the lowest id that holds it (every process computes the same map)."""
    out: dict[tuple, tuple[tuple[slice, ...], Any]] = {}
    for dev, idx in sorted(sharding.devices_indices_map(shape).items(), key=lambda kv: kv[0].id):
        idx = _norm(idx, shape)
        key = tuple((s.start, s.stop) for s in idx)
        out.setdefault(key, (idx, dev))
    return out


@functools.lru_cache(maxsize=8)
def _field_function(equation, dtype: str):
    """The jitted ``physical_fields`` cast to ``dtype`` on the devices (one compile per equation and dtype, shared
    by the writers of a resumed run)."""
    return jax.jit(lambda state: {k: v.astype(dtype) for k, v in equation.physical_fields(state).items()})


def _replace_atomically(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def read_index(directory: str | os.PathLike) -> dict:
    """The series index of a snapshot directory (or of the directory holding a given .xmf/.json/.h5 file)."""
    p = Path(directory)
    if p.is_file():
        p = p.parent
    try:
        return json.loads((p / INDEX_NAME).read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no snapshot series in {str(p)!r} ({INDEX_NAME} missing)") from None


def grid_metadata(grid) -> dict:
    """What a series records about its grid: :meth:`~solvers.Grid.geometry` plus ``start``, the first point of
    each axis (JSON-ready)."""
    meta = grid.geometry()
    meta["start"] = [float(b.points()[0]) for b in grid.bases]
    return meta


def axis_names(meta: dict) -> tuple[str, ...]:
    """The coordinate name of each axis of an index's ``grid`` (``x, y, z`` for series written before the names
    were recorded)."""
    return tuple(meta.get("names") or ("x", "y", "z")[: len(meta["shape"])])


def axis_points(meta: dict) -> list[np.ndarray]:
    """The points of each axis (float64) from an index's ``grid``: the recorded ``points`` of a non-uniform axis,
    else ``start + i * spacing`` (``start`` 0 for series written before it was recorded)."""
    axes = meta.get("axes") or [{}] * len(meta["shape"])
    start = meta.get("start") or [0.0] * len(meta["shape"])
    out = []
    for n, h, a, x0 in zip(meta["shape"], meta["spacing"], axes, start):
        pts = np.asarray(a["points"], float) if "points" in a else x0 + np.arange(n) * float(h)
        out.append(pts)
    return out


class SnapshotWriter(Output):
    """Writes an equation's :meth:`~solvers.Equation.physical_fields` as an HDF5 + XDMF time series: an output of a
    run (:func:`~solvers.simulate`), or called directly (:meth:`after_step`, :meth:`write`).

    Every process constructs one; a run hands it the initial (or restored) state and every event; the fields are
    computed on the devices, cast to ``dtype`` there, and each process copies one of its blocks at a time to the
    host and writes it. No device or host ever holds a global field.

    Args:
      directory: the series directory (created); a run's is ``RUN/snapshots``.
      equation: the :class:`~solvers.Equation` (its ``grid`` and ``physical_fields``).
      every: write every ``every`` steps (step 0 and the last step included); 0: never by step count.
      times: simulation times to write at (the loop lands on them exactly, see :meth:`stop_time`).
      dtype: ``"float32"`` (default) or ``"float64"`` on disk.
      resume_step: None for a new series (an old one in ``directory`` is removed); else the step a run
        resumes from: the series is kept up to that step and later snapshots are dropped.
      config: JSON-able run parameters stored with the series.
      name: the equation's name in the series index (default: its class name).

    Raises:
      ValueError: bad ``every``, ``times`` or ``dtype``; an equation without physical fields.
      ImportError: h5py is not installed (``pip install "xfft[io]"``).
      SnapshotError: the directory or its index cannot be written.
    """

    def __init__(self, directory: str | os.PathLike, equation, every: int = 0, times: Iterable[float] = (),
                 dtype: str = "float32", resume_step: int | None = None, config: Mapping | None = None,
                 name: str | None = None):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 0:
            raise ValueError(f"every must be an int >= 0, got {every!r}")
        times = tuple(sorted(float(t) for t in times))
        if any(not (math.isfinite(t) and t > 0) for t in times):
            raise ValueError(f"times must be finite and > 0, got {times}")
        if str(dtype) not in DTYPES:
            raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
        self.h5py = require_h5py()
        self.directory = Path(directory).absolute()
        self.every, self.times, self.dtype = int(every), times, np.dtype(str(dtype))
        self.equation, self.grid = equation, equation.grid
        try:
            shapes = jax.eval_shape(equation.physical_fields, equation.abstract_state())
        except NotImplementedError as e:
            raise ValueError(str(e)) from None
        self.fields = list(shapes)
        if COORDINATES in self.fields:
            raise ValueError(f"physical_fields of {type(equation).__name__} names a field {COORDINATES!r}, the "
                             "master files' group of axis points: rename it")
        self._compute = _field_function(equation, self.dtype.name)
        self.process, self.nprocs = jax.process_index(), jax.process_count()
        self.lead = self.process == 0
        g = self.grid
        self.points = [b.points().astype(np.float64) for b in g.bases]
        self.header = {"format": 2, "equation": name or type(equation).__name__,
                       "parameters": dict(config or {}), "fields": self.fields,
                       "grid": grid_metadata(g)}
        if not uniform(self.header["grid"]):
            self.header["coordinates_dtype"] = self.dtype.name
        self.entries: list[dict] = []
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if resume_step is not None and (self.directory / INDEX_NAME).exists():
                self.entries = list(read_index(self.directory)["snapshots"])
                self._truncate(int(resume_step))
            else:
                self._clear()
            if self.lead:
                where = self.directory / COORDINATES_FILE
                if "coordinates_dtype" in self.header and not has_coordinates(where, g.shape, self.dtype):
                    names = axis_names(self.header["grid"])
                    _replace_atomically(where, lambda tmp: write_coordinates(tmp, self.points, names, self.dtype))
                self._write_index()
        except OSError as e:
            raise SnapshotError(f"cannot start the snapshot series in {self.directory}: {e}") from e

    # ----- the run's interface (Output) ---------------------------------------------------------------
    def start(self, run, event) -> None:
        self.after_step(event.state, event.step, event.t, False)

    def on_event(self, event) -> None:
        self.after_step(event.state, event.step, event.t, event.last)

    def stop_time(self, t: float) -> float | None:
        """The next requested time after ``t`` that the time loop must land on exactly, or None."""
        for s in self.times:
            if s - t > _TOL * max(1.0, abs(s)):
                return s
        return None

    def next_step(self, step: int) -> int | None:
        """The next step after ``step`` written by step count (the loop syncs there; times are stop times)."""
        return (step // self.every + 1) * self.every if self.every else None

    def due(self, step: int, t: float, last: bool) -> bool:
        """Whether the state after ``step`` (at time ``t``) is a snapshot."""
        if self.every and (step % self.every == 0 or last):
            return True
        return any(abs(t - s) <= _TOL * max(1.0, abs(s)) for s in self.times)

    def after_step(self, state, step: int, t: float, last: bool = False) -> None:
        """Write ``state`` if ``step``/``t`` is due and not written yet; drop snapshots later than ``step``.

        Every process must call it with the same arguments (it is a collective when it writes).

        Raises:
          SnapshotError: a write failed on some process (on every process, naming which).
        """
        self._truncate(step)
        if not self.due(step, t, last) or any(e["step"] == step for e in self.entries):
            return
        self.write(state, step, t)

    def close(self) -> None:
        """Nothing stays open between snapshots."""

    # ----- writing ---------------------------------------------------------------------------------
    def write(self, state, step: int, t: float) -> dict:
        """Write one snapshot of ``state`` now (collective); returns its index entry."""
        index = len(self.entries)
        fields = self._compute(state)
        err = None
        try:
            path = self.directory / block_name(index, self.process)
            _replace_atomically(path, lambda tmp: self._write_blocks(tmp, fields))
        except (OSError, ValueError, RuntimeError) as e:  # h5py raises OSError/RuntimeError/ValueError
            err = e
        self._agree(err, index, step, "its blocks")
        entry = {"index": index, "step": int(step), "t": float(t), "file": master_name(index), "dtype": self.dtype.name}
        err = None
        if self.lead:
            try:
                _replace_atomically(self.directory / entry["file"],
                                    lambda tmp: self._write_master(tmp, fields, entry))
                self.entries.append(entry)
                self._write_index()
            except (OSError, ValueError, RuntimeError) as e:
                err = e
        else:
            self.entries.append(entry)
        self._agree(err, index, step, "the master and XDMF files")
        return entry

    def _write_blocks(self, path: Path, fields: dict[str, jax.Array]) -> None:
        with self.h5py.File(path, "w") as f:
            f.attrs["process"] = self.process
            for name, arr in fields.items():
                blocks = owners(arr.sharding, arr.shape)
                mine = {idx_dev[1]: idx_dev[0] for idx_dev in blocks.values()}
                group = f.create_group(name)
                for shard in arr.addressable_shards:
                    if shard.device in mine:
                        host = np.asarray(shard.data)  # one block on the host at a time
                        group.create_dataset(block_key(mine[shard.device]), data=host)
                        del host

    def _write_master(self, path: Path, fields: dict[str, jax.Array], entry: dict) -> None:
        h5py = self.h5py
        with h5py.File(path, "w") as f:
            f.attrs["step"], f.attrs["t"] = entry["step"], entry["t"]
            f.attrs["equation"] = self.header["equation"]
            f.attrs["parameters"] = json.dumps(self.header["parameters"], default=str)
            f.attrs["grid"] = json.dumps(self.header["grid"])
            coords = f.create_group(COORDINATES)
            for name, pts in zip(axis_names(self.header["grid"]), self.points):
                coords.create_dataset(name, data=pts)
            for name, arr in fields.items():
                layout = h5py.VirtualLayout(shape=arr.shape, dtype=self.dtype)
                for idx, dev in owners(arr.sharding, arr.shape).values():
                    shape = tuple(s.stop - s.start for s in idx)
                    src = h5py.VirtualSource(block_name(entry["index"], dev.process_index),
                                             f"{name}/{block_key(idx)}", shape=shape, dtype=self.dtype)
                    layout[idx] = src
                f.create_virtual_dataset(name, layout, fillvalue=np.nan)

    def _agree(self, err: BaseException | None, index: int, step: int, what: str) -> None:
        where = f"snapshot {index} (step {step}) in {self.directory}"
        if self.nprocs == 1:
            if err is not None:
                raise SnapshotError(f"writing {what} of {where} failed: {err}") from err
            return
        from jax.experimental import multihost_utils

        flags = np.asarray(multihost_utils.process_allgather(np.int32(err is not None))).ravel()
        bad = [int(p) for p in np.flatnonzero(flags)]
        if bad:
            detail = f": {err}" if err is not None else " (see that process's error)"
            raise SnapshotError(f"writing {what} of {where} failed on process{'es' if len(bad) > 1 else ''} "
                                f"{', '.join(map(str, bad))}{detail}") from err

    # ----- series bookkeeping ------------------------------------------------------------------------
    def _remove(self, index: int) -> None:
        """Remove snapshot ``index``'s files: this process's blocks (process 0 also the master file)."""
        (self.directory / block_name(index, self.process)).unlink(missing_ok=True)
        if self.lead:
            (self.directory / master_name(index)).unlink(missing_ok=True)

    def _clear(self) -> None:
        me = f".p{self.process:04d}.h5"
        for p in self.directory.glob("snap_*.h5"):
            if p.is_file() and (p.name.endswith(me) or (self.lead and ".p" not in p.name)):
                p.unlink(missing_ok=True)
        if self.lead:
            for name in (XDMF_NAME, INDEX_NAME, COORDINATES_FILE):
                (self.directory / name).unlink(missing_ok=True)

    def _truncate(self, step: int) -> None:
        later = [e for e in self.entries if e["step"] > step]
        if not later:
            return
        self.entries = [e for e in self.entries if e["step"] <= step]
        for e in later:
            self._remove(e["index"])
        if self.lead:
            self._write_index()

    def _write_index(self) -> None:
        index = {**self.header, "snapshots": self.entries}
        _replace_atomically(self.directory / INDEX_NAME,
                            lambda tmp: tmp.write_text(json.dumps(index, indent=1, default=str) + "\n"))
        _replace_atomically(self.directory / XDMF_NAME, lambda tmp: tmp.write_text(xdmf(index, axis_points,
                                                                                         axis_names)))
