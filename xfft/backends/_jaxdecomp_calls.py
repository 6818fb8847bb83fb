"""jaxDecomp's transforms as the jaxdecomp backend calls them: the library (imported once), the routes, and the
two engines (the per-device kernel in ``shard_map``, and the public ``pfft3d``/``pifft3d``) between natural-order
layouts. See :mod:`xfft.backends.jaxdecomp`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from .._layout import Layout, layout_to_spec

MIN_VERSION = "0.3.1"
INSTALL_HINT = 'pip install "xfft[jaxdecomp]"'

# Per decomposition: jaxDecomp's real-space and spectral specs as (mesh axis 0 or 1, or None) per jaxDecomp
# array axis, and the block transposes from natural real order to jaxDecomp's input (IN) and from its
# spectral output to natural order (OUT).
_KINDS: dict[str, tuple[tuple[Any, ...], tuple[Any, ...], tuple[int, ...], tuple[int, ...]]] = {
    "pencils": ((0, 1, None), (0, 1, None), (0, 1, 2), (2, 0, 1)),
    "slab_xy": ((0, None, None), (None, 0, None), (0, 2, 1), (2, 1, 0)),
    "slab_yz": ((None, 1, None), (None, 1, None), (2, 0, 1), (0, 1, 2)),
    "slab_1d": ((0, None, None), (None, 0, None), (0, 2, 1), (2, 1, 0)),
}


@functools.lru_cache(maxsize=1)
def _library() -> SimpleNamespace:
    """Import jaxdecomp once; ImportError with the install command if it is missing or incompatible."""
    try:
        import jaxdecomp
        from jaxdecomp import PENCILS, SLAB_XY, SLAB_YZ, pfft3d, pifft3d
        from packaging.version import Version
    except Exception as e:  # missing package, missing `packaging`, or a broken compiled extension
        raise ImportError(f"the jaxdecomp backend needs jaxdecomp>={MIN_VERSION} ({type(e).__name__}: {e}); "
                          f"install it with: {INSTALL_HINT}") from e
    version = str(getattr(jaxdecomp, "__version__", "0"))
    if Version(version) < Version(MIN_VERSION):
        raise ImportError(f"the jaxdecomp backend needs jaxdecomp>={MIN_VERSION}, found {version}; "
                          f"install it with: {INSTALL_HINT}")
    kernel = None
    try:  # private: the per-device program jaxDecomp's partitioner runs (see the module docstring)
        import inspect

        from jaxdecomp._src.jax.fft import per_shard_impl

        params = set(inspect.signature(per_shard_impl).parameters)
        if {"x", "fft_type", "adjoint", "pencil_type", "x_axis_name", "y_axis_name"} <= params:
            kernel = per_shard_impl
    except Exception:
        pass
    return SimpleNamespace(module=jaxdecomp, version=version, pfft3d=pfft3d, pifft3d=pifft3d, kernel=kernel,
                           SLAB_XY=SLAB_XY, SLAB_YZ=SLAB_YZ, PENCILS=PENCILS)


@dataclass(frozen=True)
class _Route:
    """How one transform runs through jaxDecomp (everything static)."""

    kind: str
    engine: str  # "kernel" or "pfft3d"
    mesh: Any
    explicit: bool
    nbatch: int
    jd_real: tuple[str | None, ...]  # jaxDecomp's real-space spec (3 grid axes, in its axis order)
    jd_spec: tuple[str | None, ...]  # jaxDecomp's spectral spec
    out_layout: Layout  # native's output layout (full, natural order)


def _natural(jd: tuple[str | None, ...], perm: tuple[int, ...], to_natural: bool) -> tuple[tuple[str, ...], ...]:
    """Natural-order grid layout from jaxDecomp's spec: ``jd[i]`` sits on natural axis ``perm[i]`` (IN perms)
    or natural axis ``i`` holds ``jd[perm[i]]`` (OUT perms)."""
    out: list[tuple[str, ...]] = [()] * 3
    for i in range(3):
        if to_natural:
            g = jd[perm[i]]
            out[i] = () if g is None else (g,)
        else:
            out[perm[i]] = () if jd[i] is None else (jd[i],)
    return tuple(out)


def _transpose(x: jax.Array, perm: tuple[int, ...], batch: int) -> jax.Array:
    if perm == (0, 1, 2):
        return x
    return jnp.transpose(x, tuple(range(batch)) + tuple(batch + p for p in perm))


def _inverse_perm(perm: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(range(len(perm)), key=perm.__getitem__))


def _perms(route: _Route, inverse: bool) -> tuple[tuple[int, ...], tuple[int, ...], tuple, tuple]:
    """Transposes natural -> jaxDecomp order and back, and jaxDecomp's source and destination specs."""
    _, _, perm_in, perm_out = _KINDS[route.kind]
    if inverse:
        return _inverse_perm(perm_out), _inverse_perm(perm_in), route.jd_spec, route.jd_real
    return perm_in, perm_out, route.jd_real, route.jd_spec


