"""Backend registry: name -> implementation of the distributed transforms.

A backend is an object with ``forward(x, axes, norm, real)`` and ``inverse(k, axes, norm, real, real_shape)``
that receive validated, normalized arguments (``axes`` non-negative ints, ``norm`` a valid string, dtypes
already promoted) and return the transformed global array. ``"native"`` is always available; other backends
are imported lazily on first use, so a bare install works without their packages.

The default backend is ``"native"``; the environment variable ``XFFT_BACKEND`` changes it for a process, and
:func:`use_backend` for a block of code. Every transform also takes ``backend=`` to choose per call.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
from collections.abc import Iterator
from typing import Any, Protocol

import jax


class Backend(Protocol):
    name: str

    def forward(self, x: jax.Array, axes: tuple[int, ...], norm: str, real: bool) -> jax.Array: ...

    def inverse(self, k: jax.Array, axes: tuple[int, ...], norm: str, real: bool,
                real_shape: tuple[int, ...]) -> jax.Array: ...


# name -> "module:attribute" of a zero-argument factory, imported on first use.
_REGISTRY: dict[str, str] = {
    "native": "xfft.backends.native:NativeBackend",
}
_LOADED: dict[str, Any] = {}
_CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("xfft_backend", default=None)


def register_backend(name: str, target: str) -> None:
    """Register a backend factory given as ``"module:attribute"`` (imported lazily)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"backend name must be a non-empty string, got {name!r}")
    _REGISTRY[name] = target
    _LOADED.pop(name, None)


def registered_backends() -> tuple[str, ...]:
    """Names of all registered backends (whether or not their packages are installed)."""
    return tuple(_REGISTRY)


def default_backend() -> str:
    """The backend used when ``backend=None``: :func:`use_backend` block, else ``$XFFT_BACKEND``, else native."""
    return _CURRENT.get() or os.environ.get("XFFT_BACKEND") or "native"


@contextlib.contextmanager
def use_backend(name: str) -> Iterator[None]:
    """Context manager: transforms called (traced) inside the block default to backend ``name``."""
    get_backend(name)
    token = _CURRENT.set(name)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def get_backend(name: str | None = None) -> Backend:
    """The backend object for ``name`` (default: :func:`default_backend`), importing it if needed.

    Raises:
      ValueError: unknown backend name.
      ImportError: the backend's package is missing or incompatible (the message says how to install it).
    """
    name = default_backend() if name is None else name
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"backend must be one of {registered_backends()}, got {name!r}")
    if name not in _LOADED:
        module, attr = _REGISTRY[name].split(":")
        _LOADED[name] = getattr(importlib.import_module(module), attr)()
    return _LOADED[name]


def available_backends() -> tuple[str, ...]:
    """Registered backends that import successfully here."""
    out = []
    for name in _REGISTRY:
        try:
            get_backend(name)
        except ImportError:
            continue
        out.append(name)
    return tuple(out)
