"""The native backend: plans from :mod:`xfft._plan`, run by the one executor of :mod:`xfft._partition`."""

from __future__ import annotations

import jax

from .._layout import KINDS, Layout, with_kinds
from .._options import LoweringOptions
from .._order import transposed_spectrum
from .._partition import input_layout, placement, run
from .._plan import Kinds, plan_forward
from .._plan_inverse import inverse_plan


def _pairs(axes: tuple[int, ...], kinds: tuple[str, ...] | None) -> Kinds:
    """The real-to-real axes of ``kinds`` (one kind per transformed axis) as ``(axis, kind)`` pairs."""
    if not kinds:
        return ()
    return tuple((a, k) for a, k in zip(axes, kinds) if k not in ("fft", "rfft"))


class NativeBackend:
    """Local transforms plus ``jax.lax.all_to_all`` inside ``jax.shard_map``: every kind and both axis orders.

    Spectral axis order: ``"natural"`` (default) or ``"transposed"`` (the order the transforms leave, see
    :func:`xfft.spectral_axes`); kinds: every entry of :data:`xfft.R2R_KINDS` (FFT, real FFT, DCT/DST 1-4).

    Args:
      lowering: how plans are lowered on the devices (:class:`xfft.LoweringOptions`); None (default): the
        defaults of the devices each array lives on (:meth:`xfft.LoweringOptions.for_platform`). Pass an
        instance as ``backend=`` to any transform, or to :func:`xfft.use_backend` for a block of code.

    Raises:
      TypeError: ``lowering`` is neither None nor a :class:`xfft.LoweringOptions`.
    """

    name = "native"
    supports_order = True
    takes_real_layout = True
    kinds = frozenset(KINDS)
    strict = False
    drops_nyquist = True

    def __init__(self, lowering: LoweringOptions | None = None):
        if lowering is not None and not isinstance(lowering, LoweringOptions):
            raise TypeError(f"NativeBackend: lowering must be an xfft.LoweringOptions or None, got "
                            f"{type(lowering).__name__}")
        self.lowering = lowering

    def __repr__(self) -> str:
        return f"NativeBackend(lowering={self.lowering!r})"

    def forward(self, x: jax.Array, axes: tuple[int, ...], norm: str, real: bool, *, order: str = "natural",
                kinds: tuple[str, ...] | None = None) -> jax.Array:
        """Forward transform of validated arguments (see :class:`xfft.backends.Backend`)."""
        shape = tuple(x.shape)
        pl = placement(x)
        if pl is None:
            plan = plan_forward(shape, ((),) * len(shape), axes, (), real, _pairs(axes, kinds))
        else:
            plan = plan_forward(shape, input_layout(pl, shape, axes, real), axes, pl.mesh_sizes, real,
                                _pairs(axes, kinds))
        return run(x, plan, norm, natural_out=order == "natural", options=self.lowering)

    def inverse(self, k: jax.Array, axes: tuple[int, ...], norm: str, real: bool, real_shape: tuple[int, ...], *,
                order: str = "natural", kinds: tuple[str, ...] | None = None,
                real_layout: Layout | None = None) -> jax.Array:
        """Inverse transform of validated arguments to ``real_shape`` (see :class:`xfft.backends.Backend`);
        ``real_layout``: the layout to return to (the forward transform's input layout), else the one that leads
        to ``k``'s layout."""
        if order != "natural":
            perm, _, plan = transposed_spectrum(k, axes, real, tuple(real_shape[d] for d in axes), real_layout)
            return run(k, with_kinds(plan, _pairs(axes, kinds)), norm, in_perm=perm, options=self.lowering)
        pl = placement(k)
        if real_layout is not None and pl is not None:
            plan = plan_forward(tuple(real_shape), real_layout, axes, pl.mesh_sizes, real).inverted()
            return run(k, with_kinds(plan, _pairs(axes, kinds)), norm, options=self.lowering)
        plan = inverse_plan(tuple(real_shape), None if pl is None else pl.layout, axes,
                            () if pl is None else pl.mesh_sizes, real, _pairs(axes, kinds))
        return run(k, plan, norm, options=self.lowering)
