"""Run a :class:`~xfft._layout.Plan` on a sharded array: local FFTs and all-to-alls inside ``jax.shard_map``.

This module is the one place that decides how a transform is partitioned. It reads the input's layout from
its type (Explicit meshes, concrete arrays) or assumes :func:`xfft.real_sharding`'s layout (Auto meshes under
``jax.jit``, where the spec is not known while tracing: :func:`xfft._plan_inverse.guess_layout`), and runs the lowered
program of every transform kind (:func:`run_program`, the one interpreter) inside ``jax.shard_map``.

Why ``shard_map`` and not ``custom_partitioning``: a distributed FFT changes *which* array axis is sharded
(slab ``P('x')`` in, ``P(None, 'x')`` out). Shardy's sharding rules only tie equal factors of operand and
result, so a ``custom_partitioning`` op either propagates the input sharding to its result (XLA then adds
a second all-to-all to restore it; measured: 2 instead of 1 for a slab) or leaves it open (an all-gather).
``shard_map`` states both layouts exactly, is differentiable and batchable by construction, and works on
Explicit and Auto meshes alike.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from . import _exchange
from ._exchange import all_to_all
from ._fourstep import four_step
from ._layout import (
    DCT_DST_KINDS,
    FourStep,
    Gather,
    Layout,
    MeshSizes,
    Move,
    Plan,
    Resize,
    group_size,
    layout_to_spec,
    spec_to_layout,
)
from ._lower import AxisDft, Program, TrailingFft, Transpose, lower_plan
from ._matdft import dft_along, factors
from ._plan_inverse import guess_layout
from ._r2r_local import r2r


@dataclass(frozen=True)
class Placement:
    """Where an array lives: its mesh (concrete or abstract), layout if known, and whether it is explicit."""

    mesh: Any
    layout: Layout | None
    explicit: bool

    @property
    def mesh_sizes(self) -> MeshSizes:
        return tuple(zip(self.mesh.axis_names, self.mesh.axis_sizes))


def placement(x: jax.Array) -> Placement | None:
    """The mesh and layout of ``x``, or None when it lives on one device (or no usable mesh)."""
    if isinstance(x, jax.core.Tracer):
        sharding = getattr(jax.typeof(x), "sharding", None)
    else:
        sharding = getattr(x, "sharding", None)
    if not isinstance(sharding, NamedSharding):
        return None
    mesh = sharding.mesh
    if mesh.empty or mesh.size == 1:
        return None
    types = tuple(mesh.axis_types)
    if any(t == AxisType.Manual for t in types):
        return None  # already inside shard_map: the caller holds local blocks
    explicit = all(t == AxisType.Explicit for t in types)
    concrete = not isinstance(x, jax.core.Tracer)
    layout = spec_to_layout(sharding.spec, x.ndim) if (explicit or concrete) else None
    return Placement(mesh, layout, explicit)


#: lower natural-order programs on CPU devices with DFTs in place (:func:`xfft._lower.lower_plan`'s
#: ``matrix_dft``); False lowers them with transposes as on accelerators (:func:`cpu_matrix_dft` switches it)
MATRIX_DFT = True


@contextlib.contextmanager
def cpu_matrix_dft(enabled: bool):
    """Choose how natural-order transforms traced inside the block restore natural order on CPU devices.

    ``True`` (the default outside any block): the last stage's axis is transformed where it lies, by matrix
    products of its factors (no transpose pass). ``False``: an FFT op followed by a transpose, as on
    accelerators. The results agree to round-off; benchmarks time the two side by side. Only tracing inside the
    block is affected: a function JAX has already traced for the same argument types keeps its program.

    Args:
      enabled: whether to use the matrix DFTs.

    Raises:
      TypeError: ``enabled`` is not a bool.
    """
    global MATRIX_DFT
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
    keep, MATRIX_DFT = MATRIX_DFT, enabled
    try:
        yield
    finally:
        MATRIX_DFT = keep


def _on_cpu(mesh) -> bool:
    """Whether ``mesh`` (concrete or abstract) lives on CPU devices."""
    if isinstance(mesh, jax.sharding.Mesh) and mesh.devices.size:
        return mesh.devices.flat[0].platform == "cpu"
    device = getattr(mesh, "abstract_device", None)
    return getattr(device, "platform", jax.default_backend()) == "cpu"


def input_layout(pl: Placement, shape: tuple[int, ...], axes: tuple[int, ...], real: bool = False) -> Layout:
    """The input layout to plan from: the known one, or the one xfft assumes (``_plan_inverse.guess_layout``)."""
    if pl.layout is not None:
        return pl.layout
    return guess_layout(shape, axes, pl.mesh_sizes, real)


def _fourier(x: jax.Array, axes: tuple[int, ...], step: TrailingFft, norm: str) -> jax.Array:
    """The Fourier axes of a stage: one ``jnp.fft`` call (a single XLA FFT op when ``axes`` are trailing)."""
    if not axes:
        return x
    if step.real_n:
        if step.inverse:
            s = tuple(x.shape[a] for a in axes[:-1]) + (step.real_n,)
            return jnp.fft.irfftn(x, s=s, axes=axes, norm=norm)
        return jnp.fft.rfftn(x, axes=axes, norm=norm)
    return (jnp.fft.ifftn if step.inverse else jnp.fft.fftn)(x, axes=axes, norm=norm)


def _local_transform(x: jax.Array, step: TrailingFft, norm: str) -> jax.Array:
    """One stage over the last ``step.count`` axes: FFTs as one op, each DCT/DST along its own axis.

    Real-to-real axes run while the data is real where it can be: before the Fourier axes in a forward stage,
    after them in an inverse one (transforms along different axes commute).
    """
    axes = tuple(range(x.ndim - step.count, x.ndim))
    if not step.kinds:
        return _fourier(x, axes, step, norm)
    fourier = tuple(a for a, k in zip(axes, step.kinds) if k not in DCT_DST_KINDS)
    others = [(a, k) for a, k in zip(axes, step.kinds) if k in DCT_DST_KINDS]

    def real_to_real(y: jax.Array) -> jax.Array:
        for a, k in others:
            y = r2r(y, k[:3], int(k[3]), a, norm, step.inverse)
        return y

    if step.inverse:
        return real_to_real(_fourier(x, fourier, step, norm))
    return _fourier(real_to_real(x), fourier, step, norm)


def _resize(x: jax.Array, step: Resize) -> jax.Array:
    """Crop to the first ``step.n`` entries of ``step.axis``, or append zeros (``numpy.fft``'s ``s``)."""
    n = x.shape[step.axis]
    if step.n <= n:
        return jax.lax.slice_in_dim(x, 0, step.n, axis=step.axis)
    widths = [(0, 0)] * x.ndim
    widths[step.axis] = (0, step.n - n)
    return jnp.pad(x, widths)


def _axis_dft(x: jax.Array, step: AxisDft, norm: str) -> jax.Array:
    """The DFT along ``step.axis`` where it lies (matrix products), or by the FFT op for a length without small
    factors."""
    if factors(x.shape[step.axis]) is not None:
        return dft_along(x, step.axis, step.inverse, norm)
    return (jnp.fft.ifft if step.inverse else jnp.fft.fft)(x, axis=step.axis, norm=norm)


def _gather(x: jax.Array, step: Gather, sizes: dict[str, int]) -> jax.Array:
    """All-gather ``step.axis`` over ``step.mesh_axes`` and crop it to ``step.n``; or (``scatter``) keep this
    device's block of the replicated axis, padded to a multiple of the devices."""
    name = step.mesh_axes[0] if len(step.mesh_axes) == 1 else step.mesh_axes
    p = group_size(step.mesh_axes, sizes)
    if not step.scatter:
        # Gathered as a 2D array: an all-gather of the block itself may get a layout that XLA then imposes on an
        # FFT before it, which the CPU FFT rejects (RET_CHECK in fft_thunk.cc).
        y = jnp.moveaxis(x, step.axis, 0)
        flat = jax.lax.all_gather(y.reshape(y.shape[0], -1), name, axis=0, tiled=True)[:step.n]
        return jnp.moveaxis(flat.reshape((step.n,) + y.shape[1:]), 0, step.axis)
    block = -(-step.n // p)
    widths = [(0, 0)] * x.ndim
    widths[step.axis] = (0, block * p - x.shape[step.axis])
    x = jnp.pad(x, widths)
    return jax.lax.dynamic_slice_in_dim(x, jax.lax.axis_index(name) * block, block, axis=step.axis)


def run_program(x: jax.Array, program: Program, norm: str, sizes: dict[str, int], side: jax.Array | None = None,
                when: jax.Array | None = None, send_transposed: bool = False):
    """Execute a lowered ``program`` on the local block ``x`` (inside ``shard_map``, or on one device).

    This is the one interpreter of every transform: FFTs, real FFTs, DCTs and DSTs, crops/pads, moves, DFTs along
    an axis where it lies, four-step transforms of a sharded axis and gathers.
    ``side`` (the local block of a real field): also return the field's maximum over every device of ``sizes``,
    carried in the program's all-to-alls (each takes the maximum over its group) and, for mesh axes no move
    crosses, one ``pmax``. ``when`` (a replicated boolean scalar, with ``side``): only where it is true; each
    exchange that carries the maximum then sits in a ``lax.cond`` beside its plain twin, and the block's maximum
    is taken inside it, so a false ``when`` costs neither (the maximum returned is then 0). ``send_transposed``
    (CPU devices): a move followed by a transpose runs as :func:`xfft._exchange.move_then_transpose`.

    Raises:
      TypeError: a step that is not a :class:`~xfft._lower.TrailingFft`, ``Transpose``, ``AxisDft``, ``Move``,
        ``Resize``, ``FourStep`` or ``Gather``.
    """
    crossed: set[str] = set()
    real = jnp.finfo(x.dtype).dtype
    top = None  # the maximum so far, once the first carrying exchange has taken the block's
    steps = list(program.steps)
    while steps:
        step = steps.pop(0)
        if isinstance(step, TrailingFft):
            x = _local_transform(x, step, norm)
        elif isinstance(step, Transpose):
            x = jnp.transpose(x, step.perm)
        elif isinstance(step, Move):
            perm = steps.pop(0).perm if send_transposed and steps and isinstance(steps[0], Transpose) else None
            if side is None or crossed.issuperset(step.mesh_axes):
                x = all_to_all(x, step, sizes) if perm is None else _exchange.move_then_transpose(x, step, perm, sizes)
            else:  # a move across a mesh axis the maximum has not crossed yet carries it
                x, top = _carrying(x, step, sizes, side if top is None else top, top is None, when, perm)
                crossed.update(step.mesh_axes)
        elif isinstance(step, Resize):
            x = _resize(x, step)
        elif isinstance(step, AxisDft):
            x = _axis_dft(x, step, norm)
        elif isinstance(step, FourStep):
            x = four_step(x, step.axis, step.mesh_axes, group_size(step.mesh_axes, sizes), step.n, step.inverse, norm)
        elif isinstance(step, Gather):
            x = _gather(x, step, sizes)
        else:
            raise TypeError(f"unknown program step {step!r} (expected TrailingFft, Transpose, AxisDft, Move, Resize, "
                            "FourStep or Gather)")
    if side is None:
        return x
    rest = tuple(a for a, n in sizes.items() if n > 1 and a not in crossed)
    if top is None or rest:
        block = top is None

        def finish(v):
            v = _local_max(v, real) if block else v
            return jax.lax.pmax(v, rest) if rest else v

        top = max_where(finish, side if block else top, when, real)
    return x, top


def _carrying(x: jax.Array, step: Move, sizes: dict[str, int], value: jax.Array, block: bool,
              when: jax.Array | None, perm: tuple[int, ...] | None = None):
    """``all_to_all(x, step, sizes, maximum)`` with the maximum ``value`` (the local field block if ``block``:
    its maximum is taken here); with ``when``, in a ``lax.cond`` whose false branch exchanges ``x`` alone and
    gives 0 (:func:`run_program`); with ``perm``, the transpose after the move, on the sending side
    (:func:`xfft._exchange.move_then_transpose`)."""
    real = jnp.finfo(x.dtype).dtype

    def exchange(a, v=None):
        if perm is None:
            return all_to_all(a, step, sizes, v)
        return _exchange.move_then_transpose(a, step, perm, sizes, v)

    def carry(a, v):
        return exchange(a, _local_max(v, real) if block else v)

    if when is None:
        return carry(x, value)
    return jax.lax.cond(when, carry, lambda a, v: (exchange(a), jnp.zeros((), real)), x, value)


def max_where(fn, operand, when: jax.Array | None, dtype) -> jax.Array:
    """``fn(operand)`` (a maximum), or, with ``when`` (a boolean scalar), ``fn(operand)`` where it is true and 0
    (of ``dtype``) where it is false, in a ``lax.cond``: ``fn`` runs only where it is true."""
    if when is None:
        return fn(operand)
    return jax.lax.cond(when, lambda o: fn(o).astype(dtype), lambda o: jnp.zeros((), dtype), operand)


def _constrain(x: jax.Array, pl: Placement, layout: Layout) -> jax.Array:
    """Reshard ``x`` to ``layout`` if its known layout differs (Explicit meshes need it spelled out)."""
    if pl.layout is None or pl.layout == layout:
        return x
    sharding = NamedSharding(pl.mesh, layout_to_spec(layout))
    if pl.explicit:
        return jax.sharding.reshard(x, sharding)
    return jax.lax.with_sharding_constraint(x, sharding)


def execute(x: jax.Array, plan: Plan, pl: Placement, norm: str, *, in_perm: tuple[int, ...] | None = None,
            natural_out: bool = True, max_of: jax.Array | None = None, max_if: jax.Array | None = None):
    """Run ``plan`` on the global array ``x`` over ``pl.mesh``.

    Args:
      x: global array; its axes are the plan's logical axes in the order ``in_perm`` (default natural).
      plan, pl, norm: the plan, where ``x`` lives, the FFT normalization.
      in_perm, natural_out: as :func:`xfft._lower.lower_plan`.
      max_of: a real array of ``x``'s trailing shape (laid out as those axes of ``x``), or None.
      max_if: with ``max_of``, a replicated boolean scalar or None: the maximum only where it is true (else 0;
        see :func:`run_program`).

    Returns:
      The output, sharded as the lowered program's ``out_layout`` (``plan.out_layout`` in natural order); with
      ``max_of``, ``(output, max of max_of)``, the maximum replicated and carried in the all-to-alls.
    """
    shape = tuple(x.shape) if in_perm is None else ()
    program = lower_plan(plan, in_perm, natural_out, MATRIX_DFT and _on_cpu(pl.mesh), shape)
    x = _constrain(x, pl, program.in_layout)
    # Even without moves the local FFTs go through shard_map: XLA's own partitioning of an FFT may gather.
    if max_of is None:
        return _sharded(program, pl.mesh, norm)(x)
    if jnp.finfo(max_of.dtype).bits > jnp.finfo(x.dtype).bits:  # the exchange would round it: reduce on its own
        return _sharded(program, pl.mesh, norm)(x), max_where(jnp.max, max_of, max_if, max_of.dtype)
    tail = program.in_layout[x.ndim - max_of.ndim:]
    mp = placement(max_of)
    max_of = _constrain(max_of, Placement(pl.mesh, None if mp is None else mp.layout, pl.explicit), tail)
    if max_if is None:
        out, m = _sharded(program, pl.mesh, norm, max_of.ndim)(x, max_of)
    else:
        out, m = _sharded(program, pl.mesh, norm, max_of.ndim, True)(x, max_of, max_if)
    return out, m.astype(max_of.dtype)


def _sharded(program: Program, mesh, norm: str, side_ndim: int | None = None, when: bool = False):
    """The jitted shard_map program (cached: eager calls do not retrace; under jit it inlines); with ``side_ndim``,
    that of ``(x, max_of)`` returning ``(output, max)`` (:func:`run_program`'s side); ``when`` adds ``max_if``."""
    return _sharded_as(program, mesh, norm, side_ndim, when, _exchange.SEND_TRANSPOSED and _on_cpu(mesh))


@lru_cache(maxsize=256)
def _sharded_as(program: Program, mesh, norm: str, side_ndim: int | None, when: bool, send_transposed: bool):
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    in_spec, out_spec = layout_to_spec(program.in_layout), layout_to_spec(program.out_layout)
    if side_ndim is None:
        body = lambda b: run_program(b, program, norm, sizes, send_transposed=send_transposed)  # noqa: E731
        return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=in_spec, out_specs=out_spec, check_vma=False))
    tail = layout_to_spec(program.in_layout[len(program.in_layout) - side_ndim:])
    if when:
        body = lambda b, m, w: run_program(b, program, norm, sizes, m, w, send_transposed)  # noqa: E731
        specs = (in_spec, tail, P())
    else:
        body = lambda b, m: run_program(b, program, norm, sizes, m, send_transposed=send_transposed)  # noqa: E731
        specs = (in_spec, tail)
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=specs, out_specs=(out_spec, P()), check_vma=False))


def _local_max(m: jax.Array, real) -> jax.Array:
    """The block's maximum in the real dtype ``real`` the exchange carries it in (``-inf`` for an empty block)."""
    return jnp.max(m.astype(real), initial=-jnp.inf)


def run(x: jax.Array, plan: Plan, norm: str, *, in_perm: tuple[int, ...] | None = None,
        natural_out: bool = True, max_of: jax.Array | None = None, max_if: jax.Array | None = None):
    """Run ``plan`` on ``x`` wherever it lives: one device (the lowered program as is), or its mesh (:func:`execute`).

    The plan must have been made for ``x``'s placement (no mesh sizes for one device). ``max_of``: also return
    its maximum (where ``max_if``, see :func:`execute`).
    """
    pl = placement(x)
    if pl is None:
        out = run_program(x, lower_plan(plan, in_perm, natural_out), norm, {})
        return out if max_of is None else (out, max_where(jnp.max, max_of, max_if, max_of.dtype))
    return execute(x, plan, pl, norm, in_perm=in_perm, natural_out=natural_out, max_of=max_of, max_if=max_if)
