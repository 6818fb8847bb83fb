"""The controller protocol: a user's controller (a dt schedule) runs through ``simulate``, lands on ``t_end`` and
resumes from a checkpoint to the bit; a bad dt is refused naming the controller; a second ``simulate`` of the same
equation and scheme compiles nothing (the programs are cached by their static configuration)."""

import logging
import re
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers import Callback, Checkpoint, FixedStep, NavierStokes2D, SpectralGrid, simulate
from solvers.outputs import Checkpoints


@dataclass(frozen=True)
class Schedule:
    """``dt = dt0 (1 + t)``, counting its steps in its state (the docs' example)."""

    dt0: float
    wants_rate = False

    def init(self, y0):
        return {"steps": jnp.zeros((), jnp.int32)}

    def choose(self, aux, cstate, t, t_stop):
        return self.dt0 * (1 + t), {"steps": cstate["steps"] + 1}


@dataclass(frozen=True)
class Negative:
    wants_rate = False

    def init(self, y0):
        return ()

    def choose(self, aux, cstate, t, t_stop):
        return -1.0, cstate


@pytest.fixture(scope="module")
def flow():
    eq = NavierStokes2D(SpectralGrid(16, None, ndim=2, dtype=jnp.float64), nu=0.01)
    return eq, eq.initial_state("taylor-green")


def test_a_user_controller_runs_lands_and_resumes_to_the_bit(flow, tmp_path):
    eq, w0 = flow
    rows = []
    control = Schedule(0.01)
    straight = simulate(eq, "rk4", t_end=0.1, y0=w0, controller=control, outputs=[Callback(rows.append, every=1)])
    t = 0.0
    for r in rows[1:-1]:  # every step takes the schedule's dt at the time it starts from
        assert r.dt == pytest.approx(0.01 * (1 + t), rel=1e-14)
        t = r.t
    assert straight.t == 0.1 and rows[-1].t == 0.1 and rows[-1].dt < 0.01 * (1 + rows[-2].t)  # landed
    assert straight.step == len(rows) - 1 == 10 and straight.controller_state["state"] == [10]
    first = simulate(eq, "rk4", t_end=0.1, y0=w0, controller=control, max_steps=4,
                     outputs=[Checkpoint(tmp_path)])
    store = Checkpoints(tmp_path)
    state, meta = store.restore(store.latest_step(), eq)
    store.close()
    assert meta["step"] == first.step == 4 and meta["controller"] == {"aux": [], "state": [4]}
    rest = simulate(eq, "rk4", t_end=0.1, y0=state, t0=meta["t"], step0=meta["step"], controller=control,
                    controller_state=meta["controller"])
    assert rest.step == straight.step and rest.t == straight.t
    assert rest.controller_state == straight.controller_state
    assert np.array_equal(np.asarray(rest.state), np.asarray(straight.state))
    with pytest.raises(ValueError, match="controller_state"):
        simulate(eq, "rk4", t_end=0.1, y0=state, t0=meta["t"], step0=meta["step"], controller=control,
                 controller_state={"aux": [], "state": [1, 2]})


def test_a_bad_controller_is_named(flow):
    eq, w0 = flow
    with pytest.raises(ValueError, match=r"Negative.choose returned dt = -1.0"):
        simulate(eq, "rk4", t_end=0.1, y0=w0, controller=Negative())
    with pytest.raises(TypeError, match="controller must be a solvers.Controller"):
        simulate(eq, "rk4", t_end=0.1, y0=w0, controller=lambda t: 0.1)
    assert isinstance(Schedule(0.1), solvers.Controller) and isinstance(FixedStep(0.1), solvers.Controller)


class _Compiles(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.names = []

    def emit(self, record):
        m = re.search(r"Finished XLA compilation of (\S+)", record.getMessage())
        if m:
            self.names.append(m.group(1))


def test_a_second_simulate_compiles_nothing(flow):
    """Other ``t_end``, ``y0``, dt and outputs of the same kind: no program compiled again (with ``jax.log_compiles``,
    counted from JAX's log); the first run compiled its segment program."""
    eq, w0 = flow
    w1 = jax.block_until_ready(2 * w0)
    handler = _Compiles()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            a = simulate(eq, "lsrk4", t_end=0.05, y0=w0, controller=FixedStep(0.01),
                         outputs=[Callback(lambda row: None, 2)])
            first = list(handler.names)
            handler.names.clear()
            b = simulate(eq, "lsrk4", t_end=0.09, y0=w1, controller=FixedStep(0.02),
                         outputs=[Callback(lambda row: None, 3)])
    finally:
        logger.removeHandler(handler)
    assert "jit(program)" in first, first  # the segment program
    assert handler.names == [], handler.names
    assert a.step == 5 and b.step == 5 and b.t == 0.09


def test_a_user_controller_runs_through_the_main_job_and_its_resume(tmp_path):
    """``solvers.run(cfg, controller=...)``: the job takes a user's controller in place of the configuration's
    dt, saves its state in the checkpoints, and a resumed job ends on the uninterrupted job's state to the bit."""
    from solvers import RunConfig, run
    from solvers.outputs import read_csv

    cfg = dict(equation="navier-stokes-2d", ic="taylor-green", n=16, dtype="float64", t_end=0.1,
               params={"Re": 100.0}, diag_every=1, progress=False, plots=False)
    whole = run(RunConfig(out=str(tmp_path / "a"), **cfg), controller=Schedule(0.01))
    run(RunConfig(out=str(tmp_path / "b"), max_steps=4, checkpoint_every=2, **cfg), controller=Schedule(0.01))
    rest = run(RunConfig(out=str(tmp_path / "b"), resume=True, **cfg), controller=Schedule(0.01))
    assert whole["steps"] == rest["steps"] == 10 and whole["t"] == rest["t"] == 0.1
    a, b = (read_csv(tmp_path / d / "diagnostics.csv") for d in "ab")
    assert [float(r["dt"]) for r in a[1:4]] == pytest.approx([0.01, 0.0101, 0.010201], rel=1e-12)
    assert a[-1] == b[-1]  # the last row, every column, as written
    for d in "ab":
        store = Checkpoints(tmp_path / d / "checkpoints")
        state, meta = store.restore(store.latest_step(), jax.ShapeDtypeStruct((16, 9), np.complex128))
        store.close()
        assert meta["controller"] == {"aux": [], "state": [10]}
        if d == "a":
            first = np.asarray(state)
    np.testing.assert_array_equal(np.asarray(state), first)
