"""Meshes, layouts users can see, sharded coordinate grids and wavenumbers on the spectral layout."""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding

from ._layout import NO_NYQUIST, canonical_layout, half_length, layout_to_spec, spec_to_layout
from ._lower import Program, lower_plan
from ._order import check_order
from ._plan import plan_forward
from ._warn import check_x64

SLAB_AXES = ("x",)
PENCIL_AXES = ("x", "y")


def _pencil_shape(n: int) -> tuple[int, int]:
    a = int(math.isqrt(n))
    while n % a:
        a -= 1
    return a, n // a


def make_mesh(decomposition: str | Sequence[int] = "slab", devices: Sequence | None = None,
              axis_types: str = "explicit") -> Mesh:
    """Build a device mesh for a slab or pencil decomposition.

    Args:
      decomposition: ``"slab"`` (1 mesh axis ``"x"`` over all devices), ``"pencil"`` (2 axes ``("x", "y")``,
        as square as the device count allows, e.g. 2 x 4 for 8), or an explicit mesh shape such as ``(2, 4)``
        (axis names ``"x"``, ``"y"``, ``"z"``).
      devices: devices to use (default ``jax.devices()``, all processes).
      axis_types: ``"explicit"`` (default, like ``jax.make_mesh``) or ``"auto"``.

    Returns:
      A ``jax.sharding.Mesh``.

    Raises:
      ValueError: unknown decomposition or axis type, or a shape whose product is not the device count.
    """
    devs = list(jax.devices() if devices is None else devices)
    if isinstance(decomposition, str):
        if decomposition == "slab":
            shape: tuple[int, ...] = (len(devs),)
        elif decomposition == "pencil":
            shape = _pencil_shape(len(devs))
        else:
            raise ValueError(f"decomposition must be 'slab', 'pencil' or a mesh shape, got {decomposition!r}")
    else:
        try:
            shape = tuple(int(v) for v in decomposition)
        except TypeError:
            raise TypeError(
                f"decomposition must be 'slab', 'pencil' or a tuple of ints, got {decomposition!r}"
            ) from None
        if not 1 <= len(shape) <= 3 or any(v < 1 for v in shape):
            raise ValueError(f"mesh shape must have 1 to 3 positive entries, got {shape}")
    if math.prod(shape) != len(devs):
        raise ValueError(f"mesh shape {shape} needs {math.prod(shape)} devices, but {len(devs)} were given")
    kinds = {"explicit": AxisType.Explicit, "auto": AxisType.Auto}
    if axis_types not in kinds:
        raise ValueError(f"axis_types must be 'explicit' or 'auto', got {axis_types!r}")
    names = ("x", "y", "z")[: len(shape)]
    return jax.make_mesh(shape, names, axis_types=(kinds[axis_types],) * len(shape), devices=devs)


def _mesh_sizes(mesh) -> tuple[tuple[str, int], ...]:
    return tuple(zip(mesh.axis_names, mesh.axis_sizes))


def real_sharding(mesh: Mesh, shape: Sequence[int] | None = None, ndim: int = 3) -> NamedSharding:
    """The canonical real-space sharding of a grid on ``mesh``: mesh axes split the leading grid axes.

    Slab: ``P('x', None, None)``; pencil: ``P('x', 'y', None)``. With ``shape`` given (grid axes only, or with
    leading batch axes) the divisibility is checked and ``ValueError`` explains a mesh too large for the grid.
    """
    full = tuple(shape) if shape is not None else (math.prod(mesh.axis_sizes) * 2,) * ndim
    axes = tuple(range(len(full) - ndim, len(full)))
    return NamedSharding(mesh, layout_to_spec(canonical_layout(full, axes, _mesh_sizes(mesh))))


