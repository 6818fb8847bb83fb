"""Backend registry: name -> implementation of the distributed transforms.

A backend is an object with ``forward(x, axes, norm, real)`` and ``inverse(k, axes, norm, real, real_shape)``
that receive validated, normalized arguments (``axes`` non-negative ints, ``norm`` a valid string, dtypes
already promoted) and return the transformed global array. Every backend gives the same values, output
shapes and output shardings; they differ in how the data moves.

Registered backends:

- ``"native"``: local FFTs plus all-to-alls in ``jax.shard_map`` (always available).
- ``"jaxdecomp"``: jaxDecomp's distributed 3D FFT (``pip install "xfft[jaxdecomp]"``), translated to xfft's
  natural axis order and layouts; it falls back to native, with a one-time :class:`BackendFallbackWarning`,
  for what jaxDecomp lacks, or raises ``NotImplementedError`` in strict mode. See
  :mod:`xfft.backends.jaxdecomp`.

Backends are imported lazily on first use, so ``import xfft`` never imports jaxdecomp and a bare install works
without it; :func:`available_backends` lists only those that import. The default backend is ``"native"``; the
environment variable ``XFFT_BACKEND`` changes it for a process, and :func:`use_backend` for a block of code.
A backend that implements the ``order="transposed"`` spectral axis order says so with a class attribute
``supports_order = True`` (and takes ``order=`` in ``forward``/``inverse``); for the others that order runs on
native (:func:`order_fallback`). Every transform also takes ``backend=``, a registered name or a backend object
(for example ``JaxDecompBackend(strict=True)``).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
import warnings
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import jax

ENV_BACKEND = "XFFT_BACKEND"


class BackendFallbackWarning(UserWarning):
    """A backend could not run a transform itself and used the native backend instead (values are the same)."""


@runtime_checkable
class Backend(Protocol):
    name: str

    def forward(self, x: jax.Array, axes: tuple[int, ...], norm: str, real: bool) -> jax.Array: ...

    def inverse(self, k: jax.Array, axes: tuple[int, ...], norm: str, real: bool,
                real_shape: tuple[int, ...]) -> jax.Array: ...


# name -> "module:attribute" of a zero-argument factory (imported on first use), or a backend object.
_REGISTRY: dict[str, str | Backend] = {
    "native": "xfft.backends.native:NativeBackend",
    "jaxdecomp": "xfft.backends.jaxdecomp:JaxDecompBackend",
}
_LOADED: dict[str, Backend] = {}
_ORDER_WARNED: set[str] = set()
_CURRENT: contextvars.ContextVar[str | Backend | None] = contextvars.ContextVar("xfft_backend", default=None)


def _is_backend(obj: object) -> bool:
    return not isinstance(obj, str) and callable(getattr(obj, "forward", None)) and callable(
        getattr(obj, "inverse", None))


def register_backend(name: str, target: str | Backend) -> None:
    """Register a backend: ``"module:attribute"`` of a zero-argument factory (imported lazily), or an object.

    Example: ``register_backend("jaxdecomp-strict", JaxDecompBackend(strict=True))``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"backend name must be a non-empty string, got {name!r}")
    if isinstance(target, str):
        if target.count(":") != 1:
            raise ValueError(f"backend target must be 'module:attribute', got {target!r}")
    elif not _is_backend(target):
        raise TypeError(f"backend target must be 'module:attribute' or an object with forward() and inverse(), "
                        f"got {type(target).__name__}")
    _REGISTRY[name] = target
    _LOADED.pop(name, None)


def registered_backends() -> tuple[str, ...]:
    """Names of all registered backends (whether or not their packages are installed)."""
    return tuple(_REGISTRY)


def _default() -> str | Backend:
    current = _CURRENT.get()
    if current is not None:
        return current
    env = os.environ.get(ENV_BACKEND)
    if env:
        if env not in _REGISTRY:
            raise ValueError(f"environment variable {ENV_BACKEND}={env!r} is not a backend; registered backends "
                             f"are {registered_backends()}")
        return env
    return "native"


def default_backend() -> str:
    """The name of the backend used when ``backend=None``: :func:`use_backend` block, else ``$XFFT_BACKEND``,
    else ``"native"``."""
    current = _default()
    return current if isinstance(current, str) else str(getattr(current, "name", type(current).__name__))


@contextlib.contextmanager
def use_backend(backend: str | Backend) -> Iterator[None]:
    """Context manager: transforms called (traced) inside the block default to ``backend`` (a name or object).

    Raises at entry like :func:`get_backend` (unknown name, or its package is missing).
    """
    get_backend(backend)
    token = _CURRENT.set(backend)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def get_backend(name: str | Backend | None = None) -> Backend:
    """The backend object for ``name`` (default: :func:`default_backend`), importing it if needed.

    ``name`` may also be a backend object, which is returned as is.

    Raises:
      ValueError: unknown backend name.
      ImportError: the backend's package is missing or incompatible (the message says how to install it).
    """
    name = _default() if name is None else name
    if _is_backend(name):
        return name  # type: ignore[return-value]
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"backend must be one of {registered_backends()} or a backend object, got {name!r}")
    if name not in _LOADED:
        target = _REGISTRY[name]
        if isinstance(target, str):
            module, attr = target.split(":")
            _LOADED[name] = getattr(importlib.import_module(module), attr)()
        else:
            _LOADED[name] = target
    return _LOADED[name]


def available_backends() -> tuple[str, ...]:
    """Registered backends that import successfully here (a backend whose package is missing is left out)."""
    out = []
    for name in _REGISTRY:
        try:
            get_backend(name)
        except ImportError:
            continue
        out.append(name)
    return tuple(out)


def order_fallback(backend: Backend, order: str) -> Backend:
    """The backend to use for spectral ``order`` when ``backend`` lacks ``supports_order``: native.

    Warns once per backend name with :class:`BackendFallbackWarning`; a backend in strict mode (its ``strict``
    attribute is true) raises instead.

    Raises:
      NotImplementedError: ``backend`` is strict.
    """
    name = str(getattr(backend, "name", type(backend).__name__))
    if getattr(backend, "strict", False):
        raise NotImplementedError(f"backend {name!r} (strict) does not support order={order!r}; use "
                                  "backend='native', or order='natural'")
    if name not in _ORDER_WARNED:
        _ORDER_WARNED.add(name)
        warnings.warn(f"backend {name!r} does not support order={order!r}: using the native backend for it "
                      "(same values; this warning is shown once)", BackendFallbackWarning, stacklevel=4)
    return get_backend("native")
