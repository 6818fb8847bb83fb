"""Public real-to-real transforms (DCT/DST types 1-4) and per-axis mixed transforms (``xr2rn``).

They take the path of every transform (:mod:`xfft._dispatch`): a DCT or DST is a per-axis kind of the plan's
local stages, so the planner gives the same moves and layouts as :func:`xfft.xfftn` over the same axes (a slab
needs one all-to-all and a pencil two, whatever the kinds), the lowering and the one executor run them
(``order="transposed"`` included), and backends that lack the kinds fall back to native with a one-time
:class:`xfft.BackendFallbackWarning`. Inverses return the input layout. Every function is jit-able,
differentiable and vmap-able (plain JAX inside).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding

from . import _dispatch
from ._layout import KINDS, NO_NYQUIST
from ._validate import as_array, axes_list, check_drop_nyquist, check_norm
from .backends import Backend


def _axes(x: jax.Array, axes: Any, count: int | None, name: str) -> tuple[int, ...]:
    """Normalize ``axes`` (default: the last ``count``, or all axes of an array of at most 3 axes)."""
    if axes is not None:
        return axes_list(axes, x.ndim, name)
    if count is not None:
        if count > x.ndim:
            raise ValueError(f"{name}: kinds names {count} axes but x has only {x.ndim}")
        return tuple(range(x.ndim - count, x.ndim))
    if x.ndim > 3:
        raise ValueError(f"{name}: x has {x.ndim} axes; pass axes=... to say which are transformed and which are "
                         f"batch axes (axes={tuple(range(x.ndim))} transforms them all)")
    if x.ndim == 0:
        raise ValueError(f"{name}: axes must not be empty (x is a scalar)")
    return tuple(range(x.ndim))


def _kinds(kinds: Any, axes: tuple[int, ...] | None, name: str) -> tuple[str, ...]:
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


def _check_type(type: Any, name: str) -> int:
    if isinstance(type, bool) or type not in (1, 2, 3, 4):
        raise ValueError(f"{name}: type must be 1, 2, 3 or 4, got {type!r}")
    return int(type)


def _transform(x: jax.Array, kinds: tuple[str, ...], ax: tuple[int, ...], norm: Any, name: str, inverse: bool, *,
               s: Any = None, backend: str | Backend | None, order: str, drop_nyquist: Any = False,
               out_sharding: Any = None) -> jax.Array:
    """Checked array, kinds and axes -> the one transform path, with the real FFT axis (if any) planned last."""
    norm = check_norm(norm)
    real_axis = next((a for a, k in zip(ax, kinds) if k == "rfft"), None)
    drop_nyquist = check_drop_nyquist(drop_nyquist, name)
    if drop_nyquist and real_axis is None:
        raise ValueError(f"{name}: drop_nyquist=True leaves out the Nyquist coefficient of the 'rfft' axis, but "
                         f"kinds {kinds} has none")
    if drop_nyquist and not inverse and x.shape[real_axis] % 2:
        raise ValueError(f"{name}: drop_nyquist=True needs an even length on the 'rfft' axis {real_axis} (an odd "
                         f"length has no Nyquist coefficient), got shape {tuple(x.shape)}")
    where = [i for i, a in enumerate(ax) if a != real_axis] + [i for i, a in enumerate(ax) if a == real_axis]
    plan_axes = tuple(ax[i] for i in where)
    plan_kinds = tuple(kinds[i] for i in where)
    dt = jnp.result_type(x)
    if not (jnp.issubdtype(dt, jnp.floating) or jnp.issubdtype(dt, jnp.complexfloating)):
        raise TypeError(f"{name}: x must have a floating or complex dtype, got {dt}")
    if real_axis is not None and not inverse and jnp.issubdtype(dt, jnp.complexfloating):
        raise TypeError(f"{name}: an 'rfft' axis needs real input, got {dt}")
    if inverse and ("fft" in kinds or real_axis is not None):
        x = x.astype(jnp.result_type(dt, jnp.complex64))
    if order == "natural":
        for a, k in zip(ax, kinds):
            if k == "dct1" and x.shape[a] < 2:
                raise ValueError(f"{name}: a type-1 DCT needs at least 2 points, axis {a} has {x.shape[a]}")
    real = NO_NYQUIST if drop_nyquist else real_axis is not None
    if not inverse:
        return _dispatch.forward(x, plan_axes, norm, real, backend=backend, order=order, kinds=plan_kinds)
    if s is not None:
        try:
            s = tuple(int(v) for v in s)
        except TypeError:
            raise TypeError(f"{name}: s must be a sequence of ints, got {s!r}") from None
        if len(s) != len(ax):
            raise ValueError(f"{name}: s={s} must have one entry per transformed axis {ax}")
        s = tuple(s[i] for i in where)
    return _dispatch.inverse(x, plan_axes, norm, real, s, name, backend=backend, order=order, kinds=plan_kinds,
                             out_sharding=out_sharding)


def xr2rn(x: jax.Array, kinds: Sequence[str], axes: Sequence[int] | int | None = None,
          norm: str | None = "backward", *, backend: str | Backend | None = None,
          order: str = "natural", drop_nyquist: bool = False) -> jax.Array:
    """Distributed transform with one kind per axis: FFT, real FFT, or DCT/DST of type 1-4.

    For example ``xr2rn(x, ("fft", "fft", "dst2"))`` is a Fourier transform in x and y and a sine transform in z
    (walls at both ends of z), planned and run as one transform (one all-to-all on a slab, two on a pencil).
    Each kind follows numpy/scipy: ``"fft"`` is ``numpy.fft.fft``, ``"rfft"`` ``numpy.fft.rfft`` (at most one
    axis; it keeps ``n // 2 + 1`` coefficients), ``"dctT"``/``"dstT"`` are ``scipy.fft.dct``/``dst`` of type ``T``.
    Transforms along different axes commute, so the result equals the composition of the 1D transforms.

    Args:
      x: real or complex array (real if an axis is ``"rfft"``), sharded in any way that :func:`xfft.xfftn`
        accepts over the same axes, or on one device.
      kinds: one name from :data:`xfft.R2R_KINDS` per transformed axis.
      axes: the transformed axes (default: the last ``len(kinds)`` axes).
      norm: ``"backward"`` (default; None means the same), ``"ortho"`` or ``"forward"``, applied to every axis as
        numpy/scipy do.
      backend, order: as :func:`xfft.xfftn` (backends without DCT/DST kinds fall back to native, once warned).
      drop_nyquist: (keyword) the ``"rfft"`` axis (of even length ``n``) keeps ``n // 2`` coefficients, leaving
        out the Nyquist one, as :func:`xfft.xrfftn` with ``drop_nyquist=True``; :func:`ixr2rn` with the same
        keyword inverts it (the Nyquist coefficient taken as zero).

    Returns:
      Real if all kinds are DCT/DST and ``x`` is real, complex otherwise. Sharding: the spectral layout that
      :func:`xfft.xfftn` gives over the same axes (with an ``"rfft"`` axis: that of :func:`xfft.xrfftn` with the
      ``"rfft"`` axis as its half axis); in ``"transposed"`` order the axes are permuted as
      :func:`xfft.spectral_axes` says.

    Raises:
      TypeError: ``x`` not an array or of an integer dtype, complex input with an ``"rfft"`` axis, bad ``kinds``.
      ValueError: unknown kind, norm or order, axes out of range or repeated, kinds/axes of different lengths,
        more than one ``"rfft"`` axis, a sharding with no even plan, ``drop_nyquist`` without an ``"rfft"``
        axis or with an odd one.
    """
    x = as_array(x)
    kinds = _kinds(kinds, None, "xr2rn")
    ax = _axes(x, axes, len(kinds), "xr2rn")
    _kinds(kinds, ax, "xr2rn")
    return _transform(x, kinds, ax, norm, "xr2rn", False, backend=backend, order=order,
                      drop_nyquist=drop_nyquist)


def _positional_n(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    """Accept ``ixr2rn(k, kinds, axes, norm, n)`` (``n`` positional) for one release (``n`` itself warns)."""

    @functools.wraps(fn)
    def inner(k: Any, kinds: Any, *args: Any, **kwargs: Any) -> jax.Array:
        if len(args) > 2:
            if "n" in kwargs:
                raise TypeError("ixr2rn() got multiple values for 'n'")
            kwargs["n"] = args[2]
            args = args[:2]
        return fn(k, kinds, *args, **kwargs)

    return inner


@_positional_n
def ixr2rn(k: jax.Array, kinds: Sequence[str], axes: Sequence[int] | int | None = None,
           norm: str | None = "backward", *, s: Sequence[int] | None = None,
           backend: str | Backend | None = None, order: str = "natural",
           drop_nyquist: bool = False, out_sharding: NamedSharding | None = None) -> jax.Array:
    """Inverse of :func:`xr2rn` with the same ``kinds``, ``axes`` and ``norm``; returns the input's layout.

    Args:
      k: the transform as returned by :func:`xr2rn`.
      kinds, axes, norm, backend, order: as given to :func:`xr2rn`.
      s: (keyword) real-space lengths of the transformed axes, one per entry of ``kinds``. Only the ``"rfft"``
        axis may differ from ``k`` (its default is ``2 * (m - 1)`` for a half axis of length ``m``); with
        ``order="transposed"`` it also says which real shape a permuted spectrum has.
      drop_nyquist: (keyword) ``k``'s ``"rfft"`` axis holds ``n // 2`` coefficients without the Nyquist one (as
        :func:`xr2rn` with ``drop_nyquist=True`` gives them); the real length defaults to twice that.
      out_sharding: (keyword) as :func:`xfft.ixfftn`.

    Returns:
      Complex if a kind is ``"fft"``, real if one is ``"rfft"`` or all are DCT/DST of real ``k``.

    Raises:
      As :func:`xr2rn`; ``ValueError`` for an ``s`` that does not match the half axis.
    """
    k = as_array(k, "k")
    kinds = _kinds(kinds, None, "ixr2rn")
    ax = _axes(k, axes, len(kinds), "ixr2rn")
    _kinds(kinds, ax, "ixr2rn")
    return _transform(k, kinds, ax, norm, "ixr2rn", True, s=s, backend=backend, order=order,
                      drop_nyquist=drop_nyquist, out_sharding=out_sharding)


def _r2rn(x: Any, kind: str, type: Any, axes: Any, norm: Any, name: str, inverse: bool, s: Any,
          backend: str | Backend | None, order: str, out_sharding: Any = None) -> jax.Array:
    x = as_array(x)
    t = _check_type(type, name)
    ax = _axes(x, axes, None, name)
    return _transform(x, (f"{kind}{t}",) * len(ax), ax, norm, name, inverse, s=s, backend=backend, order=order,
                      out_sharding=out_sharding)


def xdctn(x: jax.Array, type: int = 2, axes: Sequence[int] | int | None = None,
          norm: str | None = "backward", *, backend: str | Backend | None = None,
          order: str = "natural") -> jax.Array:
    """Distributed n-dimensional DCT, like ``scipy.fft.dctn(x, type, axes=axes, norm=norm)``.

    Args:
      x: real (or complex: real and imaginary parts transformed) array, sharded in any way that
        :func:`xfft.xfftn` accepts over the same axes, or on one device.
      type: 1, 2 (default), 3 or 4.
      axes: axes to transform (an int or a sequence). Default: all axes of an array of at most 3 axes (name
        them for more: ``ValueError`` otherwise).
      norm: ``"backward"`` (default; None means the same, as in scipy), ``"ortho"`` (orthogonalized, as scipy)
        or ``"forward"``.
      backend, order: as :func:`xfft.xfftn`.

    Returns:
      Same shape and dtype as ``x`` (floating); sharded like :func:`xfft.xfftn`'s spectrum over ``axes`` (axes
      permuted for ``order="transposed"``).

    Raises:
      TypeError: not an array or integer dtype. ValueError: bad ``type``, ``axes``, ``norm`` or ``order``, a
      type-1 DCT on an axis shorter than 2, or a sharding with no even plan.
    """
    return _r2rn(x, "dct", type, axes, norm, "xdctn", False, None, backend, order)


def ixdctn(x: jax.Array, type: int = 2, axes: Sequence[int] | int | None = None,
           norm: str | None = "backward", *, s: Sequence[int] | None = None,
           backend: str | Backend | None = None, order: str = "natural",
           out_sharding: NamedSharding | None = None) -> jax.Array:
    """Inverse of :func:`xdctn`, like ``scipy.fft.idctn``; returns the layout :func:`xdctn` was given.

    ``s`` (keyword): the real lengths of ``axes``; they must equal ``x``'s (no cropping or padding); needed only
    to read a non-cubic spectrum in ``order="transposed"``. ``out_sharding`` (keyword): as :func:`xfft.ixfftn`.
    Other Args, Returns and Raises as :func:`xdctn`.
    """
    return _r2rn(x, "dct", type, axes, norm, "ixdctn", True, s, backend, order, out_sharding)


def xdstn(x: jax.Array, type: int = 2, axes: Sequence[int] | int | None = None,
          norm: str | None = "backward", *, backend: str | Backend | None = None,
          order: str = "natural") -> jax.Array:
    """Distributed n-dimensional DST, like ``scipy.fft.dstn``. Args, Returns and Raises as :func:`xdctn`."""
    return _r2rn(x, "dst", type, axes, norm, "xdstn", False, None, backend, order)


def ixdstn(x: jax.Array, type: int = 2, axes: Sequence[int] | int | None = None,
           norm: str | None = "backward", *, s: Sequence[int] | None = None,
           backend: str | Backend | None = None, order: str = "natural",
           out_sharding: NamedSharding | None = None) -> jax.Array:
    """Inverse of :func:`xdstn`, like ``scipy.fft.idstn``; returns the layout :func:`xdstn` was given.

    Args, Returns and Raises as :func:`ixdctn`.
    """
    return _r2rn(x, "dst", type, axes, norm, "ixdstn", True, s, backend, order, out_sharding)

