"""Public distributed transforms: validation, norm and dtype handling, planning and dispatch."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .backends import Backend, get_backend

_NORMS = ("backward", "ortho", "forward")


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


def _forward(x, ndim, axes, norm, real: bool, name: str, backend: str | Backend | None) -> jax.Array:
    x = _as_array(x)
    norm = _check_norm(norm)
    ax = _normalize_axes(x, ndim, axes, name)
    x = x.astype(_real_dtype(x, name)) if real else x.astype(_complex_dtype(x, name))
    return get_backend(backend).forward(x, ax, norm, real)


def _real_shape(k: jax.Array, ax: tuple[int, ...], s, name: str) -> tuple[int, ...]:
    shape = list(k.shape)
    last = ax[-1]
    if s is None:
        n = 2 * (k.shape[last] - 1)
        if n < 1:
            raise ValueError(f"{name}: the half-spectrum axis {last} has length {k.shape[last]}; pass s to set "
                             "the output length")
    else:
        try:
            s = tuple(int(v) for v in s)
        except TypeError:
            raise TypeError(f"{name}: s must be a sequence of ints, got {s!r}") from None
        if len(s) != len(ax):
            raise ValueError(f"{name}: s={s} must have one entry per transformed axis {ax}")
        for d, v in zip(ax[:-1], s[:-1]):
            if v != k.shape[d]:
                raise ValueError(
                    f"{name}: s={s} is inconsistent with the spectrum shape {tuple(k.shape)}: axis {d} has "
                    f"length {k.shape[d]} (cropping or zero-padding is not supported by distributed transforms)"
                )
        n = s[-1]
        if n < 1 or n // 2 + 1 != k.shape[last]:
            raise ValueError(
                f"{name}: s={s} is inconsistent with the spectrum shape {tuple(k.shape)}: a real axis of length "
                f"{n} has {n // 2 + 1} half-spectrum coefficients, but axis {last} has {k.shape[last]}"
            )
    shape[last] = n
    return tuple(shape)


def _inverse(k, ndim, axes, norm, real: bool, s, name: str, backend: str | Backend | None) -> jax.Array:
    k = _as_array(k, "k")
    norm = _check_norm(norm)
    ax = _normalize_axes(k, ndim, axes, name)
    k = k.astype(_complex_dtype(k, name))
    if real:
        real_shape = _real_shape(k, ax, s, name)
    else:
        if s is not None and tuple(s) != tuple(k.shape[d] for d in ax):
            raise ValueError(f"{name}: s={tuple(s)} is inconsistent with the input shape {tuple(k.shape)} "
                             "(cropping or zero-padding is not supported)")
        real_shape = tuple(k.shape)
    return get_backend(backend).inverse(k, ax, norm, real, real_shape)


def xfftn(x: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
          norm: str | None = "backward", *,
          backend: str | Backend | None = None) -> jax.Array:
    """Distributed complex FFT over ``ndim`` trailing axes (or ``axes``); leading axes are batch axes.

    Args:
      x: array of any floating or complex dtype (real input is promoted, like ``numpy.fft.fftn``), sharded
        over a mesh in any way that leaves at least one transformed axis unsharded, or on one device.
      ndim: number of trailing axes to transform (1, 2 or 3). Default: all axes if ``x.ndim <= 3``.
      axes: explicit axes to transform instead of ``ndim``.
      norm: ``"backward"`` (default), ``"ortho"`` or ``"forward"``, as in ``numpy.fft``.
      backend: ``"native"``, another name from :func:`xfft.available_backends`, or a backend object
        (default: see :func:`xfft.default_backend`).

    Returns:
      The spectrum, same shape, complex dtype, with index ``[..., i, j, k]`` the wavenumber
      ``(kx[i], ky[j], kz[k])`` (natural order). Sharding: the spectral layout reached after the fewest
      all-to-alls (slab ``P('x')`` -> ``P(None, 'x')``, pencil ``P('x', 'y')`` -> ``P(None, 'x', 'y')``);
      see :func:`xfft.spectral_sharding`.

    Raises:
      TypeError: ``x`` is not an array, or has an integer/bool dtype.
      ValueError: bad ``ndim``/``axes``/``norm``, or a sharding that leaves no transformed axis unsharded.
    """
    return _forward(x, ndim, axes, norm, False, "xfftn", backend)


def ixfftn(k: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
           norm: str | None = "backward", *,
          backend: str | Backend | None = None) -> jax.Array:
    """Inverse of :func:`xfftn`: spectral layout in, the matching real-space layout out.

    Args and Raises as :func:`xfftn`. Returns a complex array; a round trip returns the input's sharding.
    """
    return _inverse(k, ndim, axes, norm, False, None, "ixfftn", backend)


def xrfftn(x: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
           norm: str | None = "backward", *,
          backend: str | Backend | None = None) -> jax.Array:
    """Distributed real-to-complex FFT; the last transformed axis keeps ``n // 2 + 1`` coefficients.

    Same semantics as ``numpy.fft.rfftn`` over the trailing ``ndim`` axes (or ``axes``), with the sharding
    rules of :func:`xfftn`. ``x`` must be real floating point (``TypeError`` otherwise).
    """
    return _forward(x, ndim, axes, norm, True, "xrfftn", backend)


def ixrfftn(k: jax.Array, s: Sequence[int] | None = None, ndim: int | None = None,
            axes: Sequence[int] | None = None, norm: str | None = "backward", *,
          backend: str | Backend | None = None) -> jax.Array:
    """Inverse of :func:`xrfftn` (complex-to-real), like ``numpy.fft.irfftn``.

    Args:
      k: half spectrum as returned by :func:`xrfftn`.
      s: real-space lengths of the transformed axes; only the last may differ from ``k`` (it selects an
        odd length ``2 m - 1`` instead of the default ``2 (m - 1)``). Cropping/padding is not supported.
      ndim, axes, norm: as :func:`xfftn`.

    Returns:
      A real array in the real-space layout that :func:`xrfftn` maps onto ``k``'s layout.
    """
    return _inverse(k, ndim, axes, norm, True, s, "ixrfftn", backend)


def xfft3d(x: jax.Array, norm: str | None = "backward", *,
          backend: str | Backend | None = None) -> jax.Array:
    """Distributed 3D complex FFT over the last three axes (leading axes are batched). See :func:`xfftn`."""
    return _forward(x, 3, None, norm, False, "xfft3d", backend)


def ixfft3d(k: jax.Array, norm: str | None = "backward", *,
          backend: str | Backend | None = None) -> jax.Array:
    """Inverse of :func:`xfft3d`. See :func:`ixfftn`."""
    return _inverse(k, 3, None, norm, False, None, "ixfft3d", backend)


def xrfft3d(x: jax.Array, norm: str | None = "backward", *,
          backend: str | Backend | None = None) -> jax.Array:
    """Distributed 3D real-to-complex FFT over the last three axes. See :func:`xrfftn`."""
    return _forward(x, 3, None, norm, True, "xrfft3d", backend)


def ixrfft3d(k: jax.Array, s: Sequence[int] | None = None, norm: str | None = "backward", *,
          backend: str | Backend | None = None) -> jax.Array:
    """Inverse of :func:`xrfft3d` (complex-to-real over the last three axes). See :func:`ixrfftn`."""
    return _inverse(k, 3, None, norm, True, s, "ixrfft3d", backend)
