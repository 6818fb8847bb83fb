"""Particles on sharded meshes: :func:`paint` (mass assignment) and :func:`readout` (interpolation), exact adjoints.

Design (migration with fixed-capacity buffers). A particle may be anywhere in the periodic box, whichever device
holds it. Inside one ``shard_map`` each device finds the block that owns each of its particles (the block holding
the kernel's base cell), keeps the ones it owns, and sends every other one to its owner through one all-to-all of
fixed-size buffers: ``capacity`` slots for each (sender, receiver) pair. The owner paints all its particles into its
block padded by the kernel's reach (one cell for CIC and TSC), and one :func:`xfft.halo_reduce` (collective
permutes) adds the halos into the neighbours. :func:`readout` is the same program transposed: a
:func:`xfft.halo_pad`, the owners interpolate, and a second all-to-all returns the values to the particles'
slots. Particles never change slot in the caller's arrays, so ``paint`` and ``readout`` are linear maps, adjoint
to each other, and differentiable in the positions and weights.

The one limit is ``capacity``. When one device would send more particles to one other device than the buffer
holds, nothing is dropped silently: the result is NaN everywhere, and the call raises ``ValueError`` (outside
``jit``) or a runtime error raised from a host callback (under ``jit``), naming the number of slots needed.

This lives in a module of its own, not in :mod:`xfft._halo`: particles bring their own data layout (a flat, or
any leading-axis, particle array sharded independently of the mesh), routing and kernels; the halo exchange is
one of the primitives it uses; the kernels are in :mod:`xfft._kernels`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from . import _particles_halo as _through_halos
from ._halo import AxisHalo, pad_blocks, reduce_blocks
from ._kernels import KERNELS, stencil, weights_1d
from ._layout import Layout, canonical_layout, check_even, group_size, layout_to_spec, spec_to_layout
from ._partition import Placement, _constrain, one_device_block, placement


class _Route:
    """Where each of a device's particles goes (inside ``shard_map``): owner, kept or sent, buffer slots."""

    def __init__(self, base: jax.Array, field: _Field, cap: int) -> None:
        names, p = field.names, field.p
        me = jax.lax.axis_index(names) if names else 0
        dest = jnp.zeros(base.shape[0], jnp.int32)
        for d, g in enumerate(field.layout):
            if not g:
                continue
            k = jnp.mod(base[:, d], field.shape[d]) // field.block[d]  # block index along d
            for a in reversed(g):
                dest = dest + (k % field.sizes[a]) * field.stride[a]
                k = k // field.sizes[a]
        self.local = dest == me
        key = jnp.where(self.local, p, dest)  # kept particles sort last, into no slot
        counts = jnp.bincount(key, length=p + 1)
        self.need = jnp.max(counts[:p])
        order = jnp.argsort(key, stable=True)
        skey = key[order]
        start = jnp.cumsum(counts) - counts
        rank = jnp.arange(key.shape[0]) - start[skey]
        valid = (skey < p) & (rank < cap)
        slot = jnp.where(valid, skey * cap + rank, p * cap)
        self.slot = jnp.zeros_like(slot).at[order].set(slot)  # each particle's slot (p * cap: none)
        self.size = p * cap

    def send(self, v: jax.Array, names) -> jax.Array:
        """Each particle's ``v`` (leading axis) in its slot of the send buffer, exchanged: the receive buffer."""
        buf = jnp.zeros((self.size + 1,) + v.shape[1:], v.dtype).at[self.slot].add(v)[: self.size]
        return jax.lax.all_to_all(buf, names, 0, 0, tiled=True)

    def back(self, buf: jax.Array, names) -> jax.Array:
        """The adjoint of :meth:`send` for values: the receive buffer sent back, read at each particle's slot."""
        buf = jax.lax.all_to_all(buf, names, 0, 0, tiled=True)
        buf = jnp.concatenate([buf, jnp.zeros((1,) + buf.shape[1:], buf.dtype)])
        return buf[self.slot]


