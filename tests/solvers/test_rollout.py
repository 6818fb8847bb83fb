"""solvers.rollout: gradients through sharded simulations (issue 20).

References: central finite differences in random directions (float64, relative error <= 1e-6), the one-device
gradient for slab and pencil meshes (1e-12), the dot-product test between ``jvp`` and ``vjp``, the plain
``Integrator.advance`` loop for the forward result of every checkpointing policy, and XLA's own buffer assignment
(``compiled.memory_analysis()``) for the memory of a checkpointed backward pass. Grids are tiny (8^3, 16^2):
compiles dominate, so each test compiles a gradient once and reuses it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers import REGISTRY, CFLStep, Equation, FixedStep, NavierStokes, SpectralGrid
from solvers.equations import Burgers, NavierStokes2D
from solvers.integrators import INTEGRATORS


def pair(a, b) -> jax.Array:
    """The real pairing of JAX's cotangents with tangents, ``Re sum(a * b)`` over all leaves."""
    return sum(jnp.sum((x * y).real) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def physical_direction(grid: SpectralGrid, seed: int, batch: tuple[int, ...] = ()) -> jax.Array:
    """Spectrum of a random real field (a direction that is a state of the grid), same sharding as a state."""
    x = np.random.default_rng(seed).standard_normal(batch + grid.shape)
    f = jax.device_put(x.astype(grid.dtype), grid.real_sharding(len(batch)))
    return jax.jit(lambda f: grid.dealias(grid.rfft(f)))(f)


def check_directional_derivatives(eq: Equation, run, state0, param: str, seed: int, h: float = 1e-5) -> None:
    """``d/de L(state0 + e v, p + e dp)`` by the gradient against central differences, in the state alone and in
    the parameter alone; ``L = energy(run(...))`` (float64: relative error <= 1e-6). One compiled program, the
    value and the gradient: its value is the loss the differences take (a separate forward program would be a
    second compile of the same loop)."""
    p0 = float(eq.params[param])

    def loss(s, p):
        return eq.energy(run(s, {param: p}))

    def probe(s, v, gs):  # one small program: the direction scaled to h |s|, the shifted states, <gs, v>
        v = v * (h * jnp.sqrt(pair(jnp.conj(s), s) / pair(jnp.conj(v), v)))
        return s + v, s - v, pair(gs, v)

    with jax.set_mesh(eq.grid.mesh):
        value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))

        def fwd(s, p):
            return value_and_grad(s, p)[0]

        _, (gs, gp) = value_and_grad(state0, p0)
        assert gs.sharding == state0.sharding
        v = physical_direction(eq.grid, seed, state0.shape[:state0.ndim - eq.grid.ndim])
        plus, minus, by_grad = jax.jit(probe)(state0, v, gs)
        fd_state = (float(fwd(plus, p0)) - float(fwd(minus, p0))) / 2  # (the differences in float64 on the host)
        dp = h * p0
        fd_param = (float(fwd(state0, p0 + dp)) - float(fwd(state0, p0 - dp))) / 2
        errors = abs(float(by_grad) / fd_state - 1), abs(float(gp) * dp / fd_param - 1)
        print(f"{eq.label()}: relative error of the directional derivative in the state {errors[0]:.1e}, "
              f"in {param} {errors[1]:.1e}")
        assert errors[0] <= 1e-6, (float(by_grad), fd_state)
        assert errors[1] <= 1e-6, (float(gp) * dp, fd_param)
        assert abs(fd_param) > 1e-8 * abs(float(fwd(state0, p0))) * h  # the parameter does matter


def test_navier_stokes_3d_directional_derivatives():
    """3D Navier-Stokes 8^3, LSRK4 (its default), 4 steps in checkpointed blocks of 2, one device, float64: the
    gradient in u0 and nu against central differences."""
    eq = NavierStokes(SpectralGrid(8, None, dtype=jnp.float64), nu=0.05)
    u0 = eq.initial_state("random-isotropic", seed=1, k0=2.0, energy=0.5)
    run = solvers.rollout(eq, "lsrk4", dt=0.05, steps=4, checkpoint_every=2)
    check_directional_derivatives(eq, run, u0, "nu", seed=2)


