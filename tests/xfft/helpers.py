"""Shared helpers for the xfft tests: meshes, sharded test data and tolerances."""

from __future__ import annotations

import re

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

import xfft

MESH_SHAPES = [(8,), (1, 8), (8, 1), (2, 4), (4, 2)]
AXIS_TYPES = ["auto", "explicit"]
#: (mesh shape, axis types) of the value matrices: every mesh shape Explicit (the default of ``jax.make_mesh``), a
#: slab and a pencil Auto (the plans are the same; what differs is how the shardings propagate)
MESHES = [(m, "explicit") for m in MESH_SHAPES] + [((8,), "auto"), ((2, 4), "auto")]
MESH_IDS = [f"{'x'.join(map(str, m))}-{t}" for m, t in MESHES]
RTOL = {np.float32: 1e-5, np.float64: 1e-12, np.complex64: 1e-5, np.complex128: 1e-12}


def mesh(shape, axis_types: str = "explicit"):
    return xfft.make_mesh(shape, axis_types=axis_types)


def grid_sharding(m, grid_shape, batch: int = 0) -> NamedSharding:
    """The canonical real sharding for ``grid_shape`` (checked divisible) with ``batch`` leading axes."""
    ndim = len(grid_shape)
    s = xfft.real_sharding(m, grid_shape, ndim=ndim)
    return NamedSharding(m, PartitionSpec(*((None,) * batch), *s.spec))


def random(shape, dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def rel_err(got, ref) -> float:
    got = np.asarray(got)
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))


def tol(dtype) -> float:
    return RTOL[np.dtype(dtype).type]


def put(a: np.ndarray, sharding: NamedSharding) -> jax.Array:
    return jax.device_put(a, sharding)


def hlo(f, *args) -> str:
    return jax.jit(f).lower(*args).compile().as_text()


def count_op(text: str, op: str) -> int:
    """Number of ``op`` instructions in compiled HLO text (``all-to-all(``, ``all-gather(``, ...)."""
    return len(re.findall(rf"[\s=]{re.escape(op)}(?:-start)?\(", text))


class DelegatingBackend:
    """A minimal backend object (no declared capabilities) that counts its calls and runs native's transforms.

    ``strict=True`` sets the ``strict`` attribute; otherwise it is left out (the registry's default applies).
    """

    def __init__(self, name: str, strict: bool = False) -> None:
        import xfft.backends

        self.name, self.calls, self._native = name, 0, xfft.backends.get_backend("native")
        if strict:
            self.strict = True

    def forward(self, x, axes, norm, real):
        self.calls += 1
        return self._native.forward(x, axes, norm, real)

    def inverse(self, k, axes, norm, real, real_shape):
        self.calls += 1
        return self._native.inverse(k, axes, norm, real, real_shape)
