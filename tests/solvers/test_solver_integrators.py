"""Time integrators: phi-functions against exact series, observed order of convergence of every scheme."""

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers import INTEGRATORS, RK4, NavierStokes, SpectralGrid
from solvers.integrators import Integrator, phi_functions


def _phi_exact(z: complex, j: int) -> complex:
    """phi_j(z) = sum_m z^m / (m + j)!, summed in exact rational arithmetic (real and imaginary parts)."""
    x, y = Fraction(z.real), Fraction(z.imag)
    re, im = Fraction(0), Fraction(0)
    pr, pi = Fraction(1), Fraction(0)  # z^m
    for m in range(60 + 5 * int(abs(z))):
        f = math.factorial(m + j)
        re += pr / f
        im += pi / f
        pr, pi = pr * x - pi * y, pr * y + pi * x
    return complex(float(re), float(im))


def test_phi_functions_exact_across_the_branch_switch():
    zs = np.array([0.0, 1e-8, -1e-4, 0.3, -0.999, -1.001, 2.5, -7.0, -30.0, 1e-6j, 0.9j, -1.1j, 4j, -2 + 3j])
    phi = jax.jit(lambda z: phi_functions(z, count=3))  # one program per dtype, not one per operation
    got = [np.asarray(p) for p in phi(jnp.asarray(zs, jnp.complex128))]
    for j in (1, 2, 3):
        ref = np.array([_phi_exact(complex(z), j) for z in zs])
        np.testing.assert_allclose(got[j - 1], ref, rtol=2e-15, atol=0)
    real = [np.asarray(p) for p in phi(jnp.asarray([-20.0, -0.5, 0.0], jnp.float64))]
    assert real[0].dtype == np.float64
    np.testing.assert_allclose(real[2], [_phi_exact(z, 3).real for z in (-20.0, -0.5, 0.0)], rtol=2e-15)


CHUNK = 4  # steps per call of ``advance`` (a static argument): one compiled loop per scheme for every dt