def _kernel_call(x: jax.Array, route: _Route, inverse: bool) -> jax.Array:
    """Unnormalized transform between natural-order layouts: jaxDecomp's per-device kernel in ``shard_map``.

    Plain JAX inside, so ``grad``, ``jvp``, ``linear_transpose`` and ``vmap`` work as for native.
    """
    return _kernel_fn(route, inverse)(x)


@functools.lru_cache(maxsize=256)
def _kernel_fn(route: _Route, inverse: bool) -> Callable[[jax.Array], jax.Array]:
    lib = _library()
    to_jd, from_jd, src, dst = _perms(route, inverse)
    b = 1 if route.nbatch else 0
    names = tuple(route.mesh.axis_names) + (None,)
    pencil_type, x_name, y_name = {"pencils": (lib.PENCILS, names[0], names[1]),
                                   "slab_xy": (lib.SLAB_XY, names[0], None),
                                   "slab_1d": (lib.SLAB_XY, names[0], None),
                                   "slab_yz": (lib.SLAB_YZ, None, names[1])}[route.kind]
    kernel = functools.partial(lib.kernel, fft_type=jax.lax.FftType.IFFT if inverse else jax.lax.FftType.FFT,
                               adjoint=False, pencil_type=pencil_type, x_axis_name=x_name, y_axis_name=y_name)
    # The block transposes sit next to the kernel's own inside the body, so XLA can merge them.
    body = lambda blk: _transpose(kernel(_transpose(blk, to_jd, b)), from_jd, b)  # noqa: E731
    mapped = jax.shard_map(body, mesh=route.mesh, in_specs=_spec(_natural(src, to_jd, to_natural=False), b),
                           out_specs=_spec(_natural(dst, from_jd, to_natural=True), b), check_vma=False)
    # Under jit (one per route, cached), so that partial evaluation (eager jax.linear_transpose) never runs the
    # kernel's constant-only part as a shard_map of its own, which an abstract mesh cannot execute.
    return jax.jit(mapped)


def _pfft3d_call(x: jax.Array, route: _Route, inverse: bool) -> jax.Array:
    """Unnormalized transform between natural-order layouts through the public ``pfft3d`` / ``pifft3d``."""
    lib = _library()
    to_jd, from_jd, src, dst = _perms(route, inverse)
    b = 1 if route.nbatch else 0
    x = _transpose(x, to_jd, b)
    # norm="forward" makes pifft3d unnormalized; xfft scales over the transformed axes itself.
    fn = functools.partial(lib.pifft3d, norm="forward") if inverse else functools.partial(lib.pfft3d,
                                                                                           norm="backward")
    in_spec, out_spec = PartitionSpec(*(None,) * b, *src), PartitionSpec(*(None,) * b, *dst)
    if route.explicit:
        y = jax.sharding.auto_axes(fn, out_sharding=NamedSharding(route.mesh, out_spec))(x)
    else:
        x = jax.lax.with_sharding_constraint(x, NamedSharding(route.mesh, in_spec))
        y = jax.lax.with_sharding_constraint(fn(x), NamedSharding(route.mesh, out_spec))
    return _transpose(y, from_jd, b)


def _spec(layout: Layout, batch: int) -> PartitionSpec:
    return layout_to_spec(((),) * batch + tuple(layout))


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _pfft3d_transform(x: jax.Array, route: _Route, inverse: bool) -> jax.Array:
    """:func:`_pfft3d_call` with a VJP: jaxDecomp's own transpose rule fails on Explicit meshes."""
    return _pfft3d_call(x, route, inverse)


def _pfft3d_transform_fwd(x: jax.Array, route: _Route, inverse: bool) -> tuple[jax.Array, None]:
    return _pfft3d_call(x, route, inverse), None


def _pfft3d_transform_bwd(route: _Route, inverse: bool, _: None, ct: jax.Array) -> tuple[jax.Array]:
    # The unnormalized 3D DFT F is symmetric: its transpose is F = conj(conj(F) conj(.)), i.e. the unnormalized
    # opposite transform applied to conj(ct), conjugated (likewise for the inverse); layouts swap as needed.
    return (jnp.conj(_pfft3d_call(jnp.conj(ct), route, not inverse)),)


_pfft3d_transform.defvjp(_pfft3d_transform_fwd, _pfft3d_transform_bwd)
