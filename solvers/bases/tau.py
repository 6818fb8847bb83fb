"""Chebyshev tau solves along array axis 0: Helmholtz with a condition at each wall, and the clamped solve.

A field along the wall-normal axis is a Chebyshev series ``u(y) = sum_{k=0}^{N} a_k T_k(y)``, ``y in [-1, 1]``;
arrays hold ``a_0 .. a_N`` along axis 0 (length ``n = N + 1``) followed by any trailing (batch) axes, real or
complex, float32 or float64. Every function is pure ``jax.numpy``/``jax.lax`` (jit-able, differentiable), works
along axis 0 only and costs O(N) work and memory per trailing index: the only tables are 1D (length ~N) and shared
by all trailing indices. So they run on each device's block of arrays sharded on the trailing axes, with no
communication: called on a wall grid's (explicitly sharded) spectral arrays they run in a ``jax.shard_map`` of
their own (tables such as ``lam`` sliced to each block), and inside :meth:`~solvers.Grid.local_map` on its blocks.
Axis 0 must be whole on each device (a wall grid keeps it so); outputs are laid out like the inputs. The
coefficient operators (:func:`derivative`, :func:`boundary_values`, :func:`boundary_derivatives`,
:func:`integrate`, :func:`mean_square`) are here too. :class:`~solvers.Diffusion` and
:class:`~solvers.NoSlipVelocity` wrap the solves as the implicit parts of an equation on a grid.

Parameters such as ``lam``, ``kappa2`` and ``h`` are arrays (or scalars) broadcastable against the trailing axes
(numpy rules, aligned on the right), e.g. one Helmholtz constant per horizontal wavenumber.

Boundary conditions (``bc``): ``"dirichlet"`` (the values ``u(+-1)``) or ``"neumann"`` (the slopes ``u'(+-1)``) at
both walls, with the data ``top``, ``bottom``; or condition objects of :mod:`solvers.bases.bc`, one per wall,
``bc=(bottom, top)`` (``Dirichlet``, ``Neumann``, ``Robin``: ``a u + b du/dn = value`` with ``d/dn`` along the
outward normal, derivatives in ``y`` of ``[-1, 1]``). Two walls of one kind, Dirichlet or Neumann, take the fast
parity-split solve (``_helmholtz.py``: two O(N) sweeps); any other pair adds to the Dirichlet solve a combination
of two homogeneous solutions fixed by the two boundary rows (``_robin.py``: the same sweeps plus O(N)).
"""

from __future__ import annotations

from typing import Any

import jax

from . import _helmholtz, _robin
from ._blocks import on_blocks
from ._chebyshev import ArrayLike, _coeffs, _real_dtype
from ._chebyshev import boundary_derivatives as boundary_derivatives
from ._chebyshev import boundary_values as boundary_values
from ._chebyshev import derivative as derivative
from ._chebyshev import integrate as integrate
from ._chebyshev import mean_square as mean_square
from ._clamped import ClampedFactor as ClampedFactor
from ._clamped import clamped_factor as clamped_factor
from ._clamped import clamped_solve as clamped_solve
from ._clamped import clamped_solve_factored as clamped_solve_factored
from ._helmholtz import BCS as BCS
from ._helmholtz import HelmholtzFactor as HelmholtzFactor
from ._robin import BoundaryFactor as BoundaryFactor
from .bc import Robin, as_pair, evaluate

__all__ = ["BCS", "BoundaryFactor", "ClampedFactor", "HelmholtzFactor", "boundary_derivatives", "boundary_values",
           "clamped_factor", "clamped_solve", "clamped_solve_factored", "derivative", "helmholtz",
           "helmholtz_factor", "helmholtz_solve", "integrate", "mean_square"]


def _objects(bc: Any) -> tuple[Robin, Robin] | None:
    """``(bottom, top)`` of condition objects, or None for a string ``bc``; ValueError/TypeError otherwise."""
    if isinstance(bc, str):
        if bc not in BCS:
            raise ValueError(f"bc must be one of {BCS} or boundary conditions (bottom, top), got {bc!r}")
        return None
    return as_pair(bc)


