"""The exchange programs of :func:`xfft.paint` and :func:`xfft.readout`: routing, the one-device bodies and the
jitted ``shard_map`` programs (the design is described in :mod:`xfft._particles`)."""

from __future__ import annotations

import math
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from ._errors import recording
from ._halo import AxisHalo, pad_blocks, reduce_blocks
from ._kernels import KERNELS, Cell, paint_corners, read_corners, weights_1d
from ._layout import Layout, check_even, group_size, layout_to_spec


class _Route:
    """Where each of a device's particles goes (inside ``shard_map``): owner, kept or sent, buffer slots."""

    def __init__(self, base: jax.Array, field: Field, cap: int) -> None:
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
        order, skey = _group(key, p)
        start = jnp.cumsum(counts) - counts
        rank = jnp.arange(key.shape[0]) - start[skey]
        valid = (skey < p) & (rank < cap)
        # each sender's chunk of the buffers: `cap` slots, rounded up to whole blocks of `rows`
        self.rows = min(cap, ROWS)
        self.nblocks = -(-cap // self.rows)
        self.p, self.width = p, self.nblocks * self.rows
        self.size = p * self.width
        slot = jnp.where(valid, skey * self.width + rank, self.size + jnp.arange(key.shape[0]))  # none: past the end
        self.slot = jnp.zeros_like(slot).at[order].set(slot, unique_indices=True)  # each particle's slot
        self.filled = (jax.lax.pmax(self.need, names) if names else self.need)  # rows of any chunk that hold one

    def send(self, v: jax.Array, names, after: jax.Array | None = None) -> jax.Array:
        """Each particle's ``v`` (leading axis) in its slot of the send buffer, exchanged: the receive buffer; sent
        once ``after`` has been computed (readout: once the field is there, so that the buffers are not alive
        through the computation of the field in the same program)."""
        buf = _zeros_after((self.size,) + v.shape[1:], v.dtype, self.slot if after is None else after)
        buf = buf.at[self.slot].set(v, mode="drop", unique_indices=True)
        return jax.lax.all_to_all(buf, names, 0, 0, tiled=True)

    def in_blocks(self, step, init):
        """``step(acc, b)`` for each block ``b`` of ``rows`` rows of the receive buffer that holds a particle,
        ``acc`` passed on over the empty ones: the received particles are the first rows of each sender's chunk,
        and a buffer sized for the worst case is mostly empty (a static loop with ``cond``: differentiable)."""
        def body(b, acc):
            return jax.lax.cond(b * self.rows < self.filled, lambda a: step(a, b), lambda a: a, acc)

        return jax.lax.fori_loop(0, self.nblocks, body, init)

    def read_blocks(self, read, got: jax.Array, like: jax.Array) -> jax.Array:
        """``read`` (of ``(k, D)`` positions: ``(k, ...)`` values like ``like``'s rows) at every received particle
        of ``got``, in a buffer like the receive buffer (zeros in the empty slots); blocks past the fullest chunk
        are not read. Only the read is conditional: each block is written in place outside the ``cond`` (a write
        inside a branch copies the whole buffer)."""
        rest = like.shape[1:]
        def body(b, acc):  # acc: (p, width, ...), so that the write is in place (no reshape around it)
            v = jax.lax.cond(b * self.rows < self.filled, lambda: read(self.rows_of(got, b)),
                             lambda: jnp.zeros((self.p * self.rows,) + rest, like.dtype))  # (made in the branch)
            return jax.lax.dynamic_update_slice_in_dim(acc, v.reshape((self.p, self.rows) + rest), b * self.rows, 1)

        out = jax.lax.fori_loop(0, self.nblocks, body, _zeros_after((self.p, self.width) + rest, like.dtype, got))
        return out.reshape((self.size,) + rest)

    def rows_of(self, buf: jax.Array, b) -> jax.Array:
        """Rows ``[b rows, (b + 1) rows)`` of every sender's chunk of ``buf`` (``(size, ...)``): ``(p rows, ...)``."""
        x = buf.reshape((self.p, self.width) + buf.shape[1:])
        x = jax.lax.dynamic_slice_in_dim(x, b * self.rows, self.rows, axis=1)
        return x.reshape((self.p * self.rows,) + buf.shape[1:])

    def back(self, buf: jax.Array, names) -> jax.Array:
        """The adjoint of :meth:`send` for values: the receive buffer sent back, read at each particle's slot."""
        buf = jax.lax.all_to_all(buf, names, 0, 0, tiled=True)
        return buf.at[self.slot].get(mode="fill", fill_value=0, unique_indices=True)


def _zeros_after(shape: tuple[int, ...], dtype, after: jax.Array) -> jax.Array:
    """Zeros, made once ``after`` has been computed (``0 * after[0]`` added: no cost, and a data dependency). A
    buffer of constant zeros has no operands, so XLA's scheduler may make it at the start of the program and keep
    it alive through everything before its use (a whole receive buffer through the FFTs of a PM step). In floating
    point (an integer product with 0 XLA folds away), and 0 where ``after[0]`` is not finite (no NaN let in)."""
    d = jnp.real(after.ravel()[0]).astype(jnp.float32)
    return jnp.zeros(shape, dtype) + jnp.where(jnp.isfinite(d), 0 * d, 0).astype(dtype)


#: rows of the receive buffer painted or read at a time (per sender): blocks past the fullest chunk are skipped
ROWS = 2048


def _group(key: jax.Array, p: int, packed_max: int = 2**31 - 1) -> tuple[jax.Array, jax.Array]:
    """The particles ordered by ``key`` (in ``[0, p]``), in their order within a key, and the sorted keys.

    ``key * N + index`` sorted as one integer: unique, so any sort keeps the order within a key, and one operand
    sorts several times faster than a stable two-operand argsort on CPU. Where that integer exceeds
    ``packed_max`` (int32's largest), as int64 if x64 is on, else the stable argsort."""
    n = key.shape[0]
    if (p + 1) * n - 1 <= packed_max or jax.config.jax_enable_x64:
        dt = jnp.int32 if (p + 1) * n - 1 <= packed_max else jnp.int64
        packed = jax.lax.sort(key.astype(dt) * n + jnp.arange(n, dtype=dt), is_stable=False)
        return (packed % n).astype(jnp.int32), (packed // n).astype(key.dtype)
    order = jnp.argsort(key, stable=True)
    return order, key[order]


class Field:
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
        return isinstance(other, Field) and self._key() == other._key()

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



def _padded_shape(field: Field, kernel: str) -> tuple[int, ...]:
    lo, hi = KERNELS[kernel]
    return tuple(b + (lo + hi if g else 0) for b, g in zip(field.block, field.layout))


def _cell(field: Field, kernel: str, shape: tuple[int, ...]) -> Cell:
    """The cell map of :func:`xfft._kernels.corner` into this device's padded block (inside ``shard_map``):
    indices clipped into the block (particles another device owns get in-range indices and zero weights)."""
    below, lo = KERNELS[kernel][0], field.origin()

    def cell(ax: int, base: jax.Array, o: jax.Array) -> jax.Array:
        if field.layout[ax]:
            return jnp.clip(jnp.mod(base, field.shape[ax]) - lo[ax] + below + o, 0, shape[ax] - 1)
        return jnp.mod(base + o, shape[ax])

    return cell


def _route(pos: jax.Array, field: Field, kernel: str, cap: int) -> _Route:
    base = jnp.stack([weights_1d(pos[:, i], kernel)[0] for i in range(pos.shape[-1])], -1)
    return _Route(base, field, cap)


def paint_body(pos, w, field: Field, kernel: str, cap: int):
    """One device's paint: its block of the field and the most particles it sends to one device."""
    d = pos.shape[-1]
    pos, w = pos.reshape(-1, d), w.reshape(-1)
    shape = _padded_shape(field, kernel)
    cell = _cell(field, kernel, shape)
    out = jnp.zeros(math.prod(shape), w.dtype)
    if field.names:
        route = _route(pos, field, kernel, cap)
        # positions and weights in two all-to-alls: on CPU each holds its send buffer, its split and its receive
        # buffer at once, and one buffer of both would hold 4/3 of the positions' three
        rpos, rw = route.send(pos, field.names), route.send(w, field.names)
        out = paint_corners(out, pos, jnp.where(route.local, w, 0), kernel, shape, cell)

        def paint_rows(acc, b):
            return paint_corners(acc, route.rows_of(rpos, b), route.rows_of(rw, b), kernel, shape, cell)

        out = route.in_blocks(paint_rows, out)
        need = route.filled
    else:
        out = paint_corners(out, pos, w, kernel, shape, cell)
        need = jnp.zeros((), jnp.int32)
    return reduce_blocks(out.reshape(shape), field.halos(kernel), True), need


def readout_body(f, pos, field: Field, kernel: str, cap: int):
    """One device's readout (a trailing component axis of ``f`` kept last): the values at its particles and the
    most particles it sends to one device."""
    d = pos.shape[-1]
    lead = pos.shape[:-1]
    pos = pos.reshape(-1, d)
    shape = _padded_shape(field, kernel)
    fp = pad_blocks(f, field.halos(kernel), True)
    fp = fp.reshape((math.prod(shape),) + fp.shape[d:])
    cell = _cell(field, kernel, shape)

    def read(q):
        return read_corners(fp, q, kernel, shape, cell)

    if not field.names:
        vals = read(pos)
        return vals.reshape(lead + vals.shape[1:]), jnp.zeros((), jnp.int32)
    route = _route(pos, field, kernel, cap)
    got = route.send(pos, field.names, after=fp)
    moved = route.back(route.read_blocks(read, got, fp), field.names)
    # the particles this device owns read here, into the values the others brought back (zeros in their rows)
    vals = read_corners(fp, pos, kernel, shape, cell, into=moved, where=route.local)
    return vals.reshape(lead + vals.shape[1:]), route.filled


def need_error(name: str, need: int, cap: int) -> ValueError:
    return ValueError(
        f"{name}: the particle exchange buffer overflowed: one device had {need} particles to send to one other "
        f"device, but capacity={cap} slots per device pair; pass capacity={need} or more (each device then holds "
        "capacity x devices particle slots), or keep particles nearer their owning block"
    )


def raise_if_over(need, *, name: str, cap: int) -> None:
    if int(need) > cap:
        raise need_error(name, int(need), cap)


def guard(out: jax.Array, need: jax.Array, limit: int, check, traced: bool) -> tuple[jax.Array, jax.Array]:
    """Inside ``shard_map``, after the last exchange: NaN where ``need > limit`` (a full exchange buffer, particles
    outside their halo), and under ``jit`` a host callback that records the error ``check(need)`` raises for
    :func:`xfft.check_errors` (it never raises on the device: see :mod:`xfft._errors`). The barrier orders the check
    after every exchange of the block's result."""
    need, out = jax.lax.optimization_barrier((need, out))
    if traced:
        jax.debug.callback(recording(check), need)
    return jnp.where(need > limit, jnp.asarray(jnp.nan, out.dtype), out), need


def checked(run, args: tuple, check) -> jax.Array:
    """Run the program ``run(traced)`` on ``args``; a concrete result's ``need`` is checked here by ``check``
    (``ValueError``)."""
    traced = any(isinstance(a, jax.core.Tracer) for a in args)
    out, need = run(traced)(*args)
    if not traced:
        check(need)
    return out


def paint_map(body, field, layout: Layout, weighted: bool):
    """The jitted ``shard_map`` of a paint ``body(positions, weights) -> (block, need)`` (jitted: eager calls compile
    once and run as one program)."""
    specs = (layout_to_spec(layout), layout_to_spec(layout[:-1]) if weighted else P())
    return jax.jit(jax.shard_map(body, mesh=field.mesh, in_specs=specs,
                                 out_specs=(layout_to_spec(field.layout), P()), check_vma=False))


def readout_map(body, field, layout: Layout, components: bool):
    """The jitted ``shard_map`` of a readout ``body(field, positions) -> (values, need)`` (``components``: the field
    has a trailing component axis)."""
    c = ((),) if components else ()
    return jax.jit(jax.shard_map(body, mesh=field.mesh, in_specs=(layout_to_spec(field.layout + c),
                                                                  layout_to_spec(layout)),
                                 out_specs=(layout_to_spec(layout[:-1] + c), P()), check_vma=False))


@lru_cache(maxsize=64)
def paint_program(field: Field, layout: Layout, weighted: bool, kernel: str, cap: int, dtype, traced: bool):
    """The paint program through the particle exchange (:func:`paint_body`)."""
    check = partial(raise_if_over, name="paint", cap=cap)

    def body(q, v):
        out, need = paint_body(q, jnp.broadcast_to(v.astype(dtype), q.shape[:-1]), field, kernel, cap)
        return guard(out, need, cap, check, traced)

    return paint_map(body, field, layout, weighted)


@lru_cache(maxsize=64)
def readout_program(field: Field, layout: Layout, kernel: str, cap: int, components: bool, traced: bool):
    """The readout program through the particle exchange (:func:`readout_body`)."""
    check = partial(raise_if_over, name="readout", cap=cap)

    def body(g, q):
        return guard(*readout_body(g, q, field, kernel, cap), cap, check, traced)

    return readout_map(body, field, layout, components)
