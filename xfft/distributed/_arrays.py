"""Global arrays from per-process data, agreement checks between processes, and small-array debugging helpers."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._detect import _int

#: seconds process 0 waits, after every other process has acknowledged a disagreement, before it raises (and its
#: exit ends the coordination service): time for the others to print the same error
_REPORT_GRACE_S = 1.0

_SEQ: dict[str, int] = {}


def assert_same(value: Any, what: str, timeout_s: float = 60.0) -> None:
    """Check that every process passes an equal ``value`` (compared by ``repr``); a no-op for one process.

    Uses the coordinator's key-value store, never an XLA collective, so processes that disagree on a shape
    get a clear error instead of a hang or mismatched collectives. Every process must call it in the same
    order with the same ``what``.

    Args:
      value: anything with a deterministic ``repr`` (shapes, dtypes, specs).
      what: a short description used in the key and the error message.
      timeout_s: how long to wait for the other processes to arrive.

    Raises:
      ValueError: the processes disagree (the message lists each process's value).
      RuntimeError: another process did not arrive within ``timeout_s``.
    """
    import jax
    from jax._src import distributed as jdist

    if not isinstance(what, str) or not what:
        raise TypeError(f"what must be a non-empty string, got {what!r}")
    client = jdist.global_state.client
    n = jax.process_count()
    if n == 1 or client is None:
        return
    me = jax.process_index()
    seq = _SEQ[what] = _SEQ.get(what, 0) + 1
    key = f"xfft/assert_same/{what}/{seq}"
    mine = repr(value)
    client.key_value_set(f"{key}/{me}", mine)
    values = {}
    deadline = time.monotonic() + timeout_s
    for p in range(n):
        if p == me:
            values[p] = mine
            continue
        try:
            values[p] = client.blocking_key_value_get(f"{key}/{p}", max(1, int(1000 * (deadline - time.monotonic()))))
        except Exception as e:  # XlaRuntimeError(DEADLINE_EXCEEDED) or a dead coordinator
            raise RuntimeError(f"process {p} did not reach the check of {what} (call {seq}) within {timeout_s:g} "
                               f"s; processes must make the same calls in the same order ({e})") from None
    try:
        # Nobody raises (and exits) before everyone has read every value: each rank gets the same error.
        client.wait_at_barrier(f"{key}/read", max(1, int(1000 * (deadline - time.monotonic()))))
    except Exception as e:
        raise RuntimeError(f"not every process finished the check of {what} (call {seq}) within {timeout_s:g} s "
                           f"({e})") from None
    if len(set(values.values())) > 1:
        # The coordination service lives in process 0: if it raised (and exited) as soon as its own barrier
        # returned, the others' barrier replies could be lost ("Socket closed") and they would report that instead
        # of this error. So every other process acknowledges first, and process 0 waits for the acknowledgements,
        # then a moment more: its exit ends the service, and a process whose error-polling thread sees that before
        # it has printed this error is terminated by JAX without it (seen once in many runs of the 4-process test).
        if me == 0:
            for p in range(1, n):
                try:
                    client.blocking_key_value_get(f"{key}/ack/{p}", 10_000)
                except Exception:  # a process that died meanwhile: report the disagreement anyway
                    break
            time.sleep(_REPORT_GRACE_S)
        else:
            client.key_value_set(f"{key}/ack/{me}", "1")
        groups: dict[str, list[int]] = {}
        for p, v in values.items():
            groups.setdefault(v, []).append(p)
        detail = "; ".join(f"process{'es' if len(ps) > 1 else ''} {','.join(map(str, ps))}: {v}"
                           for v, ps in groups.items())
        raise ValueError(f"processes disagree on {what}: {detail}. Every process must build the same global "
                         "array (same shape, dtype and sharding)")


def _norm_index(index: tuple, shape: tuple[int, ...]) -> tuple[slice, ...]:
    out = []
    for s, n in zip(tuple(index) + (slice(None),) * (len(shape) - len(tuple(index))), shape):
        start, stop, _ = s.indices(n)
        out.append(slice(start, stop))
    return tuple(out)


def global_array(shape: Sequence[int], sharding: Any, fn: Callable[[tuple[slice, ...]], Any],
                 dtype: Any = None) -> Any:
    """Build a global ``jax.Array`` block by block: each process computes only its devices' blocks.

    Args:
      shape: global shape.
      sharding: a ``jax.sharding.Sharding`` (e.g. :func:`xfft.real_sharding`), spanning any processes.
      fn: ``fn(index) -> array``: the block at ``index``, a tuple of ``slice`` with concrete ``start`` and
        ``stop`` (one per axis); the result may broadcast to the block's shape (e.g. ``np.mgrid``/``ogrid``).
      dtype: dtype of the result (default: ``fn``'s).

    Returns:
      A ``jax.Array`` of ``shape`` with ``sharding``. No device and no process ever holds the whole array.

    Raises:
      TypeError: bad ``sharding`` or ``fn``.
      ValueError: bad shape, a block of the wrong shape, or processes passing different shapes/dtypes/
        shardings (checked with :func:`assert_same`, so it cannot hang).
    """
    import jax

    try:
        shape = tuple(_int(n, "shape entry", 0) for n in shape)
    except TypeError:
        raise TypeError(f"shape must be a sequence of ints, got {shape!r}") from None
    if not isinstance(sharding, jax.sharding.Sharding):
        raise TypeError(f"sharding must be a jax.sharding.Sharding, got {type(sharding).__name__}")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    dt = None if dtype is None else np.dtype(dtype)
    assert_same((shape, str(dt), str(getattr(sharding, "spec", sharding)),
                 tuple(getattr(getattr(sharding, "mesh", None), "shape", {}).items())),
                "global_array(shape, dtype, sharding)")

    def block(index):
        idx = _norm_index(index, shape)
        want = tuple(s.stop - s.start for s in idx)
        b = np.asarray(fn(idx), dtype=dt)
        try:
            b = np.broadcast_to(b, want)
        except ValueError:
            raise ValueError(f"fn returned a block of shape {b.shape} for index {idx}, expected {want}") from None
        return np.ascontiguousarray(b)

    return jax.make_array_from_callback(shape, sharding, block)


def from_process_local(local_data: Any, sharding: Any, global_shape: Sequence[int] | None = None) -> Any:
    """Assemble a global array from each process's contiguous part (``jax.make_array_from_process_local_data``).

    Args:
      local_data: this process's part of the global array (numpy), laid out as ``sharding`` assigns it.
      sharding: a ``jax.sharding.Sharding`` spanning the processes.
      global_shape: the global shape (default: inferred by JAX from the local shapes).

    Returns:
      The global ``jax.Array``.

    Raises:
      ValueError: processes disagree on the global shape, dtype or sharding (no hang).
    """
    import jax

    if not isinstance(sharding, jax.sharding.Sharding):
        raise TypeError(f"sharding must be a jax.sharding.Sharding, got {type(sharding).__name__}")
    local = np.asarray(local_data)
    gshape = None if global_shape is None else tuple(_int(n, "global_shape entry", 0) for n in global_shape)
    assert_same((gshape, str(local.dtype), str(getattr(sharding, "spec", sharding))),
                "from_process_local(global_shape, dtype, sharding)")
    return jax.make_array_from_process_local_data(sharding, local, gshape)


def gather(x: Any, max_bytes: int = 1 << 28) -> np.ndarray:
    """The full value of a (small) global array on every process, as numpy, for checks and debugging.

    Args:
      x: a global ``jax.Array`` (any sharding, any processes) or anything ``numpy.asarray`` accepts.
      max_bytes: refuse arrays larger than this (gathering defeats the point of sharding).

    Returns:
      ``numpy.ndarray`` with the global value (a process-local array is returned as it is).

    Raises:
      ValueError: the array is larger than ``max_bytes``.
    """
    import jax
    from jax.experimental import multihost_utils

    if isinstance(x, jax.Array):
        nbytes = x.size * x.dtype.itemsize
        if nbytes > max_bytes:
            raise ValueError(f"gather() is for small arrays: {tuple(x.shape)} {x.dtype} is {nbytes} bytes "
                             f"(> max_bytes={max_bytes})")
        if not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


def print0(*args: Any, **kwargs: Any) -> None:
    """``print`` on process 0 only (flushed), for logs that should appear once per run."""
    import jax

    if jax.process_index() == 0:
        kwargs.setdefault("flush", True)
        print(*args, **kwargs)