def _spectral_program(real_sharding: NamedSharding, shape: Sequence[int] | None, real: bool, ndim: int,
                      order: str) -> Program:
    """The lowered forward program for input sharded as ``real_sharding`` (validated arguments)."""
    if not isinstance(real_sharding, NamedSharding):
        raise TypeError(f"real_sharding must be a jax.sharding.NamedSharding, got {type(real_sharding).__name__}")
    order = check_order(order)
    mesh = real_sharding.mesh
    nd = len(tuple(real_sharding.spec)) if shape is None else len(tuple(shape))
    nd = max(nd, ndim)
    full = tuple(shape) if shape is not None else (math.prod(mesh.axis_sizes) * 2,) * nd
    axes = tuple(range(nd - ndim, nd))
    layout = spec_to_layout(real_sharding.spec, nd)
    if real == NO_NYQUIST and full[axes[-1]] % 2:
        raise ValueError(f"drop_nyquist=True needs an even length on the half axis, got shape {full}")
    plan = plan_forward(full, layout, axes, _mesh_sizes(mesh), real)
    return lower_plan(plan, None, order == "natural")


def _real_kind(real: bool, drop_nyquist: bool, name: str) -> bool | str:
    """The planners' ``real`` for the public ``real``/``drop_nyquist`` pair."""
    if not isinstance(drop_nyquist, (bool, np.bool_)):
        raise TypeError(f"{name}: drop_nyquist must be True or False, got {drop_nyquist!r}")
    if drop_nyquist and not real:
        raise ValueError(f"{name}: drop_nyquist=True needs real=True (a half spectrum)")
    return NO_NYQUIST if drop_nyquist else bool(real)


def spectral_sharding(real_sharding: NamedSharding, shape: Sequence[int] | None = None, *, real: bool = False,
                      ndim: int = 3, order: str = "natural", drop_nyquist: bool = False) -> NamedSharding:
    """The sharding of the spectrum that the forward transform returns for input sharded as ``real_sharding``.

    Args:
      real_sharding: a ``NamedSharding`` of the real-space array.
      shape: the real-space global shape; it decides where padding would be needed (non-divisible grids).
        Default: a grid that every mesh axis divides.
      real: True for :func:`xrfftn`/:func:`xrfft3d` (half spectrum on the last axis).
      ndim: number of trailing transformed axes.
      order: ``"natural"`` or ``"transposed"``, as the transform's ``order`` (the sharding of the permuted
        spectrum; see :func:`spectral_axes`).
      drop_nyquist: as :func:`xrfftn`'s (with ``real=True``): the half axis without its Nyquist coefficient.

    Raises:
      TypeError: ``real_sharding`` is not a ``NamedSharding``.
      ValueError: the layout cannot be transformed (see :func:`xfftn`), or a bad ``order``.
    """
    real = _real_kind(real, drop_nyquist, "spectral_sharding")
    program = _spectral_program(real_sharding, shape, real, ndim, order)
    return NamedSharding(real_sharding.mesh, layout_to_spec(program.out_layout))


def _sharding_first(sharding: object, shape: object, name: str) -> tuple[object, object]:
    """``(sharding, shape)``; the order ``name(shape, sharding)`` (removed) is refused naming the right one.

    Raises:
      TypeError: the shape comes first.
    """
    if not isinstance(sharding, NamedSharding) and isinstance(shape, NamedSharding):
        raise TypeError(f"{name} takes (sharding, shape), the order of spectral_sharding and real_sharding; got "
                        "the shape first")
    return sharding, shape


def spectral_axes(sharding: NamedSharding, shape: Sequence[int], *, real: bool = False, ndim: int = 3,
                  order: str = "natural", drop_nyquist: bool = False) -> tuple[int, ...]:
    """Which original array axis each axis of the spectrum is, for a forward transform in ``order``.

    ``spectral_axes(...)[i] == d`` means axis ``i`` of the spectrum is real-space axis ``d`` (wavenumber along
    ``d``). Natural order gives ``(0, 1, ..., len(shape) - 1)``; to bring a ``"transposed"`` spectrum ``k`` back
    to natural order use ``jnp.transpose(k, numpy.argsort(perm))`` (or simply ``order="natural"``). It holds for
    every transform kind (FFT, real FFT, DCT/DST) over the same axes.

    Args:
      sharding: the real-space ``NamedSharding`` of the field you will transform.
      shape: real-space global shape (leading batch axes included).
      real, ndim, order, drop_nyquist: as :func:`spectral_sharding`.

    Returns:
      A permutation of ``range(len(shape))``.

    Raises:
      TypeError/ValueError: as :func:`spectral_sharding`.
    """
    sharding, shape = _sharding_first(sharding, shape, "spectral_axes")
    try:
        shape = tuple(int(n) for n in shape)  # type: ignore[union-attr]
    except TypeError:
        raise TypeError(f"shape must be a sequence of ints, got {shape!r}") from None
    if not isinstance(ndim, int) or not 1 <= ndim <= len(shape):
        raise ValueError(f"ndim must be between 1 and len(shape)={len(shape)}, got {ndim!r}")
    real = _real_kind(real, drop_nyquist, "spectral_axes")
    return _spectral_program(_check_sharding(sharding, "sharding"), shape, real, ndim, order).out_perm


