"""Resuming a ``simulate()`` run from its checkpoint on 2D and 3D wall grids (the docs' recipe, in
docs/guide/simulations.md): ``Checkpoints(dir).restore(step, equation)`` returns the state in the grid's layout, and
the continued run ends on the bits of a straight one."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers.outputs import Checkpoints


def _channel(shape, mesh):
    lengths = (2 * math.pi,) + ((math.pi,) if len(shape) == 3 else ())
    grid = solvers.wall_grid(shape, mesh, lengths=lengths, dtype=jnp.float64)
    return solvers.Channel(grid, Re=1000.0)


#: the cases: 2D on the 8-device slab mesh, 3D on one device
CASES = {"2d-slab": ((17, 16), "slab"), "3d-single": ((9, 8, 8), "single")}
RUN = dict(controller=solvers.FixedStep(0.01), rows=False)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory, meshes):
    """``stopped(case)``: the equation, its initial state, the run straight to ``t = 0.06`` (6 steps), and the run
    stopped after 3 steps with its checkpoint folder; each case run once for the tests of this file."""
    cache = {}

    def get(case):
        if case not in cache:
            shape, kind = CASES[case]
            eq = _channel(shape, meshes[kind])
            y0 = eq.initial_state("turbulent")
            straight = solvers.simulate(eq, "imex", t_end=0.06, y0=y0, **RUN)
            # stopped by max_steps, not at a t_end that a shortened step would land on
            folder = tmp_path_factory.mktemp(case)
            first = solvers.simulate(eq, "imex", t_end=0.06, max_steps=3, y0=y0,
                                     outputs=[solvers.Checkpoint(folder)], **RUN)
            cache[case] = eq, straight, first, folder
        return cache[case]

    return get


@pytest.mark.parametrize("case", list(CASES))
def test_a_simulate_run_resumes_from_its_checkpoint_to_the_bit(stopped, case):
    eq, straight, first, folder = stopped(case)
    store = Checkpoints(folder)
    step = store.latest_step()
    state, meta = store.restore(step, eq)  # the equation's layout (a 2D wall grid holds no Nyquist coefficient)
    assert step == first.step == 3 and meta["t"] == first.t
    assert jax.tree.map(lambda a: (a.shape, a.sharding.spec), state) == \
        jax.tree.map(lambda a: (a.shape, a.sharding.spec), first.state)
    assert np.array_equal(np.asarray(state), np.asarray(first.state))
    again, _ = store.restore(step, first.state, grid=eq.grid)  # a state's layout and its grid: the same
    assert np.array_equal(np.asarray(again), np.asarray(state))
    store.close()
    rest = solvers.simulate(eq, "imex", t_end=0.06, y0=state, t0=meta["t"], step0=meta["step"],
                            controller_state=meta.get("controller"), **RUN)
    assert rest.step == straight.step == 6 and rest.t == straight.t
    assert np.array_equal(np.asarray(rest.state), np.asarray(straight.state))


def test_a_checkpoint_read_without_its_grid_says_how(stopped):
    """The 2D case's checkpoint read with a state's layout alone (a 2D wall grid's state is not the layout the
    checkpoint stores): refused, naming what to pass."""
    _, _, first, folder = stopped("2d-slab")
    store = Checkpoints(folder)
    with pytest.raises(ValueError, match=r"does not hold shapes \[\(1, 17, 8\)\].*pass grid=equation.grid"):
        store.restore(3, first.state)
    store.close()
