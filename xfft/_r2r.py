"""Distributed real-to-real transforms (DCT/DST types 1-4) and per-axis mixed transforms (``xr2rn``).

Distribution reuses the complex FFT planner: :func:`xfft._layout.plan_forward` gives the same local stages and
all-to-all moves as :func:`xfft.xfftn` over the same axes, and a small interpreter here runs each ``Fft(axes)``
stage with every axis's own kind (FFT, DCT or DST of a type) inside ``jax.shard_map``. So a slab needs one
all-to-all and a pencil two, whatever the kinds, and the output layout is the spectral layout of ``xfftn``.
Inverses return the input layout. Every function is jit-able, differentiable and vmap-able (plain JAX inside).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import jax
import jax.numpy as jnp

from ._fft import _as_array, _check_norm
from ._layout import Fft, Move, Plan, Rfft, layout_to_spec, plan_forward, plan_inverse
from ._partition import Placement, _all_to_all, _constrain, input_layout, placement
from ._r2r_local import r2r

#: transform kinds accepted by :func:`xr2rn`, one per transformed axis
KINDS = ("fft", "rfft") + tuple(f"{k}{t}" for k in ("dct", "dst") for t in (1, 2, 3, 4))

Kinds = tuple[tuple[int, str], ...]  # (array axis, kind) pairs


def _apply(x: jax.Array, axis: int, kind: str, norm: str, inverse: bool) -> jax.Array:
    if kind == "fft":
        return (jnp.fft.ifft if inverse else jnp.fft.fft)(x, axis=axis, norm=norm)
    return r2r(x, kind[:3], int(kind[3]), axis, norm, inverse)


def run_local(x: jax.Array, plan: Plan, kinds: Kinds, norm: str, sizes: dict[str, int]) -> jax.Array:
    """Execute ``plan`` on the local block ``x``, with each ``Fft`` axis transformed by its kind.

    Raises:
      TypeError: a plan step this interpreter does not know.
    """
    kind = dict(kinds)
    for step in plan.steps:
        if isinstance(step, Fft):
            # real-to-real axes first, while the data may still be real; FFT axes batched in one call
            for ax in step.axes:
                if kind[ax] != "fft":
                    x = _apply(x, ax, kind[ax], norm, step.inverse)
            f_axes = tuple(ax for ax in step.axes if kind[ax] == "fft")
            if f_axes:
                x = (jnp.fft.ifftn if step.inverse else jnp.fft.fftn)(x, axes=f_axes, norm=norm)
        elif isinstance(step, Rfft):
            if step.inverse:
                x = jnp.fft.irfft(x, n=step.n, axis=step.axis, norm=norm)
            else:
                x = jnp.fft.rfft(x, axis=step.axis, norm=norm)
        elif isinstance(step, Move):
            x = _all_to_all(x, step, sizes)
        else:
            raise TypeError(f"xr2rn: unknown plan step {step!r} (expected Fft, Rfft or Move)")
    return x


@lru_cache(maxsize=256)
def _sharded(plan: Plan, mesh, kinds: Kinds, norm: str):
    """The jitted shard_map program for ``plan`` with ``kinds`` (cached; inlined under an outer jit)."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    body = lambda b: run_local(b, plan, kinds, norm, sizes)  # noqa: E731
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=layout_to_spec(plan.in_layout),
                                 out_specs=layout_to_spec(plan.out_layout), check_vma=False))


def _execute(x: jax.Array, plan: Plan, pl: Placement, kinds: Kinds, norm: str) -> jax.Array:
    x = _constrain(x, pl, plan.in_layout)
    return _sharded(plan, pl.mesh, kinds, norm)(x)


def _axes(x: jax.Array, axes, count: int | None, name: str) -> tuple[int, ...]:
    """Normalize ``axes`` (default: all axes, or the last ``count``)."""
    if axes is None:
        out = tuple(range(0 if count is None else x.ndim - count, x.ndim))
        if count is not None and count > x.ndim:
            raise ValueError(f"{name}: kinds names {count} axes but x has only {x.ndim}")
    else:
        if isinstance(axes, int):
            axes = (axes,)
        try:
            raw = tuple(int(a) for a in axes)
        except TypeError:
            raise TypeError(f"{name}: axes must be an int or a sequence of ints, got {axes!r}") from None
        if any(not -x.ndim <= a < x.ndim for a in raw):
            raise ValueError(f"{name}: axes {raw} out of range for an array with {x.ndim} axes")
        out = tuple(a % x.ndim for a in raw)
        if len(set(out)) != len(out):
            raise ValueError(f"{name}: axes {raw} has repeated entries")
    if not out:
        raise ValueError(f"{name}: axes must not be empty")
    return out