def helmholtz_factor(n: int, lam: ArrayLike, bc: Any = "dirichlet", dtype=None, tables: bool = True
                     ) -> HelmholtzFactor | BoundaryFactor:
    """Factor the tau Helmholtz operator ``D^2 - lam`` with its boundary conditions, for reuse over many ``f``.

    Args:
      n: number of Chebyshev coefficients ``N + 1`` (the length of axis 0 of ``f``), ``>= 3``.
      lam: Helmholtz constant(s), broadcastable against the trailing axes of ``f``; ``lam >= 0`` (real) is the
        intended range (then no pivoting is needed); complex values are accepted.
      bc: ``"dirichlet"`` (values ``u(+-1)``), ``"neumann"`` (slopes ``u'(+-1)``), or condition objects
        ``(bottom, top)`` (:mod:`solvers.bases.bc`; one object: both walls). The factor depends on the conditions'
        kinds and coefficients, not on their values (given to each solve).
      dtype: real precision of the factor; default: that of ``lam`` (float64 for Python scalars under x64).
      tables: keep the fast solve's per-row tables (``5 ceil(n/2)`` numbers per ``lam``); False keeps only ``lam``
        and each solve forms the tables as it sweeps (a division more per row and entry; the same operations),
        which spares their memory where a solve runs inside a time loop.

    Returns:
      A :class:`HelmholtzFactor` for a string ``bc`` (arrays ``(ceil(n/2) - 1, 2, *lam.shape)``, None without
      tables), else a :class:`BoundaryFactor`.

    Raises:
      ValueError: ``n < 3`` or an unknown ``bc`` string. TypeError: a ``bc`` that is neither.
    """
    pair = _objects(bc)
    if pair is None:
        return _helmholtz.helmholtz_factor(n, lam, bc, dtype, tables)
    return _robin.boundary_factor(n, lam, *pair, dtype=dtype, tables=tables)


def helmholtz_solve(factor: HelmholtzFactor | BoundaryFactor, f: ArrayLike, top: ArrayLike = 0,
                    bottom: ArrayLike = 0) -> jax.Array:
    """Solve ``u'' - lam u = f`` (tau) with the boundary conditions of ``factor``, by two O(N) sweeps.

    Args:
      factor: from :func:`helmholtz_factor` (with ``n = f.shape[0]``).
      f: right-hand side coefficients ``(N + 1, ...)``; ``f_{N-1}, f_N`` are ignored (tau).
      top, bottom: the data at ``y = +1`` and ``y = -1``, broadcastable to the trailing axes: ``u(+-1)``
        (``"dirichlet"``), ``u'(+-1)`` (``"neumann"``), or the ``value`` of each wall's condition object (its
        right-hand side; e.g. :func:`solvers.bases.bc.values` at a time ``t``).

    Returns:
      ``u`` coefficients, shape ``(N + 1, *broadcast trailing shape)``.

    Raises:
      ValueError: ``f``'s length along axis 0 is not ``factor.n``.
    """
    if isinstance(factor, BoundaryFactor):
        f = _coeffs(f, "f")
        if f.shape[0] != factor.n:
            raise ValueError(f"f must have factor.n = {factor.n} coefficients along axis 0, got shape {f.shape}")
        return _robin.boundary_solve(factor, f, top, bottom)
    return _helmholtz.helmholtz_solve(factor, f, top, bottom)


@on_blocks(f=1, lam=0, top=0, bottom=0, out=1)
def helmholtz(f: ArrayLike, lam: ArrayLike, bc: Any = "dirichlet", top: ArrayLike | None = None,
              bottom: ArrayLike | None = None, t: Any = 0.0) -> jax.Array:
    """Tau solution of ``u'' - lam u = f`` with two boundary conditions (:func:`helmholtz_factor` + solve).

    Coefficients ``0 .. N-2`` of the equation hold exactly; the two highest are replaced by the boundary
    conditions: ``u(+1) = top, u(-1) = bottom`` (``bc="dirichlet"``), ``u'(+1) = top, u'(-1) = bottom``
    (``bc="neumann"``), or each wall's condition object (``bc=(bottom, top)``, their values at time ``t`` unless
    ``top``/``bottom`` are given). The pure Neumann problem ``lam = 0`` is singular: there ``a_0 = 0`` is returned
    and the even-parity boundary condition ``u'(+1) - u'(-1) = top - bottom`` holds only if ``f`` is compatible
    with it (a mixed pair whose boundary rows are singular adds no homogeneous solution).

    Args:
      f: right-hand side coefficients ``(N + 1, ...)``, ``N >= 2``, real or complex.
      lam: Helmholtz constant(s) broadcastable against the trailing axes (``lam >= 0`` intended).
      bc: ``"dirichlet"``, ``"neumann"`` or condition objects ``(bottom, top)`` (:mod:`solvers.bases.bc`).
      top, bottom: boundary data broadcastable against the trailing axes (None: 0, or the conditions' values).
      t: the time at which conditions whose values are functions of time are evaluated.

    Returns:
      ``u`` coefficients ``(N + 1, ...)``, dtype promoted from ``f``, ``lam`` and the boundary data.

    Raises:
      ValueError: an unknown ``bc`` or fewer than 3 coefficients in ``f``. TypeError: a ``bc`` of another type.
    """
    pair = _objects(bc)
    if pair is None:
        return _helmholtz.helmholtz(f, lam, bc, 0 if top is None else top, 0 if bottom is None else bottom)
    f = _coeffs(f, "f", 3)
    given = evaluate(pair, t, _real_dtype(f, lam))
    bottom = given[0] if bottom is None else bottom
    top = given[1] if top is None else top
    factor = _robin.boundary_factor(f.shape[0], lam, *pair, dtype=_real_dtype(f, lam, top, bottom), tables=False)
    return _robin.boundary_solve(factor, f, top, bottom)
