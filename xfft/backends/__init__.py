"""Backend registry: name -> implementation of the distributed transforms.

A backend (:class:`Backend`) is an object with ``forward(x, axes, norm, real)`` and
``inverse(k, axes, norm, real, real_shape)`` that receive validated, normalized arguments (``axes`` non-negative
ints, ``norm`` a valid string, dtypes already promoted) and return the transformed global array. Every backend
gives the same values, output shapes and output shardings; they differ in how the data moves. It says what it
can do with five attributes, which :func:`select` and the dispatcher read (an object without them gets the
defaults below):

- ``supports_order`` (default False): it takes ``order="transposed"`` (then passed as a keyword);
- ``kinds`` (default ``{"fft", "rfft"}``): the per-axis transform kinds it runs; DCT/DST kinds are passed as
  ``kinds=`` (one per transformed axis) only to a backend that lists them;
- ``strict`` (default False): raise ``NotImplementedError`` instead of falling back to native;
- ``drops_nyquist`` (default False): ``forward``/``inverse`` take ``real="no-nyquist"``
  (:data:`xfft._layout.NO_NYQUIST`, ``drop_nyquist=True``): a half axis of ``n // 2`` coefficients;
- ``takes_real_layout`` (default False): ``inverse`` takes ``real_layout=`` (the layout of the public
  ``out_sharding=``, the forward transform's input layout), passed only when given.

What a backend lacks runs on the native backend with a one-time :class:`BackendFallbackWarning`
(:func:`fallback`), or raises in strict mode.

Registered backends:

- ``"native"``: local transforms plus all-to-alls in ``jax.shard_map`` (always available, every kind and order);
  ``xfft.backends.native.NativeBackend(lowering=xfft.LoweringOptions(...))`` lowers with chosen options instead
  of the platform's defaults.
- ``"jaxdecomp"``: jaxDecomp's distributed 3D FFT (``pip install "xfft[jaxdecomp]"``), translated to xfft's
  natural axis order and layouts; it falls back to native, with a one-time :class:`BackendFallbackWarning`,
  for what jaxDecomp lacks, or raises ``NotImplementedError`` in strict mode. See
  :mod:`xfft.backends.jaxdecomp`.

Backends are imported lazily on first use, so ``import xfft`` never imports jaxdecomp and a bare install works
without it; :func:`available_backends` lists only those that import. The default backend is ``"native"``; the
environment variable ``XFFT_BACKEND`` changes it for a process, and :func:`use_backend` for a block of code.
Every transform also takes ``backend=``, a registered name or a backend object (for example
``JaxDecompBackend(strict=True)``).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
import warnings
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import jax

from .._warn import stacklevel

ENV_BACKEND = "XFFT_BACKEND"


class BackendFallbackWarning(UserWarning):
    """A backend could not run a transform itself and used the native backend instead (values are the same)."""


@runtime_checkable
class Backend(Protocol):
    """What xfft asks of a backend (see the module docstring; attributes left out take :data:`DEFAULTS`)."""

    #: the name used in warnings and errors
    name: str
    #: True if ``forward``/``inverse`` take ``order="transposed"``
    supports_order: bool
    #: per-axis kinds it runs (``"fft"``, ``"rfft"``, ``"dct1"``..``"dst4"``)
    kinds: frozenset[str]
    #: True to raise ``NotImplementedError`` where it would fall back to native
    strict: bool
    #: True if ``forward``/``inverse`` take ``real="no-nyquist"`` (a half axis without its Nyquist coefficient)
    drops_nyquist: bool
    #: True if ``inverse`` takes ``real_layout=`` (the layout to return to: the inverse's ``out_sharding``)
    takes_real_layout: bool

    def forward(self, x: jax.Array, axes: tuple[int, ...], norm: str, real: bool, *, order: str = "natural",
                kinds: tuple[str, ...] | None = None) -> jax.Array:
        """Transform ``x`` over ``axes`` (the last one is the half axis if ``real``); ``order``/``kinds`` are passed
        only when not the defaults and the backend declares them."""
        ...

    def inverse(self, k: jax.Array, axes: tuple[int, ...], norm: str, real: bool, real_shape: tuple[int, ...], *,
                order: str = "natural", kinds: tuple[str, ...] | None = None) -> jax.Array:
        """Inverse transform of ``k`` back to the real-space shape ``real_shape``."""
        ...


#: capabilities of a backend object that does not declare them
DEFAULTS: dict[str, Any] = {"supports_order": False, "kinds": frozenset({"fft", "rfft"}), "strict": False,
                            "drops_nyquist": False, "takes_real_layout": False}


def capability(backend: object, attribute: str) -> Any:
    """``backend``'s declared ``attribute`` (``supports_order``, ``kinds``, ``strict``, ``drops_nyquist`` or
    ``takes_real_layout``), else :data:`DEFAULTS`."""
    return getattr(backend, attribute, DEFAULTS[attribute])


# name -> "module:attribute" of a zero-argument factory (imported on first use), or a backend object.
_REGISTRY: dict[str, str | Backend] = {
    "native": "xfft.backends.native:NativeBackend",
    "jaxdecomp": "xfft.backends.jaxdecomp:JaxDecompBackend",
}
_LOADED: dict[str, Backend] = {}
_FALLBACK_WARNED: set[tuple[str, str]] = set()
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


def backend_name(backend: object) -> str:
    """The name of a backend object (its ``name``, else its class name)."""
    return str(getattr(backend, "name", type(backend).__name__))


def fallback(backend: object, feature: str) -> Backend:
    """The native backend, for a transform that ``backend`` cannot run (``feature`` says what it lacks).

    Warns once per backend name and feature with :class:`BackendFallbackWarning`; a strict backend raises.

    Raises:
      NotImplementedError: ``backend`` is strict.
    """
    name = backend_name(backend)
    if capability(backend, "strict"):
        raise NotImplementedError(f"backend {name!r} (strict) does not support {feature}; use backend='native'")
    if (name, feature) not in _FALLBACK_WARNED:
        _FALLBACK_WARNED.add((name, feature))
        warnings.warn(f"backend {name!r} does not support {feature}: using the native backend for it (same values; "
                      "this warning is shown once)", BackendFallbackWarning, stacklevel=stacklevel())
    return get_backend("native")


def order_fallback(backend: Backend, order: str) -> Backend:
    """The backend to use for spectral ``order`` when ``backend`` lacks ``supports_order``: native (:func:`fallback`).

    Raises:
      NotImplementedError: ``backend`` is strict.
    """
    return fallback(backend, f"order={order!r} (use order='natural')")


def select(backend: str | Backend | None, *, order: str = "natural", kinds: tuple[str, ...] | None = None,
           nyquist: bool = True, real_layout: Any = None) -> tuple[Backend, dict[str, Any]]:
    """The backend that runs a transform, and the keywords to pass it: the one dispatch rule of every transform.

    Args:
      backend: a name, a backend object or None (:func:`default_backend`).
      order: the spectral axis order (validated).
      kinds: the kind of each transformed axis, or None for Fourier axes only.
      nyquist: False for a half axis without its Nyquist coefficient (``drop_nyquist=True``).
      real_layout: an inverse's layout to return to (its ``out_sharding``), or None.

    Returns:
      ``(backend, keywords)``: ``backend`` itself when it can run the transform, else native
      (:func:`fallback`); ``keywords`` holds ``order``, ``kinds`` and ``real_layout`` when they are not the
      defaults.

    Raises:
      ValueError, ImportError: as :func:`get_backend`. NotImplementedError: a strict backend lacks a feature.
    """
    b = get_backend(backend)
    if order != "natural" and not capability(b, "supports_order"):
        b = order_fallback(b, order)
    missing = sorted(set(kinds or ()) - set(capability(b, "kinds")))
    if missing:
        b = fallback(b, f"the transform kinds {missing}")
    if not nyquist and not capability(b, "drops_nyquist"):
        b = fallback(b, "drop_nyquist=True")
    if real_layout is not None and not capability(b, "takes_real_layout"):
        b = fallback(b, "out_sharding=")
    keywords: dict[str, Any] = {}
    if real_layout is not None:
        keywords["real_layout"] = real_layout
    if order != "natural":
        keywords["order"] = order
    if kinds and any(k not in ("fft", "rfft") for k in kinds):
        keywords["kinds"] = tuple(kinds)
    return b, keywords
