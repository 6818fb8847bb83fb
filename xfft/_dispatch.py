"""The one path of every public transform: checked arguments -> backend (with fallback) -> plan -> executor."""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import NamedSharding

from ._layout import NO_NYQUIST, Layout, check_even, spec_to_layout
from ._order import check_order, transposed_spectrum
from ._partition import placement
from ._validate import real_shape
from .backends import Backend, select


def forward(x: jax.Array, axes: tuple[int, ...], norm: str, real: bool, *, backend: str | Backend | None,
            order: str, kinds: tuple[str, ...] | None = None) -> jax.Array:
    """Forward transform of a checked array (dtype already set) over checked ``axes``.

    Args:
      x, axes, norm, real: the array, its transformed axes (the half axis last if ``real``), the normalization;
        ``real`` is :data:`~xfft._layout.NO_NYQUIST` for a half axis without its Nyquist coefficient.
      backend, order: as every public transform takes them (``order`` is checked here).
      kinds: one kind per axis of ``axes`` when some are DCT/DST (:data:`xfft.R2R_KINDS`), else None.

    Returns:
      The backend's result (the spectral layout; axes permuted for ``order="transposed"``).
    """
    order = check_order(order)
    b, keywords = select(backend, order=order, kinds=kinds, nyquist=real != NO_NYQUIST)
    return b.forward(x, axes, norm, real, **keywords)


def inverse(k: jax.Array, axes: tuple[int, ...], norm: str, real: bool, s: tuple[int, ...] | None, name: str, *,
            backend: str | Backend | None, order: str, kinds: tuple[str, ...] | None = None,
            out_sharding: Any = None) -> jax.Array:
    """Inverse transform of a checked spectrum (dtype already set); ``s``: real lengths of ``axes`` or None;
    ``out_sharding``: the public argument (the real-space sharding to return to), unchecked.

    Raises:
      ValueError: ``s`` does not fit the spectrum (xfft's transforms neither crop nor pad), a spectrum in
        transposed order whose real shape is ambiguous without ``s``, or an ``out_sharding`` that does not fit.
      TypeError: ``out_sharding`` is not a ``NamedSharding``.
    """
    order = check_order(order)
    real_layout = _real_layout(out_sharding, k, name)
    b, keywords = select(backend, order=order, kinds=kinds, nyquist=real != NO_NYQUIST, real_layout=real_layout)
    kshape = tuple(k.shape)
    if order != "natural":
        # The spectrum's axes are permuted: find the natural shape first (the backend finds the same order).
        perm, _, _ = transposed_spectrum(k, axes, real, s, real_layout)
        kshape = tuple(kshape[perm.index(d)] for d in range(k.ndim))
    if real:
        shape = real_shape(kshape, axes, s, name, nyquist=real != NO_NYQUIST)
    else:
        if s is not None and s != tuple(kshape[d] for d in axes):
            raise ValueError(f"{name}: s={s} is inconsistent with the input shape {kshape} (xfft's transforms do "
                             "not crop or pad; xfft.fft's functions do)")
        shape = kshape
    if real_layout is not None and order == "natural":
        try:
            check_even(shape, real_layout, dict(placement(k).mesh_sizes))
        except ValueError as e:
            raise ValueError(f"{name}: out_sharding {out_sharding.spec} does not fit the real shape {shape}: "
                             f"{e}") from None
    return b.inverse(k, axes, norm, real, shape, **keywords)


def _real_layout(out_sharding: Any, k: jax.Array, name: str) -> Layout | None:
    """The layout of an inverse's ``out_sharding`` (None: not given), checked against ``k``'s mesh."""
    if out_sharding is None:
        return None
    if not isinstance(out_sharding, NamedSharding):
        raise TypeError(f"{name}: out_sharding must be a jax.sharding.NamedSharding (the sharding of the forward "
                        f"transform's input), got {type(out_sharding).__name__}")
    pl = placement(k)
    if pl is None:
        raise ValueError(f"{name}: out_sharding is given but k is not sharded over a mesh")
    mesh = out_sharding.mesh
    if tuple(zip(mesh.axis_names, mesh.axis_sizes)) != pl.mesh_sizes:
        raise ValueError(f"{name}: out_sharding's mesh {dict(zip(mesh.axis_names, mesh.axis_sizes))} is not k's "
                         f"{dict(pl.mesh_sizes)}")
    try:
        return spec_to_layout(out_sharding.spec, k.ndim)
    except ValueError as e:
        raise ValueError(f"{name}: out_sharding: {e}") from None
