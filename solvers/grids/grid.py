"""Grid: a tensor product of one-dimensional bases on a device mesh, with its shardings, transforms and means.

Every equation works on a grid: the periodic box (:class:`~solvers.SpectralGrid`, Fourier bases), walls with
sine/cosine series, a Chebyshev wall-normal axis, complex fields (Schroedinger). The grid owns what they
share: the real and spectral shardings (from :mod:`xfft`'s planner), coordinates, one planned
transform per field group (all axes in one :func:`xfft.xr2rn`/:func:`xfft.xrfftn` call), dealiasing (2/3
truncation or products on the 3/2-padded grid, every axis), Parseval and quadrature means, derivatives and the
geometry that outputs describe.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

import xfft

from ..bases import DEALIAS, Basis, Fourier, RealFourier
from ..bases import along as along
from ._dealias import Dealiasing
from ._helpers import _layouts
from ._helpers import rmul as rmul
from ._helpers import safe_inverse as safe_inverse
from ._helpers import times_i as times_i
from ._local import LocalOps
from ._natural import NaturalOrder
from ._reduce import Reductions

__all__ = ["DEALIAS", "Grid", "rmul", "safe_inverse", "times_i"]

_FFT_KINDS = ("fft", "rfft")
#: spectral axis orders of a grid: natural, or the order the transforms leave (Fourier grids)
ORDERS = ("natural", "transposed")


class Grid(NaturalOrder, Dealiasing, LocalOps, Reductions):
    """A tensor product of :class:`~solvers.bases.Basis` objects (one per array axis) on a device mesh.

    Fields in physical space are arrays of :attr:`shape` (leading batch axes allowed) on
    :meth:`real_sharding`; their coefficients are arrays of :attr:`spectral_shape` on :meth:`spectral_sharding`,
    the layout :mod:`xfft` leaves after one planned transform of all axes (slab ``P('x', None, None)`` ->
    ``P(None, 'x', None)``). Physical fields are real unless ``complex_fields`` (then every periodic axis must be
    :class:`~solvers.bases.Fourier`). An axis whose coefficients couple (sine index shift, Chebyshev recurrences
    and implicit solves) must be unsharded in spectral space: the wall-normal axis is array axis 0, which the
    planner leaves unsharded. A dealiased 2D grid of real fields leaves out the Nyquist coefficient of its half
    axis (:attr:`nyquist` False, see :meth:`_leaves_out_nyquist`); its natural view (:meth:`to_natural`) has it.

    Args:
      bases: one basis per axis (1 to 3 axes). At most one :class:`~solvers.bases.RealFourier`, on the last axis.
      mesh: a mesh from :func:`xfft.make_mesh` (Explicit or Auto axes), or None for one device.
      dtype: real dtype of physical fields (``float32``, or ``float64`` with JAX's 64-bit mode on).
      dealias: ``"2/3"``, ``"3/2"`` (products on the padded grid) or ``"none"``.
      backend: xfft backend name for the Fourier-only transforms (None: ``xfft.default_backend()``).
      complex_fields: physical fields are complex (a wavefunction), spectra hold every wavenumber.
      axis_names: the coordinate name of each axis in outputs (default ``x, y, z``; walls in axis 0 of a
        convection cell: ``("z", "x", "y")``).
      order: spectral axis order, ``"natural"`` or ``"transposed"`` (Fourier bases only: the order the
        distributed transforms leave, see :func:`xfft.spectral_axes`; :attr:`perm` says which grid axis each
        spectrum axis holds, :meth:`to_natural`/:meth:`from_natural` convert).

    Raises:
      TypeError: a basis that is not a :class:`~solvers.bases.Basis`, a non-floating dtype.
      ValueError: bad dealias rule, float64 without 64-bit mode, a misplaced ``RealFourier``, a mesh that cannot
        hold the grid, a spectral layout that shards an axis whose coefficients couple, or an axis with fewer
        modes than points (``Fourier(kept_modes=...)``) and ``dealias="none"``.
    """

    def __init__(self, bases: Sequence[Basis], mesh: Mesh | None = None, *, dtype=jnp.float32,
                 dealias: str = "2/3", backend: str | None = None, complex_fields: bool = False,
                 axis_names: Sequence[str] | None = None, order: str = "natural"):
        self.bases = tuple(bases)
        if not all(isinstance(b, Basis) for b in self.bases):
            raise TypeError(f"bases must be solvers.bases.Basis instances, got {bases!r}")
        if len(self.bases) not in (1, 2, 3):
            raise ValueError(f"a grid has 1, 2 or 3 axes, got {len(self.bases)} bases")
        real_axes = [d for d, b in enumerate(self.bases) if isinstance(b, RealFourier)]
        if real_axes and (real_axes != [len(self.bases) - 1] or complex_fields):
            raise ValueError("RealFourier (a half spectrum) may only be the last axis, and only for real fields; "
                             f"got bases {self.bases}{' with complex_fields' if complex_fields else ''}")
        if complex_fields and any(not isinstance(b, Fourier) for b in self.bases):
            raise ValueError(f"complex fields need Fourier bases on every axis, got {self.bases}")
        self.ndim = len(self.bases)
        self.axis_names = tuple(axis_names) if axis_names is not None else ("x", "y", "z")[: self.ndim]
        if len(self.axis_names) != self.ndim or len(set(self.axis_names)) != self.ndim:
            raise ValueError(f"axis_names must name each of the {self.ndim} axes once, got {axis_names!r}")
        self.shape = tuple(b.n for b in self.bases)
        #: modes per axis: the resolution (``shape`` unless an axis keeps fewer modes than it has points)
        self.modes = tuple(getattr(b, "kept_modes", b.n) for b in self.bases)
        self.spectral_shape = tuple(b.size for b in self.bases)
        self.dtype = jnp.dtype(dtype)
        if not jnp.issubdtype(self.dtype, jnp.floating):
            raise TypeError(f"dtype must be a real floating dtype, got {self.dtype}")
        if jax.dtypes.canonicalize_dtype(self.dtype) != self.dtype:
            raise ValueError(f"dtype {self.dtype} needs JAX's 64-bit mode, which is off: call "
                             "jax.config.update('jax_enable_x64', True) first (or set JAX_ENABLE_X64=1), "
                             "or use dtype=float32")
        self.cdtype = jnp.result_type(self.dtype, jnp.complex64)
        if dealias not in DEALIAS:
            raise ValueError(f"dealias must be one of {DEALIAS}, got {dealias!r}")
        self.dealias_rule = dealias
        if self.stored_on_more_points and dealias == "none":
            raise ValueError(f"points {self.shape} differ from the grid's modes {self.modes}, which needs dealias "
                             "'2/3' or '3/2' (without dealiasing the products alias differently on other points), "
                             "got 'none'")
        self.backend = backend
        self.complex_fields = bool(complex_fields)
        self.kinds = tuple(b.kind for b in self.bases)
        self.box_length = tuple(b.length for b in self.bases)
        self.mesh = mesh if mesh is not None else xfft.make_mesh((1,), devices=jax.devices()[:1])
        self.explicit = all(t == AxisType.Explicit for t in self.mesh.axis_types)
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        if order == "transposed" and any(k not in _FFT_KINDS for k in self.kinds):
            raise ValueError(f"order='transposed' needs Fourier bases on every axis (the solves along a wall axis "
                             f"work in natural order), got kinds {self.kinds}")
        self.order = order
        last = self.bases[-1]
        if isinstance(last, RealFourier) and last.nyquist and dealias != "none" and self._leaves_out_nyquist():
            self.bases = self.bases[:-1] + (last.without_nyquist(),)
        self._real, self._spec, self.perm = _layouts(self.mesh, self.shape, self.kinds, order, self.nyquist)
        self.natural_spectral_shape = tuple(b.size for b in self.bases[:-1]) + (
            self.bases[-1].size + (0 if self.nyquist else 1),)
        self.spectral_shape = tuple(tuple(b.size for b in self.bases)[p] for p in self.perm)
        self._nat_spec = self._spec if (order == "natural" and self.nyquist) else \
            _layouts(self.mesh, self.shape, self.kinds)[1]
        spec = tuple(self._spec.spec) + (None,) * self.ndim
        for d, b in enumerate(self.bases):
            if b.whole_axis and spec[self.perm.index(d)] is not None:
                raise ValueError(f"axis {d} ({type(b).__name__}) must be unsharded in spectral space, but the "
                                 f"layout of a {'x'.join(map(str, self.shape))} grid on this mesh is {self._spec.spec};"
                                 " choose sizes of the other axes that the mesh divides")
        if self.dealias_rule == "3/2":
            self.padded  # noqa: B018  (checks that the mesh can hold the padded grid)

    def _leaves_out_nyquist(self) -> bool:
        """Whether this grid's half spectrum leaves out its Nyquist coefficient: 2D grids of real fields with a
        dealiasing rule (their Nyquist coefficient is zero), a half spectrum of an even length on the last axis
        (periodic grids and wall grids alike).

        On a 2D slab the ``n // 2 + 1`` coefficients of the half axis rarely split over the devices: xfft pads
        them in transit and moves the mesh axes back, two all-to-alls per transform. ``n // 2`` coefficients
        split (``xfft.xrfftn(..., drop_nyquist=True)``): one all-to-all, the bare 2D Navier-Stokes step 1.76x faster
        at 256^2 on 8 CPU devices. It is done on every mesh, one device included, so that a run's
        state has one shape whatever the mesh; in 3D the mesh axes never come back to the half axis, and the
        grid keeps the Nyquist coefficient."""
        if self.ndim != 2 or self.shape[-1] % 2 or self.kinds[-1] != "rfft":
            return False
        if not xfft.backends.capability(xfft.backends.get_backend(self.backend), "drops_nyquist"):
            return False
        try:  # a mesh that splits n // 2 + 1 coefficients but not n // 2 (rare) keeps them
            _layouts(self.mesh, self.shape, self.kinds, self.order, False)
        except ValueError:
            return False
        return True

    @property
    def nyquist(self) -> bool:
        """Whether spectra hold the half axis's Nyquist coefficient (True without a half axis; see
        :meth:`_leaves_out_nyquist`). The natural view (:meth:`to_natural`, checkpoints) always does."""
        last = self.bases[-1]
        return not isinstance(last, RealFourier) or last.nyquist

    # ----- siblings --------------------------------------------------------------------------------
    def with_basis(self, axis: int, basis: Basis) -> Grid:
        """The grid with the basis of ``axis`` replaced: another field group on the same points and mesh (the
        sine-series fields next to the cosine-series ones)."""
        bases = self.bases[:axis] + (basis,) + self.bases[axis + 1:]
        return Grid(bases, self.mesh, dtype=self.dtype, dealias=self.dealias_rule, backend=self.backend,
                    complex_fields=self.complex_fields, axis_names=self.axis_names, order=self.order)

    @functools.cached_property
    def padded(self) -> Grid:
        """The grid of the 3/2-padded product points (same mesh and dtype, no dealiasing of its own)."""
        bases = tuple(b.resized(b.padded_size()) for b in self.bases)
        out = Grid(bases, self.mesh, dtype=self.dtype, dealias="none", backend=self.backend,
                   complex_fields=self.complex_fields, axis_names=self.axis_names, order=self.order)
        if out.perm != self.perm:
            raise ValueError(f"the 3/2-padded grid {out.shape} keeps its spectrum in another axis order on this "
                             f"mesh than the {self.shape} grid; use order='natural' or other sizes")
        return out

    # ----- shardings and geometry ------------------------------------------------------------------
    def real_sharding(self, batch: int = 0) -> NamedSharding:
        """Sharding of a physical field with ``batch`` leading (unsharded) axes, e.g. 1 for a vector field."""
        return NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *self._real.spec))

    def spectral_sharding(self, batch: int = 0) -> NamedSharding:
        """Sharding of the coefficients (what :meth:`forward` returns) with ``batch`` leading axes."""
        return NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *self._spec.spec))

    def spectral_along(self, table: np.ndarray, axis: int, real: bool = True) -> jax.Array:
        """A 1D spectral table of grid ``axis``, shaped to broadcast against coefficients in this grid's order."""
        return along(table, self.perm.index(axis), self.ndim, self.dtype if real else self.cdtype)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def spacing(self) -> tuple[float, ...]:
        """Mean point spacing per axis, ``L / n`` (uniform axes: the spacing)."""
        return tuple(L / n for L, n in zip(self.box_length, self.shape))

    def coordinates(self) -> tuple[jax.Array, ...]:
        """Sharded coordinate arrays of the grid points, one per axis (:meth:`real_sharding`)."""
        return xfft.xmeshgrid(*[b.points().astype(self.dtype) for b in self.bases], sharding=self._real)

    def geometry(self) -> dict:
        """What outputs record about the grid: shape, box, mean spacing and each axis's basis (with its points
        where they are not uniform)."""
        return {"shape": list(self.shape), "box_length": list(self.box_length), "spacing": list(self.spacing),
                "origin": [b.domain[0] for b in self.bases], "names": list(self.axis_names),
                "axes": [b.describe() for b in self.bases]}

    def along(self, table: np.ndarray, axis: int, real: bool = True) -> jax.Array:
        """A 1D table of this grid's ``axis`` shaped to broadcast against fields (in the real dtype)."""
        return along(table, axis, self.ndim, self.dtype if real else self.cdtype)

    def zeros_spectral(self, batch: tuple[int, ...] = ()) -> jax.Array:
        shape = tuple(batch) + self.spectral_shape
        return self.place(lambda s: jnp.zeros(shape, self.cdtype, out_sharding=s), self.spectral_sharding(len(batch)))

    def place(self, make: Callable, sharding: NamedSharding) -> jax.Array:
        """``make(s)`` evaluated straight into ``sharding``, each device building only its block; ``make`` hands
        ``s`` to its creation op as ``out_sharding`` (``jax.random.normal(key, shape, out_sharding=s)``).

        On an Explicit mesh ``s`` is ``sharding``, which makes the sharding part of the result's type, so it stays
        sharded inside a caller's ``jit`` too (a ``jit``'s ``out_shardings`` alone types it replicated there and
        every device builds the global array: the memory check's compile of the random-isotropic initial
        condition held 413 bytes per point at 32^3). On an Auto mesh ``s`` is None."""
        return jax.jit(lambda: make(sharding if self.explicit else None), out_shardings=sharding)()

    # ----- transforms ------------------------------------------------------------------------------
    def _axes(self, x: jax.Array) -> tuple[int, ...]:
        return tuple(range(x.ndim - self.ndim, x.ndim))

    def forward(self, f: jax.Array) -> jax.Array:
        """Coefficients of the physical field ``f`` (leading axes batched): one planned transform of every axis
        (``norm="forward"``), then each basis's own scaling. Real sharding in, spectral sharding out."""
        f = f.astype(self.cdtype if self.complex_fields else self.dtype)
        if self.order != "natural":  # the planner must see the grid's layout (also where tracing hides it)
            f = self.reshard(f, self.real_sharding(f.ndim - self.ndim))
        if all(k in _FFT_KINDS for k in self.kinds):
            fn = xfft.xrfftn if self.kinds[-1] == "rfft" else xfft.xfftn
            more = {} if self.nyquist else {"drop_nyquist": True}
            c = fn(f, ndim=self.ndim, norm="forward", backend=self.backend, order=self.order, **more)
        else:
            c = xfft.xr2rn(f, self.kinds, axes=self._axes(f), norm="forward", drop_nyquist=not self.nyquist)
            c = self.reshard(c, self.spectral_sharding(c.ndim - self.ndim))  # (also where tracing hides the layout)
        return self._each_basis(c, "post_forward")

    def reshard(self, a: jax.Array, target: NamedSharding) -> jax.Array:
        """``a`` on ``target`` (a no-op when it is already there)."""
        if self.mesh.size == 1:
            return a
        return jax.sharding.reshard(a, target) if self.explicit else jax.lax.with_sharding_constraint(a, target)

    def backward(self, c: jax.Array) -> jax.Array:
        """The physical field with coefficients ``c`` (inverse of :meth:`forward`); spectral sharding in, real
        sharding out; real unless the grid has complex fields."""
        c = self._each_basis(c, "pre_backward")
        if self.order != "natural":
            c = self.reshard(c, self.spectral_sharding(c.ndim - self.ndim))
        if all(k in _FFT_KINDS for k in self.kinds):
            if self.kinds[-1] == "rfft":
                return xfft.ixrfftn(c, s=self.shape, ndim=self.ndim, norm="forward", backend=self.backend,
                                    order=self.order, drop_nyquist=not self.nyquist)
            f = xfft.ixfftn(c, s=self.shape, ndim=self.ndim, norm="forward", backend=self.backend, order=self.order)
        else:
            f = xfft.ixr2rn(c, self.kinds, axes=self._axes(c), norm="forward", s=self.shape,
                            drop_nyquist=not self.nyquist)
        if self.complex_fields or not jnp.iscomplexobj(f):
            return f
        return f.real.astype(self.dtype)

    def _each_basis(self, c: jax.Array, method: str) -> jax.Array:
        lead = c.ndim - self.ndim
        for d, b in enumerate(self.bases):
            if getattr(type(b), method) is not getattr(Basis, method):
                c = getattr(b, method)(c, lead + self.perm.index(d))
        return c

    def to_physical(self, c: jax.Array) -> jax.Array:
        """The physical field where products are formed: on this grid, or on the 3/2-padded grid."""
        if self.dealias_rule != "3/2":
            return self.backward(c)
        return self.padded.backward(self.resize(c, self.padded))

    def from_physical(self, f: jax.Array) -> jax.Array:
        """Dealiased coefficients of a product of :meth:`to_physical` fields."""
        if self.dealias_rule != "3/2":
            return self.dealias(self.forward(f))
        return self.dealias(self.padded.resize(self.padded.forward(f), self))

    def from_physical_and_max(self, f: jax.Array, field: jax.Array, reduce=None) -> tuple[jax.Array, jax.Array]:
        """:meth:`from_physical` of ``f`` and the maximum of ``field``, a real field on the same points as ``f``
        (e.g. the CFL rate of the velocity that formed the product ``f``).

        ``reduce`` takes the maximum: None is ``jnp.max`` (on a sharded field XLA reduces each block, then one
        all-reduce of a scalar per mesh axis the field is sharded over); a :class:`~solvers.grids.GatedMax` takes
        it only where its flag is set; any other callable is used as it is (``jnp.max`` where only the maximum is
        wanted: XLA then drops the transform of ``f``, which nothing uses). The maximum is a plain reduction of
        the physical field, separate from the transform.
        """
        return self.from_physical(f), (jnp.max if reduce is None else reduce)(field)
