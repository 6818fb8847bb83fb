"""Implicit parts between walls, as blocks an equation composes: :class:`Diffusion`, :class:`NoSlipVelocity`, and
:class:`WallEquation`, which builds ``implicit_factor``/``implicit_solve`` from them.

Axis 0 of the grid is a Chebyshev axis between two walls, the other axes Fourier. A block solves ``(I - h L) y =
rhs`` for its own fields per horizontal wavenumber with the Chebyshev tau method (:mod:`solvers.bases.tau`), boundary
conditions included, on the grid's sharded spectral arrays as they are (each device solves its own wavenumbers; no
``local_map`` needed). A block is ``factor(grid, h)`` (once per step size) and ``solve(grid, rhs, factor, t=None)``;
an equation may write its own block with these two methods.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..bases import Chebyshev
from ..bases import tau as _tau
from ..bases.bc import Dirichlet, Robin, as_pair
from ..grids import Grid
from .equation import Equation
from .velocity_vorticity import WallVelocity

__all__ = ["Diffusion", "NoSlipVelocity", "WallEquation"]

#: the default condition of :class:`Diffusion` at both walls: the field held at 0
FIXED = Dirichlet(0.0)


def _wall_axis(grid: Grid, owner: str) -> float:
    """Half the distance between the walls (axis 0 must be Chebyshev)."""
    if not isinstance(grid, Grid) or not isinstance(grid.bases[0], Chebyshev):
        raise ValueError(f"{owner} needs a grid whose axis 0 is Chebyshev (a wall grid), got "
                         f"{getattr(grid, 'bases', grid)}")
    return grid.box_length[0] / 2


class Diffusion:
    """``kappa lap`` of a scalar field between the walls, with a boundary condition at each wall.

    Per horizontal wavenumber ``k`` it solves ``y - h kappa (d_y^2 - k^2) y = rhs`` with the conditions, a tau
    Helmholtz solve (:func:`~solvers.bases.tau.helmholtz_factor`: two O(ny) sweeps; a mixed or Robin pair adds
    O(ny)). The conditions hold for the physical field: their values (numbers, or functions of time) are uniform
    along the walls, so they enter the horizontal mean mode only; ``d/dn`` is the outward normal derivative in the
    grid's units (:mod:`solvers.bases.bc`).

    Args:
      kappa: the diffusivity (a number or a traced scalar), ``> 0``.
      bc: a condition for both walls, or ``(bottom, top)``: the wall at the low end of axis 0 first (default:
        ``Dirichlet(0)`` at both).

    Raises:
      TypeError: a ``bc`` that is no condition object or pair of them.
    """

    def __init__(self, kappa: Any, bc: Any = FIXED):
        self.kappa = kappa
        self.bc = as_pair(bc)

    def __repr__(self) -> str:
        return f"Diffusion({self.kappa!r}, bc={self.bc!r})"

    def factor(self, grid: Grid, h: jax.Array) -> dict:
        """The Helmholtz factor of each horizontal wavenumber for ``h`` (no per-row tables: each solve forms them),
        on the grid's spectral sharding.

        Raises:
          ValueError: a grid whose axis 0 is not Chebyshev.
        """
        half = _wall_axis(grid, "Diffusion")
        scale = half ** 2  # d^2/dy^2 = d^2/dxi^2 / scale on the reference interval [-1, 1]
        hs = jnp.asarray(h * self.kappa / scale, grid.dtype)
        k2 = _kappa2(grid) * scale
        bc = tuple(c.on_interval(half) for c in self.bc)
        factor = _tau.helmholtz_factor(grid.shape[0], k2 + 1 / hs, bc, dtype=grid.dtype, tables=False)
        return {"factor": factor, "hs": hs}

    def solve(self, grid: Grid, rhs: jax.Array, factor: dict, t: Any = None) -> jax.Array:
        """``y`` with ``(I - h kappa lap) y = rhs`` and the conditions (``factor`` from :meth:`factor`).

        Args:
          grid: the grid. rhs: spectral coefficients ``grid.spectral_shape`` (the state's sharding).
          factor: from :meth:`factor`. t: the time of the conditions' values (needed where one is a function).

        Raises:
          ValueError: a value that is a function of time and no ``t``.
        """
        bottom, top = (self._data(grid, c, t) for c in self.bc)
        return _tau.helmholtz_solve(factor["factor"], -rhs / factor["hs"], top, bottom)

    def _data(self, grid: Grid, cond: Robin, t: Any) -> Any:
        """The condition's value on the horizontal mean mode (0 elsewhere), broadcastable to the trailing axes."""
        if callable(cond.value):
            if t is None:
                raise ValueError(f"{self!r}: a boundary value that is a function of time needs the time: "
                                 "solve(..., t=...)")
            value = cond.on_interval(_wall_axis(grid, "Diffusion")).at(t)
        else:
            value = cond.on_interval(_wall_axis(grid, "Diffusion")).value
        if isinstance(value, (int, float)) and value == 0:
            return 0.0
        return jnp.asarray(value) * _mean(grid)


class NoSlipVelocity:
    """The velocity between no-slip walls in velocity-vorticity form, diffused by ``nu lap``.

    The implicit block of :class:`~solvers.WallVelocity`'s fields ``(phi[, g])`` stacked on a leading axis:
    ``phi`` by the clamped influence-matrix solve (``v = v' = 0`` at both walls), ``g`` and the mean flow by
    Dirichlet solves (``0`` at both walls); with ``flux`` a uniform pressure gradient keeps the wall-normal mean of
    the mean flow along axis 1 at ``flux``.

    Args:
      nu: the viscosity (a number or a traced scalar). flux: the imposed mean of ``U_1``, or None.
    """

    def __init__(self, nu: Any, flux: float | None = None):
        self.nu = nu
        self.flux = flux

    def __repr__(self) -> str:
        return f"NoSlipVelocity({self.nu!r}, flux={self.flux!r})"

    def factor(self, grid: Grid, h: jax.Array) -> dict:
        """:meth:`WallVelocity.factor <solvers.WallVelocity.factor>` for ``h``."""
        return WallVelocity(grid).factor(h, self.nu, self.flux)

    def solve(self, grid: Grid, rhs: jax.Array, factor: dict, t: Any = None) -> jax.Array:
        """:meth:`WallVelocity.solve_factored <solvers.WallVelocity.solve_factored>` (``t`` unused: the walls are
        at rest)."""
        return WallVelocity(grid).solve_factored(rhs, factor, self.flux)


class WallEquation(Equation):
    """An equation between walls whose implicit part is composed of blocks: a subclass writes
    :meth:`implicit_parts` (and ``nonlinear``); ``implicit_factor`` and ``implicit_solve`` come from here.

    The state is either a dict of named fields, one key per block (``{"velocity": ..., "theta": ...}``), or one
    array whose leading axis stacks the fields (the built-in equations' layout): then :meth:`state_slices` says
    which entries each block owns. The blocks solve one after the other (one block's buffers alive at a time).
    """

    def implicit_parts(self) -> dict[str, Any]:
        """Name -> block (an object with ``factor(grid, h)`` and ``solve(grid, rhs, factor, t=None)``), read at
        every call, so parameters replaced by :meth:`~solvers.Equation.with_params` take effect."""
        raise NotImplementedError(f"{self.label()} must define implicit_parts()")

    def state_slices(self) -> dict[str, slice] | None:
        """For a state that is one array: name -> the slice of its leading axis each block owns; None (default):
        the state is a dict keyed like :meth:`implicit_parts`."""
        return None

    def implicit_factor(self, h: jax.Array) -> dict:
        """Each block's factor for ``h`` (once per step size)."""
        return {name: block.factor(self.grid, h) for name, block in self.implicit_parts().items()}

    def implicit_solve(self, rhs: Any, factor: dict, t: Any = None) -> Any:
        """``y`` with ``(I - h L) y = rhs``, block by block (``t``: the time of boundary values that depend on it)."""
        parts, slices = self.implicit_parts(), self.state_slices()
        after = WallVelocity(self.grid).after  # x once y has been computed: no cost, no communication
        out, last = {}, None
        for name, block in parts.items():
            r = rhs[name] if slices is None else rhs[slices[name]]
            if slices is not None and isinstance(block, Diffusion):
                y = jnp.stack([block.solve(self.grid, after(r[i], last), factor[name], t) for i in range(len(r))])
            else:
                y = block.solve(self.grid, after(r, last), factor[name], t)
            out[name], last = y, y
        if slices is None:
            return out
        ordered = [out[k] for k in sorted(out, key=lambda k: slices[k].start or 0)]
        return ordered[0] if len(ordered) == 1 else jnp.concatenate(ordered)

    def planned_parts(self) -> tuple:
        """The objects whose programs depend on the run's grid size (the memory check's probe tells them the
        run's points through their ``planned_points``): the equation and its :class:`~solvers.WallVelocity`."""
        return (self,) + tuple(v for v in vars(self).values() if isinstance(v, WallVelocity))


def _kappa2(grid: Grid) -> jax.Array:
    """``kx^2 (+ kz^2)`` per horizontal wavenumber (true wavenumbers, Nyquist included), the trailing shape."""
    return sum(grid.wavenumbers(a, odd=False) ** 2 for a in range(1, grid.ndim))[0]


def _mean(grid: Grid) -> jax.Array:
    """1 at the horizontal mean mode, 0 elsewhere, the trailing shape."""
    out = 1.0
    for d in range(1, grid.ndim):
        out = out * grid.spectral_along(np.asarray(grid.bases[d].modes() == 0, float), d)
    return out[0]

