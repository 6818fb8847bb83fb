"""Small helpers of the grids: the layouts the planner gives, complex arithmetic without complex multiplies."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding

import xfft


@functools.lru_cache(maxsize=128)
def _layouts(mesh: Mesh, shape: tuple[int, ...], kinds: tuple[str, ...], order: str = "natural",
             nyquist: bool = True) -> tuple[NamedSharding, NamedSharding, tuple[int, ...]]:
    """Canonical real sharding of ``shape`` on ``mesh``, the sharding of the spectrum the planner returns in
    ``order`` (``nyquist=False``: a half axis without its Nyquist coefficient), and which grid axis each spectrum
    axis holds (:func:`xfft.spectral_axes`)."""
    real = xfft.real_sharding(mesh, shape, ndim=len(shape))
    rfft = kinds[-1] == "rfft"
    drop = {} if nyquist else {"drop_nyquist": True}
    spec = xfft.spectral_sharding(real, shape, real=rfft, ndim=len(shape), order=order, **drop)
    perm = xfft.spectral_axes(real, shape, real=rfft, ndim=len(shape), order=order, **drop)
    return real, spec, tuple(perm)


def rmul(a: jax.Array, z: jax.Array) -> jax.Array:
    """``a * z`` for a real ``a`` and complex ``z`` without a complex multiply: the real and imaginary parts are
    scaled (``jnp`` would promote ``a`` to complex and do 4 multiplies and 2 adds per element; the values are the
    same). Real ``z``: the plain product."""
    if not jnp.iscomplexobj(z) or jnp.iscomplexobj(a):
        return a * z
    return jax.lax.complex(a * z.real, a * z.imag)


def times_i(z: jax.Array) -> jax.Array:
    """``1j * z`` exactly, by swapping parts (no multiply)."""
    return jax.lax.complex(-z.imag, z.real)


def safe_inverse(a: jax.Array) -> jax.Array:
    """``1 / a`` where ``a > 0``, else 0 (no division by zero is ever evaluated, so gradients stay finite)."""
    return jnp.where(a > 0, 1 / jnp.where(a > 0, a, 1), 0)


def _sharded(fn: Callable, out: NamedSharding, explicit: bool) -> Callable:
    """Apply ``fn`` (which moves data across shards) and land on ``out``, on explicit or auto meshes."""
    if explicit and out.mesh.size > 1:
        return jax.sharding.auto_axes(fn, out_sharding=out)
    if out.mesh.size > 1:
        return lambda a: jax.lax.with_sharding_constraint(fn(a), out)
    return fn
