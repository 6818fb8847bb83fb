"""The one path of :mod:`xfft.fft`'s transforms: ``jax.numpy.fft``'s checks, then a planned sharded transform.

An array off a mesh runs ``jax.numpy.fft`` itself. A sharded one gets ``jax.numpy.fft``'s own argument checks first
(:func:`like_jax`: the call traced on an abstract value, so a bad argument raises what ``jax.numpy.fft`` raises),
then ``s``/``n`` crops and pads (:func:`xfft._plan_resize.plan_resize`, or :func:`xfft._reblock.reblock` for a
sharded axis no other axis can take) and xfft's planned transform. A real transform whose every transformed axis
is sharded (a 1D sharded array) has no real plan: it runs as the complex transform of the same axes (four-step
across the devices) with the half axis cropped (forward) or the Hermitian half weighted and zero-padded (inverse).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from . import _dispatch
from ._layout import group_size
from ._partition import Placement, _constrain, execute, input_layout, placement
from ._plan import plan_forward
from ._plan_resize import plan_resize
from ._reblock import reblock
from ._validate import axes_list, check_norm
from ._warn import check_x64

C2C, R2C, C2R = "c2c", "r2c", "c2r"


def placed(a: Any) -> tuple[Any, Placement | None]:
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
    if kind == R2C:
        return jax.eval_shape(lambda: jnp.fft.irfft(jnp.fft.rfft(jnp.zeros((2,), dtype)))).dtype
    return jax.eval_shape(lambda: jnp.fft.fftn(jnp.zeros((1,), dtype))).dtype


def _hashable(v: Any) -> Any:
    """``v`` with lists made tuples (tagged, so ``[1]`` and ``(1,)`` stay apart), for a cache key."""
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_hashable(u) for u in v)
    return v


_LIKE_JAX: dict[Any, Any] = {}


def like_jax(jfn: Callable[..., jax.Array], a: Any, *args: Any) -> Any:
    """The shape and dtype of ``jfn(a, *args)`` (``jax.numpy.fft``'s own function), found without computing: the
    call's arguments get ``jax.numpy.fft``'s checks, so a bad one raises the exception (type and message) that
    ``jax.numpy.fft`` raises."""
    key: Any = (jfn.__name__, tuple(a.shape), str(a.dtype), _hashable(args))
    try:
        hit = _LIKE_JAX.get(key)
    except TypeError:  # an argument that is not hashable: jax.numpy.fft decides
        key, hit = None, None
    if hit is not None:
        return hit
    out = jax.eval_shape(lambda v: jfn(v, *args), jax.ShapeDtypeStruct(a.shape, a.dtype))
    if key is not None and len(_LIKE_JAX) < 512:
        _LIKE_JAX[key] = out
    return out


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


def resize(a: jax.Array, pl: Placement, lengths: dict[int, int], ax: tuple[int, ...], real: bool) -> jax.Array:
    """Crop or zero-pad ``a``'s axes to ``lengths``, each where it is local (:func:`xfft._plan_resize.plan_resize`);
    where no move makes a sharded axis local, that axis is resized in place (:func:`xfft._reblock.reblock`)."""
    change = tuple(sorted((d, n) for d, n in lengths.items() if a.shape[d] != n))
    if not change:
        return a
    shape = tuple(a.shape)
    layout = input_layout(pl, shape, ax, real)
    try:
        plan = plan_resize(shape, layout, change, pl.mesh_sizes)
    except ValueError:
        if pl.layout is None:
            raise
        sizes = dict(pl.mesh_sizes)
        for d, n in change:
            here = placement(a) or pl
            if any(sizes[m] > 1 for m in here.layout[d]):
                a = reblock(a, d, n, here)
            else:
                a = execute(a, plan_resize(tuple(a.shape), here.layout, ((d, n),), pl.mesh_sizes), here, "backward")
        return a
    return execute(a, plan, pl, "backward")


def _via_complex(kind: str, a: jax.Array, pl: Placement, s: tuple[int, ...] | None, ax: tuple[int, ...],
                 norm: str, name: str) -> jax.Array:
    """A real transform as complex ones, where no real plan exists (every transformed axis sharded: a 1D array).

    Forward: the complex transform of the (cropped or padded) real input, its half axis cropped to ``n // 2 + 1``.
    Inverse (numpy's ``irfftn``: complex inverse over the other axes, then the real one along the half axis): the
    half spectrum ``X`` cropped or padded to ``n // 2 + 1``, weighted ``1, 2, ..., 2, 1`` (the Nyquist entry 1 for an
    even ``n``), zero-padded to ``n``, and the real part of its complex inverse. Twice the arithmetic of a real
    transform, and the crops and pads of the sharded half axis move data by collective permutes.
    """
    last = ax[-1]
    if kind == R2C:
        n = a.shape[last] if s is None else s[-1]
        full = transform(C2C, False, a, s, ax, norm, name, jnp.fft.fftn, (s, ax, norm))
        return resize(full, placement(full) or pl, {last: n // 2 + 1}, ax, False)
    n = 2 * (a.shape[last] - 1) if s is None else s[-1]
    if len(ax) > 1:
        rest = None if s is None else s[:-1]
        a = transform(C2C, True, a, rest, ax[:-1], norm, name, jnp.fft.ifftn, (rest, ax[:-1], norm))
    m = n // 2 + 1
    a = resize(a, placement(a) or pl, {last: m}, ax, False)
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    shape = [1] * a.ndim
    shape[last] = m
    a = a * jnp.asarray(w.reshape(shape), a.dtype)
    a = resize(a, placement(a) or pl, {last: n}, ax, False)
    return transform(C2C, True, a, None, (last,), norm, name, jnp.fft.ifftn, (None, (last,), norm)).real


def _all_sharded(pl: Placement, ax: tuple[int, ...]) -> bool:
    """Whether ``pl``'s layout shards every axis of ``ax`` (then no real-to-complex plan exists)."""
    sizes = dict(pl.mesh_sizes)
    return all(any(sizes[m] > 1 for m in pl.layout[d]) for d in ax)


def _no_real_plan(shape: tuple[int, ...], pl: Placement, ax: tuple[int, ...]) -> bool:
    """Whether no real-to-complex plan exists for the real ``shape`` in ``pl``'s layout: every transformed axis
    sharded and the planner finds no moves (a 1D sharded array); then :func:`_via_complex` runs it."""
    if not _all_sharded(pl, ax):
        return False
    try:
        plan_forward(shape, pl.layout, ax, pl.mesh_sizes, True)
    except ValueError:
        return True
    return False


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


def transform(kind: str, inverse: bool, a: Any, s: Any, axes: Any, norm: Any, name: str,
               jfn: Callable[..., jax.Array], jargs: tuple) -> jax.Array:
    """One ``numpy.fft`` transform: ``jfn(a, *jargs)`` (``jax.numpy.fft`` itself) off a mesh, else the planned
    path after ``jax.numpy.fft``'s own checks of that call (a 1D function's ``jargs`` is ``(n, axis, norm)``),
    its output sharded as ``jax.numpy.fft``'s on an Explicit mesh (:func:`like_input`)."""
    a, pl = placed(a)
    if pl is None:
        return jfn(a, *jargs)
    return like_input(_planned(kind, inverse, a, pl, s, axes, norm, name, jfn, jargs), pl)


def like_input(y: jax.Array, pl: Placement) -> jax.Array:
    """``y`` sharded as the input placed as ``pl`` was, which is ``jax.numpy.fft``'s output sharding on an Explicit
    mesh (there the sharding is part of an array's type: a slice or a sum with arrays sharded like the input must
    type-check as it does for ``jax.numpy.fft``'s result). One reshard where the plan left another layout (a
    slab's spectrum ``P(None, 'x')`` back to ``P('x')``: one all-to-all per mesh axis moved). ``y`` keeps the plan's
    layout where the input's does not split its shape evenly (a crop of a sharded axis to a length its devices do
    not divide: no gather), and on an Auto mesh, where XLA reshards it if a later operation needs another layout."""
    here = placement(y)
    if not pl.explicit or pl.layout is None or here is None or here.layout is None:
        return y
    sizes = dict(pl.mesh_sizes)
    if any(n % group_size(g, sizes) for n, g in zip(y.shape, pl.layout)):
        return y
    return _constrain(y, here, pl.layout)


def _planned(kind: str, inverse: bool, a: jax.Array, pl: Placement, s: Any, axes: Any, norm: Any, name: str,
             jfn: Callable[..., jax.Array], jargs: tuple) -> jax.Array:
    """:func:`transform` of a sharded ``a``, its output in the layout the plan leaves."""

    def local(v: Any) -> jax.Array:
        return jfn(v, *jargs)

    out = like_jax(jfn, a, *jargs)
    if len(jargs) == 3 and jfn.__name__ in _ONE_D:
        s, axes = _one(jargs[0], jargs[1], name)
    if axes is not None and len(axes) == 0:
        return a.astype(out.dtype)  # no axis to transform: the input (in the result's dtype), as jax.numpy.fft
    if 0 in a.shape or 0 in out.shape:
        return local(a)  # no data: jax.numpy.fft's empty result
    ax, s = _axes_s(a, s, axes, name)
    norm = check_norm(norm)
    real = kind != C2C
    shape = [a.shape[d] if s is None or d not in ax else s[ax.index(d)] for d in range(a.ndim)]
    if kind == C2R and s is None:
        shape[ax[-1]] = 2 * (a.shape[ax[-1]] - 1)
    if not _plannable(tuple(shape), pl, ax, real):
        return _gathered(local, a, pl)
    dt = jnp.result_type(a)
    if kind == R2C and jnp.issubdtype(dt, jnp.complexfloating):
        raise TypeError(f"{name}: a must be real for a real-to-complex transform, got {dt}")
    a = a.astype(_dtype(dt, kind))
    if real and pl.layout is not None and _no_real_plan(tuple(shape), pl, ax):
        return _via_complex(kind, a, pl, s, ax, norm, name)
    if kind == C2R:
        n = 2 * (a.shape[ax[-1]] - 1) if s is None else s[-1]
        if n < 1:
            raise ValueError(f"{name}: the output length along axis {ax[-1]} must be positive; pass n/s")
        ins = tuple(a.shape[d] for d in ax[:-1]) if s is None else s[:-1]
        a = resize(a, pl, dict(zip(ax, ins + (n // 2 + 1,))), ax, False)
        return _dispatch.inverse(a, ax, norm, True, ins + (n,), name, backend=None, order="natural")
    if s is not None:
        a = resize(a, pl, dict(zip(ax, s)), ax, real)
    if inverse:
        return _dispatch.inverse(a, ax, norm, False, None, name, backend=None, order="natural")
    return _dispatch.forward(a, ax, norm, real, backend=None, order="natural")


_ONE_D = ("fft", "ifft", "rfft", "irfft")


def _one(n: int | None, axis: int, name: str) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))):
        raise TypeError(f"{name}: n must be an int or None, got {n!r}")
    return (None if n is None else (int(n),)), (int(axis),)


