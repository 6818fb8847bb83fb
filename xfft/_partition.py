"""Run a :class:`~xfft._layout.Plan` on a sharded array: local FFTs and all-to-alls inside ``jax.shard_map``.

This module is the one place that decides how a transform is partitioned. It reads the input's layout from
its type (Explicit meshes, concrete arrays) or assumes :func:`xfft.real_sharding`'s layout (Auto meshes under
``jax.jit``, where the spec is not known while tracing: :func:`xfft._plan_inverse.guess_layout`), and runs the lowered
program of every transform kind (:func:`run_program`, the one interpreter) inside ``jax.shard_map``. How a plan is
lowered on the devices at hand is a :class:`xfft.LoweringOptions` value (the platform's defaults unless a backend
gives its own), passed to :func:`xfft._lower.lower_plan` and so part of the cached program's key.

Why ``shard_map`` and not ``custom_partitioning``: a distributed FFT changes *which* array axis is sharded
(slab ``P('x')`` in, ``P(None, 'x')`` out). Shardy's sharding rules only tie equal factors of operand and
result, so a ``custom_partitioning`` op either propagates the input sharding to its result (XLA then adds
a second all-to-all to restore it; measured: 2 instead of 1 for a slab) or leaves it open (an all-gather).
``shard_map`` states both layouts exactly, is differentiable and batchable by construction, and works on
Explicit and Auto meshes alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from ._exchange import all_to_all, move_then_transpose
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
from ._lower import AxisDft, Program, SendTransposed, TrailingFft, Transpose, lower_plan
from ._matdft import dft_along, factors
from ._options import LoweringOptions
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
    return Placement(mesh if concrete else _concrete_mesh(x, mesh), layout, explicit)


def _concrete_mesh(x: jax.Array, mesh):
    """``mesh``, or the concrete mesh it abstracts when ``x`` traces an eager transformation (JVP, linearize,
    vmap) of a concrete array: JAX cannot run the transpose of a program over an abstract mesh eagerly when the
    cotangents are not on the mesh (a NumPy cotangent given to ``jax.vjp``'s function)."""
    while isinstance(x, jax.core.Tracer):
        x = getattr(x, "primal", getattr(x, "val", None))
    sharding = getattr(x, "sharding", None)
    if isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, jax.sharding.Mesh):
        return sharding.mesh if sharding.mesh.abstract_mesh == mesh else mesh
    return mesh


def _platform(mesh) -> str:
    """The platform of ``mesh``'s devices (concrete or abstract mesh): ``"cpu"``, ``"gpu"``, ``"tpu"``."""
    if isinstance(mesh, jax.sharding.Mesh) and mesh.devices.size:
        return mesh.devices.flat[0].platform
    device = getattr(mesh, "abstract_device", None)
    return getattr(device, "platform", None) or jax.default_backend()


def options_for(mesh, options: LoweringOptions | None) -> LoweringOptions:
    """``options``, or the defaults of ``mesh``'s platform (:meth:`xfft.LoweringOptions.for_platform`) if None."""
    return LoweringOptions.for_platform(_platform(mesh)) if options is None else options


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


def run_program(x: jax.Array, program: Program, norm: str, sizes: dict[str, int]) -> jax.Array:
    """Execute a lowered ``program`` on the local block ``x`` (inside ``shard_map``, or on one device).

    This is the one interpreter of every transform: FFTs, real FFTs, DCTs and DSTs, crops/pads, moves (alone or
    with the transpose after them, :class:`~xfft._lower.SendTransposed`), DFTs along an axis where it lies,
    four-step transforms of a sharded axis and gathers. Each step of the program is one operation here, in order:
    the program is what runs.

    Raises:
      TypeError: a step that is not a :class:`~xfft._lower.TrailingFft`, ``Transpose``, ``AxisDft``, ``Move``,
        ``SendTransposed``, ``Resize``, ``FourStep`` or ``Gather``.
    """
    for step in program.steps:
        if isinstance(step, TrailingFft):
            x = _local_transform(x, step, norm)
        elif isinstance(step, Transpose):
            x = jnp.transpose(x, step.perm)
        elif isinstance(step, Move):
            x = all_to_all(x, step, sizes)
        elif isinstance(step, SendTransposed):
            x = move_then_transpose(x, step.move, step.perm, sizes)
        elif isinstance(step, Resize):
            x = _resize(x, step)
        elif isinstance(step, AxisDft):
            x = _axis_dft(x, step, norm)
        elif isinstance(step, FourStep):
            x = four_step(x, step.axis, step.mesh_axes, group_size(step.mesh_axes, sizes), step.n, step.inverse, norm)
        elif isinstance(step, Gather):
            x = _gather(x, step, sizes)
        else:
            raise TypeError(f"unknown program step {step!r} (expected TrailingFft, Transpose, AxisDft, Move, "
                            "SendTransposed, Resize, FourStep or Gather)")
    return x


