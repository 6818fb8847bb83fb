"""Boundary-condition objects at the two walls of the tau Helmholtz solve (solvers.bases.bc, tau with bc=(bottom,
top)): exact polynomial solutions for every pair of kinds, time-dependent values, the dense tau system with the
conditions' rows, and direct calls on explicitly sharded arrays."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from numpy.polynomial import chebyshev as C

import solvers
from solvers.bases import bc, tau

N = 17
LAMS = np.array([0.0, 0.3, 50.0, 1e4])
KINDS = {"D": solvers.Dirichlet, "N": solvers.Neumann, "R": lambda v: solvers.Robin(1.5, 0.75, v),
         "R2": lambda v: solvers.Robin(2.0, -0.25, v)}
PAIRS = ["DD", "DN", "ND", "NN", "DR", "RD", "RR", "NR", "RN", ("R", "R2")]


def exact(rng) -> np.ndarray:
    """Coefficients of a degree-9 polynomial (length N)."""
    u = np.zeros(N)
    u[:10] = rng.standard_normal(10)
    return u


def data(u: np.ndarray, cond, side: str) -> float:
    """``a u + b du/dn`` of the polynomial ``u`` at ``side`` (outward normal: -d/dy at the bottom)."""
    y, sign = (1.0, 1.0) if side == "top" else (-1.0, -1.0)
    return cond.a * C.chebval(y, u) + cond.b * sign * C.chebval(y, C.chebder(u))


def rhs(u: np.ndarray, lams: np.ndarray) -> np.ndarray:
    """``f = u'' - lam u`` for each ``lam`` (columns)."""
    d2 = np.pad(C.chebder(u, 2), (0, 2))
    return d2[:, None] - lams[None, :] * u[:, None]


def test_every_pair_of_conditions_solves_a_polynomial_exactly():
    """D, N and Robin at either wall, lam from 0 to 1e4 (one compiled program for all pairs): the tau solution of a
    degree-9 polynomial's data is the polynomial to 1e-12 (relative); the conditions' rows hold."""
    u = exact(np.random.default_rng(0))
    f = rhs(u, LAMS)
    pairs = [tuple(KINDS[k](0.0) for k in p) for p in PAIRS]
    values = [(data(u, b, "bottom"), data(u, t, "top")) for b, t in pairs]

    @jax.jit
    def solve(f, lams):
        return [tau.helmholtz_solve(tau.helmholtz_factor(N, lams, p), f, top=v[1], bottom=v[0])
                for p, v in zip(pairs, values)]

    for name, p, got in zip(PAIRS, pairs, jax.device_get(solve(f, LAMS))):
        cols = slice(1, None) if name == "NN" else slice(None)  # pure Neumann at lam = 0: a_0 is free (set to 0)
        err = np.abs(got[:, cols] - u[:, None]).max() / np.abs(u).max()
        assert err <= 1e-12, (name, err)
        for side, cond in zip(("bottom", "top"), p):
            row = bc.boundary_row(cond, N, side)
            np.testing.assert_allclose(row @ got[:, cols], data(u, cond, side), rtol=1e-12, atol=1e-12)


def test_mixed_pairs_match_the_dense_tau_system():
    """Random complex f (not a polynomial of low degree): the O(N) solve equals numpy's dense (N+1)-square tau
    system with the conditions' rows, for batched lam and complex data."""
    rng = np.random.default_rng(1)
    f = rng.standard_normal((N, 3, 4)) + 1j * rng.standard_normal((N, 3, 4))
    pair = (solvers.Robin(1.0, 2.0), solvers.Neumann())
    got = np.asarray(jax.jit(lambda f: tau.helmholtz_solve(tau.helmholtz_factor(N, LAMS, pair), f, 1j, 2.0))(f))
    d2 = np.zeros((N, N))
    for j in range(N):
        d2[: N - 2, j] = np.pad(C.chebder(np.eye(N)[j], 2), (0, 2))[: N - 2]
    for j, lam in enumerate(LAMS):
        m = np.concatenate([d2[: N - 2] - lam * np.eye(N)[: N - 2], [bc.boundary_row(pair[1], N, "top"),
                                                                      bc.boundary_row(pair[0], N, "bottom")]])
        ref = np.linalg.solve(m, np.concatenate([f[: N - 2, :, j], np.full((1, 3), 1j), np.full((1, 3), 2.0)]))
        assert np.abs(got[:, :, j] - ref).max() <= 1e-12 * np.abs(ref).max(), lam
    assert bc.boundary_row(solvers.Neumann(), N, "bottom")[3] == -9.0  # du/dn = -T_3'(-1) = -9


