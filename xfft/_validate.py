"""Argument checks shared by every public transform: arrays, norms, axes, dtypes and ``s``."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._warn import check_x64

NORMS = ("backward", "ortho", "forward")


def as_array(x: object, name: str = "x") -> jax.Array:
    """``x`` as a JAX array (numpy arrays are converted; a float64 one warns once if JAX's x64 mode is off).

    Raises:
      TypeError: ``x`` is not a ``jax.Array``, tracer or ``numpy.ndarray``.
    """
    if isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer):
        return x  # type: ignore[return-value]
    if isinstance(x, np.ndarray):
        check_x64(x.dtype, f"{name} (a numpy array)")
        return jnp.asarray(x)
    raise TypeError(f"{name} must be a jax.Array or numpy.ndarray, got {type(x).__name__}")


def check_norm(norm: object) -> str:
    """``norm`` as one of :data:`NORMS` (None means ``"backward"``, as in numpy).

    Raises:
      ValueError: anything else.
    """
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS} (or None for 'backward'), got {norm!r}")
    return str(norm)


def axes_list(axes: object, ndim: int, name: str, allow_int: bool = True,
              allow_empty: bool = False) -> tuple[int, ...]:
    """``axes`` (a sequence of ints, or one int if ``allow_int``; negative allowed) as non-negative ints, checked.

    Raises:
      TypeError: not ints. ValueError: out of range, repeated or empty (unless ``allow_empty``).
    """
    if allow_int and isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = (axes,)
    try:
        raw = tuple(int(a) for a in axes)  # type: ignore[union-attr]
        if any(isinstance(a, bool) for a in axes):  # type: ignore[union-attr]
            raise TypeError
    except TypeError:
        what = "an int or a sequence of ints" if allow_int else "a sequence of ints"
        raise TypeError(f"{name}: axes must be {what}, got {axes!r}") from None
    if any(not -ndim <= a < ndim for a in raw):
        raise ValueError(f"{name}: axes {raw} out of range for an array with {ndim} axes")
    out = tuple(a % ndim for a in raw)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: axes {raw} has repeated entries")
    if not out and not allow_empty:
        raise ValueError(f"{name}: axes must not be empty")
    return out


def normalize_axes(x: jax.Array, ndim: int | None, axes: Sequence[int] | None, name: str) -> tuple[int, ...]:
    """The transformed axes of an ``xfftn``-style call: ``axes``, else the last ``ndim``, else all (up to 3).

    Raises:
      TypeError, ValueError: bad ``ndim`` or ``axes``, or an array of more than 3 axes with neither given.
    """
    if axes is not None:
        out = axes_list(axes, x.ndim, name, allow_int=False)
        if ndim is not None and ndim != len(out):
            raise ValueError(f"{name}: ndim={ndim} disagrees with axes={tuple(axes)}")  # type: ignore[arg-type]
        return out
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
    return tuple(range(x.ndim - ndim, x.ndim))


def transform_dtype(x: jax.Array, name: str, real: bool):
    """The dtype a transform of ``x`` runs in: ``x``'s real floating dtype for a real-to-complex transform, else a
    complex dtype (real input promoted, like ``numpy.fft.fftn``).

    Raises:
      TypeError: an integer or bool dtype, or complex input to a real-to-complex transform.
    """
    dt = jnp.result_type(x)
    if jnp.issubdtype(dt, jnp.floating):
        return dt if real else jnp.result_type(dt, jnp.complex64)
    if jnp.issubdtype(dt, jnp.complexfloating) and not real:
        return dt
    if real:
        raise TypeError(f"{name}: x must have a real floating dtype for a real-to-complex transform, got {dt} "
                        "(use xfftn for complex input)")
    raise TypeError(f"{name}: x must have a floating or complex dtype, got {dt}")


def parse_s(s: object, ax: tuple[int, ...], name: str) -> tuple[int, ...] | None:
    """``s`` as a tuple of ints with one entry per transformed axis (or None).

    Raises:
      TypeError: not a sequence of ints. ValueError: wrong length.
    """
    if s is None:
        return None
    try:
        out = tuple(int(v) for v in s)  # type: ignore[union-attr]
    except TypeError:
        raise TypeError(f"{name}: s must be a sequence of ints, got {s!r}") from None
    if len(out) != len(ax):
        raise ValueError(f"{name}: s={out} must have one entry per transformed axis {ax}")
    return out


def real_shape(kshape: tuple[int, ...], ax: tuple[int, ...], s: tuple[int, ...] | None,
               name: str, nyquist: bool = True) -> tuple[int, ...]:
    """The real-space shape of the inverse of a half spectrum of shape ``kshape`` (half axis ``ax[-1]``);
    ``nyquist=False``: the half axis holds the ``n // 2`` coefficients of an even ``n``, without the Nyquist one.

    Raises:
      ValueError: ``s`` asks for cropping or padding, or does not fit the half axis.
    """
    shape = list(kshape)
    last = ax[-1]
    m = kshape[last]
    if s is None:
        n = 2 * (m - 1) if nyquist else 2 * m
        if n < 1:
            raise ValueError(f"{name}: the half-spectrum axis {last} has length {m}; pass s to set "
                             "the output length")
    else:
        for d, v in zip(ax[:-1], s[:-1]):
            if v != kshape[d]:
                raise ValueError(
                    f"{name}: s={s} is inconsistent with the spectrum shape {tuple(kshape)}: axis {d} has "
                    f"length {kshape[d]} (xfft's transforms do not crop or pad; xfft.fft's functions do)"
                )
        n = s[-1]
        if not nyquist and n != 2 * m:
            raise ValueError(
                f"{name}: s={s} is inconsistent with the spectrum shape {tuple(kshape)}: with drop_nyquist=True "
                f"the half axis {last} holds n // 2 coefficients of an even n = {2 * m}, not {n}"
            )
        if n < 1 or (nyquist and n // 2 + 1 != m):
            raise ValueError(
                f"{name}: s={s} is inconsistent with the spectrum shape {tuple(kshape)}: a real axis of length "
                f"{n} has {n // 2 + 1} half-spectrum coefficients, but axis {last} has {m}"
            )
    shape[last] = n
    return tuple(shape)


def check_drop_nyquist(drop: object, name: str) -> bool:
    """``drop_nyquist`` as a bool (True or False only, numpy's bool included)."""
    if not isinstance(drop, (bool, np.bool_)):
        raise TypeError(f"{name}: drop_nyquist must be True or False, got {drop!r}")
    return bool(drop)
