"""The tau Helmholtz solve with a boundary-condition object at each wall (:mod:`solvers.bases.bc`), O(N).

Two walls of the same kind, Dirichlet or Neumann, take the fast solve of ``_helmholtz.py`` as it is (the Neumann
data turned from outward normal derivatives into slopes). Any other pair (mixed kinds, a Robin condition) is the
tau system whose ``N - 1`` equation rows are the Dirichlet solve's and whose two boundary rows are the
conditions' (:func:`~solvers.bases.bc.boundary_row`). Its solutions of the equation rows are, exactly,
``u = u_p + c_t h_t + c_b h_b``: ``u_p`` the Dirichlet solve with ``u(+-1) = 0``, ``h_t`` the homogeneous solution
with ``h_t(+1) = 1, h_t(-1) = 0`` and ``h_b(y) = h_t(-y)`` (coefficients ``(-1)^k h_t``; the operator is even). The
two boundary rows are then a 2x2 system in ``(c_t, c_b)`` per trailing index (an influence matrix, as in the
clamped solve): with ``s_1 = h_t'(+1)`` and ``s_2 = -h_t'(-1)`` (the outward slopes of ``h_t`` at the top and the
bottom; those of ``h_b`` are swapped),

    ``(a_t + b_t s_1) c_t + b_t s_2 c_b = g_t - b_t du_p/dn(top)``,
    ``b_b s_2 c_t + (a_b + b_b s_1) c_b = g_b - b_b du_p/dn(bottom)``.

The factor keeps ``h_t`` (``n`` numbers per trailing index) and the inverse matrix (4); a solve is the Dirichlet
solve's two sweeps, two dot products and one update of the coefficients. Where the 2x2 matrix is singular (e.g.
two Neumann-like Robin walls at ``lam = 0``) ``c_t = c_b = 0`` is taken.
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
from .bc import Robin

__all__ = ["BoundaryFactor", "boundary_factor", "boundary_solve"]


@partial(jax.tree_util.register_dataclass, data_fields=["inner", "hom", "inv", "b"], meta_fields=["mode"])
@dataclasses.dataclass(frozen=True)
class BoundaryFactor:
    """A tau Helmholtz factor for a condition object at each wall (a pytree; ``mode`` static).

    ``mode``: ``"dirichlet"`` or ``"neumann"`` (two walls of that kind: ``inner`` is the fast factor and the other
    fields are None) or ``"mixed"``: ``inner`` the Dirichlet factor, ``hom`` ``(n, *shape)`` the homogeneous
    solution ``h_t``, ``inv`` ``(2, 2, *shape)`` the inverse of the boundary rows' 2x2 matrix in ``(c_t, c_b)``,
    ``b`` ``(2,)`` the conditions' ``b`` at the (top, bottom) walls.
    """

    inner: HelmholtzFactor
    hom: jax.Array | None
    inv: jax.Array | None
    b: jax.Array | None
    mode: str
    LEADS = {"inner": 0, "hom": 1, "inv": 2, "b": 1}  # (whole axes, for on_blocks)

    @property
    def n(self) -> int:
        """The number of Chebyshev coefficients."""
        return self.inner.n

    @property
    def lam(self) -> jax.Array:
        """The Helmholtz constant(s)."""
        return self.inner.lam


@on_blocks(lam=0, out=leads_of)
def boundary_factor(n: int, lam: ArrayLike, bottom: Robin, top: Robin, dtype=None,
                    tables: bool = True) -> BoundaryFactor:
    """Factor ``D^2 - lam`` on ``[-1, 1]`` with the conditions ``bottom`` (``y = -1``) and ``top`` (``y = +1``).

    Args:
      n: number of Chebyshev coefficients, ``>= 3``.
      lam: Helmholtz constant(s), broadcastable against the trailing axes (``lam >= 0`` intended).
      bottom, top: the walls' conditions (their derivatives in ``y`` of ``[-1, 1]``).
      dtype: real precision; default: that of ``lam``.
      tables: as :func:`~solvers.bases.tau.helmholtz_factor`.

    Returns:
      A :class:`BoundaryFactor`.
    """
    _check_n(n, 3)
    rdt = _real_dtype(lam) if dtype is None else jnp.finfo(dtype).dtype
    kinds = {bottom.kind, top.kind}
    if len(kinds) == 1 and kinds <= {"dirichlet", "neumann"}:
        mode = kinds.pop()
        return BoundaryFactor(helmholtz_factor(n, lam, mode, rdt, tables), None, None, None, mode)
    inner = helmholtz_factor(n, lam, "dirichlet", rdt, tables)
    lam = inner.lam
    hom = helmholtz_solve(inner, jnp.zeros((n,) + lam.shape, rdt), 1, 0)
    slope_top, slope_bottom = boundary_derivatives(hom)
    s1, s2 = slope_top, -slope_bottom
    m = [[top.a + top.b * s1, top.b * s2], [bottom.b * s2, bottom.a + bottom.b * s1]]
    det = m[0][0] * m[1][1] - m[0][1] * m[1][0]
    ok = det != 0
    inv_det = jnp.where(ok, 1 / jnp.where(ok, det, 1), 0)
    inv = jnp.stack([jnp.stack([m[1][1], -m[0][1]]), jnp.stack([-m[1][0], m[0][0]])]) * inv_det
    return BoundaryFactor(inner, hom, inv, jnp.asarray([top.b, bottom.b], rdt), "mixed")


@on_blocks(factor=leads_of, f=1, top=0, bottom=0, out=1)
def boundary_solve(factor: BoundaryFactor, f: ArrayLike, top: ArrayLike = 0, bottom: ArrayLike = 0) -> jax.Array:
    """Solve ``u'' - lam u = f`` (tau) with the factor's conditions, whose values are ``top`` and ``bottom``.

    Args:
      factor: from :func:`boundary_factor` (``n = f.shape[0]``).
      f: right-hand side coefficients ``(N + 1, ...)``.
      top, bottom: the conditions' right-hand sides (``value`` of ``a u + b du/dn = value``), broadcastable
        against the trailing axes.

    Returns:
      ``u`` coefficients ``(N + 1, *broadcast trailing shape)``.
    """
    if factor.mode == "dirichlet":
        return helmholtz_solve(factor.inner, f, top, bottom)
    if factor.mode == "neumann":  # slopes: u'(+1) = du/dn at the top, u'(-1) = -du/dn at the bottom
        return helmholtz_solve(factor.inner, f, top, -jnp.asarray(bottom))
    f = _coeffs(f, "f")
    u = helmholtz_solve(factor.inner, f)
    rdt = _real_dtype(u)
    top, bottom = _param(top, rdt), _param(bottom, rdt)
    ntrail = max(u.ndim - 1, top.ndim, bottom.ndim, factor.lam.ndim)
    slope_top, slope_bottom = boundary_derivatives(u)
    r_top = top - factor.b[0] * slope_top
    r_bottom = bottom + factor.b[1] * slope_bottom
    inv = _lift(factor.inv, 2, ntrail)
    c_top = _rmul(inv[0, 0], r_top) + _rmul(inv[0, 1], r_bottom)
    c_bottom = _rmul(inv[1, 0], r_top) + _rmul(inv[1, 1], r_bottom)
    hom = _lift(factor.hom, 1, ntrail)
    sign = jnp.asarray((-1.0) ** np.arange(factor.n), hom.dtype).reshape((-1,) + (1,) * ntrail)
    return u + _rmul(hom, c_top[None]) + _rmul(hom * sign, c_bottom[None])