def _kinds(kinds, axes: tuple[int, ...] | None, name: str) -> tuple[str, ...]:
    if isinstance(kinds, str) or not isinstance(kinds, Sequence):
        raise TypeError(f"{name}: kinds must be a sequence of kind names (one per axis), got {kinds!r}")
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"{name}: unknown kinds {bad}; each kind must be one of {KINDS}")
    if axes is not None and len(kinds) != len(axes):
        raise ValueError(f"{name}: kinds {kinds} must have one entry per transformed axis {axes}")
    if kinds.count("rfft") > 1:
        raise ValueError(f"{name}: kinds may hold at most one 'rfft' axis, got {kinds}")
    return kinds


def _check_type(type, name: str) -> int:
    if isinstance(type, bool) or type not in (1, 2, 3, 4):
        raise ValueError(f"{name}: type must be 1, 2, 3 or 4, got {type!r}")
    return int(type)


def _check_lengths(shape: tuple[int, ...], pairs: Kinds, name: str) -> None:
    for ax, k in pairs:
        if k == "dct1" and shape[ax] < 2:
            raise ValueError(f"{name}: a type-1 DCT needs at least 2 points, axis {ax} has {shape[ax]}")


def _transform(x, kinds: tuple[str, ...], ax: tuple[int, ...], norm, name: str, inverse: bool,
               n: int | None = None) -> jax.Array:
    norm = _check_norm(norm)
    pairs: Kinds = tuple(zip(ax, kinds))
    real_axis = next((a for a, k in pairs if k == "rfft"), None)
    plan_axes = tuple(a for a in ax if a != real_axis) + ((real_axis,) if real_axis is not None else ())
    dt = jnp.result_type(x)
    if not (jnp.issubdtype(dt, jnp.floating) or jnp.issubdtype(dt, jnp.complexfloating)):
        raise TypeError(f"{name}: x must have a floating or complex dtype, got {dt}")
    if real_axis is not None and not inverse and jnp.issubdtype(dt, jnp.complexfloating):
        raise TypeError(f"{name}: an 'rfft' axis needs real input, got {dt}")
    if inverse and ("fft" in kinds or real_axis is not None):
        x = x.astype(jnp.result_type(dt, jnp.complex64))
    shape = tuple(x.shape)
    if real_axis is not None and inverse:
        m = shape[real_axis]
        n = 2 * (m - 1) if n is None else int(n)
        if n < 1 or n // 2 + 1 != m:
            raise ValueError(f"{name}: n={n} does not match the half-spectrum axis {real_axis} of length {m}")
        shape = shape[:real_axis] + (n,) + shape[real_axis + 1:]
    _check_lengths(shape, pairs, name)
    real = real_axis is not None
    pl = placement(x)
    if pl is None:
        plan = plan_forward(shape, ((),) * len(shape), plan_axes, (), real)
        return run_local(x, plan.inverted() if inverse else plan, pairs, norm, {})
    if not inverse:
        plan = plan_forward(shape, input_layout(pl, shape, plan_axes), plan_axes, pl.mesh_sizes, real)
        return _execute(x, plan, pl, pairs, norm)
    plan = plan_inverse(shape, pl.layout, plan_axes, pl.mesh_sizes, real) if pl.layout is not None else None
    if plan is None:
        canon = input_layout(Placement(pl.mesh, None, pl.explicit), shape, plan_axes)
        plan = plan_forward(shape, canon, plan_axes, pl.mesh_sizes, real).inverted()
    return _execute(x, plan, pl, pairs, norm)


def xr2rn(x: jax.Array, kinds: Sequence[str], axes: Sequence[int] | None = None,
          norm: str | None = "backward") -> jax.Array:
    """Distributed transform with one kind per axis: FFT, real FFT, or DCT/DST of type 1-4.

    For example ``xr2rn(x, ("fft", "fft", "dst2"))`` is a Fourier transform in x and y and a sine transform in z
    (walls at both ends of z), planned and run as one transform (one all-to-all on a slab, two on a pencil).
    Each kind follows numpy/scipy: ``"fft"`` is ``numpy.fft.fft``, ``"rfft"`` ``numpy.fft.rfft`` (at most one
    axis; it keeps ``n // 2 + 1`` coefficients), ``"dctT"``/``"dstT"`` are ``scipy.fft.dct``/``dst`` of type ``T``.
    Transforms along different axes commute, so the result equals the composition of the 1D transforms.

    Args:
      x: real or complex array (real if an axis is ``"rfft"``), sharded in any way that leaves one transformed
        axis unsharded, or on one device.
      kinds: one name from :data:`KINDS` per transformed axis.
      axes: the transformed axes (default: the last ``len(kinds)`` axes).
      norm: ``"backward"`` (default), ``"ortho"`` or ``"forward"``, applied to every axis as numpy/scipy do.

    Returns:
      Real if all kinds are DCT/DST and ``x`` is real, complex otherwise. Sharding: the spectral layout that
      :func:`xfft.xfftn` gives over the same axes (with an ``"rfft"`` axis: that of :func:`xfft.xrfftn` with the
      ``"rfft"`` axis as its half axis).

    Raises:
      TypeError: ``x`` not an array or of an integer dtype, complex input with an ``"rfft"`` axis, bad ``kinds``.
      ValueError: unknown kind or norm, axes out of range or repeated, kinds/axes of different lengths, more than
        one ``"rfft"`` axis, a sharding that leaves no transformed axis unsharded.
    """
    x = _as_array(x)
    kinds = _kinds(kinds, None, "xr2rn")
    ax = _axes(x, axes, len(kinds), "xr2rn")
    _kinds(kinds, ax, "xr2rn")
    return _transform(x, kinds, ax, norm, "xr2rn", False)