def _check_sharding(sharding, name: str) -> NamedSharding:
    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"{name} must be a jax.sharding.NamedSharding, got {type(sharding).__name__}")
    return sharding


def xmeshgrid(*coords, sharding: NamedSharding, indexing: str = "ij") -> tuple[jax.Array, ...]:
    """Sharded ``numpy.meshgrid``: each device builds only its block of each coordinate array.

    Args:
      *coords: 1D coordinate arrays (numpy, JAX or lists), one per grid axis.
      sharding: ``NamedSharding`` for the outputs, e.g. ``real_sharding(mesh)``.
      indexing: only ``"ij"`` (matrix indexing, the layout the transforms use).

    Returns:
      A tuple of arrays of shape ``(len(c0), len(c1), ...)`` with ``sharding``; no device ever holds the
      global grid.

    Raises:
      TypeError/ValueError: non-1D coordinates, a bad sharding or one that does not divide the grid.
    """
    sharding = _check_sharding(sharding, "sharding")
    if indexing != "ij":
        raise ValueError(f"indexing must be 'ij' (the layout the transforms use), got {indexing!r}")
    if not coords:
        raise ValueError("xmeshgrid needs at least one coordinate array")
    cs = []
    for i, c in enumerate(coords):
        c = jnp.asarray(c)
        if c.ndim != 1:
            raise ValueError(f"coords[{i}] must be 1D, got shape {tuple(c.shape)}")
        cs.append(c)
    shape = tuple(c.shape[0] for c in cs)
    spec = tuple(sharding.spec)
    if len(spec) > len(shape):
        raise ValueError(f"sharding {sharding.spec} has more entries than the grid has axes ({len(shape)})")
    _check_divisible(shape, sharding)
    dtype = jnp.result_type(*cs)

    def build():
        return tuple(_broadcast(c.astype(dtype).reshape([-1 if j == i else 1 for j in range(len(cs))]), shape,
                                sharding) for i, c in enumerate(cs))

    # Evaluated straight into ``sharding``: each device computes only its own block.
    return jax.jit(build, out_shardings=tuple(sharding for _ in cs))()


def _broadcast(x: jax.Array, shape: tuple[int, ...], sharding: NamedSharding) -> jax.Array:
    """``broadcast_to(x, shape)`` laid out as ``sharding``, each device computing only its block. On an Explicit
    mesh the sharding is part of the result's type (``out_sharding``): a ``jit``'s ``out_shardings`` alone leaves
    it typed replicated inside a caller's ``jit``, where XLA then all-gathers the global array (``xmeshgrid``
    of 64^3 inside ``jit`` would take 8x the per-device bytes and an all-gather)."""
    if all(t == AxisType.Explicit for t in sharding.mesh.axis_types):
        return jnp.broadcast_to(x, shape, out_sharding=sharding)
    return jax.lax.with_sharding_constraint(jnp.broadcast_to(x, shape), sharding)


def _check_divisible(shape: tuple[int, ...], sharding: NamedSharding) -> None:
    sizes = dict(_mesh_sizes(sharding.mesh))
    for ax, g in enumerate(spec_to_layout(sharding.spec, len(shape))):
        p = math.prod(sizes[a] for a in g)
        if shape[ax] % p:
            raise ValueError(
                f"grid axis {ax} of size {shape[ax]} cannot be split evenly over mesh axes {g} ({p} devices)"
            )


