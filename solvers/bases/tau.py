"""Chebyshev tau solves along array axis 0: Helmholtz (Dirichlet or Neumann) and the clamped influence-matrix solve.

A field along the wall-normal axis is a Chebyshev series ``u(y) = sum_{k=0}^{N} a_k T_k(y)``, ``y in [-1, 1]``;
arrays hold ``a_0 .. a_N`` along axis 0 (length ``n = N + 1``) followed by any trailing (batch) axes, real or
complex, float32 or float64. Every function is pure ``jax.numpy``/``jax.lax`` (jit-able, differentiable), works
along axis 0 only and costs O(N) work and memory per trailing index: the only tables are 1D (length ~N) and shared
by all trailing indices. So they run on each device's block of arrays sharded on the trailing axes, with no
communication: on a wall grid's (explicitly sharded) spectral arrays in a ``jax.shard_map`` of their own (tables
such as ``lam`` sliced to each block), inside :meth:`~solvers.Grid.local_map` on its blocks. Axis 0 must be whole
on each device (a wall grid keeps it so); outputs are laid out like the inputs. The coefficient operators
(:func:`derivative`, :func:`boundary_values`, :func:`boundary_derivatives`, :func:`integrate`, :func:`mean_square`)
are here too. :class:`~solvers.WallVelocity` wraps the solves for no-slip velocities and fixed-value scalars.

Parameters such as ``lam``, ``kappa2`` and ``h`` are arrays (or scalars) broadcastable against the trailing axes
(numpy rules, aligned on the right), e.g. one Helmholtz constant per horizontal wavenumber.

Helmholtz algorithm (Gottlieb & Orszag 1977; Canuto, Hussaini, Quarteroni & Zang 1988, section 5.1.2): with
``g = u''`` (``g_j = 0`` for ``j > N - 2``) the second integration gives, for ``k >= 2``,
``a_k = c_{k-2} g_{k-2} / (4k(k-1)) - e_k g_k / (2(k^2-1)) + e_{k+2} g_{k+2} / (4k(k+1))`` (``c_0 = 2``, else 1;
``e_j = 1`` for ``j <= N - 2``, else 0). Substituting the tau equations ``g_j = f_j + lam a_j`` (``j <= N - 2``)
gives, per parity of ``k``, a tridiagonal system in ``x_i = a_{2i+p}`` (rows ``i >= 1``) plus one dense boundary
row in all ``x_i``. Solved in O(N) without pivoting: a backward sweep ``x_i = P_i x_{i-1} + Q_i`` (rows ``k >= 3``
are diagonally dominant for ``lam >= 0``; the two highest rows of a parity have no upper entry, so the sweep starts
there), the boundary row written as ``W_0 x_0 + sum_{i>=1} W_i Q_i = beta`` with ``W_i = w_i + P_{i+1} W_{i+1}``
fixes ``x_0``, and a forward recursion ``x_i = P_i x_{i-1} + Q_i`` gives the rest, except that the top unknown of
a parity is taken from the boundary row where its own row would amplify rounding (``|P_M| = lam / (4N^2)`` large;
see :func:`_finish`). Both parities run in the same loop step, stacked on a new axis 1. A factored solve
(:func:`helmholtz_factor` once, :func:`helmholtz_solve` per right-hand side) is two sweeps over the data; the
one-shot :func:`helmholtz`, and a factor kept without its tables, form the factor in the first of the two.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._blocks import leads_of, on_blocks
from ._chebyshev import (
    ArrayLike,
    _boundary_weights,
    _coeffs,
    _down,
    _lift,
    _merge,
    _param,
    _real_dtype,
    _rmul,
    _row_tables,
    _split,
    _up,
)
from ._chebyshev import boundary_derivatives as boundary_derivatives
from ._chebyshev import boundary_values as boundary_values
from ._chebyshev import derivative as derivative
from ._chebyshev import integrate as integrate
from ._chebyshev import mean_square as mean_square

__all__ = ["BCS", "ClampedFactor", "HelmholtzFactor", "boundary_derivatives", "boundary_values", "clamped_factor",
           "clamped_solve", "clamped_solve_factored", "derivative", "helmholtz", "helmholtz_factor", "helmholtz_solve",
           "integrate", "mean_square"]

#: the boundary conditions of the Helmholtz solve: the value (Dirichlet) or the slope (Neumann) at each wall
BCS = ("dirichlet", "neumann")


# ------------------------------------------------------------------------------------------------ Helmholtz


@partial(jax.tree_util.register_dataclass, data_fields=["p", "inv_den", "upper", "weight", "inv_w0", "lam"],
         meta_fields=["n", "bc"])
@dataclasses.dataclass(frozen=True)
class HelmholtzFactor:
    """The ``lam``-dependent part of a tau Helmholtz solve (a pytree; ``n``, ``bc`` static).

    Rows ``i = 1 .. h-1`` of both parities (``h = ceil(n/2)``), arrays ``(h - 1, 2, *lam.shape)``: ``p`` (the sweep's
    ``P_i``), ``inv_den`` (``1 / (D_i + U_i P_{i+1})``), ``upper`` (``-U_i / (D_i + U_i P_{i+1})``), ``weight``
    (``W_i`` of the boundary row); ``inv_w0`` ``(2, *lam.shape)`` is ``1 / W_0`` (0 where the row is singular);
    ``lam`` the Helmholtz constant. Without tables (``helmholtz_factor(..., tables=False)``) the five tables are
    None and every solve forms them row by row in its first sweep (with the same operations).
    """

    p: jax.Array | None
    inv_den: jax.Array | None
    upper: jax.Array | None
    weight: jax.Array | None
    inv_w0: jax.Array | None
    lam: jax.Array
    n: int
    bc: str
    LEADS = {"p": 2, "inv_den": 2, "upper": 2, "weight": 2, "inv_w0": 1, "lam": 0}  # (whole axes, for on_blocks)


def _check_bc(bc: str) -> None:
    if bc not in BCS:
        raise ValueError(f"bc must be one of {BCS}, got {bc!r}")


def _check_n(n: int, least: int) -> None:
    if not isinstance(n, (int, np.integer)) or n < least:
        raise ValueError(f"n (the number of Chebyshev coefficients N + 1) must be an integer >= {least}, got {n!r}")


def _backward(n: int, lam: jax.Array, bc: str) -> tuple[tuple[jax.Array, ...], jax.Array]:
    """The factor's tables ``(P, 1 / den, -U / den, W)`` over rows ``i = h-1 .. 1`` and ``1 / W_0`` (one scan)."""
    rdt = jnp.finfo(lam.dtype).dtype
    ext = (slice(None), slice(None)) + (None,) * lam.ndim
    lower, diag, upper = (jnp.asarray(t, rdt)[ext] for t in _row_tables(n))
    w = jnp.asarray(_boundary_weights(n, bc), rdt)[ext]
    rows = (-lam * lower, 1 + lam * diag, -lam * upper, w[1:])

    def step(carry, row):  # P_i = -L_i / den_i, den_i = D_i + U_i P_{i+1}, W_i = w_i + P_{i+1} W_{i+1}
        ell_i, d_i, u_i, w_i = row
        inv = 1 / (d_i + u_i * carry[0])
        p_i, weight = -ell_i * inv, w_i + carry[0] * carry[1]
        return (p_i, weight), (p_i, inv, -u_i * inv, weight)

    zero = jnp.zeros_like(rows[0][0])  # zeros_like: as varying over shard_map axes as the data
    carry, out = lax.scan(step, (zero, zero), rows, reverse=True)
    w0 = w[0] + carry[0] * carry[1]
    nonzero = w0 != 0  # False only for the singular Neumann problem lam = 0 (even parity)
    return out, jnp.where(nonzero, 1 / jnp.where(nonzero, w0, 1), 0)


