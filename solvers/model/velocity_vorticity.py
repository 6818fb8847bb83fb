"""Incompressible velocity between no-slip walls in the velocity-vorticity form of Kim, Moin & Moser (1987).

Shared by the plane channel (:mod:`~solvers.equations.channel`) and Rayleigh-Benard convection between rigid
plates (:mod:`~solvers.equations.rayleigh_benard_no_slip`). Axis 0 of the grid is the wall-normal axis, a
:class:`~solvers.bases.Chebyshev` basis on ``[a, b]`` (walls at both ends); the other axes are Fourier. Everything
is written in array-axis coordinates (component ``i`` along array axis ``i``; cross products and curls with the
same Levi-Civita symbol, so ``u x curl u`` is the true Lamb vector whatever the handedness of the axis order).

Per horizontal wavenumber ``kappa != 0`` the velocity is carried by ``phi = lap v`` (``v = u_0``, the
wall-normal velocity) and, in 3D, ``g = (curl u)_0``; continuity and ``g`` give the horizontal velocities
(``u_1 = i (k_1 v' + k_2 g) / kappa^2``, ``u_2 = i (k_2 v' - k_1 g) / kappa^2``), so the velocity is
divergence-free by construction. At ``kappa = 0`` the same array slots hold the mean horizontal velocities
``U_1(y)`` and ``U_2(y)`` (``v``, ``g`` vanish there). State: complex ``(F, ny, n1[, n2 // 2 + 1])`` on the
grid's spectral sharding, ``F = 1`` in 2D (``phi``/``U_1``), 2 in 3D (and ``g``/``U_2``).

``phi_t = h_v + nu lap phi`` with ``h_v = -d_0 (d_1 H_1 + d_2 H_2) + (d_1^2 + d_2^2) H_0`` and
``g_t = h_g + nu lap g`` with ``h_g = d_1 H_2 - d_2 H_1``, ``H = u x omega + body force``; ``U_t = H(kappa=0) +
nu U''``. The implicit part is solved per horizontal wavenumber with the Chebyshev tau method
(:mod:`solvers.bases.tau`): ``g`` and ``U`` by a Dirichlet Helmholtz solve, ``phi`` by two Helmholtz solves whose
boundary values of ``phi`` are fixed by the influence-matrix method so that ``v = v' = 0`` at both walls
(Kleiser & Schumann 1980). Each solve is quasi-tridiagonal (O(ny) work and memory per wavenumber), local to the
device (the wall-normal axis is unsharded in spectral space).

Memory: a step holds what its stage values, running sums and one transform need. The factors keep per
wavenumber ``phi``'s homogeneous solution and a few numbers (the solves form their row tables as they sweep), the
solves of the fields run one after the other, and the nonlinear terms transform one field at a time
(:meth:`WallVelocity.physical`, :meth:`WallVelocity.spectra`), each result in a buffer of its own
(:func:`own_buffer`). Where a field's block on one device is small (at most ``BATCH_BYTES``, 64 KiB), memory is
no concern and the latency of each transform's all-to-all is: the fields of one call are then transformed together
(:attr:`WallVelocity.batched`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..bases import Chebyshev, Fourier
from ..bases import tau as _tau
from ..grids import Grid, safe_inverse
from ._order import after_local, after_on

#: The largest block of one physical field (bytes on one device, on the points where products are formed) whose
#: fields :class:`WallVelocity` transforms together by default: below it a step's cost is the number of
#: transforms (each an all-to-all on a sharded grid), not their memory. A 25x32 convection cell on 8 devices
#: holds 2 KB per device (batched: three transforms a stage, not nine), a 33x32x32 channel 115 KB (one at a time).
BATCH_BYTES = 64 * 1024


class WallVelocity:
    """The velocity-vorticity machinery of a grid whose axis 0 is a no-slip Chebyshev axis.

    Args:
      grid: a 2D or 3D :class:`~solvers.Grid`, axis 0 :class:`~solvers.bases.Chebyshev`, the others Fourier.
      batched: transform the fields of one :meth:`physical` or :meth:`spectra` call together (one transform,
        one all-to-all on a sharded grid) rather than one after the other (each transform's work space alone).
        None (default): together where one field's block on a device is at most ``BATCH_BYTES`` (64 KiB).

    The viscosity is an argument of :meth:`solve` (read from the equation at every call, so a parameter replaced
    by :meth:`~solvers.Equation.with_params`, e.g. traced for a gradient, takes effect).

    Raises:
      ValueError: a grid of another shape of bases.
    """

    def __init__(self, grid: Grid, batched: bool | None = None):
        if not isinstance(grid.bases[0], Chebyshev) or not all(isinstance(b, Fourier) for b in grid.bases[1:]):
            raise ValueError(f"a wall-bounded velocity needs a Chebyshev axis 0 and Fourier axes, got {grid.bases}")
        self.batched = batched
        self.grid = grid
        self.dim = grid.ndim
        self.fields = grid.ndim - 1
        self.length = grid.bases[0].length
        self.scale = (self.length / 2) ** 2  # d^2/dx^2 = d^2/dy^2 / scale on the reference interval [-1, 1]

    #: the run's grid points where this machinery is built on a smaller grid to compile the run's programs (the
    #: memory check's probe): :attr:`batched` then decides as for the run
    planned_points: tuple[int, ...] | None = None

    @property
    def batched(self) -> bool:
        """Whether the fields of one :meth:`physical` or :meth:`spectra` call are transformed together: as given,
        else where one physical field's block on a device (the run's, :attr:`planned_points`) is at most
        ``BATCH_BYTES`` (64 KiB)."""
        if self._batched is not None:
            return self._batched
        g = self.grid
        points = float(np.prod(self.planned_points or g.shape))
        if g.dealias_rule == "3/2":
            points *= np.prod(g.padded.shape) / np.prod(g.shape)
        return points * g.dtype.itemsize / g.mesh.size <= BATCH_BYTES

    @batched.setter
    def batched(self, value: bool | None) -> None:
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"batched must be a bool or None, got {value!r}")
        self._batched = value

    # ----- wavenumbers -------------------------------------------------------------------------------
    def _k(self, axis: int, odd: bool, local: bool) -> jax.Array:
        b = self.grid.bases[axis]
        k = b.wavenumbers()
        if odd and b.n % 2 == 0:
            k = np.where(np.abs(b.modes()) == b.n // 2, 0.0, k)
        return self.grid.local_table(k, axis) if local else self.grid.along(k, axis)

    def kh(self, local: bool = False) -> list[jax.Array]:
        """Horizontal wavenumbers for first derivatives (axis 1, and 2 in 3D; Nyquist 0), broadcastable."""
        return [self._k(d, True, local) for d in range(1, self.dim)]

    def kappa2(self, local: bool = False) -> jax.Array:
        """``|k_h|^2`` with the true (Nyquist-included) wavenumbers."""
        return sum(self._k(d, False, local) ** 2 for d in range(1, self.dim))

    def mean_mask(self) -> jax.Array:
        """1 at the horizontal mean (``kappa = 0``), 0 elsewhere (broadcastable)."""
        out = self.grid.along(np.ones(1), 0)
        for d in range(1, self.dim):
            out = out * self.grid.along(self.grid.bases[d].modes() == 0, d)
        return out

    # ----- the velocity --------------------------------------------------------------------------------
    def dy(self, c: jax.Array, order: int = 1) -> jax.Array:
        """Wall-normal derivative of coefficients (axis ``-dim``)."""
        return self.grid.derivative(c, 0, order)

    def normal_velocity(self, phi: jax.Array) -> jax.Array:
        """``v`` from ``phi = lap v`` with ``v = 0`` at the walls (0 at ``kappa = 0``): a Dirichlet solve."""
        def solve(p):
            k2 = self.kappa2(local=True)
            v = _tau.helmholtz(p * self.scale, k2[0] * self.scale)  # tau tables take the trailing shape
            return jnp.where(k2 > 0, v, 0)
        return self.grid.local_map(solve, phi)

    def velocity(self, s: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Spectral velocity components ``(u_0, u_1[, u_2])`` stacked, and ``v' = d_0 u_0`` (its coefficients)."""
        u, dv = self.velocity_parts(s)
        return jnp.stack(u), dv

    def velocity_parts(self, s: jax.Array) -> tuple[list[jax.Array], jax.Array]:
        """:meth:`velocity` as a list of components (nothing stacked: each can be transformed and freed alone)."""
        m = self.mean_mask()
        inv = safe_inverse(self.kappa2() * (1 - m))  # 1 / kappa^2 off the mean, 0 on it
        v = self.normal_velocity(s[0])
        dv = self.dy(v)
        if self.dim == 2:
            (k1,) = self.kh()
            return [v, 1j * k1 * dv * inv + m * s[0]], dv
        k1, k2 = self.kh()
        g = s[1]
        u1 = 1j * (k1 * dv + k2 * g) * inv + m * s[0]
        u2 = 1j * (k2 * dv - k1 * g) * inv + m * s[1]
        return [v, u1, u2], dv

    def vorticity(self, u: jax.Array, s: jax.Array) -> jax.Array:
        """Spectral ``curl u`` in array-axis coordinates (2D: the out-of-plane scalar ``d_0 u_1 - d_1 u_0``)."""
        w = self.vorticity_parts(u, s)
        return w[0] if self.dim == 2 else jnp.stack(w)

    def vorticity_parts(self, u, s: jax.Array) -> list[jax.Array]:
        """:meth:`vorticity` as a list of components (one in 2D), from the components ``u`` (stacked or a list)."""
        if self.dim == 2:
            (k1,) = self.kh()
            return [self.dy(u[1]) - 1j * k1 * u[0]]
        k1, k2 = self.kh()
        g = s[1] * (1 - self.mean_mask())
        return [g, 1j * k2 * u[0] - self.dy(u[2]), self.dy(u[1]) - 1j * k1 * u[0]]

    def lamb(self, u: jax.Array, w: jax.Array) -> jax.Array:
        """``u x omega`` of physical fields (2D: ``omega`` is the out-of-plane scalar)."""
        return jnp.stack(self.lamb_parts(u, w))

    def lamb_parts(self, u, w) -> list[jax.Array]:
        """:meth:`lamb` as a list of components, from components stacked or listed (2D: ``w`` one field)."""
        if self.dim == 2:
            return [u[1] * w, -u[0] * w]
        return [u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]]

    def physical(self, fields, padded: bool = True, after: jax.Array | None = None) -> list[jax.Array]:
        """Physical values of spectral fields (a list, or stacked on a leading axis), one transform after the
        other: on the points where products are formed (``padded``, :meth:`~solvers.Grid.to_physical`) or on the
        grid's own (:meth:`~solvers.Grid.backward`); the first once ``after`` (an array) has been computed.

        A batched transform, or transforms XLA may interleave, hold the work space of each field at once (for a
        Chebyshev axis the transform's own input is complex and on twice the points); one after the other they
        hold one, and each result is a buffer of its own (:func:`own_buffer`). Where the fields are small
        (:attr:`batched`) they are transformed together: one transform, one all-to-all."""
        fn = self.grid.to_physical if padded else self.grid.backward
        if self.batched:
            return list(fn(self._stack(fields, after)))
        out = []
        for f in fields:
            out.append(own_buffer(fn(self.after(f, after))))
            after = out[-1]
        return out

    def spectra(self, fields, after: jax.Array | None = None) -> list[jax.Array]:
        """Dealiased spectra of physical products (:meth:`~solvers.Grid.from_physical`), one transform after the
        other (together where :attr:`batched`; see :meth:`physical`)."""
        if self.batched:
            return list(self.grid.from_physical(self._stack(fields, after)))
        out = []
        for f in fields:
            out.append(self.grid.from_physical(self.after(f, after)))
            after = out[-1]
        return out

    def _stack(self, fields, after: jax.Array | None) -> jax.Array:
        """The fields stacked on a leading axis, computed once ``after`` has been."""
        fields = list(fields)
        return jnp.stack([self.after(fields[0], after)] + fields[1:])

    def after(self, x: jax.Array, y: jax.Array | None) -> jax.Array:
        """``x``, computed once ``y`` has been (``x + 0 y_0`` per device block: a data dependency at no cost)."""
        return after_on(self.grid, x, y)

    def tendency(self, H: jax.Array, mean_force: jax.Array | float = 0.0) -> jax.Array:
        """The explicit right-hand side of the state from the spectrum of ``H = u x omega + body force``:
        ``h_v`` (and ``h_g``) off the mean, ``H_1`` (and ``H_2``) plus ``mean_force`` along axis 1 at the mean."""
        m = self.mean_mask()
        k2 = self.kappa2()
        if self.dim == 2:
            (k1,) = self.kh()
            hv = -self.dy(1j * k1 * H[1]) - k2 * H[0]
            return jnp.stack([hv * (1 - m) + (H[1] + mean_force) * m])
        k1, kk2 = self.kh()
        hv = -self.dy(1j * k1 * H[1] + 1j * kk2 * H[2]) - k2 * H[0]
        hg = 1j * k1 * H[2] - 1j * kk2 * H[1]
        return jnp.stack([hv * (1 - m) + (H[1] + mean_force) * m, hg * (1 - m) + H[2] * m])

    # ----- implicit solves -------------------------------------------------------------------------------
    def factor(self, h: jax.Array, nu: jax.Array | float, flux: float | None = None) -> dict:
        """Everything :meth:`solve_factored` needs for one ``h``, computed once per step size (the IMEX
        coefficients): per horizontal wavenumber the clamped influence-matrix factor of ``phi`` (whose Helmholtz
        factor of ``D^2 - (kappa^2 + 1/hs)`` also serves ``g``), on each device's block; the mean profile's factor
        and, with ``flux``, its response to a uniform pressure gradient (replicated).

        The per-wavenumber factors keep no per-row tables (:func:`~solvers.bases.tau.helmholtz_factor` with
        ``tables=False``: each solve forms them as it sweeps, with the same operations): a step carries ``phi``'s
        homogeneous solution (one real number per coefficient and wavenumber) and a few numbers per wavenumber,
        against ten tables of that size with the tables."""
        hs = jnp.asarray(h * nu / self.scale, self.grid.dtype)  # h nu d^2/dx^2 = hs d^2/dy^2
        n = self.grid.shape[0]

        def local(hs):
            k2 = self.kappa2(local=True) * self.scale
            # tau tables take the trailing shape (axis 0 dropped)
            return _tau.clamped_factor(n, k2[0], hs, dtype=self.grid.dtype, tables=False)

        mean = _tau.helmholtz_factor(n, 1 / hs, dtype=self.grid.dtype)
        out = {"hs": hs, "clamped": self.grid.local_map(local, scalars=(hs,)), "mean": mean}
        if flux is not None:
            e0 = jnp.zeros((n,) + (1,) * (self.dim - 1), hs.dtype).at[0].set(1)
            out["unit"] = _tau.helmholtz_solve(mean, -e0 / hs)
        return out

    def solve(self, rhs: jax.Array, h: jax.Array, nu: jax.Array | float, flux: float | None = None) -> jax.Array:
        """``y`` with ``(I - h nu lap) y = rhs`` per field and wavenumber, boundary conditions included:
        ``phi`` such that ``v = v' = 0``, ``g = 0`` and ``U = 0`` at the walls. ``flux``: if given, a uniform
        pressure gradient along axis 1 is added to the mean so that the mean of ``U_1`` over the wall-normal axis
        is ``flux`` (constant flow rate). :meth:`factor` then :meth:`solve_factored`."""
        return self.solve_factored(rhs, self.factor(h, nu, flux), flux)

    def solve_factored(self, rhs: jax.Array, factor: dict, flux: float | None = None) -> jax.Array:
        """:meth:`solve` with the factors of :meth:`factor` (four O(ny) sweeps for ``phi``, two for ``g``)."""
        def local(r, clamped, hs, mean, unit):
            k2 = self.kappa2(local=True) * self.scale
            phi, _ = _tau.clamped_solve_factored(clamped, r[0])
            m = r[0][:, :1][:, :, :1] if self.dim == 3 else r[0][:, :1]
            u = _tau.helmholtz_solve(mean, -m / hs)
            if flux is not None:
                u = u + (flux - 0.5 * _tau.integrate(u)) / (0.5 * _tau.integrate(unit)) * unit
            out = [jnp.where(k2 > 0, phi, u)]
            if self.dim == 3:  # g after phi: one solve's buffers at a time
                out.append(_tau.helmholtz_solve(clamped.phi_factor, -after_local(r[1], out[0]) / hs))
            return jnp.stack(out)

        unit = factor.get("unit", jnp.zeros(()))
        return self.grid.local_map(local, rhs, factor["clamped"], scalars=(factor["hs"], factor["mean"], unit))

    # ----- scalars between the walls ------------------------------------------------------------------------
    def scalar_factor(self, h: jax.Array, diffusivity: jax.Array | float) -> dict:
        """What :meth:`scalar_solve` needs for ``(I - h kappa lap) y = rhs`` with ``y = 0`` at both walls (a
        temperature or concentration held fixed there): per horizontal wavenumber, the Helmholtz factor of the
        Chebyshev tau solve without per-row tables (formed by each solve), on each device's block. Computed once
        per step size (an IMEX scheme's coefficients). :class:`~solvers.Diffusion` is this solve as an implicit
        block, with any condition at each wall."""
        hs = jnp.asarray(h * diffusivity / self.scale, self.grid.dtype)
        n = self.grid.shape[0]

        def local(hs):
            k2 = self.kappa2(local=True) * self.scale
            return _tau.helmholtz_factor(n, k2[0] + 1 / hs, dtype=self.grid.dtype, tables=False)
        return {"factor": self.grid.local_map(local, scalars=(hs,)), "hs": hs}

    def scalar_solve(self, rhs: jax.Array, factor: dict) -> jax.Array:
        """``y`` with ``(I - h kappa lap) y = rhs`` and ``y = 0`` at the walls (``factor`` from :meth:`scalar_factor`),
        for the scalar fields stacked along ``rhs``'s leading axis (spectral, the state's sharding)."""
        def local(r, f, hs):
            out = []
            for i in range(r.shape[0]):  # one after the other
                out.append(_tau.helmholtz_solve(f, -after_local(r[i], out[-1] if out else None) / hs))
            return jnp.stack(out)
        return self.grid.local_map(local, rhs, factor["factor"], scalars=(factor["hs"],))

    def divergence(self, f: jax.Array) -> jax.Array:
        """Spectral ``div f`` of a vector field in array-axis coordinates (component 0 wall-normal): the advection
        ``div (u c)`` of a scalar from the spectrum of its flux ``u c``."""
        return self.dy(f[0]) + sum(1j * k * f[i + 1] for i, k in enumerate(self.kh()))

    def from_velocity(self, u: jax.Array) -> jax.Array:
        """The state ``(phi[, g])`` of spectral velocity components ``u`` (array-axis order, wall-normal first) that
        satisfy the no-slip conditions: ``phi = lap v`` and ``g = (curl u)_0`` off the mean, the mean horizontal
        velocities on it."""
        m = self.mean_mask()
        out = [(self.dy(u[0], 2) - self.kappa2() * u[0]) * (1 - m) + u[1] * m]
        if self.dim == 3:
            k1, k2 = self.kh()
            out.append((1j * k1 * u[2] - 1j * k2 * u[1]) * (1 - m) + u[2] * m)
        return jnp.stack(out)

    # ----- physical-space helpers ------------------------------------------------------------------------
    def max_rate(self, u_phys: jax.Array) -> jax.Array:
        """``max sum_i |u_i| / dx_i`` with the local spacing of the Chebyshev points (physical velocity)."""
        g = self.grid
        dy = g.along(g.bases[0].local_spacing(), 0)
        rate = jnp.abs(u_phys[0]) / dy
        for i in range(1, self.dim):
            rate = rate + jnp.abs(u_phys[i]) / g.spacing[i]
        return jnp.max(rate)


def own_buffer(x: jax.Array) -> jax.Array:
    """``x`` unchanged, in a buffer of its own: ``x / ((x - x) + 1)``, exactly ``x`` for finite values (parts of a
    complex ``x`` apart).

    The division is the point: XLA duplicates a cheap elementwise producer into every fusion that consumes it, so
    without it the last, elementwise stage of a transform (or of the nonlinear term) is fused into each product
    or stage sum that reads the field, and that stage's input (complex, on up to twice the points) stays alive
    until the last of them has run, one per field. A division is "expensive" to XLA and never duplicated: the
    field is computed once, into its own buffer, and the transform's buffers are freed at once.
    """
    if jnp.iscomplexobj(x):
        return lax.complex(own_buffer(x.real), own_buffer(x.imag))
    return x / ((x - x) + 1)


def laminar_profile(n: int) -> np.ndarray:
    """Chebyshev coefficients of ``1 - y^2`` on ``[-1, 1]`` (``T_0 / 2 - T_2 / 2``), length ``n``."""
    c = np.zeros(n)
    c[0], c[2] = 0.5, -0.5
    return c