def test_burgers_directional_derivatives():
    """3D Burgers on a thin 16 x 4 x 4 grid (a shock-forming, compressible flow), ETDRK4: the gradient in nu goes
    through the phi functions of ``-nu k^2``, computed inside the trace. Without checkpoints (one program the
    smaller: checkpointed blocks are the Navier-Stokes tests')."""
    grid = SpectralGrid((16, 4, 4), None, dtype=jnp.float64, box_length=(2 * np.pi, 0.5, 0.5))
    eq = Burgers(grid, nu=0.1)
    u0 = eq.initial_state("sine")
    run = solvers.rollout(eq, "etdrk4", dt=0.05, steps=4)
    check_directional_derivatives(eq, run, u0 + 0.1 * physical_direction(grid, 3, (3,)), "nu", seed=4)


_DNU = 0.3  # the parameter's part of the direction of the jvp


@pytest.fixture(scope="module")
def ns2d_gradients(meshes):
    """2D Navier-Stokes (16^2, LSRK4, 6 steps, nested checkpoints: a block of 4 in blocks of 2, and a remainder of
    2) on one device, slab and pencil: the gradient of ``Re <w, run(w0, nu)>`` (a vector-Jacobian product with
    cotangent ``w``), with everything it needs. One compiled program a mesh: the loss and its gradient, and on the
    pencil mesh the jvp in the direction ``(v, _DNU)`` as well (the finite differences take its loss)."""
    out = {}
    for kind in ("single", "slab", "pencil"):
        eq = NavierStokes2D(SpectralGrid(16, meshes[kind], ndim=2, dtype=jnp.float64), nu=0.05)
        w0 = eq.initial_state("random", seed=1, k0=3.0, energy=0.5)
        cot = physical_direction(eq.grid, 5)
        run = solvers.rollout(eq, "lsrk4", dt=0.05, steps=6, checkpoint_every=(4, 2))

        def loss(w, nu, run=run, cot=cot):
            return pair(cot, run(w, {"nu": nu}))

        d = dict(eq=eq, w0=w0, cot=cot, run=run)
        with jax.set_mesh(eq.grid.mesh):
            if kind != "pencil":
                d["grad"] = jax.jit(jax.grad(loss, argnums=(0, 1)))(w0, 0.05)
            else:
                def program(w, nu, v, dnu, run=run, loss=loss):  # loss, gradient and jvp
                    value, g = jax.value_and_grad(loss, argnums=(0, 1))(w, nu)
                    _, jv = jax.jvp(lambda a, b: run(a, {"nu": b}), (w, nu), (v, dnu))
                    return value, g, jv

                d["v"] = v = physical_direction(eq.grid, 6)
                d["program"] = program = jax.jit(program)
                _, d["grad"], d["jv"] = program(w0, 0.05, v, _DNU)
        out[kind] = d
    return out


def test_gradient_on_slab_and_pencil_equals_one_device(ns2d_gradients):
    ref = ns2d_gradients["single"]["grad"]
    for kind in ("slab", "pencil"):
        d = ns2d_gradients[kind]
        gw, gnu = d["grad"]
        assert gw.sharding == d["w0"].sharding and gw.sharding.spec != ref[0].sharding.spec
        np.testing.assert_allclose(np.asarray(gw), np.asarray(ref[0]), rtol=0, atol=1e-12 * np.abs(ref[0]).max())
        assert abs(float(gnu) - float(ref[1])) <= 1e-12 * abs(float(ref[1])), (kind, float(gnu), float(ref[1]))