class _Field:
    """The mesh, global shape and layout of a sharded field, with what routing needs."""

    def __init__(self, mesh, shape: tuple[int, ...], layout: Layout, name: str) -> None:
        self.mesh, self.shape = mesh, shape
        self.sizes = dict(zip(mesh.axis_names, mesh.axis_sizes)) if mesh is not None else {}
        self.layout = tuple(tuple(a for a in g if self.sizes[a] > 1) for g in layout)
        self.names = tuple(a for a in self.sizes if self.sizes[a] > 1)
        used = {a for g in self.layout for a in g}
        if set(self.names) - used:
            raise ValueError(f"{name}: the mesh's sharding must split the field over every mesh axis larger than "
                             f"1 ({self.names}), got layout {layout_to_spec(self.layout)}")
        check_even(shape, self.layout, self.sizes)
        self.p = math.prod(self.sizes[a] for a in self.names)
        self.stride = {a: math.prod(self.sizes[b] for b in self.names[i + 1:]) for i, a in enumerate(self.names)}
        self.block = tuple(n // group_size(g, self.sizes) for n, g in zip(shape, self.layout))

    def _key(self) -> tuple:
        return (self.mesh, self.shape, self.layout)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Field) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def origin(self) -> list:
        """The global index of this device's first cell along each axis (inside ``shard_map``)."""
        out = []
        for d, g in enumerate(self.layout):
            k = 0
            for a in g:
                k = k * self.sizes[a] + jax.lax.axis_index(a)
            out.append(k * self.block[d])
        return out

    def halos(self, kernel: str) -> list[AxisHalo]:
        lo, hi = KERNELS[kernel]
        return [AxisHalo(d, lo, hi, g, group_size(g, self.sizes)) for d, g in enumerate(self.layout)
                if g and (lo or hi)]


def _padded_shape(field: _Field, kernel: str) -> tuple[int, ...]:
    lo, hi = KERNELS[kernel]
    return tuple(b + (lo + hi if g else 0) for b, g in zip(field.block, field.layout))


def _paint_body(pos, w, field: _Field, kernel: str, cap: int):
    """One device's paint: its block of the field and the most particles it sends to one device."""
    d = pos.shape[-1]
    pos, w = pos.reshape(-1, d), w.reshape(-1)
    shape = _padded_shape(field, kernel)
    sharded = [bool(g) for g in field.layout]
    lo = field.origin()
    out = jnp.zeros(math.prod(shape), w.dtype)
    if field.names:
        base = jnp.stack([weights_1d(pos[:, i], kernel)[0] for i in range(d)], -1)
        route = _Route(base, field, cap)
        keep = jnp.where(route.local, w, 0)
        rpos, rw = route.send(pos, field.names), route.send(w, field.names)
        idx, k = stencil(jnp.concatenate([pos, rpos]), kernel, shape, lo, sharded, field.shape)
        out = out.at[idx].add(jnp.concatenate([keep, rw])[:, None] * k)
        need = jax.lax.pmax(route.need, field.names)
    else:
        idx, k = stencil(pos, kernel, shape, lo, sharded, field.shape)
        out = out.at[idx].add(w[:, None] * k)
        need = jnp.zeros((), jnp.int32)
    return reduce_blocks(out.reshape(shape), field.halos(kernel), True), need


def _readout_body(f, pos, field: _Field, kernel: str, cap: int):
    """One device's readout: the values at its particles and the most particles it sends to one device."""
    d = pos.shape[-1]
    lead = pos.shape[:-1]
    pos = pos.reshape(-1, d)
    fp = pad_blocks(f, field.halos(kernel), True).reshape(-1)
    shape = _padded_shape(field, kernel)
    sharded = [bool(g) for g in field.layout]
    lo = field.origin()

    def read(q):
        idx, k = stencil(q, kernel, shape, lo, sharded, field.shape)
        return jnp.sum(fp[idx] * k, -1)

    if not field.names:
        return read(pos).reshape(lead), jnp.zeros((), jnp.int32)
    base = jnp.stack([weights_1d(pos[:, i], kernel)[0] for i in range(d)], -1)
    route = _Route(base, field, cap)
    moved = route.back(read(route.send(pos, field.names)), field.names)
    vals = jnp.where(route.local, read(pos), moved)
    return vals.reshape(lead), jax.lax.pmax(route.need, field.names)


def _need_error(name: str, need: int, cap: int) -> ValueError:
    return ValueError(
        f"{name}: the particle exchange buffer overflowed: one device had {need} particles to send to one other "
        f"device, but capacity={cap} slots per device pair; pass capacity={need} or more (each device then holds "
        "capacity x devices particle slots), or keep particles nearer their owning block"
    )


def _raise_if_over(need, *, name: str, cap: int) -> None:
    if int(need) > cap:
        raise _need_error(name, int(need), cap)


