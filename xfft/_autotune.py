"""A measured choice of decomposition: time every mesh the devices allow and keep the fastest.

:func:`autotune` times a forward plus inverse transform (or a step function you give) on the slab mesh and on a
pencil mesh of every factorization of the device count, in each spectral order and with each installed backend
that runs the transform itself, round-robin, and caches the timings per device kind, device count, shape, dtype and
what was timed in a JSON file, so later runs on the same kind of machine reuse the choice without timing again.
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from ._fft import ixfftn, ixrfftn, xfftn, xrfftn
from ._grid import make_mesh, real_sharding
from .backends import available_backends, get_backend

#: environment variable naming the cache file (default ``~/.cache/xfft/autotune.json``)
ENV_CACHE = "XFFT_AUTOTUNE_CACHE"


@dataclass(frozen=True)
class Candidate:
    """One way to run the transform: a mesh shape (``(8,)`` slab, ``(2, 4)`` pencil), an order, a backend."""

    mesh_shape: tuple[int, ...]
    order: str = "natural"
    backend: str = "native"

    @property
    def label(self) -> str:
        kind = "slab" if len(self.mesh_shape) == 1 else "pencil"
        return f"{kind} {'x'.join(map(str, self.mesh_shape))}, {self.order}, {self.backend}"

    def as_dict(self) -> dict:
        return {"mesh": list(self.mesh_shape), "order": self.order, "backend": self.backend}


@dataclass
class Tuning:
    """The result of :func:`autotune`: the fastest candidate's ``mesh`` (with its ``order`` and ``backend``),
    every candidate's median ``timings`` (seconds; None where it could not run, with the reason in ``skipped``),
    whether it came from the ``cache`` file, and the cache ``key``."""

    mesh: Mesh
    best: Candidate
    timings: list[dict]
    key: str
    cached: bool
    cache: Path | None
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def order(self) -> str:
        return self.best.order

    @property
    def backend(self) -> str:
        return self.best.backend

    def summary(self) -> dict:
        """JSON-ready: the choice, every timing, the key and whether it was cached (for ``run.json``)."""
        return {"choice": self.best.as_dict(), "timings": self.timings, "key": self.key, "cached": self.cached,
                "cache": None if self.cache is None else str(self.cache)}


def mesh_shapes(devices: int) -> list[tuple[int, ...]]:
    """The slab ``(devices,)`` and every pencil ``(a, b)``, ``a * b = devices``, ``a, b >= 2``."""
    out: list[tuple[int, ...]] = [(devices,)]
    out += [(a, devices // a) for a in range(2, devices // 2 + 1) if devices % a == 0]
    return out


def default_cache() -> Path:
    """``$XFFT_AUTOTUNE_CACHE``, else ``~/.cache/xfft/autotune.json``."""
    env = os.environ.get(ENV_CACHE)
    return Path(env) if env else Path.home() / ".cache" / "xfft" / "autotune.json"


def cache_key(shape: Sequence[int], dtype: Any, what: str, devices: Sequence | None = None) -> str:
    """``device kind | device count | shape | dtype | what``: what a cached choice is valid for."""
    devs = list(jax.devices() if devices is None else devices)
    return f"{devs[0].device_kind}|{len(devs)}|{'x'.join(map(str, shape))}|{jnp.dtype(dtype).name}|{what}"


def autotune(shape: Sequence[int], dtype: Any = "float32", *, real: bool = True, ndim: int | None = None,
             step: Callable[[Mesh, Candidate], tuple[Callable, tuple]] | None = None, name: str | None = None,
             orders: Sequence[str] = ("natural", "transposed"), backends: Sequence[str] | None = None,
             mesh_shapes_: Sequence[tuple[int, ...]] | None = None, devices: Sequence | None = None,
             repeats: int = 5, cache: str | os.PathLike | None | bool = None, refresh: bool = False,
             timer: Callable[[Candidate], float] | None = None) -> Tuning:
    """Time the decompositions the devices allow and return the fastest (cached per machine kind and problem).

    Args:
      shape: the real-space grid (its last ``ndim`` axes are transformed).
      dtype: the real dtype of the fields (``float32``/``float64``; complex inputs: pass ``real=False``).
      real: time ``xrfftn`` + ``ixrfftn`` (True) or ``xfftn`` + ``ixfftn``.
      ndim: transformed axes (default: all of ``shape``).
      step: instead of the transform, ``step(mesh, candidate) -> (fn, args)``: a compiled function and its
        arguments on that mesh (a solver's step); ``name`` must then say what it is (part of the cache key).
      orders, backends: the spectral orders and backends to try (default: every installed backend).
      mesh_shapes_: the mesh shapes to try (default: :func:`mesh_shapes` of the device count).
      devices: the devices (default ``jax.devices()``).
      repeats: timed calls per candidate (median; the candidates take turns, after one warm-up call each).
      cache: the JSON cache file (default :func:`default_cache`); False: no cache.
      refresh: time again even where the cache has an entry.
      timer: ``timer(candidate) -> seconds`` instead of running anything (tests, or timings from elsewhere).

    Returns:
      A :class:`Tuning`: ``.mesh`` is the mesh to use, ``.order`` and ``.backend`` the rest of the choice.

    Raises:
      ValueError: bad arguments (naming them), or no candidate could run (the reasons listed).
    """
    shape = tuple(int(n) for n in shape)
    if not shape or any(n < 1 for n in shape):
        raise ValueError(f"shape must be positive integers, got {shape!r}")
    ndim = len(shape) if ndim is None else int(ndim)
    if not 1 <= ndim <= len(shape):
        raise ValueError(f"ndim must be between 1 and len(shape)={len(shape)}, got {ndim}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if step is not None and not name:
        raise ValueError("name must say what step times (it is part of the cache key)")
    bad = [o for o in orders if o not in ("natural", "transposed")]
    if bad or not orders:
        raise ValueError(f"orders must be 'natural' and/or 'transposed', got {orders!r}")
    devs = list(jax.devices() if devices is None else devices)
    backends = tuple(available_backends() if backends is None else backends)
    shapes = [tuple(m) for m in (mesh_shapes(len(devs)) if mesh_shapes_ is None else mesh_shapes_)]
    what = name if step is not None else f"{'r' if real else 'c'}fft{ndim}"
    key = cache_key(shape, dtype, what, devs)
    path = None if cache is False else Path(default_cache() if cache in (None, True) else cache)
    stored = _read(path).get(key) if path is not None and not refresh else None
    if stored is not None:
        best = Candidate(tuple(stored["choice"]["mesh"]), stored["choice"]["order"], stored["choice"]["backend"])
        return Tuning(_mesh(best, devs), best, stored["timings"], key, True, path)
    cands = [Candidate(m, o, b) for m in shapes for o in orders for b in backends]
    times: dict[Candidate, list[float]] = {}
    skipped: dict[str, str] = {}
    runs: dict[Candidate, tuple[Callable, tuple]] = {}
    for c in cands:
        if timer is not None:
            times[c] = [float(timer(c))]
            continue
        try:
            runs[c] = _prepare(c, shape, dtype, real, ndim, step, devs)
            times[c] = []
        except (ValueError, NotImplementedError, TypeError) as e:
            skipped[c.label] = str(e).splitlines()[0]
    for _ in range(repeats if timer is None else 0):  # round-robin: load changes hit every candidate alike
        for c, (fn, args) in runs.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*args))
            times[c].append(time.perf_counter() - t0)
    timings = [{**c.as_dict(), "seconds": statistics.median(times[c]) if c in times else None,
                "skipped": skipped.get(c.label)} for c in cands]
    ok = [c for c in cands if c in times and times[c]]
    if not ok:
        raise ValueError(f"autotune: no decomposition of a {shape} grid runs on {len(devs)} devices: {skipped}")
    best = min(ok, key=lambda c: statistics.median(times[c]))
    best = _agree(best, ok)
    if path is not None:
        _write(path, key, {"choice": best.as_dict(), "timings": timings, "repeats": repeats, "jax": jax.__version__,
                           "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
                           "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None})
    return Tuning(_mesh(best, devs), best, timings, key, False, path, skipped)


def _mesh(c: Candidate, devs: list) -> Mesh:
    return make_mesh(c.mesh_shape, devices=devs)


def _strict(name: str):
    """The backend ``name`` set to raise instead of falling back to native (a fallback would time native)."""
    b = get_backend(name)
    if name == "native" or getattr(b, "strict", False):
        return b
    b = copy.copy(b)
    for attr in ("strict", "_strict"):  # a plain attribute, or the one behind a property (JaxDecompBackend)
        try:
            setattr(b, attr, True)
            if getattr(b, "strict", False):
                return b
        except AttributeError:
            continue
    return get_backend(name)  # a backend that cannot be made strict: timed as it is


def _prepare(c: Candidate, shape: tuple[int, ...], dtype, real: bool, ndim: int, step, devs: list):
    """The compiled function of candidate ``c`` and its arguments, after one warm-up call (compiles it)."""
    mesh = _mesh(c, devs)
    if step is not None:
        fn, args = step(mesh, c)
    else:
        sharding = real_sharding(mesh, shape, ndim=ndim)
        b = _strict(c.backend)
        cdt = jnp.result_type(dtype, jnp.complex64)
        if real:
            def fn(x):
                return ixrfftn(xrfftn(x, ndim=ndim, order=c.order, backend=b), s=shape[-ndim:], ndim=ndim,
                               order=c.order, backend=b)
        else:
            def fn(x):
                return ixfftn(xfftn(x, ndim=ndim, order=c.order, backend=b), s=shape[-ndim:], ndim=ndim,
                              order=c.order, backend=b)
        x = jax.jit(lambda: jnp.ones(shape, dtype if real else cdt), out_shardings=sharding)()
        fn, args = jax.jit(fn), (x,)
    jax.block_until_ready(fn(*args))
    return fn, args


def _agree(best: Candidate, ok: list[Candidate]) -> Candidate:
    """Every process takes process 0's choice (their timings differ)."""
    if jax.process_count() == 1:
        return best
    import numpy as np
    from jax.experimental import multihost_utils

    i = int(multihost_utils.broadcast_one_to_all(np.int32(ok.index(best))))
    return ok[i]


def _read(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # an unreadable cache is timed again (and rewritten)


def _write(path: Path, key: str, entry: dict) -> None:
    """Add ``entry`` under ``key`` (process 0 only; atomic rename)."""
    if jax.process_index() != 0:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _read(path)
        data[key] = entry
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass  # no cache is no error: the next run times again