def _advance(integ, u, t_end, steps):
    """``steps`` steps of ``t_end / steps`` from t = 0, as calls of ``CHUNK`` steps (the same compiled loop)."""
    dt = t_end / steps
    for i in range(steps // CHUNK):
        u = integ.advance(u, i * CHUNK * dt, dt, CHUNK)
    return u


@pytest.fixture(scope="module")
def order_problem():
    """Taylor-Green at 16^3, nu = 0.05 (stiffness nu k_max^2 ~ 3.75), t in [0, 0.8], and a fine reference."""
    grid = SpectralGrid(16, None, dtype=jnp.float64)
    eq = NavierStokes(grid, nu=0.05)
    u0 = eq.initial_state("taylor-green")
    t_end = 0.8
    ref = _advance(RK4(eq), u0, t_end, 256)
    return eq, u0, t_end, np.asarray(ref)


# Split-step schemes need a potential (Schrödinger-type equations); they are tested in test_solver_quantum.py. The
# leapfrog advances particles: test_leapfrog_is_second_order_on_a_plasma below.
@pytest.mark.parametrize("name", [n for n, c in INTEGRATORS.items()
                                  if not getattr(c, "requires_potential", False) and n != "leapfrog"])
def test_observed_order_of_convergence(order_problem, name):
    eq, u0, t_end, ref = order_problem
    integ = INTEGRATORS[name](eq)
    errs = []
    for steps in (4, 8, 16):
        u = np.asarray(_advance(integ, u0, t_end, steps))
        errs.append(np.abs(u - ref).max() / np.abs(ref).max())
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert errs[-1] < 1e-5
    # the observed order at the finest pair is the formal order (4 for rk4/lsrk4/etdrk4/ifrk4, 3 for imex)
    assert integ.order - 0.25 < orders[-1] < integ.order + 0.6, (name, errs, orders)


def test_leapfrog_is_second_order_on_a_plasma():
    """A Landau-damping plasma (256 particles, TSC on 16 cells, alpha = 0.05) to t = 2 in 16, 32, 64 steps against
    512: the velocities' error falls at order 2 (measured 2.06, 2.01)."""
    from solvers.integrators import Leapfrog
    from solvers.particles import VlasovPoisson, periodic_grid

    eq = VlasovPoisson(periodic_grid(16, 4 * np.pi, None, dtype=jnp.float64), particles=256, kernel="tsc")
    y0 = eq.initial_state("landau", alpha=0.05)
    step = INTEGRATORS["leapfrog"](eq)
    assert isinstance(step, Leapfrog) and step.order == 2
    ref = np.asarray(step.advance(y0, 0.0, 2.0 / 512, 512).velocities)
    errs = [np.abs(np.asarray(step.advance(y0, 0.0, 2.0 / n, n).velocities) - ref).max() for n in (16, 32, 64)]
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert 1.8 < orders[-1] < 2.4, (errs, orders)


_G = 1 - 2 ** -0.5  # ARS(2,2,2)'s diagonal
#: IMEX tableaus of the other forms the stage loop takes, with their order: ARS(2,2,2) (stiffly accurate, one
#: diagonal), IMEX trapezoidal (the solution row is not the last stage's, the first stage's L u is used) and a
#: stiffly accurate one of two diagonals (the factors stacked and taken by stage; first order)
OTHER_TABLEAUS = {
    "ars222": (((0, 0, 0), (_G, 0, 0), (1 - 1 / (2 * _G), 1 / (2 * _G), 0)),
               ((0, 0, 0), (0, _G, 0), (0, 1 - _G, _G)), (0, _G, 1), 2),
    "trapezoidal": (((0, 0), (1, 0)), ((0, 0), (0.5, 0.5)), (0, 1), 2, (0.5, 0.5), (0.5, 0.5)),
    "two-diagonals": (((0, 0, 0), (0.5, 0, 0), (0, 1, 0)), ((0, 0, 0), (0, 0.5, 0), (0, 0.75, 0.25)), (0, 0.5, 1), 1),
}


@pytest.mark.parametrize("name", list(OTHER_TABLEAUS))
def test_imex_tableaus_of_other_forms_converge_at_their_order(order_problem, name):
    from solvers import IMEX
    from solvers.integrators import Tableau

    a_ex, a_im, c, order, *b = OTHER_TABLEAUS[name]
    b_ex, b_im = b if b else (a_ex[-1], a_im[-1])
    eq, u0, t_end, ref = order_problem
    integ = IMEX(eq, Tableau(a_ex, b_ex, a_im, b_im, c, order))
    assert integ.order == order
    errs = []
    for steps in (8, 16, 32):
        u = np.asarray(_advance(integ, u0, t_end, steps))
        errs.append(np.abs(u - ref).max() / np.abs(ref).max())
    observed = np.log2(errs[-2] / errs[-1])
    assert order - 0.25 < observed < order + 0.6, (name, errs)


def test_imex_refuses_tableaus_it_cannot_take(order_problem):
    from solvers import IMEX
    from solvers.integrators import Tableau

    eq = order_problem[0]
    with pytest.raises(TypeError, match="tableau must be"):
        IMEX(eq, ((0, 0), (1, 0)))
    ok = dict(a_ex=((0, 0), (1, 0)), b_ex=(0.5, 0.5), a_im=((0, 0), (0, 1)), b_im=(0, 1), c=(0, 1), order=1)
    for change, match in [(dict(a_im=((1, 0), (0, 1))), "explicit first stage"),
                          (dict(a_im=((0, 0), (1, 0))), "explicit first stage"),
                          (dict(a_ex=((0, 1), (1, 0))), "strictly lower"),
                          (dict(a_im=((0, 1), (0, 1))), "lower triangular"),
                          (dict(c=(0, 1, 1)), "same number of stages")]:
        with pytest.raises(ValueError, match=match):
            IMEX(eq, Tableau(**{**ok, **change}))


def test_lsrk4_stability_polynomial_and_radius():
    """LSRK4 applied to y' = z y: R(z) agrees with exp(z) through z^4 (order 4) and its z^5 coefficient is
    Carpenter & Kennedy's 1/200; |R(-x)| <= 1 exactly up to the advertised radius on the negative real axis."""
    from solvers.integrators import LSRK4
    from solvers.integrators.lsrk4 import A, B

    def r(z):
        u, du = np.ones_like(z), np.zeros_like(z)
        for a, b in zip(A, B):
            du = a * du + z * u
            u = u + b * du
        return u

    coeffs = np.polynomial.polynomial.polyfit(np.linspace(-1, 1, 41), r(np.linspace(-1, 1, 41)), 5)
    np.testing.assert_allclose(coeffs, [1, 1, 1 / 2, 1 / 6, 1 / 24, 1 / 200], rtol=1e-9, atol=1e-12)
    x = np.linspace(0, 5, 500001)
    radius = x[np.argmax(np.abs(r(-x)) > 1 + 1e-12)]
    assert radius == pytest.approx(4.6567, abs=1e-4)
    assert LSRK4.linear_stability_radius <= radius < LSRK4.linear_stability_radius + 0.01


def test_the_drivers_step_is_the_plain_step():
    """``step_aux`` with the rate (the driver's: the rate of the state from the first stage's physical fields)
    takes the same step as ``step`` for every scheme, to round-off, and its rate is the one the equation computes
    alone; so does ``first_evaluation`` then ``finish`` for the schemes whose step is made of them (RK4 and LSRK4
    run their stages in ``Integrator.stage_loop`` and have no ``finish``)
    (one device: the algebra of the schemes; the sharded driver is tested in ``test_time_loop.py``)."""
    from solvers.equations.navier_stokes_2d import NavierStokes2D

    eq = NavierStokes2D(SpectralGrid(32, None, ndim=2, dtype=jnp.float64), nu=0.01)
    s0 = eq.initial_state("random", seed=1)
    with jax.set_mesh(eq.grid.mesh):
        rate = float(jax.jit(eq.max_rate)(s0))
        for name, cls in INTEGRATORS.items():
            try:
                integ = cls(eq)
            except TypeError:
                continue  # a scheme for another kind of equation
            dt = 0.5 / rate
            split_step = type(integ).step_aux is Integrator.step_aux

            def steps(s, integ=integ, dt=dt, split_step=split_step):  # one program per scheme
                c = integ.coefficients(dt)
                got, aux = integ.step_aux(s, 0.0, dt, c, rate=True)
                ref = integ.step(s, 0.0, dt, c)
                # and the split step (first evaluation, then finish) that the generic driver step is made of
                split = integ.finish(s, integ.first_evaluation(s, 0.0, False)[0], 0.0, dt, c) if split_step else ref
                return got, aux.rate, ref, split

            got, got_rate, ref, split = (np.asarray(a) for a in jax.jit(steps)(s0))  # compared in numpy
            assert float(got_rate) == pytest.approx(rate, rel=1e-13), name
            c = jax.eval_shape(integ.coefficients, dt)
            assert jax.eval_shape(lambda s, c, integ=integ, dt=dt: integ.step_aux(s, 0.0, dt, c)[1], s0, c).rate is None
            scale = float(np.max(np.abs(ref - np.asarray(s0))))
            assert scale > 0 and float(np.max(np.abs(got - ref))) < 1e-12 * scale, name
            if not split_step:
                assert type(integ).finish is Integrator.finish, name  # no second copy of the stages
                continue
            assert float(np.max(np.abs(split - ref))) < 1e-12 * scale, name
