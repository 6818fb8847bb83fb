"""Particles on sharded meshes: :func:`paint` (mass assignment) and :func:`readout` (interpolation), exact adjoints.

Design (migration with fixed-capacity buffers). A particle may be anywhere in the periodic box, whichever device
holds it. Inside one ``shard_map`` each device finds the block that owns each of its particles (the block holding
the kernel's base cell), keeps the ones it owns, and sends every other one to its owner through all-to-alls of
fixed-size buffers (positions, weights): ``capacity`` slots for each (sender, receiver) pair, each sender's
particles in the first slots of its chunk. The owner paints all its particles into its block padded by the
kernel's reach (one cell for CIC and TSC), the received ones a block of rows at a time up to the fullest chunk
(the rest of a buffer sized for the worst case is skipped), and one :func:`xfft.halo_reduce` (collective
permutes) adds the halos into the neighbours. :func:`readout` is the same program transposed: a
:func:`xfft.halo_pad`, the owners interpolate, and a second all-to-all returns the values to the particles'
slots. Particles never change slot in the caller's arrays, so ``paint`` and ``readout`` are linear maps, adjoint
to each other, and differentiable in the positions and weights.

The one limit is ``capacity``. When one device would send more particles to one other device than the buffer
holds, nothing is dropped silently: the result is NaN everywhere, and the call raises ``ValueError`` naming the
number of slots needed (outside ``jit``; under ``jit`` :func:`xfft.check_errors` raises it after the program, and
it is logged: a device never raises inside a multi-device program, see :mod:`xfft._errors`).

This lives in a module of its own, not in :mod:`xfft._halo`: particles bring their own data layout (a flat, or
any leading-axis, particle array sharded independently of the mesh), routing and kernels; the halo exchange is
one of the primitives it uses; the kernels are in :mod:`xfft._kernels`, the programs in
:mod:`xfft._particles_program`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding

from . import _particles_halo as _through_halos
from ._kernels import KERNELS
from ._layout import Layout, canonical_layout, check_even, group_size, layout_to_spec, spec_to_layout
from ._particles_program import Field, checked, paint_body, paint_program, raise_if_over, readout_body, readout_program
from ._partition import Placement, _constrain, one_device_block, placement


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
    the device owning its cells (all-to-alls with ``capacity`` slots per device pair), painted there, and the
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
        under ``jit`` the result is NaN, the message is logged once, and :func:`xfft.check_errors` raises it
        after the program.
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
        field = Field(None, shape, ((),) * len(shape), "paint")
        if halo is not None:  # (checked; one device has no halo)
            _through_halos.halo_widths(halo, field, "paint")
        pos = one_device_block(pos)
        out, _ = paint_body(pos, jnp.broadcast_to(one_device_block(w).astype(dtype), pos.shape[:-1]), field, kernel, 1)
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
    field = Field(pl.mesh, shape, flayout, "paint")
    if w.ndim:
        wp = placement(w)
        w = _constrain(w, Placement(pl.mesh, None if wp is None else wp.layout, pl.explicit), layout[:-1])
    if halo is not None:
        widths = _through_halos.halo_widths(halo, field, "paint")
        program = partial(_through_halos.paint_program, field, layout, bool(w.ndim), kernel, widths, dtype)
        return checked(program, (pos.astype(dtype), w),
                       partial(_through_halos.raise_if_outside, name="paint", widths=widths))
    cap = _capacity(capacity, pos, layout, field.sizes, field.p, "paint")

    program = partial(paint_program, field, layout, bool(w.ndim), kernel, cap, dtype)
    return checked(program, (pos.astype(dtype), w), partial(raise_if_over, name="paint", cap=cap))


def readout(field: jax.Array, positions: jax.Array, *, kernel: str = "cic", capacity: int | None = None,
            halo: int | Sequence[int] | None = None) -> jax.Array:
    """Interpolate a periodic sharded mesh at particle positions with the kernels of :func:`paint` (its adjoint).

    ``sum(paint(x, shape, w) * f) == sum(w * readout(f, x))`` to round-off, for the same kernel.

    Args:
      field: the mesh values ``(*shape)``, sharded over every mesh axis larger than 1 (or on one device); or
        ``(*shape, C)``: ``C`` fields read at once (e.g. the components of a force), the trailing component axis
        unsharded. One call reads all of them sharing the kernel's cells and weights (and, without ``halo``, one
        exchange of the particles): less memory and time than ``C`` calls, with the same values.
      positions: ``(..., D)`` coordinates in grid units (``D = len(shape)``), sharded over every mesh axis of
        the field's mesh (see :func:`paint`).
      kernel: ``"ngp"``, ``"cic"`` (default) or ``"tsc"``.
      capacity, halo: as for :func:`paint` (with ``halo``, each device reads the field at the particles it holds
        from its block padded by ``halo`` cells; no particle moves).

    Returns:
      The interpolated values, of ``positions.shape[:-1]`` (``positions.shape[:-1] + (C,)`` for a field with a
      component axis), sharded like the positions' leading axes.

    Raises:
      TypeError: non-array or non-floating positions, or a non-array field.
      ValueError: as :func:`paint` (a full exchange buffer, or a particle outside the halo, included); a field
        whose component axis is sharded.
    """
    kernel = _kernel(kernel, "readout")
    if halo is not None and capacity is not None:
        raise ValueError("readout: capacity and halo exclude each other (halo: no particle is sent anywhere)")
    if not isinstance(field, (jax.Array, np.ndarray)):
        raise TypeError(f"readout: field must be a jax.Array or numpy.ndarray, got {type(field).__name__}")
    f = jnp.asarray(field)
    if isinstance(positions, (jax.Array, np.ndarray)) and 2 <= f.ndim == positions.shape[-1] + 1:
        d = f.ndim - 1  # a trailing component axis
    else:
        d = f.ndim
    pos, pl, layout = _particles(positions, d, "readout")
    comp = d < f.ndim
    fpl = placement(f)
    if pl is None or fpl is None:
        if (pl is None) != (fpl is None):
            raise ValueError("readout: field and positions must both be sharded over one mesh, or both on one device")
        one = Field(None, f.shape[:d], ((),) * d, "readout")
        if halo is not None:  # (checked; one device has no halo)
            _through_halos.halo_widths(halo, one, "readout")
        f, pos = one_device_block(f), one_device_block(pos)
        out, _ = readout_body(f, pos.astype(f.dtype), one, kernel, 1)
        return out
    if fpl.mesh_sizes != pl.mesh_sizes:
        raise ValueError(f"readout: field and positions must be on one mesh, got {fpl.mesh_sizes} and {pl.mesh_sizes}")
    flayout = fpl.layout if fpl.layout is not None else canonical_layout(tuple(f.shape[:d]), tuple(range(d)),
                                                                          fpl.mesh_sizes)
    if comp and len(flayout) > d and any(dict(fpl.mesh_sizes)[a] > 1 for a in flayout[d]):
        raise ValueError(f"readout: the field's component axis (its last) must not be sharded, got "
                         f"{layout_to_spec(flayout)}")
    fd = Field(pl.mesh, tuple(f.shape[:d]), tuple(flayout[:d]), "readout")
    if halo is not None:
        widths = _through_halos.halo_widths(halo, fd, "readout")
        program = partial(_through_halos.readout_program, fd, layout, kernel, widths, comp)
        return checked(program, (f, pos.astype(f.dtype)),
                       partial(_through_halos.raise_if_outside, name="readout", widths=widths))
    cap = _capacity(capacity, pos, layout, fd.sizes, fd.p, "readout")
    return checked(partial(readout_program, fd, layout, kernel, cap, comp), (f, pos.astype(f.dtype)),
                   partial(raise_if_over, name="readout", cap=cap))
