"""jaxDecomp 0.3's API on xfft: ``import xfft.compat.jaxdecomp as jaxdecomp`` in place of ``import jaxdecomp``.

:func:`pfft3d`, :func:`pifft3d`, :func:`fftfreq3d`, :func:`rfftfreq3d`, :func:`halo_exchange` and
:func:`get_fft_output_sharding` take jaxDecomp's arguments and return its values, shapes and shardings, so code
written for jaxDecomp (JaxPM's ``jaxpm/distributed.py``, say) runs on xfft's transforms and halo exchange, on every
backend, on Explicit and Auto meshes, under ``jit``, ``grad`` and ``vmap``. Nothing of jaxDecomp is imported.

Layouts (jaxDecomp's, with its default ``transpose_axis_contiguous=True``): :func:`pfft3d` of an ``(X, Y, Z)``
array returns the spectrum transposed, ``(Y, Z, X)`` (``out[j, k, i]`` is wavenumber ``(kx[i], ky[j], kz[k])``);
on a mesh ``(a, b)`` with both sizes above 1 (pencils) the spectrum is sharded ``P(a, b)``; on ``(p, 1)`` (slab)
``P(None, a)``; on ``(1, p)`` ``P(None, b)``. A one-axis mesh ``(p,)``, on which jaxDecomp 0.3.1 fails, is taken as
``(p, 1)``. Each is one xfft transform (one all-to-all per slab, two per pencil) between local transposes: no
other data moves. :func:`pifft3d` inverts it (complex result, as jaxDecomp's).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .._fft import ixfftn, xfftn
from .._halo import AxisHalo, fill_blocks
from .._layout import layout_to_spec, spec_to_layout
from .._partition import placement

__all__ = ["fftfreq3d", "get_fft_output_sharding", "halo_exchange", "pfft3d", "pifft3d", "rfftfreq3d"]


def _kind(mesh) -> str:
    """jaxDecomp's decomposition of a mesh: ``"pencils"``, ``"slab_xy"`` (``(p, 1)``), ``"slab_yz"`` or ``"none"``."""
    if mesh is None:
        return "none"
    shape = tuple(mesh.axis_sizes)[-2:]
    a, b = (shape[0], 1) if len(shape) == 1 else shape
    if a > 1 and b > 1:
        return "pencils"
    return "slab_xy" if a > 1 else ("slab_yz" if b > 1 else "none")


def _check(a: object, norm: object, backend: object, name: str) -> jax.Array:
    if not isinstance(a, (jax.Array, jnp.ndarray)) and not hasattr(a, "__array__"):
        raise TypeError(f"{name}: a must be an array, got {type(a).__name__}")
    a = jnp.asarray(a)
    if a.ndim != 3:
        raise ValueError(f"{name}: a must be 3-dimensional (X, Y, Z), got shape {tuple(a.shape)}")
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f'{name}: invalid norm value {norm!r}; should be "backward", "ortho" or "forward"')
    if not isinstance(backend, str) or backend.lower() not in ("jax", "cudecomp"):
        raise ValueError(f"{name}: unknown backend value {backend!r} (jaxDecomp's 'JAX' or 'cudecomp'; both run "
                         "xfft's transform here)")
    return a.astype(jnp.result_type(a.dtype, jnp.complex64))


def pfft3d(a: jax.Array, norm: str | None = "backward", backend: str = "JAX") -> jax.Array:
    """3D FFT of a sharded ``(X, Y, Z)`` array, returned transposed ``(Y, Z, X)`` as ``jaxdecomp.pfft3d`` does.

    Args:
      a: 3D array (real or complex), sharded ``P(a, b)`` over a 2D mesh as jaxDecomp expects (or one-axis
        ``P(a)``, or on one device).
      norm: ``"backward"`` (default), ``"ortho"`` or ``"forward"``.
      backend: jaxDecomp's transport name, ``"JAX"`` or ``"cudecomp"`` (case-insensitive); both run xfft.

    Returns:
      The complex spectrum, shape ``(Y, Z, X)``, sharded as in the module docstring.

    Raises:
      ValueError: a not 3D, bad ``norm`` or ``backend``.
      TypeError: a is not an array.
    """
    x = _check(a, norm, backend, "pfft3d")
    pl = placement(x)
    kind = _kind(None if pl is None else pl.mesh)
    if kind == "slab_xy":
        return jnp.transpose(xfftn(jnp.transpose(x, (0, 2, 1)), norm=norm), (2, 1, 0))
    if kind == "slab_yz":
        return xfftn(jnp.transpose(x, (1, 2, 0)), norm=norm)
    return jnp.transpose(xfftn(x, norm=norm), (1, 2, 0))


