"""Grid: a tensor product of one-dimensional bases on a device mesh, with its shardings, transforms and means.

Every equation works on a grid: the periodic box (:class:`~solvers.SpectralGrid`, Fourier bases), walls with
sine/cosine series, a Chebyshev wall-normal axis, complex fields (Schroedinger). The grid owns what used to be
copied between them: the real and spectral shardings (from :mod:`xfft`'s planner), coordinates, one planned
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

from ..bases import DEALIAS, Basis, Chebyshev, Cosine, Fourier, RealFourier, Sine
from ..bases._base import along
from . import reductions as _reductions
from .gated_max import GatedMax

__all__ = ["DEALIAS", "Grid", "rmul", "safe_inverse", "times_i"]

_FFT_KINDS = ("fft", "rfft")
#: spectral axis orders of a grid: natural, or the order the transforms leave (Fourier grids)
ORDERS = ("natural", "transposed")
#: sign of the ``order``-th derivative (by ``order % 4``): cos -> -sin -> -cos -> sin, sin -> cos -> -sin -> -cos
_COSINE_SIGNS = (1.0, -1.0, -1.0, 1.0)
_SINE_SIGNS = (1.0, 1.0, -1.0, -1.0)


class Grid:
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
        dealiasing rule (their Nyquist coefficient is zero), Fourier axes, an even last axis.

        On a 2D slab the ``n // 2 + 1`` coefficients of the half axis rarely split over the devices: xfft pads
        them in transit and moves the mesh axes back, two all-to-alls per transform. ``n // 2`` coefficients
        split (``xfft.xrfftn(..., drop_nyquist=True)``): one all-to-all, the bare 2D Navier-Stokes step 1.76x faster
        at 256^2 on 8 CPU devices (2026-11-25). It is done on every mesh, one device included, so that a run's
        state has one shape whatever the mesh; in 3D the mesh axes never come back to the half axis, and the
        grid keeps the Nyquist coefficient."""
        if self.ndim != 2 or self.shape[-1] % 2 or any(k not in _FFT_KINDS for k in self.kinds):
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

    def natural_sharding(self, batch: int = 0) -> NamedSharding:
        """Sharding of the coefficients in natural order (:meth:`to_natural`), ``batch`` leading axes."""
        return NamedSharding(self.mesh, PartitionSpec(*((None,) * batch), *self._nat_spec.spec))

    # ----- spectral axis order ---------------------------------------------------------------------------
    def to_natural(self, c: jax.Array) -> jax.Array:
        """Coefficients ``c`` (this grid's order, any leading batch axes) in natural order: index ``[..., i, j, k]``
        is mode ``(i, j, k)``, sharded like :meth:`natural_sharding` (one all-to-all where the orders differ), the
        half axis with its Nyquist coefficient (zero where the grid leaves it out: :attr:`nyquist`) as
        ``numpy.fft.rfftn`` has it."""
        if self.order == "natural" and self.nyquist:
            return c
        lead = c.ndim - self.ndim
        axes = tuple(range(lead)) + tuple(lead + self.perm.index(d) for d in range(self.ndim))
        c = jnp.transpose(c, axes)
        if not self.nyquist:  # the half axis is local in the natural layout: append its zero Nyquist coefficient
            c = self.reshard(c, self.natural_sharding(lead))
            c = jnp.pad(c, [(0, 0)] * (c.ndim - 1) + [(0, 1)])
        return self.reshard(c, self.natural_sharding(lead))

    def from_natural(self, c: jax.Array) -> jax.Array:
        """Inverse of :meth:`to_natural`: natural-order coefficients in this grid's order and sharding (without
        the Nyquist coefficient where the grid leaves it out)."""
        if self.order == "natural" and self.nyquist:
            return c
        lead = c.ndim - self.ndim
        if not self.nyquist:
            c = self.reshard(c, self.natural_sharding(lead))[..., :-1]
        axes = tuple(range(lead)) + tuple(lead + p for p in self.perm)
        return self.reshard(jnp.transpose(c, axes), self.spectral_sharding(lead))

    def natural_like(self, like):
        """``jax.ShapeDtypeStruct`` pytree of a state ``like`` (this grid's order) in natural order."""
        def one(a):
            lead = len(a.shape) - self.ndim
            shape = tuple(a.shape[:lead]) + tuple(a.shape[lead + self.perm.index(d)] for d in range(self.ndim))
            if not self.nyquist:
                shape = shape[:-1] + (shape[-1] + 1,)
            return jax.ShapeDtypeStruct(shape, a.dtype, sharding=self.natural_sharding(lead))
        return like if self.order == "natural" and self.nyquist else jax.tree.map(one, like)

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
        condition held 413 bytes per point at 32^3, found 2026-11-24). On an Auto mesh ``s`` is None."""
        return jax.jit(lambda: make(sharding if self.explicit else None), out_shardings=sharding)()

    # ----- transforms ------------------------------------------------------------------------------
    def _axes(self, x: jax.Array) -> tuple[int, ...]:
        return tuple(range(x.ndim - self.ndim, x.ndim))

    def forward(self, f: jax.Array, max_of: jax.Array | None = None, max_if: jax.Array | None = None):
        """Coefficients of the physical field ``f`` (leading axes batched): one planned transform of every axis
        (``norm="forward"``), then each basis's own scaling. Real sharding in, spectral sharding out.

        ``max_of`` (a real field of this grid's points, real sharding): also return its maximum,
        ``(coefficients, maximum)``, carried in the transform's all-to-alls where :meth:`carries_max` (no
        collective of its own, see :func:`xfft.xfftn`), else one ``jnp.max``; only where ``max_if`` (a
        replicated boolean scalar) is true, if given, else 0."""
        f = f.astype(self.cdtype if self.complex_fields else self.dtype)
        if self.order != "natural":  # the planner must see the grid's layout (also where tracing hides it)
            f = self.reshard(f, self.real_sharding(f.ndim - self.ndim))
        if all(k in _FFT_KINDS for k in self.kinds):
            fn = xfft.xrfftn if self.kinds[-1] == "rfft" else xfft.xfftn
            more = {} if self.nyquist else {"drop_nyquist": True}
            if max_of is not None:
                more.update(max_of=max_of, max_if=max_if)
            out = fn(f, ndim=self.ndim, norm="forward", backend=self.backend, order=self.order, **more)
            c, m = out if max_of is not None else (out, None)
        else:
            c = xfft.xr2rn(f, self.kinds, axes=self._axes(f), norm="forward")
            c = self.reshard(c, self.spectral_sharding(c.ndim - self.ndim))  # (also where tracing hides the layout)
            m = None
            if max_of is not None:
                m = jnp.max(max_of) if max_if is None else GatedMax(max_if, max_of.dtype)(max_of)
        c = self._each_basis(c, "post_forward")
        return c if max_of is None else (c, m)

    def carries_max(self) -> bool:
        """Whether :meth:`forward` carries ``max_of``'s maximum in its own all-to-alls: several devices, Fourier
        axes only, a backend that declares it (xfft's ``carries_max`` capability: native); elsewhere it is one
        separate reduction."""
        backend = xfft.backends.get_backend(self.backend)
        return self.mesh.size > 1 and all(k in _FFT_KINDS for k in self.kinds) and \
            bool(xfft.backends.capability(backend, "carries_max"))

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
            f = xfft.ixr2rn(c, self.kinds, axes=self._axes(c), norm="forward", s=self.shape)
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

        ``reduce`` says how the maximum is taken:

        - None: where the transform carries it (:meth:`carries_max`), the maximum travels in the transform's
          own all-to-alls, so a CFL-controlled step makes no collective beyond its transforms (a separate maximum
          across devices cost 4-6% of a Navier-Stokes step at 32^3 on 8 CPU devices, 2026-11-24); elsewhere one
          ``jnp.max``.
        - a :class:`~solvers._gated_max.GatedMax` (what the driver's stage loop passes: the maximum in a step's
          first stage only, 0 in the others): carried as above, in that stage only (``max_if``; each carrying
          exchange sits in a ``lax.cond`` beside its plain twin). Carried in every stage, the 2D step at 256^2
          took 3% longer than with an all-reduce in the first stage (2026-11-25).
        - any other callable: ``reduce(field)``, taken as it is, nothing carried (``jnp.max`` where only the
          maximum is wanted: XLA then drops the transform of ``f``, which nothing uses).

        The maximum is the same number either way (it is exact); the programs around it compile differently, so
        a run agrees with the other form to rounding (about 1e-15 relative for Taylor-Green at 32^3, float64,
        after 129 CFL steps), not to the bit; a resumed run takes the same form and stays bit-identical.
        """
        grid = self if self.dealias_rule != "3/2" else self.padded
        gated = isinstance(reduce, GatedMax)
        if not grid.carries_max() or (reduce is not None and not gated):
            return self.from_physical(f), (jnp.max if reduce is None else reduce)(field)
        c, m = grid.forward(f, max_of=field, max_if=reduce.when if gated else None)
        c = c if grid is self else self.padded.resize(c, self)
        return self.dealias(c), m

    def resize(self, c: jax.Array, other: Grid) -> jax.Array:
        """Coefficients ``c`` of this grid as coefficients of ``other`` (same bases, other sizes): zero-padded or
        truncated per axis, landing on ``other``'s spectral sharding."""
        batch = c.ndim - self.ndim

        def body(a):
            for d, (b, o) in enumerate(zip(self.bases, other.bases)):
                a = b.pad(a, o, batch + self.perm.index(d))
            return a

        return _sharded(body, other.spectral_sharding(batch), self.explicit)(c)

    # ----- dealiasing ------------------------------------------------------------------------------
    def keep_tables(self, rule: str | None = None) -> list[jax.Array]:
        """Per-axis 0/1 dealiasing factors (broadcastable): their product is :meth:`dealias_mask`."""
        rule = self.dealias_rule if rule is None else rule
        return [self.spectral_along(b.keep(rule).astype(float), d) for d, b in enumerate(self.bases)]

    @property
    def stored_on_more_points(self) -> bool:
        """True when an axis holds fewer modes than it has points (:attr:`modes` differs from :attr:`shape`)."""
        return self.modes != self.shape

    def truncate(self, f_hat: jax.Array) -> jax.Array:
        """``f_hat`` without the coefficients that a grid of :attr:`modes` points does not have (``f_hat`` itself
        when every axis has as many modes as points). An initial condition built on the points goes through it,
        so the state holds exactly the modes of the grid."""
        if not self.stored_on_more_points:
            return f_hat
        return rmul(functools.reduce(lambda a, b: a * b, self.keep_tables("none")), f_hat)

    def dealias_mask(self) -> jax.Array:
        """1 for kept coefficients, 0 for removed ones (the grid's rule on every axis)."""
        return functools.reduce(lambda a, b: a * b, self.keep_tables())

    def dealias(self, c: jax.Array) -> jax.Array:
        """``c`` times the dealiasing mask, one 1D factor per axis (no grid-sized table is formed)."""
        for m in self.keep_tables():
            c = rmul(m, c)
        return c

    # ----- derivatives -----------------------------------------------------------------------------
    def wavenumbers(self, axis: int, odd: bool = True) -> jax.Array:
        """The multiplier ``k`` of a diagonal basis along ``axis`` (broadcastable; for odd derivatives the
        Fourier Nyquist mode's is 0, its derivative not being a real field)."""
        b = self.bases[axis]
        k = b.wavenumbers()
        if odd and isinstance(b, Fourier) and b.n % 2 == 0:
            k = np.where(np.abs(b.modes()) == b.n // 2, 0.0, k)
        return self.spectral_along(k, axis)

    def derivative(self, c: jax.Array, axis: int, order: int = 1) -> jax.Array:
        """Coefficients of ``d^order f / dx_axis^order``.

        Fourier: ``(i k)^order c``. Cosine/Sine: ``d/dx`` maps a cosine series to the sine series of the same
        index (``-k c``) and a sine series to the cosine series (``+k c``): the result belongs to the other
        parity's grid (:meth:`with_basis`) for odd orders. Chebyshev: the recurrence on the coefficients.
        """
        b = self.bases[axis]
        if isinstance(b, Chebyshev):  # a recurrence along the (unsharded) axis: run on each device's block
            ax = c.ndim - self.ndim + axis
            return self.local_map(lambda a: b.derivative(a, ax, order), c)
        k = self.wavenumbers(axis, odd=order % 2 == 1)
        if isinstance(b, Fourier):
            return (1j * k) ** order * c
        if isinstance(b, (Cosine, Sine)):
            sign = (_SINE_SIGNS if isinstance(b, Sine) else _COSINE_SIGNS)[order % 4]
            return sign * k ** order * c
        raise NotImplementedError(f"no derivative for {type(b).__name__}")

    # ----- per-device work on the spectral layout ----------------------------------------------------------
    def local_map(self, fn: Callable, *args, scalars: tuple = ()):
        """Run ``fn(*blocks, *scalars)`` on each device's block of ``args`` and return its result on the same
        layout: for work along an unsharded axis that must not communicate (implicit solves along the wall-normal
        axis). ``args`` are arrays or pytrees of arrays in the spectral layout, aligned on the right: a leaf's
        trailing axes are the grid's last axes (``(3, ny, nx, nz)`` or a per-wavenumber ``(k, 2, nx, nz)`` table
        whose wall-normal axis is gone), leading axes unsharded; the result's leaves follow the same rule.
        ``scalars`` (a step size, small replicated tables, pytrees too) are passed whole to every device. Inside
        ``fn``, :meth:`local_table` gives the device's slice of a per-axis table."""
        if self.mesh.size == 1:
            return fn(*args, *scalars)
        rep = PartitionSpec()
        scalars = jax.tree.map(lambda v: self.replicate(jnp.asarray(v)), scalars)
        args = jax.tree.map(lambda a: self.reshard(a, NamedSharding(self.mesh, self._aligned(a.ndim))), args)
        in_specs = jax.tree.map(lambda a: self._aligned(a.ndim), args) + jax.tree.map(lambda _: rep, scalars)
        shapes = jax.eval_shape(jax.shard_map(fn, mesh=self.mesh, in_specs=in_specs, out_specs=rep, check_vma=False),
                                *args, *scalars)  # the result's ranks (blocks read as replicated: same rank)
        out_specs = jax.tree.map(lambda a: self._aligned(a.ndim), shapes)
        return jax.shard_map(fn, mesh=self.mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=False)(*args, *scalars)

    def _aligned(self, rank: int) -> PartitionSpec:
        """The spectral spec of an array of ``rank`` axes aligned on the right with the grid's axes."""
        spec = tuple(self._spec.spec) + (None,) * (self.ndim - len(tuple(self._spec.spec)))
        if rank >= self.ndim:
            return PartitionSpec(*((None,) * (rank - self.ndim)), *spec)
        return PartitionSpec(*spec[self.ndim - rank:])

    def local_table(self, table: np.ndarray, axis: int, real: bool = True) -> jax.Array:
        """Inside :meth:`local_map`: this device's entries of the 1D spectral ``table`` of ``axis``, shaped to
        broadcast against the local block (outside it, or on one device: the whole table)."""
        table = np.asarray(table)
        pos = self.perm.index(axis)
        entry = (tuple(self._spec.spec) + (None,) * self.ndim)[pos]
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        if self.mesh.size == 1 or not names:
            return self.spectral_along(table, axis, real)
        sizes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes))
        block = table.shape[0] // math.prod(sizes[n] for n in names)
        index = 0
        for n in names:  # the position of this device's block along the axis (mesh axes in the spec's order)
            index = index * sizes[n] + jax.lax.axis_index(n)
        local = jax.lax.dynamic_slice_in_dim(jnp.asarray(table, self.dtype if real else self.cdtype),
                                             index * block, block)
        return local.reshape([-1 if d == pos else 1 for d in range(self.ndim)])

    # ----- means -----------------------------------------------------------------------------------
    def mean(self, f: jax.Array) -> jax.Array:
        """Volume mean of a physical field (quadrature weights of every axis; sums over leading axes)."""
        w = functools.reduce(lambda a, b: a * b, [self.along(b.weights() / b.length, d)
                                                  for d, b in enumerate(self.bases)])
        return self.total(w * f, spectral=False)

    def mean_square(self, c: jax.Array) -> jax.Array:
        """Volume mean of ``|f|^2`` from the coefficients (summed over leading axes): Parseval on orthogonal
        axes, the basis's Gram matrix on a Chebyshev axis."""
        return self.inner(c, c)

    def inner(self, a: jax.Array, b: jax.Array) -> jax.Array:
        """Volume mean of ``Re(f conj(g))`` for the fields with coefficients ``a`` and ``b`` (summed over leading
        axes; both on this grid's bases): Parseval on orthogonal axes, the Gram matrix on a Chebyshev axis."""
        weight = 1.0
        for d, basis in enumerate(self.bases):
            p = basis.parseval()
            if p is not None:
                weight = weight * self.spectral_along(p, d)
            elif isinstance(basis, Chebyshev):
                ax = b.ndim - self.ndim + d
                g = jnp.asarray(basis.quadrature_matrix(), self.dtype)
                b = jnp.moveaxis(jnp.tensordot(g, jnp.moveaxis(b, ax, 0), axes=1), 0, ax)
            else:
                raise NotImplementedError(f"inner products on a {type(basis).__name__} axis")
        return self.total(weight * (a.real * b.real + a.imag * b.imag))

    def total(self, x: jax.Array, spectral: bool = True) -> jax.Array:
        """``jnp.sum(x)`` of an array sharded as this grid's spectra (``spectral=False``: as its physical fields),
        any leading batch axes: inside :func:`solvers._reductions.fused` (the diagnostics row) it shares one
        collective with the row's other reductions.

        Raises:
          ValueError: ``x`` does not end with the grid's spectral (physical) shape.
        """
        return _reductions.total(jnp.sum, self.mesh, (self._spec_of(x, spectral, "total"),), x, plain=jnp.sum)

    def maximum(self, x: jax.Array, spectral: bool = False) -> jax.Array:
        """``jnp.max(x)`` of a real array sharded as this grid's physical fields (``spectral=True``: as its
        spectra), any leading batch axes; shares the row's one collective like :meth:`total`.

        Raises:
          ValueError: ``x`` does not end with the grid's physical (spectral) shape.
          TypeError: ``x`` is complex (a maximum of complex numbers means nothing; take ``jnp.abs`` first).
        """
        spec = self._spec_of(x, spectral, "maximum")
        if jnp.iscomplexobj(x):
            raise TypeError(f"maximum: x must be real, got {jnp.result_type(x)} (take jnp.abs(x) first)")
        return _reductions.total(jnp.max, self.mesh, (spec,), x, plain=jnp.max, op="max")

    def _spec_of(self, x: jax.Array, spectral: bool, name: str) -> PartitionSpec:
        """The partition spec of ``x``: the grid's spectral (or physical) one after ``x``'s leading batch axes."""
        want = tuple(self.spectral_shape if spectral else self.shape)
        shape = tuple(jnp.shape(x))
        if len(shape) < self.ndim or shape[len(shape) - self.ndim:] != want:
            raise ValueError(f"{name}: x must end with the grid's {'spectral' if spectral else 'physical'} shape "
                             f"{want}, got shape {shape}")
        return (self.spectral_sharding if spectral else self.real_sharding)(len(shape) - self.ndim).spec

    # ----- replicated small arrays (plots, diagnostics) ------------------------------------------
    def replicate(self, x: jax.Array) -> jax.Array:
        """``x`` made identical on every device (so every process can read it): for small arrays only."""
        if self.mesh.size == 1:
            return x
        rep = NamedSharding(self.mesh, PartitionSpec())
        return jax.sharding.reshard(x, rep) if self.explicit else jax.lax.with_sharding_constraint(x, rep)

    def mid_plane(self, field: jax.Array, axis: int = -1, index: int | None = None) -> jax.Array:
        """The plane ``index`` (default the middle) normal to grid ``axis`` of a physical ``field`` (leading batch
        axes kept), replicated; on a 2D grid the whole field, replicated."""
        if self.ndim == 3:
            axis = axis % self.ndim
            index = self.shape[axis] // 2 if index is None else int(index)
            field = jax.lax.index_in_dim(field, index, axis=field.ndim - self.ndim + axis, keepdims=False)
        return self.replicate(field)


