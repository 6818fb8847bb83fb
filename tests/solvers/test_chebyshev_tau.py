"""Chebyshev tau operators (solvers.bases.tau) against numpy's Chebyshev module, dense numpy tau solves and an
exact solution.

Worst errors measured (2026-11-23, x86-64 CPU, the seeds below): Helmholtz vs the dense float64 tau solve, relative
max-coefficient error over N in {8, 16, 33, 64, 128, 256}, lam in {0, 1e-2, 1, 1e2, 1e4, 1e6, 1e10}, both kinds:
2.4e-13 (float32 against the same float64 reference: 3.3e-6). That is the dense solve's own error: against a
long-double iteratively refined dense solution the O(N) solver errs by at most 1.6e-14, the dense LAPACK solve by
2.4e-13. Clamped solve vs the dense (2N+2)-square tau system, h * kappa2 in [1e-4, 1e6], N in {8, 16, 33, 64}:
8.5e-14 (tested: N in {33, 64}; N = 16 and 20 in the batched and sharded tests)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from numpy.polynomial import chebyshev as C

from solvers.bases import tau

LAMS = np.array([0.0, 1e-2, 1.0, 1e2, 1e4, 1e6, 1e10])



def jitted(fn, **kwargs):
    """``fn`` jitted, returning numpy arrays: compiles, not the solves, are this file's run time (eager scans
    re-trace on every call, and slicing a jax array compiles a slice per shape)."""
    compiled = jax.jit(fn, **kwargs)
    return lambda *args, **kw: jax.tree.map(np.asarray, compiled(*args, **kw))


helmholtz = jitted(tau.helmholtz, static_argnames="bc")
clamped_solve = jitted(tau.clamped_solve)
derivative = jitted(tau.derivative, static_argnames="order")
derivatives = jitted(lambda a: [tau.derivative(a, order) for order in range(4)])


@functools.cache
def dmat(n: int, order: int) -> np.ndarray:
    """Dense coefficient-space derivative matrix of order ``order`` (numpy's chebder, column by column)."""
    out = np.zeros((n, n))
    for j in range(n):
        d = C.chebder(np.eye(n)[:, j], order)
        out[: min(n, d.size), j] = d[:n]
    return out


def bc_rows(n: int, bc: str) -> np.ndarray:
    k = np.arange(n)
    if bc == "dirichlet":
        return np.stack([np.ones(n), (-1.0) ** k])
    return np.stack([k**2.0, (-1.0) ** (k + 1) * k**2.0])


def dense_helmholtz(f, lam, bc, top, bottom) -> np.ndarray:
    """The (N+1)-square tau matrix: rows 0..N-2 of D^2 - lam, then the two boundary rows; numpy.linalg.solve.

    ``f`` is ``(N+1,)`` or ``(N+1, L)`` with ``lam``, ``top``, ``bottom`` scalars or ``(L,)`` (one batched solve).
    """
    n, cols = f.shape[0], f.reshape(f.shape[0], -1)
    lam, top, bottom = (np.broadcast_to(x, cols.shape[1:]) for x in (lam, top, bottom))
    m = np.empty((cols.shape[1], n, n))
    m[:, : n - 2] = dmat(n, 2)[: n - 2] - lam[:, None, None] * np.eye(n)[: n - 2]
    m[:, n - 2 :] = bc_rows(n, bc)
    rhs = np.concatenate([cols[: n - 2], np.stack([top, bottom])]).T[..., None]
    return np.linalg.solve(m, rhs)[..., 0].T.reshape(f.shape)


def dense_clamped(r, kappa2, h) -> tuple[np.ndarray, np.ndarray]:
    """The (2N+2)-square tau system in (phi, v): the two equations' rows 0..N-2, v(+-1) = 0, v'(+-1) = 0.

    ``r`` is ``(N+1,)`` or ``(N+1, L)`` with ``kappa2``, ``h`` scalars or ``(L,)``.
    """
    n, cols = r.shape[0], r.reshape(r.shape[0], -1)
    kappa2, h = (np.broadcast_to(x, cols.shape[1:])[:, None, None] for x in (kappa2, h))
    eye = np.eye(n)
    lap = dmat(n, 2) - kappa2 * eye
    m = np.zeros((cols.shape[1], 2 * n, 2 * n))
    m[:, : n - 2, :n] = (eye - h * lap)[:, : n - 2]
    m[:, n - 2 : 2 * n - 4, :n], m[:, n - 2 : 2 * n - 4, n:] = -eye[: n - 2], lap[:, : n - 2]
    m[:, 2 * n - 4 :, n:] = np.concatenate([bc_rows(n, "dirichlet"), bc_rows(n, "neumann")])
    x = np.linalg.solve(m, np.concatenate([cols[: n - 2], np.zeros((n + 2, cols.shape[1]))]).T[..., None])[..., 0].T
    return x[:n].reshape(r.shape), x[n:].reshape(r.shape)


def rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - b).max() / np.abs(b).max())


