"""Plane channel flow between no-slip walls at ``y = -1`` and ``y = 1``, periodic in x (and z in 3D)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..bases import Chebyshev
from ..bases import tau as _tau
from ..grids import Grid
from ..model import InitialCondition, NoSlipVelocity, Param, WallEquation, WallVelocity, laminar_profile
from ..model.velocity_vorticity import own_buffer

DRIVES = ("flow-rate", "pressure")
#: wall-normal mean of the laminar profile ``U = 1 - y^2``: the bulk velocity a flow-rate drive keeps
LAMINAR_BULK = 2.0 / 3.0


def _laminar(eq: Channel) -> jax.Array:
    """Laminar Poiseuille flow ``U = 1 - y^2``."""
    return eq.state_from_tables()


def _tollmien_schlichting(eq: Channel, alpha: float, amplitude: float) -> jax.Array:
    """Laminar flow plus ``amplitude`` times the least stable Orr-Sommerfeld mode of wavenumber ``alpha`` of the
    equation's base flow (``u' = amplitude Re(u_hat(y) exp(i alpha x))`` with ``max |u_hat| = 1``), spanwise
    uniform."""
    from ..stability import orr_sommerfeld

    g = eq.grid
    m = alpha * g.box_length[1] / (2 * math.pi)
    if abs(m - round(m)) > 1e-9 or round(m) < 1 or round(m) >= g.shape[1] // 2:
        raise ValueError(f"{eq.label()}: parameter alpha = {alpha:g} of the Orr-Sommerfeld mode must be a "
                         f"positive multiple of "
                         f"2 pi / Lx = {2 * math.pi / g.box_length[1]:.6g} below the x resolution (Lx = 2 pi / alpha "
                         "is the default box)")
    n = g.shape[0]
    _, v = orr_sommerfeld.least_stable_mode(eq.Re, alpha, n=max(n - 1, 96), profile=eq.profile)
    v = np.pad(np.asarray(v), (0, max(0, n - len(v))))[:n]
    d2 = np.polynomial.chebyshev.chebder(v, 2)
    phi = np.pad(d2, (0, n - len(d2))) - alpha ** 2 * v  # lap v of the mode, y in [-1, 1] (host arithmetic)
    return eq.state_from_tables(mode=(int(round(m)), 0.5 * amplitude * phi))


def _turbulent(eq: Channel, amplitude: float, seed: int) -> jax.Array:
    """Laminar flow plus a random perturbation of rms velocity ``amplitude`` in the lowest modes (horizontal mode
    numbers ``|m| <= 4``, Chebyshev degree ``<= ny / 2``), smoothed by one implicit diffusion solve so that it
    satisfies the wall conditions; in 3D at ``Re`` of a few thousand it goes turbulent."""
    g, kmm = eq.grid, eq.kmm
    keys = jax.random.split(jax.random.key(int(seed)), kmm.fields)
    noise = jnp.stack([g.place(lambda s, k=k: jax.random.normal(k, g.shape, g.dtype, out_sharding=s), g.real_sharding())
                       for k in keys])

    def build(noise):
        off_mean = 1 - kmm.mean_mask()
        low = g.along(np.arange(g.shape[0]) <= g.shape[0] // 2, 0)
        for d in range(1, g.ndim):
            low = low * g.along(np.abs(g.bases[d].modes()) <= 4, d)
        s = kmm.solve(g.forward(noise) * low * off_mean, jnp.asarray(1e-2, g.dtype), 1.0) * off_mean
        u, _ = kmm.velocity(s)
        return s * (amplitude / jnp.sqrt(g.mean_square(u) / eq.dim))
    if not jax.sharding.get_abstract_mesh().empty:  # already under a mesh (the driver's, or traced by its checks)
        return jax.jit(build)(noise) + eq.state_from_tables()  # one program: eager, the solve is ~1000 small ones
    with jax.set_mesh(g.mesh):
        return jax.jit(build)(noise) + eq.state_from_tables()


#: the initial conditions every wall-bounded shear flow of this formulation has (channel, Couette)
ORR_SOMMERFELD_MODE = InitialCondition(_tollmien_schlichting, (
    Param("alpha", 1.0, "streamwise wavenumber of the Orr-Sommerfeld mode", low=0, low_open=True),
    Param("amplitude", 1e-5, "max |u'| of the mode", low=0)),
    "laminar + amplitude x the least stable Orr-Sommerfeld mode (default box Lx = 2 pi / alpha)")
TURBULENT = InitialCondition(_turbulent, (
    Param("amplitude", 0.1, "rms velocity of the random perturbation", low=0),
    Param("seed", 0, "random seed", int, low=0)),
    "laminar + a random perturbation satisfying the wall conditions (3D transition)")


class Channel(WallEquation):
    """Incompressible flow between no-slip walls at ``y = -1, 1``, periodic in x (and z), driven at constant
    flow rate (default) or constant pressure gradient.

    Units: half-width ``h`` and the centreline velocity ``U_c`` of laminar Poiseuille flow ``U = 1 - y^2``;
    ``Re = U_c h / nu``. ``drive="flow-rate"`` keeps the bulk velocity at the laminar ``2/3`` (bulk Reynolds
    number ``2 h U_b / nu = 4 Re / 3``; Lee & Moser's ``Re_tau = 180`` case, ``Re_b = 5600``, is ``Re = 4200``)
    with a uniform pressure gradient found at every implicit stage; ``drive="pressure"`` applies the laminar
    gradient ``2 / Re``. Formulation: velocity-vorticity (Kim, Moin & Moser 1987;
    :class:`~solvers.model.WallVelocity`), Chebyshev tau in y with the influence-matrix method for ``v = v' = 0``,
    Fourier in x and z, rotational nonlinear term dealiased by the grid's rule, IMEX time stepping with banded
    implicit solves (the implicit part is the block :class:`~solvers.NoSlipVelocity`).

    Grid: ``(ny, nx[, nz])`` with ``y`` first (:func:`~solvers.grids.wall_grid` with ``walls=(-1, 1)``: Chebyshev
    Gauss-Lobatto points, walls included). State: complex ``(F,) + grid.spectral_shape`` (``(ny, nx // 2)`` in 2D,
    ``(ny, nx, nz // 2 + 1)`` in 3D), ``F = 1`` in 2D, 2 in 3D (see :class:`~solvers.model.WallVelocity`), on
    ``grid.spectral_sharding(1)``.

    Args:
      grid: a wall grid of shape ``(ny, nx[, nz])`` whose axis 0 is Chebyshev on ``[-1, 1]``
        (:func:`~solvers.wall_grid` with ``walls=(-1, 1)``), used as it is.
      Re: Reynolds number. drive: ``flow-rate`` or ``pressure``.

    Raises:
      ValueError: bad parameters (naming them), a grid whose axis 0 is not Chebyshev on ``[-1, 1]``.
    """

    #: the laminar flow (``orr_sommerfeld.PROFILES``): Poiseuille ``U = 1 - y^2``
    profile = "poiseuille"
    #: sign of ``nu dU/dy`` in the shear stress reported at the (bottom, top) wall: the drag the flow exerts on
    #: each wall, positive for laminar Poiseuille flow on both
    wall_signs = (1.0, -1.0)
    grid_ndims = (2, 3)
    parameters = (
        Param("Re", 5000.0, "Reynolds number U_c h / nu of the laminar flow U = 1 - y^2", low=0, low_open=True,
              reciprocal="nu"),
        Param("drive", "flow-rate", "flow-rate (bulk velocity kept at the laminar 2/3) or pressure (the laminar "
              "pressure gradient 2 / Re)", str, choices=DRIVES),
    )
    initial_conditions = {
        "laminar": InitialCondition(_laminar, (), "laminar Poiseuille flow U = 1 - y^2"),
        "tollmien-schlichting": ORR_SOMMERFELD_MODE,
        "turbulent": TURBULENT,
    }

    def __init__(self, grid: Grid, Re: float = 5000.0, drive: str = "flow-rate"):
        self._walls(grid, Re=Re, drive=drive)

    def _walls(self, grid: Grid, **params: Any) -> None:
        """The grid (checked, never replaced), the parameters and the velocity machinery."""
        super().__init__(channel_grid(grid, self.label()), **params)
        self.dim = self.grid.ndim
        self.kmm = WallVelocity(self.grid)

    @property
    def nu(self) -> float:
        """Kinematic viscosity ``1 / Re`` (derived on every use, so ``with_params(Re=...)`` carries through)."""
        return 1.0 / self.Re

    def abstract_state(self) -> jax.ShapeDtypeStruct:
        g = self.grid
        return jax.ShapeDtypeStruct((self.kmm.fields,) + g.spectral_shape, g.cdtype, sharding=g.spectral_sharding(1))

    def state_from_tables(self, mode: tuple[int, np.ndarray] | None = None) -> jax.Array:
        """The laminar state, plus ``mode = (m, phi_coeffs)``: ``phi`` at streamwise index ``m`` (and its complex
        conjugate at ``-m``), spanwise mode 0."""
        g, kmm = self.grid, self.kmm
        lam = self.held_profile()

        def build():
            s = g.along(lam, 0) * kmm.mean_mask()
            if mode is not None:
                m, phi = mode
                idx = np.round(g.bases[1].modes()).astype(int)
                at = g.along(phi, 0, real=False) * g.along(idx == m, 1) + \
                    g.along(np.conj(phi), 0, real=False) * g.along(idx == -m, 1)
                for d in range(2, g.ndim):
                    at = at * g.along(g.bases[d].modes() == 0, d)
                s = s + at
            s = jnp.broadcast_to(s.astype(g.cdtype), g.spectral_shape)
            return g.reshard(jnp.stack([s] + [jnp.zeros_like(s)] * (kmm.fields - 1)), g.spectral_sharding(1))
        if not jax.sharding.get_abstract_mesh().empty:  # already under a mesh (traced by the driver's checks)
            return jax.jit(build)()
        with jax.set_mesh(g.mesh):
            return jax.jit(build)()

    # ----- base flow -----------------------------------------------------------------------------------
    def laminar(self) -> np.ndarray:
        """Chebyshev coefficients (length ``ny``) of the laminar profile ``U(y)``: ``1 - y^2``."""
        return laminar_profile(self.grid.shape[0])

    def lift(self) -> np.ndarray | None:
        """Chebyshev coefficients of the part of the mean profile that the state does not hold (a profile with
        the walls' velocities, so that the state's mean is zero at the walls), or None: the channel holds all."""
        return None

    def held_profile(self) -> np.ndarray:
        """The laminar profile's part held in the state's mean slot (the laminar profile minus the lift)."""
        lift = self.lift()
        return self.laminar() if lift is None else self.laminar() - lift

    def velocity(self, s: jax.Array) -> jax.Array:
        """Spectral velocity components ``(v, u[, w])`` (wall-normal first), the lift included."""
        return jnp.stack(self._velocity_parts(s))

    def _velocity_parts(self, s: jax.Array) -> list[jax.Array]:
        u, _ = self.kmm.velocity_parts(s)
        lift = self.lift()
        if lift is not None:
            u[1] = u[1] + self.grid.along(lift, 0) * self.kmm.mean_mask()
        return u

    # ----- equation ------------------------------------------------------------------------------------
    def implicit_parts(self) -> dict:
        """The velocity between the walls (viscosity ``1 / Re``; the flow-rate drive's imposed bulk velocity)."""
        return {"velocity": NoSlipVelocity(self.nu, self._flux())}

    def state_slices(self) -> dict:
        return {"velocity": slice(0, self.kmm.fields)}

    def _flux(self) -> float | None:
        return LAMINAR_BULK if self.drive == "flow-rate" else None

    def _mean_force(self) -> jax.Array | float:
        """The uniform streamwise body force of the pressure drive (Chebyshev coefficients along y), else 0."""
        if self.drive == "pressure":
            return self.grid.along(np.eye(self.grid.shape[0])[0], 0) * (2 * self.nu)
        return 0.0

    def nonlinear(self, s: jax.Array, t: jax.Array) -> jax.Array:
        """The Lamb vector's tendency, its fields transformed one at a time, or together on a small grid
        (:meth:`WallVelocity.physical`)."""
        kmm = self.kmm
        u = self._velocity_parts(s)
        w = kmm.vorticity_parts(u, s)
        p = kmm.physical(w + u)  # one after the other, or together where small
        w, u = p[: len(w)], p[len(w):]
        H = kmm.lamb_parts(u, w if self.dim == 3 else w[0])
        return own_buffer(kmm.tendency(kmm.spectra(H, after=u[-1]), self._mean_force()))

    # ----- diagnostics ---------------------------------------------------------------------------------
    def mean_profile(self, s: jax.Array) -> jax.Array:
        """Chebyshev coefficients of the mean streamwise velocity ``U(y)`` (replicated), the lift included."""
        U = self.grid.replicate(jnp.sum((s[0] * self.kmm.mean_mask()).real, axis=tuple(range(1, self.dim))))
        lift = self.lift()
        return U if lift is None else U + jnp.asarray(lift, U.dtype)

    def energy(self, s: jax.Array) -> jax.Array:
        """Kinetic energy ``<|u|^2> / 2`` (volume mean; component by component: no stacked copy)."""
        return 0.5 * sum(self.grid.mean_square(u) for u in self._velocity_parts(s))

    def perturbation_energy(self, s: jax.Array) -> jax.Array:
        """``<|u - U_laminar|^2> / 2`` (:meth:`laminar`; component by component)."""
        u = self._velocity_parts(s)
        u[1] = u[1] - self.grid.along(self.laminar(), 0) * self.kmm.mean_mask()
        return 0.5 * sum(self.grid.mean_square(c) for c in u)

    def diagnostics(self, s: jax.Array, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        U = self.mean_profile(s)
        dU = _tau.derivative(U)
        top, bottom = _tau.boundary_values(dU)
        tau_b, tau_t = self.wall_signs[0] * self.nu * bottom, self.wall_signs[1] * self.nu * top
        return {"energy": self.energy(s), "perturbation_energy": self.perturbation_energy(s),
                "bulk_velocity": 0.5 * _tau.integrate(U), "wall_shear_bottom": tau_b, "wall_shear_top": tau_t,
                "re_tau": jnp.sqrt(jnp.maximum(0.5 * (tau_b + tau_t), 0)) / self.nu}

    def max_rate(self, s: jax.Array) -> jax.Array:
        return self.kmm.max_rate(self.kmm.physical(self._velocity_parts(s), padded=False))

    def physical_fields(self, s: jax.Array) -> dict[str, jax.Array]:
        """Streamwise ``u``, wall-normal ``v`` and (3D) spanwise ``w`` velocity on the Chebyshev points."""
        p = self.kmm.physical(self._velocity_parts(s), padded=False)
        out = {"u": p[1], "v": p[0]}
        if self.dim == 3:
            out["w"] = p[2]
        return out


def channel_grid(grid: Grid, owner: str = "Channel") -> Grid:
    """``grid`` itself, checked: axis 0 Chebyshev on ``[-1, 1]``, the other axes Fourier.

    Raises:
      ValueError: another grid (naming what is wrong and how to build the right one).
    """
    first = grid.bases[0]
    if not isinstance(first, Chebyshev):
        raise ValueError(f"{owner}: grid axis 0 must be Chebyshev between the walls, got {type(first).__name__}; "
                         "build the grid with solvers.wall_grid(shape, mesh, walls=(-1.0, 1.0), lengths=...)")
    if first.domain != (-1.0, 1.0):
        raise ValueError(f"{owner}: the walls must be at y = -1 and y = 1 (axis 0 on [-1, 1]), got the "
                         f"interval {first.domain}")
    return grid