def _guard(out: jax.Array, need: jax.Array, cap: int, name: str, traced: bool) -> tuple[jax.Array, jax.Array]:
    """Inside ``shard_map``, after the last exchange: NaN where the buffers overflowed, and under ``jit`` a host
    callback on every device that raises (all devices: one that stops alone would leave the others waiting in
    the next collective). The barrier orders the check after every exchange of the block's result."""
    need, out = jax.lax.optimization_barrier((need, out))
    if traced:
        jax.debug.callback(partial(_raise_if_over, name=name, cap=cap), need)
    return jnp.where(need > cap, jnp.asarray(jnp.nan, out.dtype), out), need


def _checked(run, args: tuple, cap: int, name: str) -> jax.Array:
    """Run the program ``run(traced)`` on ``args``; concrete results are checked here (``ValueError``)."""
    traced = any(isinstance(a, jax.core.Tracer) for a in args)
    out, need = run(traced)(*args)
    if not traced:
        _raise_if_over(need, name=name, cap=cap)
    return out


def _particles(positions: object, ndim: int | None, name: str) -> tuple[jax.Array, Placement | None, Layout]:
    """Checked positions ``(..., D)``, their placement, and their layout (known, or xfft's canonical one)."""
    if not isinstance(positions, (jax.Array, np.ndarray)):
        raise TypeError(f"{name}: positions must be a jax.Array or numpy.ndarray, got {type(positions).__name__}")
    pos = jnp.asarray(positions)
    if not jnp.issubdtype(pos.dtype, jnp.floating):
        raise TypeError(f"{name}: positions must be real floating point (grid units), got dtype {pos.dtype}")
    if pos.ndim < 2 or (ndim is not None and pos.shape[-1] != ndim):
        want = "D" if ndim is None else str(ndim)
        raise ValueError(f"{name}: positions must have shape (..., {want}) (one row of coordinates per particle), "
                         f"got {tuple(pos.shape)}")
    pl = placement(pos)
    if pl is None:
        return pos, None, ((),) * pos.ndim
    sizes = dict(pl.mesh_sizes)
    layout = pl.layout if pl.layout is not None else canonical_layout(
        tuple(pos.shape[:-1]), tuple(range(pos.ndim - 1)), pl.mesh_sizes) + ((),)
    layout = tuple(tuple(a for a in g if sizes[a] > 1) for g in layout)
    if layout[-1]:
        raise ValueError(f"{name}: the coordinate axis of positions must not be sharded, got {layout_to_spec(layout)}")
    missing = [a for a, n in pl.mesh_sizes if n > 1 and not any(a in g for g in layout)]
    if missing:
        raise ValueError(f"{name}: positions must be sharded over every mesh axis ({missing} not used: its devices "
                         f"would hold the same particles twice); e.g. NamedSharding(mesh, P({tuple(sizes)!r}))")
    check_even(tuple(pos.shape), layout, sizes)
    return pos, pl, layout


def _kernel(kernel: object, name: str) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"{name}: kernel must be one of {tuple(KERNELS)}, got {kernel!r}")
    return str(kernel)