@on_blocks(lam=0, out=leads_of)
def helmholtz_factor(n: int, lam: ArrayLike, bc: str = "dirichlet", dtype=None, tables: bool = True
                     ) -> HelmholtzFactor:
    """Factor the tau Helmholtz operator ``D^2 - lam`` with two boundary conditions, for reuse over many ``f``.

    Args:
      n: number of Chebyshev coefficients ``N + 1`` (the length of axis 0 of ``f``), ``>= 3``.
      lam: Helmholtz constant(s), broadcastable against the trailing axes of ``f``; ``lam >= 0`` (real) is the
        intended range (then no pivoting is needed); complex values are accepted.
      bc: ``"dirichlet"`` (values ``u(+-1)``) or ``"neumann"`` (slopes ``u'(+-1)``).
      dtype: real precision of the factor; default: that of ``lam`` (float64 for Python scalars under x64).
      tables: keep the factor's per-row tables (``5 ceil(n/2)`` numbers per ``lam``); False keeps only ``lam`` and
        each solve forms the tables as it sweeps (a division more per row and entry; the same operations), which
        spares their memory where a solve runs inside a time loop.

    Returns:
      A :class:`HelmholtzFactor` with arrays ``(ceil(n/2) - 1, 2, *lam.shape)`` (None without tables).

    Raises:
      ValueError: ``n < 3`` or an unknown ``bc``.
    """
    _check_bc(bc)
    _check_n(n, 3)
    lam = _param(lam, _real_dtype(lam) if dtype is None else jnp.finfo(dtype).dtype)
    if not tables:
        return HelmholtzFactor(None, None, None, None, None, lam=lam, n=int(n), bc=bc)
    out, inv_w0 = _backward(n, lam, bc)
    return HelmholtzFactor(*out, inv_w0=inv_w0, lam=lam, n=int(n), bc=bc)


