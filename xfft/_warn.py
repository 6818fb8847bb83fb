"""Warnings that point at the caller's code: lost precision, backend fallbacks."""

from __future__ import annotations

import sys
import warnings

_INTERNAL = ("xfft", "jax", "jaxlib", "contextlib", "functools")


class PrecisionWarning(UserWarning):
    """xfft computes in single precision what the caller gave in double (JAX's 64-bit mode is off)."""


def stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` in the caller of this function that names the first frame
    outside xfft and JAX (the user's line, also when the call is traced by ``jax.jit``)."""
    frame = sys._getframe(2)
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _INTERNAL:
        frame = frame.f_back
        level += 1
    return level


_X64_WARNED: set[str] = set()


def check_x64(dtype: object, what: str) -> None:
    """Warn once per process when a float64/complex128 ``dtype`` will be computed in single precision.

    With JAX's 64-bit mode off, ``jnp.asarray`` of a float64 numpy array is already float32, so this is called
    where the input (or the requested dtype) is still the caller's: a numpy array or a dtype argument.
    """
    import jax
    import numpy as np

    try:
        dt = np.dtype(dtype)
    except TypeError:
        return
    if dt not in (np.float64, np.complex128) or jax.config.jax_enable_x64 or _X64_WARNED:
        return
    _X64_WARNED.add(what)
    single = "float32" if dt.kind == "f" else "complex64"
    warnings.warn(f"{what} is {dt}, but JAX's 64-bit mode is off, so xfft computes in {single}. Turn it on "
                  "before any JAX computation with jax.config.update('jax_enable_x64', True) or the environment "
                  "variable JAX_ENABLE_X64=1 (this warning is shown once)", PrecisionWarning,
                  stacklevel=stacklevel())