def _capacity(capacity: object, pos: jax.Array, layout: Layout, sizes: dict[str, int], p: int, name: str) -> int:
    """Slots per (sender, receiver) pair: ``capacity``, or twice an even share of a device's particles (at least
    64, at most all of them)."""
    m = math.prod(pos.shape[:-1]) // max(1, math.prod(group_size(g, sizes) for g in layout))
    if capacity is None:
        return max(1, min(m, max(64, -(-2 * m // max(p, 1)))))
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
        raise ValueError(f"{name}: capacity must be a positive int (particle slots per device pair), got {capacity!r}")
    return int(capacity)


def paint(positions: jax.Array, shape: Sequence[int], weights: jax.Array | float | None = None, *,
          kernel: str = "cic", capacity: int | None = None, out_sharding: NamedSharding | None = None,
          halo: int | Sequence[int] | None = None) -> jax.Array:
    """Assign particle masses to a periodic mesh (NGP, CIC or TSC), the mesh and the particles both sharded.

    Coordinates are in grid units: cell ``i`` sits at ``i``, the box is ``[0, shape[d])`` along each axis and
    periodic (any coordinate is taken modulo the box). CIC spreads a particle over the ``2^D`` cells around it,
    TSC over ``3^D``, NGP puts it in the nearest cell. Particles may be anywhere, on any device: each is sent to
    the device owning its cells (one all-to-all with ``capacity`` slots per device pair), painted there, and the
    cells spilling over a block edge are added into the neighbour (:func:`xfft.halo_reduce`).

    Args:
      positions: ``(..., D)`` real array of coordinates, its leading axes sharded over every mesh axis (e.g.
        ``(N, 3)`` sharded ``P(('x', 'y'))``, or a Lagrangian grid ``(nx, ny, nz, 3)`` sharded ``P('x', 'y')``);
        on one device, painted there.
      shape: the mesh's global shape (D ints).
      weights: each particle's mass (an array of ``positions.shape[:-1]``, sharded like them), a scalar, or None
        (1 each).
      kernel: ``"ngp"``, ``"cic"`` (default) or ``"tsc"``.
      capacity: particle slots for what one device sends to one other device; default ``2 * m / p`` for ``m``
        particles per device and ``p`` devices. Exceeding it raises (see Raises); never silently drops mass.
      out_sharding: the mesh's sharding (a ``NamedSharding`` on the positions' mesh that splits it over every
        mesh axis); default :func:`xfft.real_sharding` of the mesh.
      halo: paint through halos instead (an int, or one per axis; excludes ``capacity``): no particle moves;
        each device paints the particles it holds into its own block of the mesh padded by ``halo`` cells, and
        the halos are added into the neighbours. Several times faster, for particles that stay near the block of
        the device holding them (a Lagrangian layout: every kernel cell within ``halo`` cells of that block).

    Returns:
      The painted mesh of ``shape``, sharded as ``out_sharding``; ``readout`` is its adjoint.

    Raises:
      TypeError: non-array or non-floating positions, or an ``out_sharding`` that is not a ``NamedSharding``.
      ValueError: bad shapes, kernel, capacity, halo or sharding; or a full exchange buffer (or, with ``halo``,
        a particle outside it): outside ``jit`` this error names the capacity needed (the particles outside);
        under ``jit`` the result is NaN and a host callback raises the same message (as a runtime error when
        the result is used).
    """
    kernel = _kernel(kernel, "paint")
    if halo is not None and capacity is not None:
        raise ValueError("paint: capacity and halo exclude each other (halo: no particle is sent anywhere)")
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError:
        raise TypeError(f"paint: shape must be a sequence of ints, got {shape!r}") from None
    pos, pl, layout = _particles(positions, len(shape), "paint")
    w = jnp.asarray(1.0 if weights is None else weights)
    if w.ndim and tuple(w.shape) != tuple(pos.shape[:-1]):
        raise ValueError(f"paint: weights must be a scalar or of shape {tuple(pos.shape[:-1])}, got {tuple(w.shape)}")
    dtype = jnp.result_type(pos.dtype, w.dtype if weights is not None else pos.dtype)
    if pl is None:
        if out_sharding is not None:
            raise ValueError("paint: out_sharding needs positions sharded over its mesh")
        field = _Field(None, shape, ((),) * len(shape), "paint")
        if halo is not None:  # (checked; one device has no halo)
            _through_halos.halo_widths(halo, field, "paint")
        pos = one_device_block(pos)
        out, _ = _paint_body(pos, jnp.broadcast_to(one_device_block(w).astype(dtype), pos.shape[:-1]), field, kernel, 1)
        return out
    if out_sharding is None:
        flayout = canonical_layout(shape, tuple(range(len(shape))), pl.mesh_sizes)
    elif not isinstance(out_sharding, NamedSharding):
        raise TypeError(f"paint: out_sharding must be a NamedSharding, got {type(out_sharding).__name__}")
    else:
        if tuple(out_sharding.mesh.axis_names) != tuple(pl.mesh.axis_names) or \
                tuple(out_sharding.mesh.axis_sizes) != tuple(pl.mesh.axis_sizes):
            raise ValueError("paint: out_sharding must be on the positions' mesh")
        flayout = spec_to_layout(out_sharding.spec, len(shape))
    field = _Field(pl.mesh, shape, flayout, "paint")
    if w.ndim:
        wp = placement(w)
        w = _constrain(w, Placement(pl.mesh, None if wp is None else wp.layout, pl.explicit), layout[:-1])
    if halo is not None:
        widths = _through_halos.halo_widths(halo, field, "paint")
        program = partial(_through_halos.paint_program, field, layout, bool(w.ndim), kernel, widths, dtype)
        return _through_halos.checked(program, (pos.astype(dtype), w), "paint", widths)
    cap = _capacity(capacity, pos, layout, field.sizes, field.p, "paint")

    program = partial(_paint_program, field, layout, bool(w.ndim), kernel, cap, dtype)
    return _checked(program, (pos.astype(dtype), w), cap, "paint")


def readout(field: jax.Array, positions: jax.Array, *, kernel: str = "cic", capacity: int | None = None,
            halo: int | Sequence[int] | None = None) -> jax.Array:
    """Interpolate a periodic sharded mesh at particle positions with the kernels of :func:`paint` (its adjoint).

    ``sum(paint(x, shape, w) * f) == sum(w * readout(f, x))`` to round-off, for the same kernel.

    Args:
      field: the mesh values, sharded over every mesh axis larger than 1 (or on one device).
      positions: ``(..., D)`` coordinates in grid units (``D = field.ndim``), sharded over every mesh axis of
        the field's mesh (see :func:`paint`).
      kernel: ``"ngp"``, ``"cic"`` (default) or ``"tsc"``.
      capacity, halo: as for :func:`paint` (with ``halo``, each device reads the field at the particles it holds
        from its block padded by ``halo`` cells; no particle moves).

    Returns:
      The interpolated values, of ``positions.shape[:-1]``, sharded like the positions' leading axes.

    Raises:
      TypeError: non-array or non-floating positions, or a non-array field.
      ValueError: as :func:`paint` (a full exchange buffer, or a particle outside the halo, included).
    """
    kernel = _kernel(kernel, "readout")
    if halo is not None and capacity is not None:
        raise ValueError("readout: capacity and halo exclude each other (halo: no particle is sent anywhere)")
    if not isinstance(field, (jax.Array, np.ndarray)):
        raise TypeError(f"readout: field must be a jax.Array or numpy.ndarray, got {type(field).__name__}")
    f = jnp.asarray(field)
    pos, pl, layout = _particles(positions, f.ndim, "readout")
    fpl = placement(f)
    if pl is None or fpl is None:
        if (pl is None) != (fpl is None):
            raise ValueError("readout: field and positions must both be sharded over one mesh, or both on one device")
        if halo is not None:  # (checked; one device has no halo)
            _through_halos.halo_widths(halo, _Field(None, f.shape, ((),) * f.ndim, "readout"), "readout")
        f, pos = one_device_block(f), one_device_block(pos)
        out, _ = _readout_body(f, pos.astype(f.dtype), _Field(None, f.shape, ((),) * f.ndim, "readout"), kernel, 1)
        return out
    if fpl.mesh_sizes != pl.mesh_sizes:
        raise ValueError(f"readout: field and positions must be on one mesh, got {fpl.mesh_sizes} and {pl.mesh_sizes}")
    flayout = fpl.layout if fpl.layout is not None else canonical_layout(tuple(f.shape), tuple(range(f.ndim)),
                                                                          fpl.mesh_sizes)
    fd = _Field(pl.mesh, tuple(f.shape), flayout, "readout")
    if halo is not None:
        widths = _through_halos.halo_widths(halo, fd, "readout")
        program = partial(_through_halos.readout_program, fd, layout, kernel, widths)
        return _through_halos.checked(program, (f, pos.astype(f.dtype)), "readout", widths)
    cap = _capacity(capacity, pos, layout, fd.sizes, fd.p, "readout")
    return _checked(partial(_readout_program, fd, layout, kernel, cap), (f, pos.astype(f.dtype)), cap, "readout")


@lru_cache(maxsize=64)
def _paint_program(field: _Field, layout: Layout, weighted: bool, kernel: str, cap: int, dtype, traced: bool):
    """The jitted ``shard_map`` of :func:`_paint_body` (jitted: eager calls compile once and run as one program)."""
    def body(q, v):
        out, need = _paint_body(q, jnp.broadcast_to(v.astype(dtype), q.shape[:-1]), field, kernel, cap)
        return _guard(out, need, cap, "paint", traced)

    specs = (layout_to_spec(layout), layout_to_spec(layout[:-1]) if weighted else P())
    return jax.jit(jax.shard_map(body, mesh=field.mesh, in_specs=specs,
                                 out_specs=(layout_to_spec(field.layout), P()), check_vma=False))


@lru_cache(maxsize=64)
def _readout_program(field: _Field, layout: Layout, kernel: str, cap: int, traced: bool):
    """The jitted ``shard_map`` of :func:`_readout_body`."""
    body = lambda g, q: _guard(*_readout_body(g, q, field, kernel, cap), cap, "readout", traced)  # noqa: E731
    return jax.jit(jax.shard_map(body, mesh=field.mesh, in_specs=(layout_to_spec(field.layout), layout_to_spec(layout)),
                                 out_specs=(layout_to_spec(layout[:-1]), P()), check_vma=False))