def test_navier_stokes_2d_directional_derivatives_and_dot_product(ns2d_gradients):
    """On the pencil mesh: the vjp (gradient) against central differences in w0 and nu, and against the jvp
    (dot-product test ``<w, J v> = <J^T w, v>`` with the parameter direction included)."""
    d = ns2d_gradients["pencil"]
    eq, w0, v, jv, program = d["eq"], d["w0"], d["v"], d["jv"], d["program"]
    gw, gnu = d["grad"]
    dnu, h = _DNU, 1e-5

    def probe(w, v, dnu, gw, gnu, jv):  # one small program: both sides of the dot-product test, shifted states
        return pair(d["cot"], jv), pair(gw, v) + gnu * dnu, pair(gw, v), w + h * v, w - h * v

    with jax.set_mesh(eq.grid.mesh):
        assert jv.sharding == w0.sharding
        lhs, rhs, gw_v, w_plus, w_minus = jax.jit(probe)(w0, v, dnu, gw, gnu, jv)
        lhs, rhs = float(lhs), float(rhs)
        assert abs(lhs - rhs) <= 1e-12 * abs(lhs), (lhs, rhs)

        def fwd(w, nu):  # the loss: the program's first output
            return program(w, nu, v, dnu)[0]

        for (a, na), (b, nb), by_grad in (((w_plus, 0.05), (w_minus, 0.05), float(gw_v)),
                                          ((w0, 0.05 + h * dnu), (w0, 0.05 - h * dnu), float(gnu) * dnu)):
            fd = (float(fwd(a, na)) - float(fwd(b, nb))) / (2 * h)
            print(f"navier-stokes-2d (pencil): directional derivative, relative error {abs(by_grad / fd - 1):.1e}")
            assert abs(by_grad - fd) <= 1e-6 * abs(fd), (by_grad, fd)


def test_checkpointed_backward_memory():
    """XLA's buffer assignment of the compiled gradient (2D Navier-Stokes 64^2, LSRK4, one device: what is measured
    is the checkpointing, which is the same on each device of a mesh; sharded gradients: ns2d_gradients): with
    blocks of 4 steps, 16 more steps cost exactly 4 more states (one per block); without checkpointing every step
    keeps its stages' internals (more than 10 states per step)."""
    eq = NavierStokes2D(SpectralGrid(64, None, ndim=2, dtype=jnp.float64), nu=0.05)
    like = eq.abstract_state()
    state = np.prod(like.shape) * like.dtype.itemsize

    def states(steps, every):
        run = solvers.rollout(eq, "lsrk4", dt=0.01, steps=steps, checkpoint_every=every)
        with jax.set_mesh(eq.grid.mesh):
            m = jax.jit(jax.grad(lambda w: eq.energy(run(w)))).lower(like).compile().memory_analysis()
        total = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
        return total * eq.grid.mesh.size / state  # XLA reports one device's program

    short, long, plain = states(16, 4), states(32, 4), states(32, None)
    assert long - short == pytest.approx(4, abs=0.25), (short, long)
    assert plain - long > 10 * (32 - 8), (plain, long)


# ----- the forward result does not depend on the policy ---------------------------------------------------------
@pytest.fixture(scope="module")
def ns2d():
    eq = NavierStokes2D(SpectralGrid(16, None, ndim=2, dtype=jnp.float64), nu=0.05)
    return eq, eq.initial_state("random", seed=1, k0=3.0, energy=0.5)  # (ns2d_gradients' program)


def test_policies_and_remainders_take_the_same_steps(ns2d):
    """7 steps (not a multiple of 3 or 2) under every policy equal 7 steps of ``Integrator.advance`` bit for bit;
    time-dependent equations see ``t0 + i dt``."""
    eq, w0 = ns2d
    ref = np.asarray(INTEGRATORS["rk4"](eq).advance(w0, 0.3, 0.02, 7))
    for every in (None, 3, (4, 2), 7, 100):
        run = solvers.rollout(eq, "rk4", dt=0.02, steps=7, checkpoint_every=every, t0=0.3)
        np.testing.assert_array_equal(np.asarray(run(w0)), ref, err_msg=str(every))
    assert run.levels == (100,) and run.saved_steps == (7,)


def test_save_every_stacks_states_with_the_state_sharding(meshes):
    eq = NavierStokes2D(SpectralGrid(16, meshes["slab"], ndim=2, dtype=jnp.float64), nu=0.05)
    w0 = eq.initial_state("random", seed=1, k0=3.0, energy=0.5)  # (ns2d_gradients' program)
    run = solvers.rollout(eq, "lsrk4", dt=0.02, steps=7, checkpoint_every=2, save_every=3)
    assert run.saved_steps == (3, 6, 7) and run.saved_times == pytest.approx((0.06, 0.12, 0.14))
    traj = run(w0)
    assert traj.shape == (3,) + w0.shape and tuple(traj.sharding.spec) == (None, *w0.sharding.spec)
    step = INTEGRATORS["lsrk4"](eq)
    for j, (start, t, n) in enumerate(((w0, 0.0, 3), (traj[0], 0.06, 3), (traj[1], 0.12, 1))):
        for i in range(n):  # one step at a time: one compiled loop for every stretch
            start = step.advance(start, t + 0.02 * i, 0.02, 1)
        np.testing.assert_allclose(np.asarray(traj[j]), np.asarray(start), rtol=0, atol=1e-14)
    with jax.set_mesh(eq.grid.mesh):  # vmap over initial states
        both = jax.jit(jax.vmap(solvers.rollout(eq, "lsrk4", dt=0.02, steps=3)))(jnp.stack([w0, 2 * w0]))
    np.testing.assert_allclose(np.asarray(both[0]), np.asarray(traj[0]), rtol=0, atol=1e-14)