def _rhs_rows(n: int, f: jax.Array, ntrail: int, rdt) -> jax.Array:
    """Right-hand sides of the quasi-inverse rows ``i = 1 .. h-1``, ``(h - 1, 2, ...)`` (``f_{N-1}, f_N`` unused)."""
    lower, diag, upper = (_lift(jnp.asarray(t, rdt), 2, ntrail) for t in _row_tables(n))
    fs = _lift(_split(f), 2, ntrail)
    return _rmul(lower, fs[:-1]) - _rmul(diag, fs[1:]) + _rmul(upper, jnp.concatenate([fs[2:], jnp.zeros_like(fs[:1])]))


def _finish(n: int, bc: str, p: jax.Array, q: jax.Array, wq: jax.Array, inv_w0: jax.Array, top: jax.Array,
            bottom: jax.Array, ntrail: int) -> jax.Array:
    """The boundary row fixes ``x_0 = (beta - sum_{i>=1} W_i Q_i) / W_0`` (``wq`` is the sum); the forward
    recursion ``x_i = P_i x_{i-1} + Q_i`` gives the coefficients.

    The top unknown ``x_M`` of a parity appears only in its own row and the boundary row. Its row gives
    ``x_M = P_M x_{M-1} + Q_M`` with ``P_M = lam / (4k(k-1))``, which multiplies the rounding error of ``x_{M-1}``
    (of order ``eps |x_0|``) by ``|P_M|``; the boundary row, ``x_M = (beta - sum_{i<M} w_i x_i) / w_M``, by
    ``sum_{i<M} w_i / w_M`` at most. The smaller bound wins (a static table vs ``|P_M|``). E.g. ``lam = 1e10``,
    ``N = 33``: the error of a smooth solution drops from 1e-10 to round-off.
    """
    plus, minus = (top + bottom) / 2, (top - bottom) / 2
    beta = _lift(jnp.stack(jnp.broadcast_arrays(*((plus, minus) if bc == "dirichlet" else (minus, plus)))), 1, ntrail)
    x0 = _rmul(_lift(inv_w0, 1, ntrail), beta - wq)
    rdt = jnp.finfo(q.dtype).dtype
    w = _boundary_weights(n, bc)
    last = (n - 1 - np.arange(2)) // 2  # index M of the top unknown per parity
    below = np.where(np.arange(w.shape[0])[:, None] < last, w, 0.0)
    p = _lift(p, 2, ntrail)
    x, partial_row = _up(p, q, x0, _lift(jnp.asarray(below, rdt), 2, ntrail))
    x = jnp.concatenate([jnp.broadcast_to(x0, x.shape[1:])[None], x])
    from_row = (beta - partial_row) / _lift(jnp.asarray(w[last, [0, 1]], rdt), 1, ntrail)
    for i, m in enumerate(last):
        if m >= 1:  # the boundary row's error bound on x_M is sum_{i<M} w_i / w_M
            use_row = jnp.abs(p[m - 1, i]) > below[:, i].sum() / w[m, i]
            x = x.at[m, i].set(jnp.where(use_row, from_row[i], x[m, i]))
    return _merge(x, n)


# The sweeps under ``jax.jit``: a wall step solves a dozen times on arrays of the same shapes, and a jitted
# function is traced once per shape, not once per call; reverse mode then differentiates one jaxpr, not a dozen
# (a channel's gradient traced in 6.5 s, 15.8 s without). XLA inlines the calls: the step's program is unchanged
# (its bytes per point to 0.1).
_rhs_rows_jit = jax.jit(_rhs_rows, static_argnums=(0, 2, 3))
_down_jit = jax.jit(_down, static_argnums=(0, 1), static_argnames=("fused",))
_finish_jit = jax.jit(_finish, static_argnums=(0, 1, 8))


