"""One stepping core: ``simulate`` with a fixed step, ``rollout`` and ``Integrator.advance`` take the same steps to
the bit; the controllers' rules and errors; ``rollout``'s parameters get the constructor's checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
import xfft
from solvers import (
    CFL,
    INTEGRATORS,
    Channel,
    Equation,
    FixedStep,
    NavierStokes2D,
    Param,
    SpectralGrid,
    rollout,
    simulate,
    wall_grid,
)
from solvers.stepping import Carry, Clock, ControllerState, OutputsState, RowBuffer, steps_before

DT = 1 / 128  # a power of two: the host's float64 clock sums whole steps exactly, so no step is shortened


def _random_2d(mesh):
    """A 2D flow whose nonlinear term acts (a random vorticity), on ``mesh``, spectra in transposed order (as the
    main job's grids keep them); the equation of this file's tests."""
    eq = NavierStokes2D(SpectralGrid(16, mesh, ndim=2, dtype=jnp.float64, order="transposed"), nu=0.01)
    return eq, eq.initial_state("random", seed=1, k0=3.0, energy=0.5)


def _one_device():
    return xfft.make_mesh("slab", devices=jax.devices()[:1])


@pytest.fixture(scope="module")
def random_2d():
    """The flow of :func:`_random_2d` on one device: the tests that take it check rules and errors, which no mesh
    changes (the same steps on the slab mesh: the next test's)."""
    return _random_2d(_one_device())


@pytest.mark.default_opt  # to the bit: the same steps compiled in three programs (at -O0 IMEX's differ at 1e-20)
def test_simulate_rollout_advance_take_the_same_steps(meshes):
    """rk4, etdrk4 (coefficients), imex (implicit stages), in one test: one process at XLA's default level (the
    2D flow on the slab mesh; the channel's walls in the next test)."""
    eq, u0 = _random_2d(meshes["slab"])  # (not a fixture: built in the test's own process only)
    n = 6
    for name in ("rk4", "etdrk4", "imex"):
        a = simulate(eq, name, t_end=n * DT, y0=u0, controller=FixedStep(DT)).state
        b = rollout(eq, name, dt=DT, steps=n)(u0)
        c = INTEGRATORS[name](eq).advance(u0, 0.0, DT, n)
        a, b, c, u = jax.device_get((a, b, c, u0))  # compared in numpy: no eager programs to compile
        assert np.array_equal(a, b) and np.array_equal(b, c), name  # to the bit
        assert np.max(np.abs(a - u)) > 1e-4 * np.max(np.abs(u)), name  # the steps did something


def test_channel_steps_are_the_same_three_ways(meshes):
    eq = Channel(wall_grid((9, 8), meshes["slab"], dtype=jnp.float64), Re=2000.0)
    s0 = eq.initial_state("tollmien-schlichting", amplitude=1e-3)
    a = simulate(eq, t_end=5 * DT, y0=s0, controller=FixedStep(DT)).state  # imex: the equation solves implicitly
    b = rollout(eq, dt=DT, steps=5)(s0)
    c = INTEGRATORS["imex"](eq).advance(s0, 0.0, DT, 5)
    a, b, c = jax.device_get((a, b, c))
    assert np.array_equal(a, b) and np.array_equal(b, c)  # to the bit


def test_the_loop_carry_is_named_by_owner():
    """The carry is ``{state, clock, controller, outputs}``: each part owned by one party."""
    assert Carry._fields == ("state", "clock", "controller", "outputs")
    assert Clock._fields[:5] == ("t", "elapsed", "comp", "steps", "dts")
    assert ControllerState._fields == ("aux", "cstate")
    assert OutputsState._fields == ("rows", "samples")
    assert {"rows", "count", "pending", "dt", "due"} == set(RowBuffer._fields)


def _primitives(jaxpr) -> set[str]:
    """Every primitive of a closed jaxpr, inner jaxprs (scan bodies, checkpoints, jit calls, branches) included."""
    seen = set()
    for e in jaxpr.jaxpr.eqns:
        seen.add(e.primitive.name)
        for v in e.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    seen |= _primitives(sub)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    seen |= _primitives(jax.extend.core.ClosedJaxpr(sub, ()))
    return seen


def test_a_fixed_step_stages_no_branch(random_2d):
    """A given dt takes every step: the step is not wrapped in a ``lax.cond`` (reverse mode would trace the whole
    step again inside it). The walker does find a cond inside a scan, so the check can fail."""
    eq, u0 = random_2d
    assert "scan" in _primitives(jax.make_jaxpr(rollout(eq, "imex", dt=DT, steps=3))(u0))
    assert "cond" not in _primitives(jax.make_jaxpr(rollout(eq, "imex", dt=DT, steps=3))(u0))
    branchy = jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, _: (jax.lax.cond(c.sum() > 0, jnp.sin, jnp.cos, c),
                                                                   None), x, length=2)[0])(jnp.ones(3))
    assert "cond" in _primitives(branchy)