def complex_normal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("n", [1, 2, 9, 34])
def test_derivative_matches_chebder(n):
    a = complex_normal(np.random.default_rng(n), (n, 3, 2))
    got = derivatives(a)
    for order in range(4):
        assert got[order].shape == a.shape
        ref = np.einsum("ij,jkl->ikl", dmat(n, order), a)
        assert rel(got[order], ref) <= 1e-14 if np.any(ref) else not np.any(got[order])


def test_values_derivatives_integral_mean_square():
    rng = np.random.default_rng(1)
    a, b = complex_normal(rng, (12, 4)), complex_normal(rng, (12, 4))
    top, bottom = tau.boundary_values(a)
    np.testing.assert_allclose(top, C.chebval(1.0, a), rtol=1e-14)
    np.testing.assert_allclose(bottom, C.chebval(-1.0, a), rtol=1e-14)
    dtop, dbottom = tau.boundary_derivatives(a)
    da = np.stack([C.chebder(a[:, j]) for j in range(4)], 1)
    np.testing.assert_allclose(dtop, C.chebval(1.0, da), rtol=1e-13)
    np.testing.assert_allclose(dbottom, C.chebval(-1.0, da), rtol=1e-13)
    y, w = np.polynomial.legendre.leggauss(16)  # exact for degree 31 >= 2 * 11
    ua, ub = C.chebval(y, a), C.chebval(y, b)  # (4, 16)
    np.testing.assert_allclose(tau.integrate(a), ua @ w, rtol=1e-13)
    np.testing.assert_allclose(tau.mean_square(a, b), 0.5 * (ua * ub.conj()) @ w, rtol=1e-13)
    assert tau.mean_square(a.real, a.real).dtype == jnp.float64


