"""Reading snapshot series back: a lazily loaded xarray.Dataset, or one field as a sharded jax.Array."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jax
import numpy as np

from .snapshots import axis_names, axis_points, read_index, require_h5py


def _require_xarray():
    try:
        import xarray
    except ImportError:
        raise ImportError('open_snapshots needs xarray: pip install "xfft[io]"') from None
    return xarray


def _series_dir(path: str | os.PathLike) -> Path:
    p = Path(path)
    if p.is_dir() and not (p / "snapshots.json").exists() and (p / "snapshots" / "snapshots.json").exists():
        return p / "snapshots"  # a run directory
    return p.parent if p.is_file() else p


def _lazy_series(xr, files: list[Path], field: str, shape: tuple[int, ...], dtype: np.dtype):
    """A (time, *shape) array that reads only what is indexed, one master file per time."""
    from xarray.backends import BackendArray
    from xarray.core import indexing

    h5py = require_h5py()

    class Series(BackendArray):
        def __init__(self):
            self.shape = (len(files),) + tuple(shape)
            self.dtype = np.dtype(dtype)

        def __getitem__(self, key):
            return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC, self._raw)

        def _raw(self, key):
            tkey, rest = key[0], tuple(key[1:])
            picks = [tkey] if isinstance(tkey, (int, np.integer)) else range(len(files))[tkey]
            out = []
            for i in picks:
                with h5py.File(files[i], "r") as f:
                    out.append(np.asarray(f[field][rest], dtype=self.dtype))
            if isinstance(tkey, (int, np.integer)):
                return out[0]
            if not out:
                sub = np.empty(shape, self.dtype)[rest]
                return np.empty((0,) + sub.shape, self.dtype)
            return np.stack(out)

    return indexing.LazilyIndexedArray(Series())


def open_snapshots(path: str | os.PathLike):
    """Open a snapshot series as a lazily loaded ``xarray.Dataset``.

    Args:
      path: the series directory (``RUN/snapshots``), the run directory, or its ``snapshots.xmf``/``.json``.

    Returns:
      ``xarray.Dataset`` with one variable per field, dimensions ``time`` and the grid's axis names in array
      order (``time, x, y, z`` for the periodic box, ``time, y, x, z`` for the channel, ``time, z, x`` for 2D
      convection), the true coordinates of every axis (the Chebyshev points of a wall-normal axis, cell centres
      of a cosine/sine axis, ``i * L / n`` of a periodic one), a ``step`` coordinate along ``time``, and
      attributes ``equation``, ``parameters`` (JSON) and ``grid`` (JSON: the grid's geometry). Series written
      before the axis names were recorded open as before: dimensions ``x, y(, z)``, coordinates ``i * L / n``.
      Values are read from disk only when indexed.

    Raises:
      FileNotFoundError: no series at ``path``. ImportError: xarray or h5py missing.
    """
    xr = _require_xarray()
    d = _series_dir(path)
    index = read_index(d)
    grid = index["grid"]
    shape = tuple(grid["shape"])
    dims = axis_names(grid)
    entries = index["snapshots"]
    files = [d / e["file"] for e in entries]
    dtype = np.result_type(*[np.dtype(e["dtype"]) for e in entries]) if entries else np.dtype("float32")
    coords = {ax: (ax, pts) for ax, pts in zip(dims, axis_points(grid))}
    coords["time"] = ("time", np.array([e["t"] for e in entries], dtype=float))
    coords["step"] = ("time", np.array([e["step"] for e in entries], dtype=np.int64))
    data = {name: xr.Variable(("time",) + dims, _lazy_series(xr, files, name, shape, dtype))
            for name in index["fields"]}
    attrs = {"equation": index["equation"], "parameters": json.dumps(index["parameters"], default=str),
             "grid": json.dumps(grid)}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def load_snapshot(path: str | os.PathLike, field: str, mesh=None, *, index: int | None = None,
                  time: float | None = None) -> jax.Array:
    """Load one field of one snapshot as a sharded ``jax.Array``; each process reads only its own blocks.

    Args:
      path: as for :func:`open_snapshots`.
      field: the field name (e.g. ``"u"``, ``"vorticity_magnitude"``).
      mesh: the device mesh (:func:`xfft.make_mesh`); None: one device.
      index: snapshot number (negative counts from the end); default the last one.
      time: pick the snapshot at this time instead (nearest within 1e-9 relative).

    Returns:
      The field (stored dtype) with :func:`xfft.real_sharding` of ``mesh``, the layout the solvers use.

    Raises:
      ValueError: unknown field, both ``index`` and ``time``, no snapshot at ``time``. IndexError: bad index.
    """
    import xfft

    d = _series_dir(path)
    meta = read_index(d)
    if field not in meta["fields"]:
        raise ValueError(f"unknown field {field!r}; the series has {', '.join(meta['fields'])}")
    entries = meta["snapshots"]
    if index is not None and time is not None:
        raise ValueError("pass index or time, not both")
    if time is not None:
        hits = [e for e in entries if abs(e["t"] - time) <= 1e-9 * max(1.0, abs(time))]
        if not hits:
            raise ValueError(f"no snapshot at time={time}; times: {[e['t'] for e in entries]}")
        entry = hits[-1]
    else:
        if not entries:
            raise IndexError(f"the series in {str(d)!r} holds no snapshot")
        entry = entries[-1 if index is None else index]
    shape = tuple(meta["grid"]["shape"])
    mesh = mesh if mesh is not None else xfft.make_mesh((1,), devices=jax.devices()[:1])
    sharding = xfft.real_sharding(mesh, shape, ndim=len(shape))
    h5py = require_h5py()
    with h5py.File(d / entry["file"], "r") as f:
        dset = f[field]
        return jax.make_array_from_callback(shape, sharding, lambda idx: np.asarray(dset[idx]))