@functools.lru_cache(maxsize=128)
def _layouts(mesh: Mesh, shape: tuple[int, ...], kinds: tuple[str, ...], order: str = "natural",
             nyquist: bool = True) -> tuple[NamedSharding, NamedSharding, tuple[int, ...]]:
    """Canonical real sharding of ``shape`` on ``mesh``, the sharding of the spectrum the planner returns in
    ``order`` (``nyquist=False``: a half axis without its Nyquist coefficient), and which grid axis each spectrum
    axis holds (:func:`xfft.spectral_axes`)."""
    real = xfft.real_sharding(mesh, shape, ndim=len(shape))
    rfft = kinds[-1] == "rfft"
    drop = {} if nyquist else {"drop_nyquist": True}
    spec = xfft.spectral_sharding(real, shape, real=rfft, ndim=len(shape), order=order, **drop)
    perm = xfft.spectral_axes(real, shape, real=rfft, ndim=len(shape), order=order, **drop)
    return real, spec, tuple(perm)


def rmul(a: jax.Array, z: jax.Array) -> jax.Array:
    """``a * z`` for a real ``a`` and complex ``z`` without a complex multiply: the real and imaginary parts are
    scaled (``jnp`` would promote ``a`` to complex and do 4 multiplies and 2 adds per element; the values are the
    same). Real ``z``: the plain product."""
    if not jnp.iscomplexobj(z) or jnp.iscomplexobj(a):
        return a * z
    return jax.lax.complex(a * z.real, a * z.imag)


def times_i(z: jax.Array) -> jax.Array:
    """``1j * z`` exactly, by swapping parts (no multiply)."""
    return jax.lax.complex(-z.imag, z.real)


def safe_inverse(a: jax.Array) -> jax.Array:
    """``1 / a`` where ``a > 0``, else 0 (no division by zero is ever evaluated, so gradients stay finite)."""
    return jnp.where(a > 0, 1 / jnp.where(a > 0, a, 1), 0)


def _sharded(fn: Callable, out: NamedSharding, explicit: bool) -> Callable:
    """Apply ``fn`` (which moves data across shards) and land on ``out``, on explicit or auto meshes."""
    if explicit and out.mesh.size > 1:
        return jax.sharding.auto_axes(fn, out_sharding=out)
    if out.mesh.size > 1:
        return lambda a: jax.lax.with_sharding_constraint(fn(a), out)
    return fn