def dense_sweep(n_big: int, bc: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random complex ``f`` and boundary data for every lam of the sweep (lam on a trailing axis) and the dense
    solutions: ``(lams, f, edges, ref)``."""
    rng = np.random.default_rng(n_big + (bc == "neumann"))
    lams = LAMS[1:] if bc == "neumann" else LAMS  # pure Neumann (lam = 0) is singular: its own test
    f, edges = complex_normal(rng, (n_big + 1, lams.size)), complex_normal(rng, (2, lams.size))
    return lams, f, edges, dense_helmholtz(f, lams, bc, edges[0], edges[1])


@pytest.mark.parametrize("bc", ["dirichlet", "neumann"])
@pytest.mark.parametrize("n_big", [8, 16, 33, 64, 256])
def test_helmholtz_matches_dense_tau(n_big, bc):
    """float64, all seven lam at once: relative error <= 1e-12 (measured <= 2.4e-13). (N = 8 to 64: the shapes of
    the convergence test, compiled once for both; 256 the float32 test's; 128 measured, not compiled here.)"""
    lams, f, edges, ref = dense_sweep(n_big, bc)
    u = helmholtz(f, lams, bc, edges[0], edges[1])
    assert u.dtype == jnp.complex128
    errors = [rel(u[:, j], ref[:, j]) for j in range(lams.size)]
    assert max(errors) <= 1e-12, dict(zip(lams, errors))


@pytest.mark.parametrize("bc", ["dirichlet", "neumann"])
def test_helmholtz_float32_matches_dense_tau(bc):
    """complex64 against the float64 dense solve at N = 256: <= 2e-5 (measured <= 3.3e-6 over all N of the
    float64 sweep; one N here to keep the compiles few)."""
    n_big = 256
    lams, f, edges, ref = dense_sweep(n_big, bc)
    u = helmholtz(f.astype(np.complex64), lams.astype(np.float32), bc, *edges.astype(np.complex64))
    assert u.dtype == jnp.complex64
    errors = [rel(u[:, j], ref[:, j]) for j in range(lams.size)]
    assert max(errors) <= 2e-5, dict(zip(lams, errors))


def test_helmholtz_converges_exponentially():
    """u = exp(sin 2y) for every lam of LAMS (the dense test's shapes, so no new compiles); max error on 1001 points
    (worst over lam): Dirichlet 9.2e-3, 1.6e-6, 4.2e-14, 1.3e-13 at N = 8, 16, 33, 64; Neumann 0.17, 3.9e-5,
    1.4e-13, 7.1e-14 (the largest at N = 8, 16 where lam = 1e-2; at N = 33, 64 where lam = 1e10: f ~ 1e10 u carries
    that much rounding)."""
    u = lambda y: np.exp(np.sin(2 * y))  # noqa: E731
    du = lambda y: 2 * np.cos(2 * y) * u(y)  # noqa: E731
    d2u = lambda y: (4 * np.cos(2 * y) ** 2 - 4 * np.sin(2 * y)) * u(y)  # noqa: E731
    y = np.linspace(-1, 1, 1001)
    for bc, edge in (("dirichlet", u), ("neumann", du)):
        lams = LAMS[1:] if bc == "neumann" else LAMS
        f = np.stack([C.chebinterpolate(lambda y, lam=lam: d2u(y) - lam * u(y), 120) for lam in lams], 1) + 0j
        top, bottom = edge(np.ones(lams.size)) + 0j, edge(-np.ones(lams.size)) + 0j  # complex: the sweep's dtypes
        err = {}
        for n_big in (8, 16, 33, 64):
            a = helmholtz(f[: n_big + 1], lams, bc, top, bottom)
            err[n_big] = np.abs(C.chebval(y, np.asarray(a)) - u(y)).max(axis=1)  # per lam
        assert np.all(err[8] > 1e-3) and np.all(err[16] < 1e-4) and np.all(err[16] > 1e-8), err
        assert np.all(err[33] < 1e-12) and np.all(err[64] < 1e-12), err


def test_helmholtz_factor_reuse_broadcast_and_jit():
    """One factor, several right-hand sides; lam (1, 3) broadcast against trailing (2, 3); equals the one-shot."""
    rng = np.random.default_rng(3)
    lam = np.array([[0.5, 3.0, 40.0]])
    f = complex_normal(rng, (20, 2, 3))

    @jax.jit
    def both(f, lam):
        factor = tau.helmholtz_factor(20, lam, "neumann")
        return factor, tau.helmholtz_solve(factor, f, 1.0, -2.0), tau.helmholtz(f, lam, "neumann", 1.0, -2.0)

    factor, u, one_shot = jax.tree.map(np.asarray, both(f, lam))
    assert factor.p.shape == (9, 2, 1, 3) and u.shape == (20, 2, 3)
    np.testing.assert_allclose(u, one_shot, rtol=0, atol=1e-15 * np.abs(u).max())
    for i in range(2):
        for j in range(3):
            ref = dense_helmholtz(f[:, i, j], lam[0, j], "neumann", 1.0, -2.0)
            assert rel(u[:, i, j], ref) <= 1e-13
    assert jax.eval_shape(lambda: tau.helmholtz_factor(20, 3.0)).p.shape == (9, 2)


def test_helmholtz_pure_neumann_fixes_the_mean():
    """lam = 0, Neumann: a_0 = 0; with compatible data u'(+1) - u'(-1) = int f the slopes hold too. (Shapes of the
    N = 16 Neumann sweep: no new compile.)"""
    lams, f, edges, _ = dense_sweep(16, "neumann")
    lams = np.concatenate([[0.0], lams[:-1]])
    top = edges[0]
    bottom = top - C.chebval(1.0, C.chebint(f[:15], lbnd=-1))  # int f over [-1, 1] (tau: f_0 .. f_{N-2} only)
    u = helmholtz(f, lams, "neumann", top, bottom)
    assert np.all(u[0, 0] == 0)
    du = np.stack([C.chebder(u[:, j]) for j in range(lams.size)], 1)
    dtop, dbottom = C.chebval(1.0, du), C.chebval(-1.0, du)
    np.testing.assert_allclose(dtop, top, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dbottom[0], bottom[0], rtol=0, atol=1e-12)
    ref = dense_helmholtz(f[:, 2], lams[2], "neumann", top[2], bottom[2])
    assert rel(u[:, 2], ref) <= 1e-13


def test_helmholtz_gradient_matches_finite_differences():
    """d/dlam of sum |u|^2 against a central difference (one compile: value_and_grad evaluates both)."""
    f = complex_normal(np.random.default_rng(5), (24,))
    loss = jax.jit(jax.value_and_grad(lambda lam: jnp.sum(jnp.abs(tau.helmholtz(f, lam, "dirichlet", 0.5, 1j)) ** 2)))
    lam, eps = 3.7, 1e-5
    fd = (loss(lam + eps)[0] - loss(lam - eps)[0]) / (2 * eps)
    np.testing.assert_allclose(loss(lam)[1], fd, rtol=1e-8)


@pytest.mark.parametrize("n_big", [33, 64])  # an even and an odd count of coefficients; N = 20 and 16 below
def test_clamped_matches_dense_tau(n_big):
    rng = np.random.default_rng(10 + n_big)
    cases = [(1e-4, 1.0), (1e-2, 1.0), (1.0, 1.0), (1e-3, 100.0), (10.0, 1e5), (1.0, 1e6), (0.1, 1e-3)]
    h, kappa2 = (np.array(c) for c in zip(*cases))  # h * kappa2 from 1e-4 to 1e6
    r = complex_normal(rng, (n_big + 1, len(cases)))
    phi, v = clamped_solve(r, kappa2, h)
    phi_ref, v_ref = dense_clamped(r, kappa2, h)
    for j in range(len(cases)):
        assert rel(phi[:, j], phi_ref[:, j]) <= 1e-11 and rel(v[:, j], v_ref[:, j]) <= 1e-11, (cases[j], n_big)
    scale = np.abs(v).max(axis=0) * n_big**2  # |v'(+-1)| <= sum k^2 |v_k|
    dv = np.stack([C.chebder(v[:, j]) for j in range(len(cases))], 1)
    for edge in (C.chebval(1.0, v), C.chebval(-1.0, v), C.chebval(1.0, dv), C.chebval(-1.0, dv)):
        assert np.all(np.abs(edge) <= 1e-14 * scale)


def test_clamped_factored_batched_and_mean_mode():
    rng = np.random.default_rng(6)
    kappa2 = np.array([0.0, 1.0, 9.0])
    r = complex_normal(rng, (21, 4, 3))
    phi, v = jitted(lambda k, r: tau.clamped_solve_factored(tau.clamped_factor(21, k, 0.02), r))(kappa2, r)
    assert phi.shape == v.shape == (21, 4, 3)
    assert not np.any(phi[:, :, 0]) and not np.any(v[:, :, 0])
    for i, j in ((2, 1), (3, 2)):
        phi_ref, v_ref = dense_clamped(r[:, i, j], kappa2[j], 0.02)
        assert rel(phi[:, i, j], phi_ref) < 1e-12 and rel(v[:, i, j], v_ref) < 1e-12


def test_solves_run_inside_shard_map_on_trailing_shards():
    """Local along axis 0: on 8 blocks of the trailing axis the solves give the dense solutions."""
    mesh = jax.make_mesh((8,), ("x",), devices=jax.devices()[:8])
    rng = np.random.default_rng(7)
    f, kappa2 = complex_normal(rng, (17, 16)), np.linspace(0.0, 30.0, 16)

    def local(f, kappa2):
        return tau.clamped_solve(f, kappa2, 0.1)[1], tau.helmholtz(f, kappa2, "neumann", 1.0, 0.0)

    specs = (P(None, "x"), P("x"))
    sharded = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P(None, "x")))
    v, u = map(np.asarray, sharded(*[jax.device_put(x, NamedSharding(mesh, s)) for x, s in zip((f, kappa2), specs)]))
    assert not np.any(v[:, 0])
    # kappa2 = 0: v is zero by design (mean mode), and the dense pure Neumann matrix is singular
    v_ref = dense_clamped(f[:, 1:], kappa2[1:], 0.1)[1]
    u_ref = dense_helmholtz(f[:, 1:], kappa2[1:], "neumann", 1.0, 0.0)
    for j in range(15):
        assert rel(v[:, j + 1], v_ref[:, j]) <= 1e-12 and rel(u[:, j + 1], u_ref[:, j]) <= 1e-12


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="bc"):
        helmholtz(np.zeros(8), 1.0, "robin")
    with pytest.raises(ValueError, match="order"):
        derivative(np.zeros(8), -1)
    with pytest.raises(ValueError, match="f must have factor.n"):
        tau.helmholtz_solve(jax.eval_shape(lambda: tau.helmholtz_factor(8, 1.0)), np.zeros(9))
    with pytest.raises(ValueError, match="n "):
        tau.helmholtz_factor(2, 1.0)
    with pytest.raises(ValueError, match="r must hold"):
        clamped_solve(np.zeros(4), 1.0, 0.1)
    with pytest.raises(ValueError, match="a and b"):
        tau.mean_square(np.zeros(4), np.zeros(5))
