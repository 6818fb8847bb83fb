"""The clamped fourth-order tau solve by influence matrix (no-slip wall-normal velocity), along array axis 0.

Re-exported by :mod:`solvers.bases.tau` (conventions there): :func:`clamped_factor` once per ``(kappa2, h)``,
:func:`clamped_solve_factored` per right-hand side, :func:`clamped_solve` both at once.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ._blocks import leads_of, on_blocks
from ._chebyshev import ArrayLike, _coeffs, _lift, _param, _real_dtype, _rmul, boundary_derivatives
from ._helmholtz import HelmholtzFactor, _check_n, helmholtz_factor, helmholtz_solve

__all__ = ["ClampedFactor", "clamped_factor", "clamped_solve", "clamped_solve_factored"]


@partial(jax.tree_util.register_dataclass,
         data_fields=["phi_factor", "v_factor", "h", "phi_hom", "v_hom", "inv_slope", "active"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class ClampedFactor:
    """Precomputed part of :func:`clamped_solve` (a pytree), for one ``(n, kappa2, h)``.

    ``phi_factor``, ``v_factor``: Helmholtz factors of ``D^2 - (kappa2 + 1/h)`` and ``D^2 - kappa2`` (Dirichlet);
    ``phi_hom``, ``v_hom`` ``(n, *shape)``: the homogeneous solution with ``phi(+1) = 1, phi(-1) = 0`` and its
    ``v`` (its even/odd coefficients are half the even/odd homogeneous solutions); ``inv_slope`` ``(2, *shape)``:
    ``1 / v_hom'(+1)`` of its even and odd parts; ``active``: ``kappa2 != 0``. ``shape`` broadcasts
    ``kappa2`` and ``h``. A factor for ``phi`` alone (``clamped_factor(..., tables=False)``) has Helmholtz factors
    without tables and no ``v_hom`` (None).
    """

    phi_factor: HelmholtzFactor
    v_factor: HelmholtzFactor
    h: jax.Array
    phi_hom: jax.Array
    v_hom: jax.Array | None
    inv_slope: jax.Array
    active: jax.Array
    LEADS = {"phi_factor": 0, "v_factor": 0, "h": 0, "phi_hom": 1, "v_hom": 1, "inv_slope": 1, "active": 0}


def _parity_slopes(v: jax.Array) -> jax.Array:
    """``v'(+1)`` of the even and odd parts of ``v``, stacked ``(2, ...)``."""
    top, bottom = boundary_derivatives(v)
    return jnp.stack([(top - bottom) / 2, (top + bottom) / 2])


def _inv_slopes(v_hom: jax.Array, active: jax.Array) -> jax.Array:
    """``1 / v_hom'(+1)`` of the even and odd parts, ``(2, ...)`` (0 where not ``active``)."""
    slope = _parity_slopes(v_hom)
    return jnp.where(active, 1 / jnp.where(active, slope, 1), 0)


def _influence(phi: jax.Array, v: jax.Array, phi_hom: jax.Array, v_hom: jax.Array | None, inv_slope: jax.Array,
               active: jax.Array) -> tuple[jax.Array, jax.Array | None]:
    """Add the multiples of the homogeneous solutions that make ``v'(+-1) = 0``; zeros where not ``active``."""
    coef = -_rmul(_lift(inv_slope, 1, v.ndim - 1), _parity_slopes(v))
    coef = coef[np.arange(v.shape[0]) % 2]  # alpha on the even coefficients, beta on the odd ones
    return (jnp.where(active, phi + _rmul(_lift(phi_hom, 1, v.ndim - 1), coef), 0),
            None if v_hom is None else jnp.where(active, v + _rmul(_lift(v_hom, 1, v.ndim - 1), coef), 0))