def ixr2rn(k: jax.Array, kinds: Sequence[str], axes: Sequence[int] | None = None,
           norm: str | None = "backward", n: int | None = None) -> jax.Array:
    """Inverse of :func:`xr2rn` with the same ``kinds``, ``axes`` and ``norm``; returns the input's layout.

    Args:
      k: the transform as returned by :func:`xr2rn`.
      kinds, axes, norm: as given to :func:`xr2rn`.
      n: real length of the ``"rfft"`` axis (default ``2 * (m - 1)`` for a half axis of length ``m``).

    Returns:
      Complex if a kind is ``"fft"``, real if one is ``"rfft"`` or all are DCT/DST of real ``k``.

    Raises:
      As :func:`xr2rn`; ``ValueError`` for an ``n`` that does not match the half axis.
    """
    k = _as_array(k, "k")
    kinds = _kinds(kinds, None, "ixr2rn")
    ax = _axes(k, axes, len(kinds), "ixr2rn")
    _kinds(kinds, ax, "ixr2rn")
    return _transform(k, kinds, ax, norm, "ixr2rn", True, n)


def _r2rn(x, kind: str, type, axes, norm, name: str, inverse: bool) -> jax.Array:
    x = _as_array(x)
    t = _check_type(type, name)
    ax = _axes(x, axes, None, name)
    return _transform(x, (f"{kind}{t}",) * len(ax), ax, norm, name, inverse)


def xdctn(x: jax.Array, type: int = 2, axes: Sequence[int] | int | None = None,
          norm: str | None = None) -> jax.Array:
    """Distributed n-dimensional DCT, like ``scipy.fft.dctn(x, type, axes=axes, norm=norm)``.

    Args:
      x: real (or complex: real and imaginary parts transformed) array, sharded in any way that leaves one
        transformed axis unsharded, or on one device.
      type: 1, 2 (default), 3 or 4.
      axes: axes to transform (default all, as scipy).
      norm: None/``"backward"``, ``"ortho"`` (orthogonalized, as scipy) or ``"forward"``.

    Returns:
      Same shape and dtype as ``x`` (floating); sharded like :func:`xfft.xfftn`'s spectrum over ``axes``.

    Raises:
      TypeError: not an array or integer dtype. ValueError: bad ``type``, ``axes`` or ``norm``, a type-1 DCT on
      an axis shorter than 2, or a sharding that leaves no transformed axis unsharded.
    """
    return _r2rn(x, "dct", type, axes, norm, "xdctn", False)


def ixdctn(x: jax.Array, type: int = 2, axes: Sequence[int] | int | None = None,
           norm: str | None = None) -> jax.Array:
    """Inverse of :func:`xdctn`, like ``scipy.fft.idctn``; returns the layout :func:`xdctn` was given."""
    return _r2rn(x, "dct", type, axes, norm, "ixdctn", True)


def xdstn(x: jax.Array, type: int = 2, axes: Sequence[int] | int | None = None,
          norm: str | None = None) -> jax.Array:
    """Distributed n-dimensional DST, like ``scipy.fft.dstn``. Args, Returns and Raises as :func:`xdctn`."""
    return _r2rn(x, "dst", type, axes, norm, "xdstn", False)


def ixdstn(x: jax.Array, type: int = 2, axes: Sequence[int] | int | None = None,
           norm: str | None = None) -> jax.Array:
    """Inverse of :func:`xdstn`, like ``scipy.fft.idstn``; returns the layout :func:`xdstn` was given."""
    return _r2rn(x, "dst", type, axes, norm, "ixdstn", True)
