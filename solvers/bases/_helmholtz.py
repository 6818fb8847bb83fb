"""The fast tau Helmholtz solve along array axis 0: the same condition (values or slopes) at both walls, O(N).

The kernels of :func:`solvers.bases.tau.helmholtz_factor` and :func:`solvers.bases.tau.helmholtz_solve` for
``bc="dirichlet"`` or ``"neumann"`` (the public functions there take boundary-condition objects too and come here
for two walls of the same kind). Conventions (coefficients along axis 0, trailing batch axes, on blocks) are those
of :mod:`solvers.bases.tau`.

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

__all__ = ["BCS", "HelmholtzFactor", "helmholtz", "helmholtz_factor", "helmholtz_solve"]

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
