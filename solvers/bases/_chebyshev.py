"""Chebyshev coefficient arithmetic along array axis 0: derivatives, values and slopes at the walls, integrals, and
the O(N) row sweeps of the tau solves.

A field along the wall-normal axis is a Chebyshev series ``u(y) = sum_{k=0}^{N} a_k T_k(y)``, ``y in [-1, 1]``;
arrays hold ``a_0 .. a_N`` along axis 0 (length ``n = N + 1``) followed by any trailing (batch) axes, real or
complex, float32 or float64. Pure ``jax.numpy``/``jax.lax``, local along axis 0 (they run unchanged inside
``jax.shard_map`` on blocks sharded on the trailing axes), O(N) per trailing index except :func:`mean_square`.
The public operators are re-exported by :mod:`solvers.bases.tau`, whose solves are built of the sweeps here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._blocks import on_blocks

ArrayLike = jax.typing.ArrayLike


def _coeffs(a: ArrayLike, name: str, min_len: int = 1) -> jax.Array:
    """``a`` as an inexact array with at least one axis of length ``>= min_len``; ValueError naming ``name``."""
    a = jnp.asarray(a)
    if a.ndim == 0 or a.shape[0] < min_len:
        raise ValueError(f"{name} must hold Chebyshev coefficients along axis 0 (length >= {min_len}), "
                         f"got shape {a.shape}")
    return a if jnp.issubdtype(a.dtype, jnp.inexact) else a.astype(jnp.result_type(a, float))


def _real_dtype(*xs) -> np.dtype:
    """The real floating dtype of the promoted inputs (float64 for Python scalars when x64 is on)."""
    return jnp.finfo(jnp.result_type(*xs, float)).dtype


def _param(x: ArrayLike, rdt) -> jax.Array:
    """A parameter array in precision ``rdt`` (complex stays complex)."""
    x = jnp.asarray(x)
    return x.astype(jnp.complex64 if rdt == np.float32 else jnp.complex128) if jnp.iscomplexobj(x) else x.astype(rdt)


def _rmul(a: jax.Array, z: jax.Array) -> jax.Array:
    """``a * z`` for a real ``a`` and complex ``z`` with no complex copy of ``a`` (which XLA would form for a whole
    table and keep): the complex product ``(a + 0i)(x + iy) = (a x - 0 y) + i (a y + 0 x)`` written out, so the
    values are those of ``a * z`` bit for bit (XLA keeps ``0 * y``: it is NaN for an infinite ``y``)."""
    if not jnp.iscomplexobj(z) or jnp.iscomplexobj(a):
        return a * z
    zero = jnp.zeros((), a.dtype)
    return lax.complex(a * z.real - zero * z.imag, a * z.imag + zero * z.real)


def _col(table: np.ndarray, like: jax.Array, rdt) -> jax.Array:
    """A 1D table along axis 0, shaped to broadcast against ``like`` (trailing axes of length 1)."""
    t = jnp.asarray(table, rdt)
    return t.reshape(t.shape + (1,) * (like.ndim - 1))


def _split(a: jax.Array) -> jax.Array:
    """Parity split ``(n, ...) -> (ceil(n/2), 2, ...)``: ``[i, p] = a_{2i+p}`` (zero past ``a_N``)."""
    n = a.shape[0]
    pad = (-n) % 2
    if pad:
        a = jnp.concatenate([a, jnp.zeros((pad,) + a.shape[1:], a.dtype)])
    return a.reshape(((n + pad) // 2, 2) + a.shape[1:])


def _merge(x: jax.Array, n: int) -> jax.Array:
    """Inverse of :func:`_split`: ``(h, 2, ...) -> (n, ...)``."""
    return x.reshape((2 * x.shape[0],) + x.shape[2:])[:n]


def _lift(x: jax.Array, lead: int, ntrail: int) -> jax.Array:
    """``x`` with singleton axes inserted after its ``lead`` leading axes, so it has ``ntrail`` trailing axes."""
    return x.reshape(x.shape[:lead] + (1,) * (ntrail + lead - x.ndim) + x.shape[lead:])


def _parity_k(n: int) -> np.ndarray:
    """``k = 2i + p`` on the parity-split grid ``(ceil(n/2), 2)``."""
    return 2 * np.arange((n + 1) // 2)[:, None] + np.arange(2)[None, :]


@on_blocks(a=1, out=1)
def derivative(a: ArrayLike, order: int = 1) -> jax.Array:
    """Chebyshev coefficients of ``d^order u / dy^order``, same shape (the top ``order`` entries are zero).

    ``b_k = (2 / c_k) sum_{p > k, p + k odd} p a_p`` (``c_0 = 2``, else 1), as parity-split reverse cumulative sums.

    Args:
      a: coefficients ``(N + 1, ...)``.
      order: derivative order ``>= 0``.

    Returns:
      Coefficients of the derivative, shape and dtype of ``a`` (inexact).

    Raises:
      ValueError: ``order`` is not a non-negative integer, or ``a`` has no axis 0.
    """
    if not isinstance(order, (int, np.integer)) or isinstance(order, bool) or order < 0:
        raise ValueError(f"order must be a non-negative integer, got {order!r}")
    a = _coeffs(a, "a")
    n, rdt = a.shape[0], _real_dtype(a)
    k = _col(np.arange(n), a, rdt)
    two_over_c = _col(np.where(np.arange(n) == 0, 1.0, 2.0), a, rdt)
    for _ in range(order):
        r = lax.cumsum(_split(k * a), axis=0, reverse=True).reshape((-1,) + a.shape[1:])
        a = jnp.concatenate([r[1:n], jnp.zeros_like(a[:1])]) * two_over_c
    return a


def _at_walls(a: ArrayLike, slopes: bool) -> tuple[jax.Array, jax.Array]:
    """``u`` (or ``u'`` if ``slopes``) at ``y = +1`` and ``y = -1``: two dot products with 1D tables."""
    a = _coeffs(a, "a")
    k = np.arange(a.shape[0], dtype=float)
    tables = (k * k, (-1.0) ** (k + 1) * k * k) if slopes else (np.ones_like(k), (-1.0) ** k)
    rdt = _real_dtype(a)
    return tuple(jnp.tensordot(jnp.asarray(t, rdt), a, axes=(0, 0)) for t in tables)


def boundary_values(a: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """``(u(+1), u(-1)) = (sum_k a_k, sum_k (-1)^k a_k)``, from ``T_k(+-1) = (+-1)^k``.

    Args:
      a: coefficients ``(N + 1, ...)``.

    Returns:
      The two wall values, each of the trailing shape.

    Raises:
      ValueError: ``a`` is a scalar.
    """
    return _at_walls(a, slopes=False)


def boundary_derivatives(a: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """``(u'(+1), u'(-1))``, from ``T_k'(+-1) = (+-1)^{k+1} k^2`` (the Neumann data of the tau solves).

    Args:
      a: coefficients ``(N + 1, ...)`` of ``u`` (not of ``u'``).

    Returns:
      The slope at ``y = +1`` and the slope at ``y = -1``, each an array of the trailing shape.

    Raises:
      ValueError: ``a`` is a scalar.
    """
    return _at_walls(a, slopes=True)


def _integral_table(n: int) -> np.ndarray:
    """``int_{-1}^{1} T_k dy`` for ``k < n``: ``2 / (1 - k^2)`` for even ``k``, 0 for odd."""
    k = np.arange(n)
    return np.divide(2.0, 1.0 - k**2.0, out=np.zeros(n), where=k % 2 == 0)


def integrate(a: ArrayLike) -> jax.Array:
    """``int_{-1}^{1} u dy = sum_{k even} a_k 2 / (1 - k^2)``.

    Args:
      a: coefficients ``(N + 1, ...)``.

    Returns:
      An array of the trailing shape.

    Raises:
      ValueError: ``a`` has no axis 0.
    """
    a = _coeffs(a, "a")
    return jnp.tensordot(jnp.asarray(_integral_table(a.shape[0]), _real_dtype(a)), a, axes=(0, 0))


def mean_square(a: ArrayLike, b: ArrayLike) -> jax.Array:
    """``(1/2) int_{-1}^{1} u conj(w) dy`` of ``u = sum a_k T_k``, ``w = sum b_k T_k`` (the wall-normal mean).

    Uses ``int T_j T_k = (I_{j+k} + I_{|j-k|}) / 2`` with ``I_m = int T_m``: one dense ``(N+1) x (N+1)`` table
    shared by all trailing indices (O(N^2) work per index, exact for the two polynomials).

    Args:
      a, b: coefficients ``(N + 1, ...)`` of the same length along axis 0 (trailing axes broadcast).

    Returns:
      An array of the broadcast trailing shape; real inputs give a real result.

    Raises:
      ValueError: ``a`` and ``b`` differ in length along axis 0.
    """
    a, b = _coeffs(a, "a"), _coeffs(b, "b")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"a and b must have the same length along axis 0, got {a.shape[0]} and {b.shape[0]}")
    n = a.shape[0]
    j = np.arange(n)
    table = 0.25 * (_integral_table(2 * n)[j[:, None] + j[None, :]] + _integral_table(n)[abs(j[:, None] - j)])
    tb = jnp.tensordot(jnp.asarray(table, _real_dtype(a, b)), jnp.conj(b), axes=(1, 0))
    return jnp.sum(a * tb, axis=0)


# ---------------------------------------------------------------------------------- the tau solves' sweeps


def _row_tables(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``c_{k-2}/(4k(k-1))``, ``e_k/(2(k^2-1))``, ``e_{k+2}/(4k(k+1))`` of rows ``i = 1 .. h-1`` (0 past ``k = N``)."""
    k = _parity_k(n)[1:].astype(float)
    big = n - 1  # N
    lower = np.where(k <= big, np.where(k == 2, 2.0, 1.0) / (4 * k * (k - 1)), 0.0)
    diag = np.where(k <= big - 2, 1.0 / (2 * (k * k - 1)), 0.0)
    upper = np.where(k + 2 <= big - 2, 1.0 / (4 * k * (k + 1)), 0.0)
    return lower, diag, upper


def _boundary_weights(n: int, bc: str) -> np.ndarray:
    """The boundary row per parity, ``(h, 2)``: ``1`` (Dirichlet) or ``k^2`` (Neumann), 0 past ``k = N``."""
    k = _parity_k(n).astype(float)
    return np.where(k < n, 1.0 if bc == "dirichlet" else k * k, 0.0)


# The sweeps are loops over the rows that write their results into the buffer they read (the rows of the
# right-hand side become the ``Q_i``, then the ``x_i``): a ``lax.scan`` would stack its outputs in a new buffer
# that XLA initializes from a zero constant, hoists out of an enclosing time loop and copies, one copy per solve,
# all alive at once. Real tables multiply complex data through ``_rmul`` (no complex copy of a table).


def _at(a: jax.Array, i) -> jax.Array:
    return lax.dynamic_index_in_dim(a, i, 0, keepdims=False)


def _put(a: jax.Array, x: jax.Array, i) -> jax.Array:
    return lax.dynamic_update_index_in_dim(a, jnp.broadcast_to(x, a.shape[1:]).astype(a.dtype), i, 0)


def _down(n: int, bc: str, r: jax.Array, lam: jax.Array | None = None, tables: tuple | None = None,
          fused: bool = False) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The backward sweep over rows ``i = h-1 .. 1`` of the rows ``r`` ``(h - 1, 2, ...)``; returns ``(Q, P, sum_i
    W_i Q_i, 1 / W_0)`` (``Q`` in ``r``'s buffer).

    ``tables``: a factor's ``(p, inv_den, upper, weight, inv_w0)``, broadcastable like ``r``; else the factor of
    ``lam`` (broadcastable like ``r[0, 0]``) is formed row by row as the loop goes, with the operations of
    ``tau._backward`` (the same operations). ``fused``: ``Q_i = (R_i - U_i Q_{i+1}) / den_i`` (the one-shot solve);
    else ``Q_i = upper_i Q_{i+1} + R_i / den_i`` (the factored solve).
    """
    rdt = jnp.finfo(r.dtype).dtype
    m, ext = r.shape[0], (slice(None), slice(None)) + (None,) * (r.ndim - 2)
    lower, diag, up, w = (jnp.asarray(t, rdt)[ext] for t in (*_row_tables(n), _boundary_weights(n, bc)))
    # the buffer as varying over shard_map axes as the factor and the data together (a no-op otherwise)
    r = r + jnp.zeros_like(_rmul(tables[2][0] if tables is not None else lam * lower[0], r[0]))
    if tables is not None:
        p, inv_den, upper, weight, inv_w0 = tables

        def sweep(j, c):
            q, r = c
            i = m - 1 - j
            q = _rmul(_at(upper, i), q) + _rmul(_at(inv_den, i), _at(r, i))
            return q, _put(r, q, i)
        q = lax.fori_loop(0, m, sweep, (jnp.zeros_like(_at(r, 0)), r))[1]
        return q, p, jnp.sum(_rmul(weight, q), axis=0), inv_w0

    def factor_row(i, p_next, w_next):
        ell, d, u = -lam * _at(lower, i), 1 + lam * _at(diag, i), -lam * _at(up, i)
        inv = 1 / (d + u * p_next)
        return -ell * inv, _at(w, i + 1) + p_next * w_next, inv, u

    pdt = jnp.result_type(lam, rdt)
    zero = jnp.zeros_like(_at(r, 0).real).astype(pdt)  # zeros_like: as varying over shard_map axes as the data
    pbuf = (r.real if jnp.iscomplexobj(r) else r + 0).astype(pdt)  # written over: a buffer of the data
    if fused:
        def sweep(j, c):
            p_next, w_next, q, total, r, pbuf = c
            i = m - 1 - j
            p_i, w_i, inv, u = factor_row(i, p_next, w_next)
            q = _rmul(inv, _at(r, i) - _rmul(u, q))
            return p_i, w_i, q, total + _rmul(w_i, q), _put(r, q, i), _put(pbuf, p_i, i)
        q0 = jnp.zeros_like(_at(r, 0))
        p1, w1, _, wq, q, pbuf = lax.fori_loop(0, m, sweep, (zero, zero, q0, q0, r, pbuf))
    else:
        def sweep(j, c):
            p_next, w_next, q, r, pbuf, wbuf = c
            i = m - 1 - j
            p_i, w_i, inv, u = factor_row(i, p_next, w_next)
            q = _rmul(-u * inv, q) + _rmul(inv, _at(r, i))
            return p_i, w_i, q, _put(r, q, i), _put(pbuf, p_i, i), _put(wbuf, w_i, i)
        wbuf = pbuf + 0
        p1, w1, _, q, pbuf, wbuf = lax.fori_loop(0, m, sweep, (zero, zero, jnp.zeros_like(_at(r, 0)), r, pbuf,
                                                                wbuf))
        wq = jnp.sum(_rmul(wbuf, q), axis=0)
    w0 = w[0] + p1 * w1
    nonzero = w0 != 0  # False only for the singular Neumann problem lam = 0 (even parity)
    return q, pbuf, wq, jnp.where(nonzero, 1 / jnp.where(nonzero, w0, 1), 0)


def _up(p: jax.Array, q: jax.Array, x0: jax.Array, w: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``x_i = P_i x_{i-1} + Q_i`` for ``i = 1 .. h-1`` from ``x_0`` (in ``q``'s buffer), and the running sum
    ``sum_i w_i x_i``."""
    def sweep(i, c):
        x, total, q = c
        x = _rmul(_at(p, i), x) + _at(q, i)
        return x, total + _rmul(_at(w, i + 1), x), _put(q, x, i)

    x0 = jnp.zeros_like(_rmul(p[0], q[0])) + x0
    _, total, x = lax.fori_loop(0, q.shape[0], sweep, (x0, _rmul(w[0], x0), q))
    return x, total