def test_landing_rule_counts_whole_steps():
    assert steps_before(0.0, 1.0, 0.25, 100) == 3  # the fourth step lands on 1.0
    assert steps_before(0.0, 1.0, 0.3, 100) == 3  # 0.9, then a shortened step of 0.1
    assert steps_before(0.0, 1.0, 0.3, 2) == 2  # the limit


def test_simulate_lands_on_t_end_and_reports(random_2d):
    eq, u0 = random_2d
    sol = simulate(eq, "rk4", t_end=0.05, y0=u0, controller=FixedStep(0.02))
    assert sol.t == 0.05 and sol.step == 3 and sol.steps_taken == 3
    assert abs(sol.dt - 0.01) < 1e-15  # the last step was shortened to land
    assert u0.is_deleted() is False  # y0 is not donated unless asked


def test_cfl_controller_chooses_dt_from_the_rate(random_2d):
    eq, u0 = random_2d
    rows = []
    sol = simulate(eq, "rk4", t_end=1.0, y0=u0, controller=CFL(cfl=0.3, dt_max=1.0),
                   outputs=[solvers.Callback(rows.append, every=1)])
    # a row's cfl is its step's dt times the rate of the state after it; the controller takes that rate from the
    # next step's first stage, for the step after that (a lagged rate): that step's dt is 0.3 / the rate
    full = rows[1:-1]
    assert len(full) >= 4
    for a, c in zip(full, full[2:]):
        assert c.dt == pytest.approx(0.3 * a.dt / a.values["cfl"], rel=1e-12)
    assert rows[1].dt == rows[2].dt  # the first two steps: the rate of the initial state
    assert sol.t == 1.0 and rows[-1].t == 1.0


class _NoRate(Equation):
    """du/dt = -u: no advective rate."""

    parameters = (Param("a", 1.0, low=0),)
    initial_conditions = {"one": lambda eq: jnp.ones(eq.grid.spectral_shape, eq.grid.cdtype)}

    def linear(self):
        return -self.a * jnp.ones((), self.grid.dtype)

    def nonlinear(self, s, t):
        return 0 * s


def test_bad_input_names_the_argument(random_2d, meshes):
    eq, u0 = random_2d
    flat = _NoRate(SpectralGrid(8, meshes["slab"], ndim=2, dtype=jnp.float64))
    with pytest.raises(ValueError, match="controller"):
        simulate(flat, "rk4", t_end=1.0)  # no CFL rate: a fixed step is needed
    with pytest.raises(ValueError, match="controller"):
        simulate(flat, "rk4", t_end=1.0, controller=CFL())
    with pytest.raises(TypeError, match="controller"):
        simulate(eq, "rk4", t_end=1.0, controller=0.1)
    with pytest.raises(TypeError, match="outputs"):
        simulate(eq, "rk4", t_end=1.0, controller=FixedStep(0.1), outputs=[print])
    with pytest.raises(ValueError, match="t_end"):
        simulate(eq, "rk4", t_end=0.0, controller=FixedStep(0.1))
    with pytest.raises(TypeError, match="equation"):
        simulate(solvers.RunConfig(), t_end=1.0)
    with pytest.raises(ValueError, match="integrator"):
        simulate(eq, "rk5", t_end=1.0)
    with pytest.raises(TypeError, match="diagonal"):
        simulate(Channel(wall_grid((9, 8), meshes["slab"], dtype=jnp.float64)), "rk4", t_end=1.0)
    with pytest.raises(ValueError, match="dt"):
        FixedStep(-1.0)
    with pytest.raises(ValueError, match="band"):
        CFL(band=(1.2, 0.8))


def test_rollout_params_get_the_constructors_checks(random_2d, meshes):
    eq, u0 = random_2d
    run = rollout(eq, "rk4", dt=DT, steps=2)
    with pytest.raises(ValueError, match="nu"):
        run(u0, params={"nu": -1.0})
    channel = Channel(wall_grid((9, 8), meshes["slab"], dtype=jnp.float64))
    with pytest.raises(ValueError, match="Re"):
        rollout(channel, dt=DT, steps=1)(channel.initial_state("laminar"), params={"Re": 0.0})
    # a traced value cannot be checked: it is taken (gradients pass through)
    with jax.set_mesh(eq.grid.mesh):
        grad = jax.jit(jax.grad(lambda nu: jnp.sum(jnp.abs(run(u0, params={"nu": nu})) ** 2)))(0.02)
    assert np.isfinite(float(grad)) and float(grad) != 0