def pifft3d(a: jax.Array, norm: str | None = "backward", backend: str = "JAX") -> jax.Array:
    """Inverse of :func:`pfft3d`: a ``(Y, Z, X)`` spectrum back to the complex ``(X, Y, Z)`` array.

    Args:
      a: the spectrum as :func:`pfft3d` returns it (shape and sharding).
      norm: as for :func:`pfft3d`.
      backend: as for :func:`pfft3d`.

    Returns:
      The complex array ``(X, Y, Z)``, sharded as the input of :func:`pfft3d` was (take ``.real`` for a field).

    Raises:
      ValueError: a not 3D, bad ``norm`` or ``backend``.
      TypeError: a is not an array.
    """
    k = _check(a, norm, backend, "pifft3d")
    pl = placement(k)
    kind = _kind(None if pl is None else pl.mesh)
    if kind == "slab_xy":
        return jnp.transpose(ixfftn(jnp.transpose(k, (2, 1, 0)), norm=norm), (0, 2, 1))
    if kind == "slab_yz":
        return jnp.transpose(ixfftn(k, norm=norm), (2, 0, 1))
    return ixfftn(jnp.transpose(k, (2, 0, 1)), norm=norm)


def _freq_dtype(k: jax.Array, name: str):
    if not jnp.iscomplexobj(k):
        raise TypeError(f"{name}: the input array must be complex (a spectrum), got dtype {k.dtype}")
    return jnp.float32 if k.dtype == jnp.complex64 else jnp.float64


def _freqs(k: jax.Array, d: float, half: bool, name: str) -> tuple[jax.Array, jax.Array, jax.Array]:
    dtype = _freq_dtype(jnp.asarray(k) if not hasattr(k, "dtype") else k, name)
    n0, n1, n2 = k.shape[:3]
    ky = jnp.fft.fftfreq(n0, d=d, dtype=dtype) * 2 * jnp.pi
    kx = (jnp.fft.rfftfreq if half else jnp.fft.fftfreq)(n1, d=d, dtype=dtype) * 2 * jnp.pi
    kz = jnp.fft.fftfreq(n2, d=d, dtype=dtype) * 2 * jnp.pi
    return kz.reshape(1, 1, -1), ky.reshape(-1, 1, 1), kx.reshape(1, -1, 1)