def test_values_as_functions_of_time():
    """``value(t)`` at a traced time: u(y, t) = (1 + t) p(y) + t^2 q(y) solved at t = 0.7 and 2.0 by one program."""
    rng = np.random.default_rng(2)
    p_, q_ = exact(rng), exact(rng)
    lam = 3.0
    bottom = solvers.Dirichlet(lambda t: (1 + t) * C.chebval(-1.0, p_) + t * t * C.chebval(-1.0, q_))
    rob = solvers.Robin(1.0, 0.5, 0.0)

    def top_value(t):
        return (1 + t) * data(p_, rob, "top") + t * t * data(q_, rob, "top")
    pair = (bottom, solvers.Robin(1.0, 0.5, top_value))
    solve = jax.jit(lambda f, t: tau.helmholtz(f, lam, pair, t=t))
    for t in (0.7, 2.0):
        u = (1 + t) * p_ + t * t * q_
        got = np.asarray(solve(rhs(u, np.array([lam]))[:, 0], t))
        assert np.abs(got - u).max() <= 1e-12 * np.abs(u).max(), t
        assert bc.values(pair, t)[0] == pytest.approx(C.chebval(-1.0, u), rel=1e-13)


def test_direct_calls_on_explicitly_sharded_arrays():
    """A user's direct factor + solve on arrays sharded over 8 devices (no local_map): the blocks' results equal
    the unsharded solve, and the result keeps the input's sharding."""
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:8])
    rng = np.random.default_rng(3)
    f = rng.standard_normal((N, 16)) + 1j * rng.standard_normal((N, 16))
    lams = np.linspace(0.0, 40.0, 16)
    pair = (solvers.Dirichlet(1.0), solvers.Robin(1.0, 1.0, 0.5))

    def solve(f, lams):
        return tau.helmholtz_solve(tau.helmholtz_factor(N, lams, pair, tables=False), f, 0.5, 1.0)
    ref = np.asarray(jax.jit(solve)(f, lams))
    with jax.set_mesh(mesh):
        fs = jax.device_put(f, NamedSharding(mesh, P(None, "x")))
        ls = jax.device_put(lams, NamedSharding(mesh, P("x")))
        got = jax.jit(solve)(fs, ls)
    assert got.sharding.spec == P(None, "x")
    np.testing.assert_allclose(np.asarray(got), ref, rtol=0, atol=1e-13 * np.abs(ref).max())


def test_condition_objects_check_their_arguments():
    with pytest.raises(ValueError, match="a and b"):
        solvers.Robin(0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="b must be a finite"):
        solvers.Robin(1.0, float("nan"))
    with pytest.raises(TypeError, match="value must be"):
        solvers.Dirichlet("hot")
    with pytest.raises(TypeError, match="bc must be a boundary condition"):
        tau.helmholtz_factor(8, 1.0, ("dirichlet", "neumann"))
    with pytest.raises(ValueError, match="side"):
        bc.boundary_row(solvers.Dirichlet(), 8, "left")
    assert bc.as_pair(solvers.Neumann(2.0)) == (solvers.Neumann(2.0), solvers.Neumann(2.0))
    assert solvers.Neumann(2.0).on_interval(0.5).value == 1.0 and solvers.Robin(1, 2).on_interval(0.5).b == 4.0
    assert jnp.asarray(solvers.Neumann(lambda t: 2 * t).on_interval(0.5).at(3.0)) == 3.0