# ----- every equation and integrator -----------------------------------------------------------------------------
# Each equation once and each integrator once (not their product): the equation's default integrator, except where
# another one is traced on an equation that takes it, so that every integrator appears. The smallest dimension each
# equation has (3D only for Navier-Stokes and Burgers, whose 3D gradients are also compiled and checked above).
_SWEEP = {
    "navier-stokes": "lsrk4",  # (default)
    "schrodinger-poisson": "split-step",  # (default)
    "gross-pitaevskii": "split-step-imaginary",
    "cahn-hilliard": "etdrk4",  # (default)
    "allen-cahn": "ifrk4",
    "navier-stokes-2d": "rk4",  # (default)
    "burgers": "rk4",  # (default)
    "rayleigh-benard": "etdrk4",  # (default; free-slip)
    "channel": "imex",  # (default; walls: banded implicit solves)
    "couette": "imex",  # (default)
    "vlasov-poisson": "leapfrog",  # (default; particles: no float parameter, the gradient in the state)
    "comoving-nbody": "leapfrog",  # (default; particles, the time the scale factor)
}


def test_every_equation_and_integrator_is_differentiable(meshes):
    """Reverse mode traces (``eval_shape`` of the gradient in the state and the first float parameter) for every
    equation, and with them every integrator (:data:`_SWEEP`); split-step schemes on the Schroedinger-type
    equations."""
    assert set(_SWEEP) == set(REGISTRY) and set(_SWEEP.values()) == set(INTEGRATORS)
    for key, integrator in _SWEEP.items():
        spec = REGISTRY[key].variant({})  # (convection: its default, free-slip, variant)
        cls = spec.equation
        nd = min(spec.ndims)
        shape = (16,) * nd if nd == 2 else (8,) * 3
        box = spec.default_box(nd, {})
        try:  # the equation's own grid (no-slip walls: an odd number of Chebyshev points across)
            grid = spec.grid(shape, meshes["slab"], box, dtype=jnp.float64, dealias="2/3", backend="native")
        except ValueError:
            grid = spec.grid((shape[0] + 1,) + shape[1:], meshes["slab"], box, dtype=jnp.float64, dealias="2/3",
                             backend="native")
        eq = cls(grid)
        name = next((p.name for p in cls.parameters if p.type is float), None)
        # one checkpointed block (the gradient of a remainder block: the tests of ns2d_gradients)
        run = solvers.rollout(eq, integrator, dt=1e-3, steps=2, checkpoint_every=2)

        def loss(s, p, run=run, name=name):
            out = run(s, {name: p}) if name else run(s)
            return sum(jnp.sum(jnp.abs(leaf) ** 2) for leaf in jax.tree.leaves(out))

        like = eq.abstract_state()
        value = jnp.float64(eq.params[name]) if name else jnp.float64(0)
        with jax.set_mesh(grid.mesh):
            gs, gp = jax.eval_shape(jax.grad(loss, argnums=(0, 1)), like, value)
        assert jax.tree.map(lambda a: (a.shape, a.dtype), gs) == jax.tree.map(lambda a: (a.shape, a.dtype), like)
        assert gp.shape == (), (cls.name, integrator)


class _IterativeSolve(Equation):
    """A toy whose nonlinear term converges a fixed point with ``lax.while_loop`` (an iterative implicit solve)."""

    ndims = (2,)

    def linear(self):
        return -self.grid.k2()

    def nonlinear(self, u, t):
        def body(c):
            x, _ = c
            y = 0.5 * (x + u)
            return y, jnp.max(jnp.abs(y - x))

        x, _ = jax.lax.while_loop(lambda c: c[1] > 1e-13, body, (2 * u, jnp.ones((), u.real.dtype)))
        return -0.1 * x