@on_blocks(factor=leads_of, f=1, top=0, bottom=0, out=1)
def helmholtz_solve(factor: HelmholtzFactor, f: ArrayLike, top: ArrayLike = 0, bottom: ArrayLike = 0) -> jax.Array:
    """Solve ``u'' - lam u = f`` (tau) with the boundary conditions of ``factor``, by two O(N) sweeps.

    Args:
      factor: from :func:`helmholtz_factor` (with ``n = f.shape[0]``).
      f: right-hand side coefficients ``(N + 1, ...)``; ``f_{N-1}, f_N`` are ignored (tau).
      top, bottom: ``u(+1), u(-1)`` (Dirichlet) or ``u'(+1), u'(-1)`` (Neumann), broadcastable to the trailing axes.

    Returns:
      ``u`` coefficients, shape ``(N + 1, *broadcast trailing shape)``.

    Raises:
      ValueError: ``f``'s length along axis 0 is not ``factor.n``.
    """
    f = _coeffs(f, "f")
    if f.shape[0] != factor.n:
        raise ValueError(f"f must have factor.n = {factor.n} coefficients along axis 0, got shape {f.shape}")
    rdt = _real_dtype(f, factor.lam)
    top, bottom = _param(top, rdt), _param(bottom, rdt)
    ntrail = max(f.ndim - 1, factor.lam.ndim, top.ndim, bottom.ndim)
    rows = _rhs_rows_jit(factor.n, f, ntrail, rdt)
    rows = jnp.broadcast_to(rows, rows.shape[:2] + jnp.broadcast_shapes(rows.shape[2:], _lift(factor.lam, 0,
                                                                                                ntrail).shape))
    if factor.inv_den is None:
        rows = rows.astype(jnp.result_type(rows, factor.lam))
        q, p, wq, inv_w0 = _down_jit(factor.n, factor.bc, rows, _lift(factor.lam, 0, ntrail))
    else:
        tables = tuple(_lift(t, 2, ntrail) for t in (factor.p, factor.inv_den, factor.upper, factor.weight))
        q, p, wq, inv_w0 = _down_jit(factor.n, factor.bc, rows, tables=(*tables, factor.inv_w0))
    return _finish_jit(factor.n, factor.bc, p, q, wq, inv_w0, top, bottom, ntrail)


@on_blocks(f=1, lam=0, top=0, bottom=0, out=1)
def helmholtz(f: ArrayLike, lam: ArrayLike, bc: str = "dirichlet", top: ArrayLike = 0,
              bottom: ArrayLike = 0) -> jax.Array:
    """Tau solution of ``u'' - lam u = f`` with two boundary conditions (:func:`helmholtz_factor` + solve).

    Coefficients ``0 .. N-2`` of the equation hold exactly; the two highest are replaced by the boundary
    conditions ``u(+1) = top, u(-1) = bottom`` (``bc="dirichlet"``) or ``u'(+1) = top, u'(-1) = bottom``
    (``bc="neumann"``). The pure Neumann problem ``lam = 0`` is singular: there ``a_0 = 0`` is returned and the
    even-parity boundary condition ``u'(+1) - u'(-1) = top - bottom`` holds only if ``f`` is compatible with it.

    Args:
      f: right-hand side coefficients ``(N + 1, ...)``, ``N >= 2``, real or complex.
      lam: Helmholtz constant(s) broadcastable against the trailing axes (``lam >= 0`` intended).
      bc: ``"dirichlet"`` or ``"neumann"``.
      top, bottom: boundary data broadcastable against the trailing axes.

    Returns:
      ``u`` coefficients ``(N + 1, ...)``, dtype promoted from ``f``, ``lam`` and the boundary data.

    Raises:
      ValueError: an unknown ``bc`` or fewer than 3 coefficients in ``f``.
    """
    _check_bc(bc)
    f = _coeffs(f, "f", 3)
    rdt = _real_dtype(f, lam, top, bottom)
    lam, top, bottom = (_param(x, rdt) for x in (lam, top, bottom))
    ntrail = max(f.ndim - 1, lam.ndim, top.ndim, bottom.ndim)
    lam = _lift(lam, 0, ntrail)
    rows = _rhs_rows_jit(f.shape[0], f, ntrail, rdt)
    rows = jnp.broadcast_to(rows, rows.shape[:2] + jnp.broadcast_shapes(rows.shape[2:], lam.shape))
    q, p, wq, inv_w0 = _down_jit(f.shape[0], bc, rows.astype(jnp.result_type(rows, lam)), lam, fused=True)
    return _finish_jit(f.shape[0], bc, p, q, wq, inv_w0, top, bottom, ntrail)


# ------------------------------------------------------------------------------------- clamped (influence matrix)


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
