"""``xfft.fft``: ``jax.numpy.fft`` (and ``numpy.fft``) for sharded arrays, same names, signatures and defaults.

``import xfft.fft as fft`` in place of ``import jax.numpy.fft as fft`` turns single-device spectral code into
distributed code, under ``jax.jit``, ``jax.grad`` and ``jax.vmap``:

- an array on one device (or a one-device mesh, or a numpy array) runs exactly ``jax.numpy.fft`` (the same call,
  so the same XLA op and the same errors);
- a sharded array runs xfft's planned transform: local FFTs and all-to-alls in ``jax.shard_map``, never an
  all-gather, also when its transformed axes are not sharded (``jax.numpy.fft`` all-gathers a batch-sharded
  array on an Explicit mesh). The result is sharded the way the plan leaves it (slab ``P('x')`` ->
  ``P(None, 'x')`` for ``fftn``); an inverse returns the layout its forward started from, so round trips keep
  the input's sharding (:func:`xfft.spectral_sharding` says where a spectrum lands);
- ``s=``/``n=`` crop or zero-pad the input like numpy, each axis where it is local (a sharded axis first lends
  its mesh axes to an axis that keeps its length: one all-to-all);
- :func:`fftshift`/:func:`ifftshift` are :func:`xfft.xroll` (a collective permute of boundary rows along a
  sharded axis), :func:`fftfreq`/:func:`rfftfreq` are ``jax.numpy.fft``'s (small unsharded vectors that
  broadcast against any sharded spectrum).

Remaining differences from ``numpy.fft`` (see the README section "xfft.fft"): the output sharding above; no
``out=``; repeated ``axes`` raise (as in ``jax.numpy.fft``); integer input becomes complex64/float32 (as in
``jax.numpy.fft``); a 1D array sharded over the mesh is transformed across the devices (complex transforms only:
``rfft`` of it raises ``ValueError``), but a sharded axis that no other axis can take evenly cannot be cropped or
padded (``ValueError``); on an Auto mesh under ``jax.jit`` the input's sharding
is not visible, so xfft assumes :func:`xfft.real_sharding`'s layout (XLA reshards other inputs) and runs
``jax.numpy.fft`` on the gathered array where no distributed plan exists for that layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.numpy.fft import fftfreq as fftfreq
from jax.numpy.fft import rfftfreq as rfftfreq
from jax.sharding import NamedSharding, PartitionSpec

from . import _dispatch
from ._partition import Placement, execute, input_layout, placement
from ._plan import plan_forward
from ._plan_resize import plan_resize
from ._roll import xroll
from ._validate import axes_list, check_norm
from ._warn import check_x64

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft",
           "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]

_C2C, _R2C, _C2R = "c2c", "r2c", "c2r"


def _placed(a: Any) -> tuple[Any, Placement | None]:
    """``a`` (a numpy float64 array warns once when JAX's x64 mode is off) and its mesh placement, if any."""
    if isinstance(a, np.ndarray):
        check_x64(a.dtype, "a (a numpy array)")
        return a, None
    if isinstance(a, jax.Array):
        return a, placement(a)
    return a, None  # lists, scalars: jax.numpy.fft decides (and raises its own TypeError)


@lru_cache(maxsize=64)
def _dtype(dtype: Any, kind: str) -> Any:
    """The dtype ``jax.numpy.fft`` computes a transform of ``kind`` in, for input ``dtype`` (the input's for r2c)."""
    if kind == _R2C:
        return jax.eval_shape(lambda: jnp.fft.irfft(jnp.fft.rfft(jnp.zeros((2,), dtype)))).dtype
    return jax.eval_shape(lambda: jnp.fft.fftn(jnp.zeros((1,), dtype))).dtype


def _axes_s(a: jax.Array, s: Any, axes: Any, name: str) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """numpy's rules: ``axes`` default all axes (the last ``len(s)`` with ``s``); one ``s`` entry per axis."""
    if s is not None:
        try:
            s = tuple(int(v) for v in s)
        except TypeError:
            raise TypeError(f"{name}: s must be a sequence of ints, got {s!r}") from None
        if any(v < 1 for v in s):
            raise ValueError(f"{name}: s={s} must hold positive lengths")
    if axes is None:
        ax = tuple(range(a.ndim - (a.ndim if s is None else len(s)), a.ndim))
        if s is not None and len(s) > a.ndim:
            raise ValueError(f"{name}: s={s} has more entries than a has axes ({a.ndim})")
    else:
        ax = axes_list(axes, a.ndim, name, allow_int=False)
    if s is not None and len(s) != len(ax):
        raise ValueError(f"{name}: s={s} and axes={tuple(axes)} must have the same length")
    if not ax:
        raise ValueError(f"{name}: no axes to transform (a has shape {tuple(a.shape)})")
    return ax, s


def _resize(a: jax.Array, pl: Placement, lengths: dict[int, int], ax: tuple[int, ...], real: bool) -> jax.Array:
    """Crop or zero-pad ``a``'s axes to ``lengths``, each where it is local (:func:`xfft._plan_resize.plan_resize`)."""
    change = tuple(sorted((d, n) for d, n in lengths.items() if a.shape[d] != n))
    if not change:
        return a
    shape = tuple(a.shape)
    plan = plan_resize(shape, input_layout(pl, shape, ax, real), change, pl.mesh_sizes)
    return execute(a, plan, pl, "backward")


def _plannable(shape: tuple[int, ...], pl: Placement, ax: tuple[int, ...], real: bool) -> bool:
    """Whether a distributed plan exists for the real shape ``shape``; False only where the layout is not visible
    (Auto mesh under ``jax.jit``), which leaves the array to ``jax.numpy.fft``."""
    if pl.layout is not None:
        return True
    try:
        plan_forward(shape, input_layout(pl, shape, ax, real), ax, pl.mesh_sizes, real)
    except ValueError:
        return False
    return True


def _gathered(local: Callable[[Any], jax.Array], a: jax.Array, pl: Placement) -> jax.Array:
    """``local(a)`` on the whole array, replicated over ``pl.mesh``: the one case xfft gathers, an array whose
    layout it cannot see (an Auto mesh under ``jax.jit``) of a shape no distributed plan splits. Left to XLA's own
    partitioning, ``jax.numpy.fft`` gathers such an array too, and on CPU devices it can also hand the FFT an
    operand in a layout the CPU runtime refuses (an ``INTERNAL`` error when the program runs)."""
    whole = NamedSharding(pl.mesh, PartitionSpec())
    return jax.lax.with_sharding_constraint(local(jax.lax.with_sharding_constraint(a, whole)), whole)


def _transform(kind: str, inverse: bool, a: Any, s: Any, axes: Any, norm: Any, name: str,
               local: Callable[[Any], jax.Array]) -> jax.Array:
    """One ``numpy.fft`` transform: ``local(a)`` (``jax.numpy.fft`` itself) off a mesh, else the planned path."""
    a, pl = _placed(a)
    if pl is None:
        return local(a)
    ax, s = _axes_s(a, s, axes, name)
    norm = check_norm(norm)
    real = kind != _C2C
    shape = [a.shape[d] if s is None or d not in ax else s[ax.index(d)] for d in range(a.ndim)]
    if kind == _C2R and s is None:
        shape[ax[-1]] = 2 * (a.shape[ax[-1]] - 1)
    if not _plannable(tuple(shape), pl, ax, real):
        return _gathered(local, a, pl)
    dt = jnp.result_type(a)
    if kind == _R2C and jnp.issubdtype(dt, jnp.complexfloating):
        raise TypeError(f"{name}: a must be real for a real-to-complex transform, got {dt}")
    a = a.astype(_dtype(dt, kind))
    if kind == _C2R:
        n = 2 * (a.shape[ax[-1]] - 1) if s is None else s[-1]
        if n < 1:
            raise ValueError(f"{name}: the output length along axis {ax[-1]} must be positive; pass n/s")
        ins = tuple(a.shape[d] for d in ax[:-1]) if s is None else s[:-1]
        a = _resize(a, pl, dict(zip(ax, ins + (n // 2 + 1,))), ax, False)
        return _dispatch.inverse(a, ax, norm, True, ins + (n,), name, backend=None, order="natural")
    if s is not None:
        a = _resize(a, pl, dict(zip(ax, s)), ax, real)
    if inverse:
        return _dispatch.inverse(a, ax, norm, False, None, name, backend=None, order="natural")
    return _dispatch.forward(a, ax, norm, real, backend=None, order="natural")


def _one(n: int | None, axis: int, name: str) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))):
        raise TypeError(f"{name}: n must be an int or None, got {n!r}")
    return (None if n is None else (int(n),)), (int(axis),)


def fftn(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> jax.Array:
    """N-dimensional FFT, like ``numpy.fft.fftn``/``jax.numpy.fft.fftn``, of a sharded or unsharded array.

    Args:
      a: array (``jax.Array`` on a mesh or one device, or numpy); real input is promoted to complex.
      s: lengths of the transformed axes: the input is cropped or zero-padded to them (default: unchanged).
      axes: axes to transform (default: all, or the last ``len(s)``); any order, negative entries allowed.
      norm: None/``"backward"``, ``"ortho"`` or ``"forward"``.

    Returns:
      Complex spectrum. Sharding: one device in, one device out; a sharded array gives the spectral layout of
      :func:`xfft.xfftn` over ``axes`` (slab ``P('x')`` -> ``P(None, 'x')``, pencil ``P('x', 'y')`` ->
      ``P(None, 'x', 'y')``; transformed axes unsharded: unchanged, no communication).

    Raises:
      TypeError: ``a`` is not an array, or ``s``/``axes`` are not ints. ValueError: bad ``s``, ``axes`` or
        ``norm``, or a sharding with no distributed plan (e.g. a 1D array sharded over the mesh).
    """
    return _transform(_C2C, False, a, s, axes, norm, "fftn", lambda a: jnp.fft.fftn(a, s, axes, norm))


def ifftn(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> jax.Array:
    """N-dimensional inverse FFT, like ``numpy.fft.ifftn``. Args, Raises as :func:`fftn`.

    Returns:
      Complex array; a sharded spectrum returns to the layout whose :func:`fftn` gives its layout (a round trip
      keeps the input's sharding).
    """
    return _transform(_C2C, True, a, s, axes, norm, "ifftn", lambda a: jnp.fft.ifftn(a, s, axes, norm))


def rfftn(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> jax.Array:
    """N-dimensional real FFT, like ``numpy.fft.rfftn``: the last of ``axes`` keeps ``n // 2 + 1`` coefficients.

    Args, Raises as :func:`fftn` (``a`` must be real: ``TypeError`` otherwise). Returns the half spectrum,
    sharded like :func:`xfft.xrfftn`'s (a pencil's half axis rarely divides: ``P(None, ('x', 'y'), None)``).
    """
    return _transform(_R2C, False, a, s, axes, norm, "rfftn", lambda a: jnp.fft.rfftn(a, s, axes, norm))


def irfftn(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> jax.Array:
    """N-dimensional inverse real FFT, like ``numpy.fft.irfftn``.

    Args:
      a: half spectrum (as :func:`rfftn` returns it).
      s: real output lengths of ``axes``; the input is cropped/padded to ``s[:-1]`` and ``s[-1] // 2 + 1``.
        Default: ``a``'s lengths, and ``2 (m - 1)`` along the last axis.
      axes, norm: as :func:`fftn`.

    Returns:
      Real array; a sharded spectrum returns to the layout whose :func:`rfftn` gives its layout.

    Raises:
      As :func:`fftn`.
    """
    return _transform(_C2R, True, a, s, axes, norm, "irfftn", lambda a: jnp.fft.irfftn(a, s, axes, norm))


def fft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """1D FFT along ``axis``, like ``numpy.fft.fft`` (``n`` crops or zero-pads). See :func:`fftn`."""
    s, ax = _one(n, axis, "fft")
    return _transform(_C2C, False, a, s, ax, norm, "fft", lambda a: jnp.fft.fft(a, n, axis, norm))


def ifft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """1D inverse FFT along ``axis``, like ``numpy.fft.ifft``. See :func:`ifftn`."""
    s, ax = _one(n, axis, "ifft")
    return _transform(_C2C, True, a, s, ax, norm, "ifft", lambda a: jnp.fft.ifft(a, n, axis, norm))


def rfft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """1D real FFT along ``axis``, like ``numpy.fft.rfft``. See :func:`rfftn`."""
    s, ax = _one(n, axis, "rfft")
    return _transform(_R2C, False, a, s, ax, norm, "rfft", lambda a: jnp.fft.rfft(a, n, axis, norm))


def irfft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """1D inverse real FFT along ``axis``, like ``numpy.fft.irfft`` (``n``: output length). See :func:`irfftn`."""
    s, ax = _one(n, axis, "irfft")
    return _transform(_C2R, True, a, s, ax, norm, "irfft", lambda a: jnp.fft.irfft(a, n, axis, norm))


def fft2(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> jax.Array:
    """2D FFT over ``axes`` (default the last two), like ``numpy.fft.fft2``. See :func:`fftn`."""
    return _transform(_C2C, False, a, s, axes, norm, "fft2", lambda a: jnp.fft.fft2(a, s, axes, norm))


def ifft2(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> jax.Array:
    """2D inverse FFT, like ``numpy.fft.ifft2``. See :func:`ifftn`."""
    return _transform(_C2C, True, a, s, axes, norm, "ifft2", lambda a: jnp.fft.ifft2(a, s, axes, norm))


def rfft2(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> jax.Array:
    """2D real FFT, like ``numpy.fft.rfft2``. See :func:`rfftn`."""
    return _transform(_R2C, False, a, s, axes, norm, "rfft2", lambda a: jnp.fft.rfft2(a, s, axes, norm))


def irfft2(a: jax.Array, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> jax.Array:
    """2D inverse real FFT, like ``numpy.fft.irfft2``. See :func:`irfftn`."""
    return _transform(_C2R, True, a, s, axes, norm, "irfft2", lambda a: jnp.fft.irfft2(a, s, axes, norm))


_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _swapped(norm: Any, name: str) -> str:
    if norm not in _SWAP:
        check_norm(norm)  # raises the ValueError naming norm
    return _SWAP[norm]


def hfft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """FFT of a signal with Hermitian symmetry (real spectrum), like ``numpy.fft.hfft``: ``irfft(conj(a), n)``
    with the opposite normalization. Output length ``n`` (default ``2 (m - 1)``). See :func:`irfft`."""
    a, pl = _placed(a)
    if pl is None:
        return jnp.fft.hfft(a, n, axis, norm)
    return irfft(jnp.conj(a), n, axis, _swapped(norm, "hfft"))


def ihfft(a: jax.Array, n: int | None = None, axis: int = -1, norm: str | None = None) -> jax.Array:
    """Inverse of :func:`hfft`, like ``numpy.fft.ihfft``: ``conj(rfft(a, n))`` with the opposite normalization.
    ``a`` must be real. See :func:`rfft`."""
    a, pl = _placed(a)
    if pl is None:
        return jnp.fft.ihfft(a, n, axis, norm)
    return jnp.conj(rfft(a, n, axis, _swapped(norm, "ihfft")))


def _shift(x: jax.Array, axes: int | Sequence[int] | None, sign: int, name: str) -> jax.Array:
    if isinstance(x, np.ndarray):
        x = jnp.asarray(x)
    if not isinstance(x, jax.Array):
        raise TypeError(f"{name}: x must be a jax.Array or numpy.ndarray, got {type(x).__name__}")
    ax = tuple(range(x.ndim)) if axes is None else axes_list(axes, x.ndim, name)
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
