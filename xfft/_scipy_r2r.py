"""``scipy.fft``'s sine and cosine transforms (``dct``, ``idct``, ``dst``, ``idst`` and their n-dim forms) on
sharded arrays: scipy's signatures and semantics over xfft's planned :func:`xfft.xdctn`/:func:`xfft.xdstn`.

scipy's rules, as ``scipy.fft`` applies them: ``n``/``s`` crop or zero-pad the input (forward and inverse); ``s``
may be one int; ``axes=None`` with ``s`` means the last ``len(s)`` axes; float16 input is computed in float32
and integer or bool input in the default float dtype (float64 with JAX's x64 mode); ``orthogonalize`` defaults to
``norm == "ortho"`` and otherwise scales the boundary entries as scipy does; ``overwrite_x`` and ``workers`` are
accepted and ignored (JAX arrays are immutable). A sharded axis that is the only transformed one and has no other
axis to take its devices (a 1D sharded array) is transformed as the complex FFT of length ``2 M`` of its weighted,
zero-padded input (``M`` = ``N - 1``, ``N`` or ``N + 1`` by type): a four-step FFT across the devices and
collective permutes for the pad and crop, about four times the arithmetic of a local DCT, no gather.
"""

from __future__ import annotations

import math
import operator
from numbers import Number
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._fft_front import C2C, like_input, placed, resize, transform
from ._r2r import ixdctn, ixdstn, xdctn, xdstn

SQRT2 = math.sqrt(2.0)
#: type -> (a, b, M - N, weighted boundary entry of the input, 1/2): kernel cos/sin(pi (n + a)(k + b) / M)
_KERNEL = {("dct", 1): (0.0, 0.0, -1, (0, -1)), ("dct", 2): (0.5, 0.0, 0, ()), ("dct", 3): (0.0, 0.5, 0, (0,)),
           ("dct", 4): (0.5, 0.5, 0, ()), ("dst", 1): (1.0, 1.0, 1, ()), ("dst", 2): (0.5, 1.0, 0, ()),
           ("dst", 3): (1.0, 0.5, 0, (-1,)), ("dst", 4): (0.5, 0.5, 0, ())}
#: the type whose transform inverts each type (up to the factor 1 / (2 M))
_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}
#: orthogonalization (kind, type) -> (entries of the input times sqrt 2, entries of the output divided by sqrt 2)
_ORTHO = {("dct", 1): ((0, -1), (0, -1)), ("dct", 2): ((), (0,)), ("dct", 3): ((0,), ()),
          ("dst", 2): ((), (-1,)), ("dst", 3): ((-1,), ())}


def _as_float(x: Any, name: str) -> jax.Array:
    """``x`` as a floating or complex array, as scipy's ``_asfarray``: float16 -> float32, ints -> default float."""
    x, _ = placed(x)
    if not hasattr(x, "dtype"):
        x = jnp.asarray(x)
    dt = jnp.result_type(x)
    if dt in (jnp.float16, jnp.bfloat16):
        return x.astype(jnp.float32)
    if not (jnp.issubdtype(dt, jnp.floating) or jnp.issubdtype(dt, jnp.complexfloating)):
        return x.astype(jnp.result_type(float))
    return x if isinstance(x, jax.Array) else jnp.asarray(x)


def _ints(v: Any, what: str) -> list[int]:
    if isinstance(v, Number):
        v = (v,)
    try:
        return [operator.index(a) for a in v]
    except TypeError:
        raise ValueError(f"{what} must be a scalar or iterable of integers") from None


def _shape_axes(x: jax.Array, s: Any, axes: Any) -> tuple[list[int], list[int]]:
    """scipy's ``_init_nd_shape_and_axes``: the lengths and non-negative axes of an n-dim call."""
    if axes is not None:
        axes = [a + x.ndim if a < 0 else a for a in _ints(axes, "axes")]
        if any(a >= x.ndim or a < 0 for a in axes):
            raise ValueError("axes exceeds dimensionality of input")
        if len(set(axes)) != len(axes):
            raise ValueError("all axes must be unique")
    if s is not None:
        s = _ints(s, "shape")
        if axes and len(axes) != len(s):
            raise ValueError("when given, axes and shape arguments have to be of the same length")
        if axes is None:
            if len(s) > x.ndim:
                raise ValueError("shape requires more axes than are present")
            axes = list(range(x.ndim - len(s), x.ndim))
        s = [x.shape[a] if v == -1 else v for v, a in zip(s, axes)]
    elif axes is None:
        s, axes = list(x.shape), list(range(x.ndim))
    else:
        s = [x.shape[a] for a in axes]
    if any(v < 1 for v in s):
        raise ValueError(f"invalid number of data points ({s}) specified")
    return s, axes