@on_blocks(kappa2=0, h=0, out=leads_of)
def clamped_factor(n: int, kappa2: ArrayLike, h: ArrayLike, dtype=None, tables: bool = True) -> ClampedFactor:
    """Homogeneous solutions and influence coefficients of :func:`clamped_solve` (O(N) per trailing index).

    Args:
      n: number of Chebyshev coefficients ``N + 1``, ``>= 5``.
      kappa2: ``kappa^2 = kx^2 + kz^2 >= 0``, broadcastable against the trailing axes.
      h: ``h > 0`` (e.g. ``nu * dt`` times a scheme coefficient), a scalar or broadcastable like ``kappa2``.
      dtype: real precision; default: that of ``kappa2`` and ``h``.
      tables: False: a factor for ``phi`` alone, the least memory: Helmholtz factors without tables (each solve
        forms them with the same operations) and no ``v_hom`` (:func:`clamped_solve_factored` returns ``v = None``).

    Returns:
      A :class:`ClampedFactor`.

    Raises:
      ValueError: ``n < 5``.
    """
    _check_n(n, 5)
    rdt = _real_dtype(kappa2, h) if dtype is None else jnp.finfo(dtype).dtype
    kappa2, h = _param(kappa2, rdt), _param(h, rdt)
    shape = jnp.broadcast_shapes(kappa2.shape, h.shape)
    kappa2, h = jnp.broadcast_to(kappa2, shape), jnp.broadcast_to(h, shape)
    phi_factor = helmholtz_factor(n, kappa2 + 1 / h, "dirichlet", rdt, tables)
    v_factor = helmholtz_factor(n, kappa2, "dirichlet", rdt, tables)
    zero = jnp.zeros((n,) + shape, rdt)
    phi_hom = helmholtz_solve(phi_factor, zero, 1, 0)
    v_hom = helmholtz_solve(v_factor, phi_hom, 0, 0)
    active = kappa2 != 0
    return ClampedFactor(phi_factor, v_factor, h, phi_hom, v_hom if tables else None, _inv_slopes(v_hom, active),
                         active)


@on_blocks(factor=leads_of, r=1, out=1)
def clamped_solve_factored(factor: ClampedFactor, r: ArrayLike) -> tuple[jax.Array, jax.Array | None]:
    """:func:`clamped_solve` with a precomputed :func:`clamped_factor`.

    Args:
      factor: from :func:`clamped_factor` with ``n = r.shape[0]``.
      r: right-hand side coefficients ``(N + 1, ...)``.

    Returns:
      ``(phi, v)`` coefficients ``(N + 1, ...)`` (``v`` None for a factor without ``v_hom``).

    Raises:
      ValueError: ``r``'s length along axis 0 is not the factor's ``n``.
    """
    r = _coeffs(r, "r")
    if r.shape[0] != factor.phi_hom.shape[0]:
        raise ValueError(f"r must have {factor.phi_hom.shape[0]} coefficients along axis 0 (the factor's n), "
                         f"got shape {r.shape}")
    phi = helmholtz_solve(factor.phi_factor, -r / factor.h)
    v = helmholtz_solve(factor.v_factor, phi)
    return _influence(phi, v, factor.phi_hom, factor.v_hom, factor.inv_slope, factor.active)


def clamped_solve(r: ArrayLike, kappa2: ArrayLike, h: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """The clamped fourth-order tau solve of the Kim–Moin–Moser wall-normal velocity step, by influence matrix.

    Solves ``phi - h (D^2 - kappa2) phi = r`` and ``(D^2 - kappa2) v = phi`` (each in the tau sense: Chebyshev
    coefficients ``0 .. N-2`` hold) with ``v(+-1) = 0`` and ``v'(+-1) = 0``. The unknown ``phi(+-1)`` come from the
    influence-matrix method (Kleiser & Schumann 1980; Kim, Moin & Moser 1987): a particular solution with
    ``phi(+-1) = 0`` plus ``alpha`` times the even and ``beta`` times the odd homogeneous solution (``phi(+-1) = 1``
    resp. ``+-1``), with ``alpha``, ``beta`` (one scalar per parity and trailing index) making ``v'(+-1) = 0``.
    This is :func:`clamped_factor` (homogeneous solutions, real and of the parameters' shape) followed by
    :func:`clamped_solve_factored` (four O(N) sweeps over ``r``); precompute the factor when ``h`` is fixed.

    Where ``kappa2 == 0`` (the mean mode, handled separately by the caller) ``phi = v = 0`` is returned.

    Args:
      r: right-hand side coefficients ``(N + 1, ...)``, ``N >= 4``.
      kappa2: ``>= 0``, broadcastable against the trailing axes.
      h: ``> 0``, a scalar or broadcastable like ``kappa2``.

    Returns:
      ``(phi, v)`` coefficients ``(N + 1, *broadcast trailing shape)``.

    Raises:
      ValueError: fewer than 5 coefficients in ``r``.
    """
    r = _coeffs(r, "r", 5)
    return clamped_solve_factored(clamped_factor(r.shape[0], kappa2, h, _real_dtype(r, kappa2, h)), r)