def _constrain(x: jax.Array, pl: Placement, layout: Layout) -> jax.Array:
    """Reshard ``x`` to ``layout`` if its known layout differs (Explicit meshes need it spelled out)."""
    if pl.layout is None or pl.layout == layout:
        return x
    sharding = NamedSharding(pl.mesh, layout_to_spec(layout))
    if pl.explicit:
        return jax.sharding.reshard(x, sharding)
    return jax.lax.with_sharding_constraint(x, sharding)


def lowered(plan: Plan, pl: Placement | None, shape: tuple[int, ...] = (), *, in_perm: tuple[int, ...] | None = None,
            natural_out: bool = True, options: LoweringOptions | None = None) -> Program:
    """The program :func:`run` runs for ``plan`` on an input of global ``shape`` (natural order; empty if not
    known) placed as ``pl`` (None: one device, lowered :data:`xfft._lower.PLAIN`: no choice applies there);
    ``options`` None: the platform's defaults."""
    if pl is None:
        return lower_plan(plan, in_perm, natural_out)
    return lower_plan(plan, in_perm, natural_out, options_for(pl.mesh, options), shape if in_perm is None else ())


def execute(x: jax.Array, plan: Plan, pl: Placement, norm: str, *, in_perm: tuple[int, ...] | None = None,
            natural_out: bool = True, options: LoweringOptions | None = None) -> jax.Array:
    """Run ``plan`` on the global array ``x`` over ``pl.mesh``.

    Args:
      x: global array; its axes are the plan's logical axes in the order ``in_perm`` (default natural).
      plan, pl, norm: the plan, where ``x`` lives, the FFT normalization.
      in_perm, natural_out: as :func:`xfft._lower.lower_plan`.
      options: the lowering choices (:class:`xfft.LoweringOptions`); None: the defaults of the mesh's platform.

    Returns:
      The output, sharded as the lowered program's ``out_layout`` (``plan.out_layout`` in natural order).
    """
    program = lowered(plan, pl, tuple(x.shape), in_perm=in_perm, natural_out=natural_out, options=options)
    x = _constrain(x, pl, program.in_layout)
    # Even without moves the local FFTs go through shard_map: XLA's own partitioning of an FFT may gather.
    return _sharded(program, pl.mesh, norm)(x)


@lru_cache(maxsize=256)
def _sharded(program: Program, mesh, norm: str):
    """The jitted shard_map program (cached by the program, which holds the lowering choices: eager calls do not
    retrace; under jit it inlines)."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    in_spec, out_spec = layout_to_spec(program.in_layout), layout_to_spec(program.out_layout)
    body = lambda b: run_program(b, program, norm, sizes)  # noqa: E731
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=in_spec, out_specs=out_spec, check_vma=False))


def run(x: jax.Array, plan: Plan, norm: str, *, in_perm: tuple[int, ...] | None = None,
        natural_out: bool = True, options: LoweringOptions | None = None) -> jax.Array:
    """Run ``plan`` on ``x`` wherever it lives: one device (the lowered program as is), or its mesh (:func:`execute`).

    The plan must have been made for ``x``'s placement (no mesh sizes for one device); ``options`` as
    :func:`execute`.
    """
    pl = placement(x)
    if pl is None:
        return run_program(x, lowered(plan, None, in_perm=in_perm, natural_out=natural_out), norm, {})
    return execute(x, plan, pl, norm, in_perm=in_perm, natural_out=natural_out, options=options)


def one_device_block(x: jax.Array) -> jax.Array:
    """``x`` without the type of a sharding over a mesh of one device (an Explicit mesh types its arrays, and a
    scatter or gather of such an array asks for an output sharding): the same single block, unsharded."""
    sharding = getattr(jax.typeof(x), "sharding", None)
    spec = getattr(sharding, "spec", None)
    if spec is None or all(e is None for e in spec):
        return x
    return jax.sharding.reshard(x, NamedSharding(sharding.mesh, PartitionSpec()))