def _fix_shape(x: jax.Array, lengths: dict[int, int]) -> jax.Array:
    """Crop or zero-pad ``x``'s axes to ``lengths`` (sharded axes where they are local, as :mod:`xfft.fft`)."""
    lengths = {d: n for d, n in lengths.items() if x.shape[d] != n}
    if not lengths:
        return x
    _, pl = placed(x)
    if pl is not None and pl.layout is not None:
        return resize(x, pl, lengths, tuple(sorted(lengths)), False)
    x = x[tuple(slice(0, lengths.get(d, x.shape[d])) for d in range(x.ndim))]
    return jnp.pad(x, [(0, lengths.get(d, x.shape[d]) - x.shape[d]) for d in range(x.ndim)])


def _edges(x: jax.Array, axes: list[int], entries: tuple[int, ...], factor: float) -> jax.Array:
    """``x`` with the given boundary ``entries`` of each of ``axes`` multiplied by ``factor`` (no communication)."""
    if not entries:
        return x
    for d in axes:
        w = np.ones(x.shape[d])
        for e in entries:
            w[e] = factor
        shape = [1] * x.ndim
        shape[d] = x.shape[d]
        x = x * jnp.asarray(w.reshape(shape), x.dtype)
    return x


def _m(kind: str, t: int, n: int) -> int:
    return n + _KERNEL[(kind, t)][2]


def _scale(kind: str, t: int, n: int, norm: str, inverse: bool) -> float:
    """The factor of scipy's unnormalized transform (type ``t``, length ``n``) under ``norm``."""
    two_m = 2 * _m(kind, t, n)
    f = {"backward": 1.0, "ortho": 1 / math.sqrt(two_m), "forward": 1 / two_m}[norm]
    return 1 / (two_m * f) if inverse else f


def _via_fft(x: jax.Array, kind: str, t: int, axis: int) -> jax.Array:
    """scipy's unnormalized ``kind`` of type ``t`` along the sharded ``axis``, by a complex FFT of length ``2 M``:
    ``sum_n w_n x_n e^{-i pi (n + a)(k + b) / M} = e^{-i pi a (k + b) / M} FFT_2M(w_n x_n e^{-i pi n b / M})_k``."""
    a, b, _, half = _KERNEL[(kind, t)]
    n = x.shape[axis]
    m = _m(kind, t, n)
    shape = [1] * x.ndim
    shape[axis] = n
    j = np.arange(n)
    pre = np.exp(-1j * np.pi * j * b / m)
    pre[list(half)] *= 0.5
    post = 2 * np.exp(-1j * np.pi * a * (j + b) / m)
    cdt = jnp.result_type(x.dtype, jnp.complex64)
    parts = (x,) if not jnp.issubdtype(x.dtype, jnp.complexfloating) else (x.real, x.imag)
    out = []
    for p in parts:
        z = p.astype(cdt) * jnp.asarray(pre.reshape(shape), cdt)
        z = transform(C2C, False, z, (2 * m,), (axis,), "backward", kind, jnp.fft.fftn, ((2 * m,), (axis,), None))
        z = _fix_shape(z, {axis: n}) * jnp.asarray(post.reshape(shape), cdt)
        out.append(z.real if kind == "dct" else -z.imag)
    return out[0] if len(out) == 1 else jax.lax.complex(out[0], out[1])


def _needs_fft(x: jax.Array, axes: list[int]) -> bool:
    """Whether xfft's plans cannot take ``axes`` of ``x``: every one of them sharded (a 1D sharded array)."""
    _, pl = placed(x)
    if pl is None or pl.layout is None:
        return False
    sizes = dict(pl.mesh_sizes)
    return all(any(sizes[a] > 1 for a in pl.layout[d]) for d in axes)


