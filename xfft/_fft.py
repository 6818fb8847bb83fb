"""Public distributed FFTs (the ``xfftn`` family): argument checks, dtypes, then the one dispatch path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import NamedSharding

from . import _dispatch
from ._layout import NO_NYQUIST
from ._validate import as_array, check_drop_nyquist, check_norm, normalize_axes, parse_s, transform_dtype
from .backends import Backend


def _forward(x: Any, ndim: int | None, axes: Sequence[int] | None, norm: str | None, real: bool, name: str,
             backend: str | Backend | None, order: str, drop_nyquist: Any = False) -> jax.Array:
    x = as_array(x)
    norm = check_norm(norm)
    ax = normalize_axes(x, ndim, axes, name)
    x = x.astype(transform_dtype(x, name, real))
    if check_drop_nyquist(drop_nyquist, name):
        if x.shape[ax[-1]] % 2:
            raise ValueError(f"{name}: drop_nyquist=True needs an even length on the half axis {ax[-1]} (an odd "
                             f"length has no Nyquist coefficient), got shape {tuple(x.shape)}")
        real = NO_NYQUIST
    return _dispatch.forward(x, ax, norm, real, backend=backend, order=order)


def _inverse(k: Any, ndim: int | None, axes: Sequence[int] | None, norm: str | None, real: bool, s: Any,
             name: str, backend: str | Backend | None, order: str, drop_nyquist: Any = False,
             out_sharding: Any = None) -> jax.Array:
    k = as_array(k, "k")
    norm = check_norm(norm)
    ax = normalize_axes(k, ndim, axes, name)
    k = k.astype(transform_dtype(k, name, False))
    if check_drop_nyquist(drop_nyquist, name):
        real = NO_NYQUIST
    return _dispatch.inverse(k, ax, norm, real, parse_s(s, ax, name), name, backend=backend, order=order,
                             out_sharding=out_sharding)


def xfftn(x: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
          norm: str | None = "backward", *, backend: str | Backend | None = None,
          order: str = "natural") -> jax.Array:
    """Distributed complex FFT over ``ndim`` trailing axes (or ``axes``); leading axes are batch axes.

    Args:
      x: array of any floating or complex dtype (real input is promoted, like ``numpy.fft.fftn``), sharded
        over a mesh in any way (see the README's Layouts), or on one device.
      ndim: number of trailing axes to transform (1, 2 or 3). Default: all axes if ``x.ndim <= 3``.
      axes: explicit axes to transform instead of ``ndim`` (a sequence; negative entries count from the end).
      norm: ``"backward"`` (default; None means the same), ``"ortho"`` or ``"forward"``, as in ``numpy.fft``.
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
      TypeError: ``x`` is not an array, or has an integer/bool dtype; ``axes`` is not a sequence of ints.
      ValueError: bad ``ndim``/``axes``/``norm``/``order``, or a sharding with no even plan.
    """
    return _forward(x, ndim, axes, norm, False, "xfftn", backend, order)


def ixfftn(k: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
           norm: str | None = "backward", *, s: Sequence[int] | None = None,
           backend: str | Backend | None = None, order: str = "natural",
           out_sharding: NamedSharding | None = None) -> jax.Array:
    """Inverse of :func:`xfftn`: spectral layout in, the matching real-space layout out.

    Args:
      k: spectrum as returned by :func:`xfftn` (in ``order``'s axis order).
      ndim, axes, norm, backend: as :func:`xfftn` (``axes`` in natural numbering).
      s: (keyword) the lengths of the transformed axes in natural order; they must equal ``k``'s (no cropping or
        padding: :mod:`xfft.fft` crops and pads). With ``order="transposed"`` pass it for a non-cubic grid: a
        permuted spectrum can fit several real shapes, and then ``ValueError`` asks for it rather than guess
        (under ``jax.jit`` on an Auto mesh, where no sharding is visible, the grid is taken to be sharded as
        :func:`xfft.real_sharding` shards it, as the forward transform takes it).
      order: the order of ``k``'s axes; the output is in natural order.
      out_sharding: (keyword) the sharding to return to: the forward transform's input sharding (a
        ``NamedSharding`` on ``k``'s mesh). Without it the inverse returns to the layout that leads to ``k``'s
        (the input's on a round trip, when one layout does). In ``order="transposed"`` pass it for an input
        sharded otherwise than :func:`xfft.real_sharding` shards the grid: the spectra of two layouts can have
        the same shape and sharding with their axes in different orders (a 16^3 grid sharded ``P('x')`` or
        ``P(None, 'x')`` on 8 devices), and without it the inverse reads ``k`` as the spectrum of the former.

    Returns:
      A complex array; a round trip returns the input's sharding (with ``out_sharding``, that sharding).

    Raises:
      As :func:`xfftn`; ``ValueError`` for an ``s`` that does not fit ``k``, or an ``out_sharding`` on another
      mesh, not fitting the real shape, or whose forward transform does not leave ``k``; ``TypeError`` for an
      ``out_sharding`` that is not a ``NamedSharding``.
    """
    return _inverse(k, ndim, axes, norm, False, s, "ixfftn", backend, order, out_sharding=out_sharding)


def xrfftn(x: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
           norm: str | None = "backward", *, backend: str | Backend | None = None,
           order: str = "natural", drop_nyquist: bool = False) -> jax.Array:
    """Distributed real-to-complex FFT; the last transformed axis keeps ``n // 2 + 1`` coefficients.

    Same semantics as ``numpy.fft.rfftn`` over the trailing ``ndim`` axes (or ``axes``), with the arguments,
    sharding rules and errors of :func:`xfftn`. ``x`` must be real floating
    point (``TypeError`` otherwise).

    ``drop_nyquist=True`` (keyword; an even ``n``): the half axis keeps ``n // 2`` coefficients, leaving out the
    Nyquist one: ``numpy.fft.rfftn(x)[..., :n // 2]`` (half axis last). ``n // 2`` often splits evenly over the
    devices where ``n // 2 + 1`` does not: a 2D slab transform then needs one all-to-all instead of two (the
    mesh axes stay on the half axis instead of moving back). It is exact for fields without a Nyquist
    component (dealiased ones); :func:`ixrfftn` with ``drop_nyquist=True`` inverts it, taking the Nyquist
    coefficient as zero. Other backends run it on the native backend (:class:`xfft.BackendFallbackWarning`).
    """
    return _forward(x, ndim, axes, norm, True, "xrfftn", backend, order, drop_nyquist)


def ixrfftn(k: jax.Array, ndim: int | None = None, axes: Sequence[int] | None = None,
            norm: str | None = "backward", *, s: Sequence[int] | None = None,
            backend: str | Backend | None = None, order: str = "natural", drop_nyquist: bool = False,
            out_sharding: NamedSharding | None = None) -> jax.Array:
    """Inverse of :func:`xrfftn` (complex-to-real), like ``numpy.fft.irfftn``.

    Args:
      k: half spectrum as returned by :func:`xrfftn`.
      ndim, axes, norm, backend: as :func:`xfftn` (``axes`` in natural numbering).
      s: (keyword) real-space lengths of the transformed axes; only
        the last may differ from ``k`` (it selects an odd length ``2 m - 1`` instead of the default
        ``2 (m - 1)``). Cropping/padding: :mod:`xfft.fft`.
      order: the order of ``k``'s axes (as :func:`xrfftn` returned it); the output is in natural order. Pass
        ``s`` with ``"transposed"``: a permuted half spectrum can fit several real shapes (which axis is the
        half axis), and then ``ValueError`` asks for it rather than guess.
      drop_nyquist: (keyword) ``k`` comes from ``xrfftn(..., drop_nyquist=True)``: its half axis holds the ``m``
        coefficients of a real length ``n = 2 m`` without the Nyquist one, which is taken as zero (``numpy.fft.
        irfftn(k, s=(..., 2 * m))``); ``s``, if given, must say ``2 m``.
      out_sharding: (keyword) as :func:`ixfftn`.

    Returns:
      A real array in the real-space layout that :func:`xrfftn` maps onto ``k``'s layout (``out_sharding``).

    Raises:
      As :func:`ixfftn`.
    """
    return _inverse(k, ndim, axes, norm, True, s, "ixrfftn", backend, order, drop_nyquist, out_sharding)


def xfft3d(x: jax.Array, norm: str | None = "backward", *, backend: str | Backend | None = None,
           order: str = "natural") -> jax.Array:
    """Distributed 3D complex FFT over the last three axes (leading axes are batched). See :func:`xfftn`."""
    return _forward(x, 3, None, norm, False, "xfft3d", backend, order)


def ixfft3d(k: jax.Array, norm: str | None = "backward", *, s: Sequence[int] | None = None,
            backend: str | Backend | None = None, order: str = "natural",
            out_sharding: NamedSharding | None = None) -> jax.Array:
    """Inverse of :func:`xfft3d`. See :func:`ixfftn`."""
    return _inverse(k, 3, None, norm, False, s, "ixfft3d", backend, order, out_sharding=out_sharding)


def xrfft3d(x: jax.Array, norm: str | None = "backward", *, backend: str | Backend | None = None,
            order: str = "natural") -> jax.Array:
    """Distributed 3D real-to-complex FFT over the last three axes. See :func:`xrfftn`."""
    return _forward(x, 3, None, norm, True, "xrfft3d", backend, order)


def ixrfft3d(k: jax.Array, norm: str | None = "backward", *, s: Sequence[int] | None = None,
             backend: str | Backend | None = None, order: str = "natural",
             out_sharding: NamedSharding | None = None) -> jax.Array:
    """Inverse of :func:`xrfft3d` (complex-to-real over the last three axes; ``s`` keyword). See :func:`ixrfftn`."""
    return _inverse(k, 3, None, norm, True, s, "ixrfft3d", backend, order, out_sharding=out_sharding)
