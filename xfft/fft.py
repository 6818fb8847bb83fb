"""``xfft.fft``: ``jax.numpy.fft`` (and ``numpy.fft``) for sharded arrays, same names, signatures and defaults.

``import xfft.fft as fft`` in place of ``import jax.numpy.fft as fft`` turns single-device spectral code into
distributed code, under ``jax.jit``, ``jax.grad`` and ``jax.vmap``:

- an array on one device (or a one-device mesh, or a numpy array) runs exactly ``jax.numpy.fft`` (the same call,
  so the same XLA op and the same errors);
- a sharded array runs xfft's planned transform: local FFTs and all-to-alls in ``jax.shard_map``, never an
  all-gather, also when its transformed axes are not sharded (``jax.numpy.fft`` all-gathers a batch-sharded
  array on an Explicit mesh). On an Explicit mesh, where the sharding is part of an array's type, the result is
  sharded like the input, as ``jax.numpy.fft``'s is (so slices and sums with arrays sharded like the input
  type-check the same): the plan's all-to-alls, then one reshard back where the plan left another layout (a
  slab's ``fftn``: two all-to-alls; :func:`xfft.xfftn` keeps the plan's ``P(None, 'x')`` at one). On an Auto mesh
  the result keeps the plan's layout (:func:`xfft.spectral_sharding`), and XLA reshards it where needed;
- arguments get ``jax.numpy.fft``'s own checks first, so a bad one raises what ``jax.numpy.fft`` raises (type
  and message); an empty ``axes`` returns the input;
- ``s=``/``n=`` crop or zero-pad the input like numpy, each axis where it is local (a sharded axis first lends
  its mesh axes to an axis that keeps its length: one all-to-all; where none can, it is resized in place by
  collective permutes, and gathered only if the new length does not divide over its devices);
- a real transform whose every axis is sharded (``rfft`` of a 1D sharded array) runs as the complex transform
  of those axes (four-step across the devices);
- :func:`fftshift`/:func:`ifftshift` are :func:`xfft.xroll` (a collective permute of boundary rows along a
  sharded axis), :func:`fftfreq`/:func:`rfftfreq` are ``jax.numpy.fft``'s (small unsharded vectors that
  broadcast against any sharded spectrum);
- :func:`dct`, :func:`idct`, :func:`dst`, :func:`idst` and their n-dim forms are ``scipy.fft``'s, on
  :func:`xfft.xdctn`/:func:`xfft.xdstn`.

Remaining differences from ``numpy.fft`` (the guide page "xfft.fft" lists them with the cost of each data
movement): no ``out=``; repeated ``axes`` raise (as in ``jax.numpy.fft``); integer input becomes
complex64/float32 (as in ``jax.numpy.fft``); on an Auto mesh under ``jax.jit`` the input's sharding is not
visible, so xfft assumes :func:`xfft.real_sharding`'s layout (XLA reshards other inputs) and runs
``jax.numpy.fft`` on the gathered array where no distributed plan exists for that layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.numpy.fft import fftfreq as fftfreq
from jax.numpy.fft import rfftfreq as rfftfreq

from ._fft_front import C2C as _C2C
from ._fft_front import C2R as _C2R
from ._fft_front import R2C as _R2C
from ._fft_front import like_jax as _like_jax
from ._fft_front import placed as _placed
from ._fft_front import transform as _transform
from ._roll import xroll
from ._scipy_r2r import dct as dct
from ._scipy_r2r import dctn as dctn
from ._scipy_r2r import dst as dst
from ._scipy_r2r import dstn as dstn
from ._scipy_r2r import idct as idct
from ._scipy_r2r import idctn as idctn
from ._scipy_r2r import idst as idst
from ._scipy_r2r import idstn as idstn
from ._validate import axes_list

__all__ = ["dct", "dctn", "dst", "dstn", "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "idct", "idctn",
           "idst", "idstn", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft",
           "rfft2", "rfftfreq", "rfftn"]


def fftn(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> jax.Array:
    """N-dimensional FFT, like ``numpy.fft.fftn``/``jax.numpy.fft.fftn``, of a sharded or unsharded array.

    Args:
      a: array (``jax.Array`` on a mesh or one device, or numpy); real input is promoted to complex.
      s: lengths of the transformed axes: the input is cropped or zero-padded to them (default: unchanged).
      axes: axes to transform (default: all, or the last ``len(s)``); any order, negative entries allowed.
      norm: None/``"backward"``, ``"ortho"`` or ``"forward"``.

    Returns:
      Complex spectrum. Sharding: one device in, one device out; on an Explicit mesh, sharded like ``a`` (as
      ``jax.numpy.fft``; where that layout does not split the output shape evenly, the plan's); on an Auto mesh,
      the spectral layout of :func:`xfft.xfftn` over ``axes`` (slab ``P('x')`` -> ``P(None, 'x')``).

    Raises:
      TypeError: ``a`` is not an array, or ``s``/``axes`` are not ints. ValueError: bad ``s``, ``axes`` or
        ``norm``, or a sharding with no distributed plan (e.g. a 1D array sharded over the mesh).
    """
    return _transform(_C2C, False, a, s, axes, norm, "fftn", jnp.fft.fftn, (s, axes, norm))


def ifftn(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> jax.Array:
    """N-dimensional inverse FFT, like ``numpy.fft.ifftn``. Args, Raises as :func:`fftn`.

    Returns:
      Complex array, sharded as :func:`fftn`'s (a round trip keeps the input's sharding).
    """
    return _transform(_C2C, True, a, s, axes, norm, "ifftn", jnp.fft.ifftn, (s, axes, norm))


def rfftn(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> jax.Array:
    """N-dimensional real FFT, like ``numpy.fft.rfftn``: the last of ``axes`` keeps ``n // 2 + 1`` coefficients.

    Args, Raises as :func:`fftn` (``a`` must be real: ``TypeError`` otherwise). Returns the half spectrum,
    sharded as :func:`fftn`'s (on an Auto mesh like :func:`xfft.xrfftn`'s).
    """
    return _transform(_R2C, False, a, s, axes, norm, "rfftn", jnp.fft.rfftn, (s, axes, norm))


def irfftn(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> jax.Array:
    """N-dimensional inverse real FFT, like ``numpy.fft.irfftn``.

    Args:
      a: half spectrum (as :func:`rfftn` returns it).
      s: real output lengths of ``axes``; the input is cropped/padded to ``s[:-1]`` and ``s[-1] // 2 + 1``.
        Default: ``a``'s lengths, and ``2 (m - 1)`` along the last axis.
      axes, norm: as :func:`fftn`.

    Returns:
      Real array, sharded as :func:`fftn`'s (a round trip keeps the input's sharding).

    Raises:
      As :func:`fftn`.
    """
    return _transform(_C2R, True, a, s, axes, norm, "irfftn", jnp.fft.irfftn, (s, axes, norm))


def fft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """1D FFT along ``axis``, like ``numpy.fft.fft`` (``n`` crops or zero-pads). See :func:`fftn`."""
    return _transform(_C2C, False, a, None, None, norm, "fft", jnp.fft.fft, (n, axis, norm))


def ifft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """1D inverse FFT along ``axis``, like ``numpy.fft.ifft``. See :func:`ifftn`."""
    return _transform(_C2C, True, a, None, None, norm, "ifft", jnp.fft.ifft, (n, axis, norm))


def rfft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """1D real FFT along ``axis``, like ``numpy.fft.rfft``. See :func:`rfftn`."""
    return _transform(_R2C, False, a, None, None, norm, "rfft", jnp.fft.rfft, (n, axis, norm))


def irfft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """1D inverse real FFT along ``axis``, like ``numpy.fft.irfft`` (``n``: output length). See :func:`irfftn`."""
    return _transform(_C2R, True, a, None, None, norm, "irfft", jnp.fft.irfft, (n, axis, norm))


def fft2(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> jax.Array:
    """2D FFT over ``axes`` (default the last two), like ``numpy.fft.fft2``. See :func:`fftn`."""
    return _transform(_C2C, False, a, s, axes, norm, "fft2", jnp.fft.fft2, (s, axes, norm))


def ifft2(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> jax.Array:
    """2D inverse FFT, like ``numpy.fft.ifft2``. See :func:`ifftn`."""
    return _transform(_C2C, True, a, s, axes, norm, "ifft2", jnp.fft.ifft2, (s, axes, norm))


def rfft2(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> jax.Array:
    """2D real FFT, like ``numpy.fft.rfft2``. See :func:`rfftn`."""
    return _transform(_R2C, False, a, s, axes, norm, "rfft2", jnp.fft.rfft2, (s, axes, norm))


def irfft2(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> jax.Array:
    """2D inverse real FFT, like ``numpy.fft.irfft2``. See :func:`irfftn`."""
    return _transform(_C2R, True, a, s, axes, norm, "irfft2", jnp.fft.irfft2, (s, axes, norm))


_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def hfft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """FFT of a signal with Hermitian symmetry (real spectrum), like ``numpy.fft.hfft``: ``irfft(conj(a), n)``
    with the opposite normalization. Output length ``n`` (default ``2 (m - 1)``). See :func:`irfft`."""
    a, pl = _placed(a)
    if pl is None:
        return jnp.fft.hfft(a, n, axis, norm)
    _like_jax(jnp.fft.hfft, a, n, axis, norm)
    swapped = _SWAP[norm]
    return _transform(_C2R, True, jnp.conj(a), None, None, swapped, "hfft", jnp.fft.irfft, (n, axis, swapped))


def ihfft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """Inverse of :func:`hfft`, like ``numpy.fft.ihfft``: ``conj(rfft(a, n))`` with the opposite normalization.
    ``a`` must be real. See :func:`rfft`."""
    a, pl = _placed(a)
    if pl is None:
        return jnp.fft.ihfft(a, n, axis, norm)
    _like_jax(jnp.fft.ihfft, a, n, axis, norm)
    swapped = _SWAP[norm]
    return jnp.conj(_transform(_R2C, False, a, None, None, swapped, "ihfft", jnp.fft.rfft, (n, axis, swapped)))


def _shift(x: jax.Array, axes: int | Sequence[int] | None, sign: int, name: str) -> jax.Array:
    if isinstance(x, np.ndarray):
        x = jnp.asarray(x)
    if not isinstance(x, jax.Array):
        raise TypeError(f"{name}: x must be a jax.Array or numpy.ndarray, got {type(x).__name__}")
    _like_jax(getattr(jnp.fft, name), x, axes)
    ax = tuple(range(x.ndim)) if axes is None else axes_list(axes, x.ndim, name, allow_empty=True)
    if not ax:
        return x  # no axis to shift, as numpy and jax.numpy.fft
    return xroll(x, [sign * (x.shape[d] // 2) for d in ax], list(ax))


def fftshift(x: jax.Array, axes: int | Sequence[int] | None = None) -> jax.Array:
    """Move the zero frequency to the centre, like ``numpy.fft.fftshift``: :func:`xfft.xroll` by ``n // 2``.

    Along a sharded axis the boundary rows travel by collective permute (no gather); the sharding is kept.

    Raises:
      TypeError: ``x`` is not an array. ValueError: bad ``axes``.
    """
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x: jax.Array, axes: int | Sequence[int] | None = None) -> jax.Array:
    """Inverse of :func:`fftshift`, like ``numpy.fft.ifftshift`` (roll by ``-(n // 2)``). See :func:`fftshift`."""
    return _shift(x, axes, -1, "ifftshift")