def fftfreq3d(array: jax.Array, d: float = 1.0) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Angular wavenumbers of a :func:`pfft3d` spectrum, as ``jaxdecomp.fftfreq3d`` returns them.

    Args:
      array: the complex spectrum ``(Y, Z, X)``.
      d: sample spacing.

    Returns:
      ``(kx, ky, kz)`` for the spectrum's axes: ``2 pi fftfreq`` of ``shape[2]`` shaped ``(1, 1, -1)``, of
      ``shape[0]`` shaped ``(-1, 1, 1)`` and of ``shape[1]`` shaped ``(1, -1, 1)`` (jaxDecomp's order: the
      physical ``x, y, z`` wavenumbers broadcasting against the transposed spectrum); float32 for complex64,
      else float64; unsharded.

    Raises:
      TypeError: the array is not complex.
    """
    return _freqs(array, d, False, "fftfreq3d")


def rfftfreq3d(array: jax.Array, d: float = 1.0) -> tuple[jax.Array, jax.Array, jax.Array]:
    """As :func:`fftfreq3d` with ``rfftfreq`` on axis 1 of the array, as ``jaxdecomp.rfftfreq3d`` returns them.

    Args:
      array: a complex spectrum.
      d: sample spacing.

    Returns:
      As :func:`fftfreq3d`, the middle entry ``2 pi rfftfreq(shape[1])`` shaped ``(1, -1, 1)``.

    Raises:
      TypeError: the array is not complex.
    """
    return _freqs(array, d, True, "rfftfreq3d")


def halo_exchange(x: jax.Array, halo_extents: Sequence[int], halo_periods: Sequence[bool],
                  backend: str = "jax") -> jax.Array:
    """Fill the halos of an already padded sharded array from its neighbours, as ``jaxdecomp.halo_exchange`` does.

    Each block's outer ``h`` cells along array axis 0 (``halo_extents[0]``) and 1 (``halo_extents[1]``), on the axes
    the mesh splits, are its halos: they are replaced by the neighbouring blocks' edge cells inside their own halos
    (``[h, 2h)`` and ``[L-2h, L-h)`` of a block of ``L``), corners from the diagonal neighbours; at a non-periodic
    end, zeros. The block's other cells are kept. This is :func:`xfft.halo_pad` of the blocks without their halos,
    written over the halos in place (no copy of a block that is donated or an intermediate of a jitted program).

    Args:
      x: 3D (or 4D with a leading unsharded batch axis) array padded block by block, sharded over a 1D or 2D mesh.
      halo_extents: ``(hx, hy)``, halo cells along axes 0 and 1.
      halo_periods: ``(px, py)``, periodicity along axes 0 and 1.
      backend: ``"jax"`` or ``"cudecomp"`` (case-insensitive); both run xfft's collective permutes.

    Returns:
      The array with filled halos, its shape and sharding.

    Raises:
      ValueError: bad ``backend``, shape, or an extent wider than half a block.
    """
    if not isinstance(backend, str) or backend.lower() not in ("jax", "cudecomp"):
        raise ValueError(f"halo_exchange: invalid backend: {backend!r}")
    x = jnp.asarray(x)
    if x.ndim not in (3, 4):
        raise ValueError(f"halo_exchange: unsupported input shape {tuple(x.shape)} (3D, or 4D with a batch axis)")
    lead = x.ndim - 3
    pl = placement(x)
    if pl is None:
        return x
    sizes = dict(pl.mesh_sizes)
    layout = pl.layout if pl.layout is not None else spec_to_layout(P(*((None,) * lead), *pl.mesh.axis_names[-2:]),
                                                                     x.ndim)
    halos = []
    for i in range(2):
        ax, h = lead + i, int(halo_extents[i])
        group = tuple(a for a in layout[ax] if sizes[a] > 1)
        if not group or not h:
            continue
        p = 1
        for a in group:
            p *= sizes[a]
        block = x.shape[ax] // p
        if 2 * h > block:
            raise ValueError(f"halo_exchange: halo extent {h} along axis {ax} needs blocks of at least {2 * h} "
                             f"cells, got {block}")
        halos.append((AxisHalo(ax, h, h, group, p), bool(halo_periods[i])))
    if not halos:
        return x

    def body(b):
        for h, periodic in halos:  # the halos overwritten in place (no copy of a donated or intermediate block)
            b = fill_blocks(b, [h], periodic)
        return b

    spec = layout_to_spec(layout)
    return jax.jit(jax.shard_map(body, mesh=pl.mesh, in_specs=spec, out_specs=spec, check_vma=False))(x)


def get_fft_output_sharding(fft_sharding: NamedSharding) -> NamedSharding:
    """The sharding of :func:`pfft3d`'s result for an input sharded ``fft_sharding`` (jaxDecomp's rule).

    Args:
      fft_sharding: the real-space ``NamedSharding`` (3D spec, or 4D with a leading batch entry).

    Returns:
      The spectrum's ``NamedSharding``: pencils keep the spec, ``(p, 1)`` meshes swap its first two entries,
      ``(1, p)`` meshes reverse it.

    Raises:
      TypeError: not a ``NamedSharding``.
    """
    if not isinstance(fft_sharding, NamedSharding):
        raise TypeError(f"fft_sharding must be a NamedSharding, got {type(fft_sharding).__name__}")
    spec = tuple(fft_sharding.spec)
    batch = ()
    if sum(s is not None for s in spec) >= 3 or (len(spec) == 4 and spec[0] is None):
        batch, spec = spec[:1], spec[1:]
    spec = spec + (None,) * (3 - len(spec))
    kind = _kind(fft_sharding.mesh)
    out = {"slab_xy": (spec[1], spec[0], spec[2]), "slab_yz": (spec[2], spec[1], spec[0])}.get(kind, spec)
    return NamedSharding(fft_sharding.mesh, P(*batch, *out))