def test_a_data_dependent_loop_has_forward_mode_and_a_named_reverse_mode_error():
    eq = _IterativeSolve(SpectralGrid(16, None, ndim=2, dtype=jnp.float64))
    u0 = physical_direction(eq.grid, 7)
    run = solvers.rollout(eq, "rk4", dt=0.01, steps=2)
    with jax.set_mesh(eq.grid.mesh):
        _, tangent = jax.jvp(run, (u0,), (u0,))  # forward mode goes through a while loop
        assert np.isfinite(np.asarray(tangent)).all()
        with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
            jax.grad(lambda u: pair(u0, run(u)))(u0)


# ----- bad input ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(steps=0), ValueError, "steps must be a positive int"),
    (dict(steps=2.5), TypeError, "steps must be a positive int"),
    (dict(steps=True), TypeError, "steps must be a positive int"),
    (dict(steps=3, dt=CFLStep(0.5)), ValueError, "dt: the adaptive step controller CFL"),
    (dict(steps=3, dt=-1.0), ValueError, "dt must be positive"),
    (dict(steps=3, dt="0.1"), TypeError, "dt must be a real number"),
    (dict(steps=3, checkpoint_every=0), ValueError, "checkpoint_every must be a positive int"),
    (dict(steps=3, checkpoint_every=(2, 4)), ValueError, "strictly decreasing"),
    (dict(steps=3, checkpoint_every="sqrt"), TypeError, "checkpoint_every must be None"),
    (dict(steps=3, save_every=0), ValueError, "save_every must be a positive int"),
    (dict(steps=3, integrator="euler"), ValueError, "integrator: unknown integrator 'euler'"),
    (dict(steps=3, integrator="split-step"), TypeError, "split-step needs a Schroedinger-type equation"),
])
def test_bad_arguments_are_named(ns2d, kwargs, exc, match):
    eq, _ = ns2d
    kwargs = {"dt": 0.01, **kwargs}
    with pytest.raises(exc, match=match):
        solvers.rollout(eq, kwargs.pop("integrator", "rk4"), **kwargs)


@pytest.mark.parametrize("params, exc, match", [
    ({"viscosity": 0.1}, ValueError, r"params: unknown parameter 'viscosity' for NavierStokes2D; its float "
                                     r"parameters: nu, forcing, drag, amplitude"),
    ({"kf": 2}, TypeError, r"params\['kf'\]: NavierStokes2D parameter kf is of type int"),
    ({"nu": jnp.ones(3)}, ValueError, r"params\['nu'\] must be a scalar"),
    ({"nu": jnp.asarray(1j)}, TypeError, r"params\['nu'\] must be real"),
    ({"nu": "0.1"}, TypeError, r"params\['nu'\] must be a real scalar"),
    ({"forcing": 0.1}, TypeError, r"uses the value of forcing in Python control flow"),
])
def test_bad_parameters_are_named(ns2d, params, exc, match):
    eq, w0 = ns2d
    run = solvers.rollout(eq, "rk4", dt=FixedStep(0.01), steps=1)
    with pytest.raises(exc, match=match):
        run(w0, params)  # raised while tracing: nothing is compiled


def test_with_params_checks_names_kinds_and_concrete_values(ns2d):
    eq, _ = ns2d
    other = eq.with_params(nu=0.1)
    assert (other.nu, eq.nu, other.grid) == (0.1, 0.05, eq.grid) and other.params["nu"] == 0.1
    with pytest.raises(ValueError, match="unknown parameter viscosity for NavierStokes2D"):
        eq.with_params(viscosity=1.0)
    with pytest.raises(ValueError, match=r"NavierStokes2D parameter nu must be a number >= 0"):
        eq.with_params(nu=-1.0)
    with pytest.raises(TypeError, match="parameter kf .* cannot be replaced by with_params"):
        eq.with_params(kf=3)
    traced = jax.jit(lambda nu: eq.with_params(nu=nu).linear())(0.2)
    np.testing.assert_allclose(np.asarray(traced), -0.2 * np.asarray(eq.grid.k2()))