def wavenumbers(sharding: NamedSharding, shape: Sequence[int], *, real: bool = False,
                box_length: float | Sequence[float] = 2 * np.pi, dtype=None,
                sparse: bool = True, order: str = "natural", drop_nyquist: bool = False) -> tuple[jax.Array, ...]:
    """Angular wavenumbers laid out exactly like the spectrum of the forward transform.

    ``k[d][..., i, ...] = 2 pi / L_d * fftfreq(n_d, 1 / n_d)[i]`` (``rfftfreq`` on the last axis if ``real``), so
    ``1j * kx * xfft3d(u)`` is the spectrum of ``du/dx`` with no resharding. Example:
    ``kx, ky, kz = wavenumbers(real_sharding(mesh, (n, n, n)), (n, n, n), real=True)``.

    Args:
      sharding: the real-space ``NamedSharding`` of the field you will transform.
      shape: real-space grid shape (1 to 3 axes; no batch axes).
      real: True to match :func:`xrfftn` (last axis ``n // 2 + 1`` long).
      box_length: domain length ``L`` (one value or one per axis). Default ``2 pi`` (integer wavenumbers).
      dtype: real dtype (default: JAX's default float).
      sparse: True (default) returns broadcastable arrays (shape 1 except along their own axis), each sharded
        like the spectrum along that axis; False returns full grids sharded like the spectrum.
      order: ``"natural"`` or ``"transposed"``: match a spectrum returned in that order. The tuple is still
        ``(kx, ky, kz)`` (one per real-space axis); in ``"transposed"`` order each array lies along the spectrum
        axis that holds its wavenumber (see :func:`spectral_axes`), so it broadcasts against the permuted
        spectrum.
      drop_nyquist: with ``real=True``, match ``xrfftn(..., drop_nyquist=True)`` (last axis ``n // 2`` long).

    Returns:
      A tuple with one array per real-space axis.

    Raises:
      TypeError/ValueError: bad shape, sharding, box length or dtype.
    """
    sharding, shape = _sharding_first(sharding, shape, "wavenumbers")
    sharding = _check_sharding(sharding, "sharding")
    real = _real_kind(real, drop_nyquist, "wavenumbers")
    try:
        shape = tuple(int(n) for n in shape)  # type: ignore[union-attr]
    except TypeError:
        raise TypeError(f"shape must be a sequence of ints, got {shape!r}") from None
    if len(shape) not in (1, 2, 3) or any(n < 1 for n in shape):
        raise ValueError(f"shape must have 1 to 3 positive entries, got {shape}")
    lengths = (box_length,) * len(shape) if np.ndim(box_length) == 0 else tuple(box_length)
    if len(lengths) != len(shape) or any(not float(L) > 0 for L in lengths):
        raise ValueError(f"box_length must be positive, one value or one per axis; got {box_length!r}")
    if dtype is not None:
        check_x64(dtype, "wavenumbers(dtype=...)")
    dtype = jnp.dtype(dtype) if dtype is not None else jnp.zeros((), float).dtype
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"dtype must be a real floating dtype, got {dtype}")
    program = _spectral_program(sharding, shape, real, len(shape), order)
    spec_sharding = NamedSharding(sharding.mesh, layout_to_spec(program.out_layout))
    layout = program.out_layout
    perm = program.out_perm
    full = [shape[p] for p in perm]
    if real:
        full[perm.index(len(shape) - 1)] = half_length(shape[-1], real)
    out = []
    for d, (n, L) in enumerate(zip(shape, lengths)):
        freq = np.fft.rfftfreq(n, 1.0 / n)[:half_length(n, real)] if (real and d == len(shape) - 1) \
            else np.fft.fftfreq(n, 1.0 / n)
        k = (2 * np.pi / float(L)) * freq
        i = perm.index(d)  # the spectrum axis holding wavenumber d
        if sparse:
            bshape = [1] * len(shape)
            bshape[i] = k.size
            s = NamedSharding(sharding.mesh, layout_to_spec(tuple(g if j == i else () for j, g in enumerate(layout))))
            out.append(jax.device_put(k.astype(dtype).reshape(bshape), s))
        else:
            kk = jnp.asarray(k, dtype)
            out.append(jax.jit(lambda kk=kk, i=i, full=tuple(full): _broadcast(
                kk.reshape([-1 if j == i else 1 for j in range(len(full))]), full, spec_sharding),
                out_shardings=spec_sharding)())
    return tuple(out)
