"""The jaxdecomp backend: jaxDecomp's distributed 3D FFT with xfft's inputs, outputs, layouts and values.

Install with ``pip install "xfft[jaxdecomp]"`` (jaxdecomp >= 0.3.1 and ``packaging``, which jaxdecomp needs
but does not declare), then pass ``backend="jaxdecomp"`` to any transform, or use
``xfft.use_backend("jaxdecomp")`` / ``XFFT_BACKEND=jaxdecomp``. Results equal the native backend's: same
values (to rounding), natural axis order (index ``[i, j, k]`` is wavenumber ``(kx[i], ky[j], kz[k])``) and the
same output sharding for the same input sharding (slab ``P('x')`` -> ``P(None, 'x')``, pencil ``P('x', 'y')``
-> ``P(None, 'x', 'y')``), so the backends are interchangeable inside one program. Checked with jaxdecomp
0.3.1 and its pure-JAX transport (``backend='cudecomp'`` does not work with the PyPI wheel).

Engines (``JaxDecompBackend(engine=...)``; the registered ``"jaxdecomp"`` uses ``"auto"``):

- ``"kernel"`` (what ``"auto"`` picks when available): jaxDecomp's per-device program
  (``jaxdecomp._src.jax.fft.per_shard_impl``: its local FFTs and all-to-alls, exactly what its
  ``custom_partitioning`` rule runs) inside ``jax.shard_map`` on the caller's mesh. Works on Explicit and Auto
  meshes, on one-axis meshes (``xfft.make_mesh("slab")``), and under every JAX transformation (``grad``,
  ``jvp``, ``linear_transpose``, ``vmap``, ``jit``) because it is plain JAX. The function is private to
  jaxDecomp, so its signature is checked at import; without it ``"auto"`` uses ``"pfft3d"``.
- ``"pfft3d"``: the public ``jaxdecomp.pfft3d`` / ``pifft3d``. They need a 2D mesh (a one-axis mesh falls back
  to the kernel, or to native without it) and fail on Explicit meshes ("Mismatch in result shapes"), so on
  Explicit meshes the call runs under ``jax.sharding.auto_axes`` with its output sharding stated (nothing
  moves). jaxDecomp's transpose rule fails there too, so gradients go through a ``jax.custom_vjp`` whose
  backward pass is the opposite transform on conjugated data (the DFT matrix is symmetric); ``jax.grad`` and
  ``jax.vjp`` work and equal native's, forward mode (``jax.jvp``) and ``jax.linear_transpose`` do not.

Layout translation. jaxDecomp returns the spectrum transposed, ``(X, Y, Z) -> (Y, Z, X)``. The translation to
natural order permutes axes together with their sharding, so every device transposes its own block and no
data crosses devices (the compiled program has native's all-to-alls and no other collective):

- pencils (mesh ``(a, b)``, both > 1), real ``P(a, b)``: jaxDecomp's output is transposed by ``(2, 0, 1)``;
- slab on ``(p,)`` or ``(p, 1)``, real ``P(a)``: jaxDecomp (SLAB_XY) would leave ``z`` sharded where native
  leaves ``y``; the input's ``y`` and ``z`` are swapped first (XLA cancels that against jaxDecomp's own first
  transpose) and the output is transposed back by ``(2, 1, 0)``;
- slab on ``(1, p)``, real ``P(b)``: fed as ``(Z, X, Y)`` (SLAB_YZ), jaxDecomp's output is already natural.

Size-1 mesh axes may be named in the input's sharding or not (``P('a', 'b', None)`` and ``P('a', None, None)`` on
an ``(8, 1)`` mesh are the same layout); on Explicit meshes the input is renamed to the spec the per-device
program expects (a ``reshard`` that moves nothing).

What remains is one local copy of the spectrum that moves its contiguous axis to the front. Measured with
``benchmarks/fft_backends.py`` (8 virtual CPU devices on a shared 2-core machine, Auto mesh, complex64,
medians of interleaved rounds), translated vs raw ``pfft3d`` time: +6-8 % (pencil) and +25-28 % (slab) at
64^3, +13 % and +32-34 % at 128^3, +21 % and +76 % at 256^3 (one run under heavy load); both engines alike.
Raw ``pfft3d`` takes 0.69-0.93x native ``xfft3d``'s time; translated, 0.92-1.22x (1.02-1.22x at 128^3 and
256^3): natural order costs both, and native's own transposes are the cheaper way to get it.

Normalization is applied by xfft over the transformed axes only (jaxDecomp 0.3.1's own ``norm`` also divides
by the length of a leading batch axis); several leading batch axes are merged into one for the call.

What jaxDecomp lacks (real-to-complex transforms, 1D/2D transforms, axes other than the last three, grids the
mesh does not divide evenly, other shardings, sharded batch axes, meshes with more than two axes, arrays on one
device) runs on the native backend with a :class:`~xfft.backends.BackendFallbackWarning`, once per feature
and backend object. Strict mode raises ``NotImplementedError`` naming the missing feature instead; turn it
on with ``JaxDecompBackend(strict=True)`` (pass the object as ``backend=``, or register it:
``xfft.backends.register_backend("jaxdecomp-strict", JaxDecompBackend(strict=True))``), or for the
registered ``"jaxdecomp"`` backend with the environment variable ``XFFT_STRICT_BACKEND=1`` (read at each call).
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass

import jax
from jax.sharding import NamedSharding

from .._layout import Layout, layout_to_spec
from .._partition import placement
from .._plan import plan_forward
from .._plan_inverse import guess_layout, inverse_plan
from . import BackendFallbackWarning
from ._jaxdecomp_calls import (
    _KINDS,
    INSTALL_HINT,
    _kernel_call,
    _library,
    _natural,
    _perms,
    _pfft3d_transform,
    _Route,
    _spec,
)

ENV_STRICT = "XFFT_STRICT_BACKEND"

@dataclass(frozen=True)
class _Unsupported:
    key: str  # one warning per key
    feature: str


def _strip(layout: Layout, sizes: dict[str, int]) -> Layout:
    return tuple(tuple(a for a in g if sizes[a] > 1) for g in layout)


def _divides(shape: tuple[int, ...], layout: Layout, sizes: dict[str, int]) -> bool:
    return all(n % math.prod(sizes[a] for a in g) == 0 for n, g in zip(shape, layout))


class JaxDecompBackend:
    """jaxDecomp's distributed 3D complex FFT behind xfft's interface (see the module docstring).

    Args:
      strict: True raises ``NotImplementedError`` for what jaxDecomp cannot do; False falls back to native
        with a one-time :class:`~xfft.backends.BackendFallbackWarning` per feature; None (default) reads
        ``$XFFT_STRICT_BACKEND`` (``1``/``true``/``yes``/``on`` mean strict) at each call.
      engine: ``"auto"`` (default: ``"kernel"`` when this jaxdecomp has the kernel, else ``"pfft3d"``),
        ``"kernel"`` or ``"pfft3d"``; see the module docstring.

    Raises:
      ImportError: jaxdecomp is missing or older than 0.3.1 (the message says ``pip install "xfft[jaxdecomp]"``),
        or ``engine="kernel"`` and this jaxdecomp has no usable kernel.
      ValueError: unknown ``engine``.
    """

    name = "jaxdecomp"
    supports_order = False  # order="transposed" runs on native (xfft.backends.fallback)
    kinds = frozenset({"fft", "rfft"})  # real-to-complex falls back inside (see _route); DCT/DST run on native
    drops_nyquist = False  # drop_nyquist=True runs on the native backend
    takes_real_layout = False  # an inverse's out_sharding= runs on the native backend

    def __init__(self, strict: bool | None = None, engine: str = "auto") -> None:
        self._lib = _library()
        if engine not in ("auto", "kernel", "pfft3d"):
            raise ValueError(f"engine must be 'auto', 'kernel' or 'pfft3d', got {engine!r}")
        if engine == "kernel" and self._lib.kernel is None:
            raise ImportError(f"jaxdecomp {self._lib.version} has no per-device kernel that xfft can call; use "
                              f"engine='pfft3d', or install a tested version: {INSTALL_HINT}")
        self.engine = ("kernel" if self._lib.kernel is not None else "pfft3d") if engine == "auto" else engine
        self._strict = strict
        self._warned: set[str] = set()
        from .native import NativeBackend

        self._native = NativeBackend()

    def __repr__(self) -> str:
        return f"JaxDecompBackend(strict={self._strict!r}, engine={self.engine!r})"

    @property
    def strict(self) -> bool:
        if self._strict is not None:
            return bool(self._strict)
        return os.environ.get(ENV_STRICT, "").strip().lower() in ("1", "true", "yes", "on")

    # -- routing -------------------------------------------------------------------------------------------
    def _route(self, arr: jax.Array, axes: tuple[int, ...], real: bool, inverse: bool,
               shape: tuple[int, ...]) -> _Route | _Unsupported | None:
        """How to run this transform on jaxDecomp, what it lacks for it, or None (let native raise)."""
        if real:
            return _Unsupported("r2c", "real-to-complex transforms (xrfftn, xrfft3d and their inverses)")
        if len(axes) != 3:
            return _Unsupported("ndim", f"{len(axes)}D transforms (it has only 3D transforms)")
        nd = arr.ndim
        if tuple(sorted(axes)) != tuple(range(nd - 3, nd)):
            return _Unsupported("axes", f"transform axes {axes} other than the last three of the array")
        if not getattr(self._lib.module.config, "transpose_axis_contiguous", True):
            return _Unsupported("config", "jaxdecomp.config.transpose_axis_contiguous=False")
        pl = placement(arr)
        if pl is None:
            return _Unsupported("single-device", "arrays on a single device (or inside shard_map)")
        mesh = pl.mesh
        names, sizes = tuple(mesh.axis_names), dict(pl.mesh_sizes)
        types = set(mesh.axis_types)
        if len(names) > 2:
            return _Unsupported("mesh", f"meshes with more than two axes ({dict(sizes)})")
        if len(types) > 1:
            return _Unsupported("axis-types", f"meshes with mixed axis types {tuple(mesh.axis_types)}")
        if len(names) == 1:
            if self._lib.kernel is None:
                return _Unsupported("mesh-1d", "meshes with one axis (this jaxdecomp has no slab kernel to call)")
            kind = "slab_1d"
        else:
            kind = ("pencils" if sizes[names[0]] > 1 and sizes[names[1]] > 1
                    else "slab_xy" if sizes[names[0]] > 1 else "slab_yz")
        jd_real_ix, jd_spec_ix, perm_in, perm_out = _KINDS[kind]
        jd_real = tuple(None if i is None else names[i] for i in jd_real_ix)
        jd_spec = tuple(None if i is None else names[i] for i in jd_spec_ix)
        nb = nd - 3
        real_layout = ((),) * nb + _natural(jd_real, perm_in, to_natural=False)
        spec_layout = ((),) * nb + _natural(jd_spec, perm_out, to_natural=True)
        axes = tuple(range(nd - 3, nd))
        msizes = pl.mesh_sizes
        try:
            if inverse:
                native = inverse_plan(shape, pl.layout, axes, msizes, False)
                given = native.in_layout if pl.layout is None else pl.layout
                out_layout = native.out_layout if native.in_layout == given else None
                want_in, want_out = spec_layout, real_layout
            else:
                given = guess_layout(shape, axes, msizes, False) if pl.layout is None else pl.layout
                out_layout = plan_forward(shape, given, axes, msizes, False).out_layout
                want_in, want_out = real_layout, spec_layout
        except ValueError:
            return None  # the native backend raises the explanation
        if not (_divides(shape, real_layout, sizes) and _divides(shape, spec_layout, sizes)):
            return _Unsupported("uneven", f"grids the mesh does not divide evenly (shape {shape[nb:]} on mesh "
                                f"{sizes}: needs {layout_to_spec(real_layout)} and {layout_to_spec(spec_layout)} "
                                "to split evenly)")
        if any(g for g in _strip(given, sizes)[:nb]):
            return _Unsupported("batch", f"sharded batch axes (sharding {layout_to_spec(given)})")
        if _strip(given, sizes) != _strip(want_in, sizes) or out_layout is None or (
                _strip(out_layout, sizes) != _strip(want_out, sizes)):
            return _Unsupported("sharding", f"the sharding {layout_to_spec(given)} on mesh {sizes} (it takes "
                                f"{layout_to_spec(want_in)} {'spectra' if inverse else 'grids'} there)")
        engine = "kernel" if kind == "slab_1d" else self.engine
        return _Route(kind, engine, mesh, pl.explicit, nb, jd_real, jd_spec, out_layout)

    def _unsupported(self, what: _Unsupported) -> None:
        if self.strict:
            raise NotImplementedError(
                f"jaxdecomp backend (strict): jaxdecomp {self._lib.version} does not support {what.feature}. "
                f"Use backend='native', or turn strict mode off ({ENV_STRICT}=0 / JaxDecompBackend(strict=False)) "
                "to fall back to the native backend."
            )
        if what.key not in self._warned:
            self._warned.add(what.key)
            warnings.warn(
                f"jaxdecomp backend: jaxdecomp {self._lib.version} does not support {what.feature}; these "
                "transforms run on the native backend (same values and layouts). Shown once per feature.",
                BackendFallbackWarning, stacklevel=5)

    # -- execution -----------------------------------------------------------------------------------------
    def _run(self, x: jax.Array, route: _Route, norm: str, inverse: bool) -> jax.Array:
        nb = route.nbatch
        lead = tuple(x.shape[:nb])
        if nb > 1:
            x = x.reshape((math.prod(lead),) + tuple(x.shape[nb:]))
        if route.explicit:  # size-1 mesh axes (e.g. P('a', 'b', None) on an (8, 1) mesh): name them as the
            to_jd, _, src, _ = _perms(route, inverse)  # shard_map expects; nothing moves
            want = _spec(_natural(src, to_jd, to_natural=False), 1 if nb else 0)
            if jax.typeof(x).sharding.spec != want:
                x = jax.sharding.reshard(x, NamedSharding(route.mesh, want))
        y = (_kernel_call if route.engine == "kernel" else _pfft3d_transform)(x, route, inverse)
        if nb > 1:
            y = y.reshape(lead + tuple(y.shape[1:]))
        n = math.prod(y.shape[-3:])
        scale = {"backward": 1.0 / n if inverse else 1.0, "ortho": 1.0 / math.sqrt(n),
                 "forward": 1.0 if inverse else 1.0 / n}[norm]
        if scale != 1.0:
            y = y * scale
        out = NamedSharding(route.mesh, layout_to_spec(route.out_layout))
        if route.explicit:
            if jax.typeof(y).sharding.spec != out.spec:
                y = jax.sharding.reshard(y, out)  # differs only in size-1 mesh axes: nothing moves
            return y
        return jax.lax.with_sharding_constraint(y, out)

    def forward(self, x: jax.Array, axes: tuple[int, ...], norm: str, real: bool) -> jax.Array:
        """Forward transform of validated arguments (see :class:`xfft.backends.Backend`)."""
        route = self._route(x, axes, real, False, tuple(x.shape))
        if not isinstance(route, _Route):
            if route is not None:
                self._unsupported(route)
            return self._native.forward(x, axes, norm, real)
        return self._run(x, route, norm, inverse=False)

    def inverse(self, k: jax.Array, axes: tuple[int, ...], norm: str, real: bool,
                real_shape: tuple[int, ...]) -> jax.Array:
        """Inverse transform of validated arguments to ``real_shape`` (see :class:`xfft.backends.Backend`)."""
        route = self._route(k, axes, real, True, tuple(real_shape))
        if not isinstance(route, _Route):
            if route is not None:
                self._unsupported(route)
            return self._native.inverse(k, axes, norm, real, real_shape)
        return self._run(k, route, norm, inverse=True)