def r2r(kind: str, inverse: bool, x: Any, type: Any, s: Any, axes: Any, norm: Any, orthogonalize: Any,
        one: bool) -> jax.Array:
    """One scipy-style call (``one``: the 1D form, ``s`` = ``n``, ``axes`` = ``axis``); see the module docstring."""
    if isinstance(type, bool) or type not in (1, 2, 3, 4):
        raise ValueError(f"invalid type: {type!r} (must be 1, 2, 3 or 4)")
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(f'Invalid norm value {norm!r}, should be "backward", "ortho" or "forward"')
    norm = norm or "backward"
    x = _as_float(x, kind)
    if one:
        if not isinstance(axes, (int, np.integer)) or isinstance(axes, bool):
            raise TypeError(f"axis must be an int, got {axes!r}")
        if not -x.ndim <= axes < x.ndim:
            raise ValueError(f"axis {axes} is out of bounds for an array of {x.ndim} dimensions")
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, np.integer))):
            raise ValueError(f"n must be an integer, got {s!r}")
        axes = [int(axes) % x.ndim]
        s = [x.shape[axes[0]]] if s is None else [int(s)]
        if s[0] < 1:
            raise ValueError(f"invalid number of data points ({s[0]}) specified")
    else:
        s, axes = _shape_axes(x, s, axes)
    if not axes:
        return x
    x = _fix_shape(x, dict(zip(axes, s)))
    if type == 1 and kind == "dct" and any(x.shape[d] < 2 for d in axes):
        raise ValueError(f"invalid number of data points ({[x.shape[d] for d in axes]}) specified")
    ortho = norm == "ortho" if orthogonalize is None else bool(orthogonalize)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        ortho = norm == "ortho"  # scipy transforms the real and imaginary parts without orthogonalize
    pre, post = _ORTHO.get((kind, type), ((), ()))
    if inverse:  # the inverse of (post . T . pre): pre^-1 . T^-1 . post^-1
        pre, post = post, pre
    if _needs_fft(x, axes):
        return _sharded_1d(x, kind, type, axes, norm, inverse, ortho, pre, post)
    native = norm == "ortho"  # xdctn's "ortho" is scipy's orthogonalized one
    if ortho != native:
        x = _edges(x, axes, pre, SQRT2 if ortho else 1 / SQRT2)
    f = {("dct", False): xdctn, ("dct", True): ixdctn, ("dst", False): xdstn, ("dst", True): ixdstn}[kind, inverse]
    y = f(x, type, axes=tuple(axes), norm=norm)
    if ortho != native:
        y = _edges(y, axes, post, 1 / SQRT2 if ortho else SQRT2)
    pl = placed(x)[1]
    return y if pl is None else like_input(y, pl)


def _sharded_1d(x: jax.Array, kind: str, t: int, axes: list[int], norm: str, inverse: bool, ortho: bool,
                pre: tuple[int, ...], post: tuple[int, ...]) -> jax.Array:
    """The transform along each (sharded) axis by :func:`_via_fft`, scaled for ``norm`` and orthogonalized."""
    for d in axes:
        n = x.shape[d]
        if ortho:
            x = _edges(x, [d], pre, SQRT2)
        tt = _INVERSE_TYPE[t] if inverse else t
        x = _via_fft(x, kind, tt, d) * _scale(kind, t, n, norm, inverse)
        if ortho:
            x = _edges(x, [d], post, 1 / SQRT2)
    return x


_DOC = """scipy.fft.{name} for sharded (or one-device) arrays, on xfft's planned transforms.

    Args:
      x: array (``jax.Array``, numpy array or array-like); float16 is computed in float32, integers in the default
        float dtype; complex input has its real and imaginary parts transformed.
      type: 1, 2 (default), 3 or 4.
      {size}
      {axes}
      norm: None/``"backward"``, ``"ortho"`` or ``"forward"``, as scipy.
      overwrite_x, workers: accepted and ignored (JAX arrays are immutable; XLA chooses its threads).
      orthogonalize: scipy's orthogonalized variant (boundary entries scaled by sqrt 2); default ``norm == "ortho"``.

    Returns:
      The transform, of ``x``'s (upcast) dtype; sharded like :func:`xfft.xdctn`'s result over the same axes.

    Raises:
      ValueError: bad ``type``, ``norm``, ``{sname}`` or ``{aname}`` (as scipy), a type-1 DCT of fewer than 2
        points, or a sharding with no even plan. TypeError: a non-integer ``axis``.
    """
_ONE = dict(size="n: length of the transform: the input is cropped or zero-padded to it (default: unchanged).",
            axes="axis: the axis to transform (default -1).", sname="n", aname="axis")
_ND = dict(size="s: lengths of the transformed axes (an int or a sequence; -1 keeps an axis's length): the input "
                "is cropped or zero-padded to them.",
           axes="axes: the axes to transform (an int or a sequence; default: all, or the last ``len(s)``).",
           sname="s", aname="axes")


def dct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, orthogonalize=None):
    return r2r("dct", False, x, type, n, axis, norm, orthogonalize, True)


def idct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, orthogonalize=None):
    return r2r("dct", True, x, type, n, axis, norm, orthogonalize, True)


def dst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, orthogonalize=None):
    return r2r("dst", False, x, type, n, axis, norm, orthogonalize, True)


def idst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, orthogonalize=None):
    return r2r("dst", True, x, type, n, axis, norm, orthogonalize, True)


def dctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, orthogonalize=None):
    return r2r("dct", False, x, type, s, axes, norm, orthogonalize, False)


def idctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, orthogonalize=None):
    return r2r("dct", True, x, type, s, axes, norm, orthogonalize, False)


def dstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, orthogonalize=None):
    return r2r("dst", False, x, type, s, axes, norm, orthogonalize, False)


def idstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, orthogonalize=None):
    return r2r("dst", True, x, type, s, axes, norm, orthogonalize, False)


for _f in (dct, idct, dst, idst, dctn, idctn, dstn, idstn):
    _f.__doc__ = _DOC.format(name=_f.__name__, **(_ND if _f.__name__.endswith("n") else _ONE))
