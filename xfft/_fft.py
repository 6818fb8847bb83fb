"""Public distributed transforms: validation, norm and dtype handling, planning and dispatch."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .backends import Backend, get_backend, order_fallback
from .backends.native import transposed_spectrum

_NORMS = ("backward", "ortho", "forward")
ORDERS = ("natural", "transposed")


def _as_array(x, name: str = "x") -> jax.Array:
    if isinstance(x, (jax.Array, np.ndarray)) or isinstance(x, jax.core.Tracer):
        return x if isinstance(x, jax.Array) else jnp.asarray(x)
    raise TypeError(f"{name} must be a jax.Array or numpy.ndarray, got {type(x).__name__}")


def _check_norm(norm) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")
    return norm


def check_order(order) -> str:
    """Validate the spectral axis order argument: ``"natural"`` or ``"transposed"``."""
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    return order


def _backend_for(backend: str | Backend | None, order: str) -> Backend:
    b = get_backend(backend)
    if order == "natural" or getattr(b, "supports_order", False):
        return b
    return order_fallback(b, order)


def _normalize_axes(x: jax.Array, ndim: int | None, axes: Sequence[int] | None, name: str) -> tuple[int, ...]:
    if axes is not None:
        if ndim is not None and ndim != len(tuple(axes)):
            raise ValueError(f"{name}: ndim={ndim} disagrees with axes={tuple(axes)}")
        try:
            out = tuple(int(a) % x.ndim if -x.ndim <= int(a) < x.ndim else None for a in axes)
        except TypeError:
            raise TypeError(f"{name}: axes must be a sequence of ints, got {axes!r}") from None
        if None in out:
            raise ValueError(f"{name}: axes {tuple(axes)} out of range for an array with {x.ndim} axes")
        if len(set(out)) != len(out):
            raise ValueError(f"{name}: axes {tuple(axes)} has repeated entries")
    else:
        if ndim is None:
            if x.ndim > 3:
                raise ValueError(
                    f"{name}: x has {x.ndim} axes; pass ndim=2 or 3 (or axes=...) to say which are transformed "
                    "and which are batch axes"
                )
            ndim = x.ndim
        if not isinstance(ndim, (int, np.integer)) or isinstance(ndim, bool):
            raise TypeError(f"{name}: ndim must be an int, got {ndim!r}")
        if ndim not in (1, 2, 3):
            raise ValueError(f"{name}: ndim must be 1, 2 or 3, got {ndim}")
        if x.ndim < ndim:
            raise ValueError(f"{name}: x must have at least {ndim} axes to transform {ndim} of them, got shape "
                             f"{tuple(x.shape)} ({x.ndim} axes)")
        out = tuple(range(x.ndim - ndim, x.ndim))
    if not out:
        raise ValueError(f"{name}: axes must not be empty")
    return out


def _complex_dtype(x: jax.Array, name: str):
    dt = jnp.result_type(x)
    if jnp.issubdtype(dt, jnp.complexfloating):
        return dt
    if jnp.issubdtype(dt, jnp.floating):
        return jnp.result_type(dt, jnp.complex64)
    raise TypeError(f"{name}: x must have a floating or complex dtype, got {dt}")


def _real_dtype(x: jax.Array, name: str):
    dt = jnp.result_type(x)
    if jnp.issubdtype(dt, jnp.floating):
        return dt
    raise TypeError(f"{name}: x must have a real floating dtype for a real-to-complex transform, got {dt} "
                    "(use xfftn for complex input)")


def _forward(x, ndim, axes, norm, real: bool, name: str, backend: str | Backend | None,
             order: str = "natural") -> jax.Array:
    x = _as_array(x)
    norm = _check_norm(norm)
    order = check_order(order)
    ax = _normalize_axes(x, ndim, axes, name)
    x = x.astype(_real_dtype(x, name)) if real else x.astype(_complex_dtype(x, name))
    b = _backend_for(backend, order)
    if order == "natural":
        return b.forward(x, ax, norm, real)
    return b.forward(x, ax, norm, real, order=order)


def _parse_s(s, ax: tuple[int, ...], name: str) -> tuple[int, ...] | None:
    if s is None:
        return None
    try:
        s = tuple(int(v) for v in s)
    except TypeError:
        raise TypeError(f"{name}: s must be a sequence of ints, got {s!r}") from None
    if len(s) != len(ax):
        raise ValueError(f"{name}: s={s} must have one entry per transformed axis {ax}")
    return s


def _real_shape(kshape: tuple[int, ...], ax: tuple[int, ...], s: tuple[int, ...] | None,
                name: str) -> tuple[int, ...]:
    shape = list(kshape)
    last = ax[-1]
    if s is None:
        n = 2 * (kshape[last] - 1)
        if n < 1:
            raise ValueError(f"{name}: the half-spectrum axis {last} has length {kshape[last]}; pass s to set "
                             "the output length")
    else:
        for d, v in zip(ax[:-1], s[:-1]):
            if v != kshape[d]:
                raise ValueError(
                    f"{name}: s={s} is inconsistent with the spectrum shape {tuple(kshape)}: axis {d} has "
                    f"length {kshape[d]} (cropping or zero-padding is not supported by distributed transforms)"
                )
        n = s[-1]
        if n < 1 or n // 2 + 1 != kshape[last]:
            raise ValueError(
                f"{name}: s={s} is inconsistent with the spectrum shape {tuple(kshape)}: a real axis of length "
                f"{n} has {n // 2 + 1} half-spectrum coefficients, but axis {last} has {kshape[last]}"
            )
    shape[last] = n
    return tuple(shape)


def _inverse(k, ndim, axes, norm, real: bool, s, name: str, backend: str | Backend | None,
             order: str = "natural") -> jax.Array:
    k = _as_array(k, "k")
    norm = _check_norm(norm)
    order = check_order(order)
    ax = _normalize_axes(k, ndim, axes, name)
    k = k.astype(_complex_dtype(k, name))
    s = _parse_s(s, ax, name)
    b = _backend_for(backend, order)
    kshape = tuple(k.shape)
    if order != "natural":
        # The spectrum's axes are permuted: find the natural shape first (the backend finds the same order).
        perm, _, _ = transposed_spectrum(k, ax, real, s)
        kshape = tuple(kshape[perm.index(d)] for d in range(k.ndim))
    if real:
        real_shape = _real_shape(kshape, ax, s, name)
    else:
        if s is not None and s != tuple(kshape[d] for d in ax):
            raise ValueError(f"{name}: s={s} is inconsistent with the input shape {kshape} "
                             "(cropping or zero-padding is not supported)")
        real_shape = kshape
    if order == "natural":
        return b.inverse(k, ax, norm, real, real_shape)
    return b.inverse(k, ax, norm, real, real_shape, order=order)


def xfftn(x: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
          norm: str | None = "backward", *,
          backend: str | Backend | None = None, order: str = "natural") -> jax.Array:
    """Distributed complex FFT over ``ndim`` trailing axes (or ``axes``); leading axes are batch axes.

    Args:
      x: array of any floating or complex dtype (real input is promoted, like ``numpy.fft.fftn``), sharded
        over a mesh in any way that leaves at least one transformed axis unsharded, or on one device.
      ndim: number of trailing axes to transform (1, 2 or 3). Default: all axes if ``x.ndim <= 3``.
      axes: explicit axes to transform instead of ``ndim``.
      norm: ``"backward"`` (default), ``"ortho"`` or ``"forward"``, as in ``numpy.fft``.
      backend: ``"native"``, another name from :func:`xfft.available_backends`, or a backend object
        (default: see :func:`xfft.default_backend`).
      order: spectral axis order. ``"natural"`` (default): index ``[..., i, j, k]`` is ``(kx[i], ky[j], kz[k])``.
        ``"transposed"``: the axes stay permuted the way the all-to-alls and local FFTs leave them (the axis
        transformed last is minor-most), which saves the final local transposes; :func:`xfft.spectral_axes`
        says which original axis each spectrum axis is, and :func:`xfft.wavenumbers` and
        :func:`xfft.spectral_sharding` take the same ``order``. Backends without it fall back to native with
        a one-time :class:`xfft.BackendFallbackWarning` (strict backends raise ``NotImplementedError``).

    Returns:
      The spectrum, complex dtype, with index ``[..., i, j, k]`` the wavenumber ``(kx[i], ky[j], kz[k])`` in
      natural order (same shape as ``x``). Sharding: the spectral layout reached after the fewest all-to-alls
      (slab ``P('x')`` -> ``P(None, 'x')``, pencil ``P('x', 'y')`` -> ``P(None, 'x', 'y')``); see
      :func:`xfft.spectral_sharding`. In ``"transposed"`` order the axes (shape and sharding) are permuted.

    Raises:
      TypeError: ``x`` is not an array, or has an integer/bool dtype.
      ValueError: bad ``ndim``/``axes``/``norm``/``order``, or a sharding that leaves no transformed axis
        unsharded.
    """
    return _forward(x, ndim, axes, norm, False, "xfftn", backend, order)


def ixfftn(k: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
           norm: str | None = "backward", *,
          backend: str | Backend | None = None, order: str = "natural",
          s: Sequence[int] | None = None) -> jax.Array:
    """Inverse of :func:`xfftn`: spectral layout in, the matching real-space layout out.

    Args and Raises as :func:`xfftn`; with ``order="transposed"`` ``k`` is a spectrum in that order (as the
    forward returns it) and the result is in natural order. ``s`` (keyword, optional): the lengths of the
    transformed axes in natural order; it must equal them (no cropping or padding); with ``"transposed"`` pass it
    for any non-cubic grid: a permuted spectrum can fit several real shapes, and then ``ValueError`` asks for it
    rather than guess. Returns a complex array; a round trip returns the input's sharding.
    """
    return _inverse(k, ndim, axes, norm, False, s, "ixfftn", backend, order)


def xrfftn(x: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
           norm: str | None = "backward", *,
          backend: str | Backend | None = None, order: str = "natural") -> jax.Array:
    """Distributed real-to-complex FFT; the last transformed axis keeps ``n // 2 + 1`` coefficients.

    Same semantics as ``numpy.fft.rfftn`` over the trailing ``ndim`` axes (or ``axes``), with the sharding
    rules of :func:`xfftn`. ``x`` must be real floating point (``TypeError`` otherwise).
    """
    return _forward(x, ndim, axes, norm, True, "xrfftn", backend, order)


def ixrfftn(k: jax.Array, s: Sequence[int] | None = None, ndim: int | None = None,
            axes: Sequence[int] | None = None, norm: str | None = "backward", *,
          backend: str | Backend | None = None, order: str = "natural") -> jax.Array:
    """Inverse of :func:`xrfftn` (complex-to-real), like ``numpy.fft.irfftn``.

    Args:
      k: half spectrum as returned by :func:`xrfftn`.
      s: real-space lengths of the transformed axes; only the last may differ from ``k`` (it selects an
        odd length ``2 m - 1`` instead of the default ``2 (m - 1)``). Cropping/padding is not supported.
      ndim, axes, norm, backend: as :func:`xfftn` (``axes`` in natural numbering).
      order: the order of ``k``'s axes (as :func:`xrfftn` returned it); the output is in natural order. Pass
        ``s`` with ``"transposed"``: a permuted half spectrum can fit several real shapes (which axis is the
        half axis), and then ``ValueError`` asks for it rather than guess.

    Returns:
      A real array in the real-space layout that :func:`xrfftn` maps onto ``k``'s layout.
    """
    return _inverse(k, ndim, axes, norm, True, s, "ixrfftn", backend, order)


def xfft3d(x: jax.Array, norm: str | None = "backward", *,
          backend: str | Backend | None = None, order: str = "natural") -> jax.Array:
    """Distributed 3D complex FFT over the last three axes (leading axes are batched). See :func:`xfftn`."""
    return _forward(x, 3, None, norm, False, "xfft3d", backend, order)


def ixfft3d(k: jax.Array, norm: str | None = "backward", *,
          backend: str | Backend | None = None, order: str = "natural",
          s: Sequence[int] | None = None) -> jax.Array:
    """Inverse of :func:`xfft3d`. See :func:`ixfftn`."""
    return _inverse(k, 3, None, norm, False, s, "ixfft3d", backend, order)


def xrfft3d(x: jax.Array, norm: str | None = "backward", *,
          backend: str | Backend | None = None, order: str = "natural") -> jax.Array:
    """Distributed 3D real-to-complex FFT over the last three axes. See :func:`xrfftn`."""
    return _forward(x, 3, None, norm, True, "xrfft3d", backend, order)


def ixrfft3d(k: jax.Array, s: Sequence[int] | None = None, norm: str | None = "backward", *,
          backend: str | Backend | None = None, order: str = "natural") -> jax.Array:
    """Inverse of :func:`xrfft3d` (complex-to-real over the last three axes). See :func:`ixrfftn`."""
    return _inverse(k, 3, None, norm, True, s, "ixrfft3d", backend, order)
