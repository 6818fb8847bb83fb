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


@pytest.mark.parametrize("shape, kind", [((17, 16), "slab"), ((9, 8, 8), "single")])
def test_a_simulate_run_resumes_from_its_checkpoint_to_the_bit(tmp_path, meshes, shape, kind):
    eq = _channel(shape, meshes[kind])
    y0 = eq.initial_state("turbulent")
    run = dict(controller=solvers.FixedStep(0.01), rows=False)
    straight = solvers.simulate(eq, "imex", t_end=0.06, y0=y0, **run)
    # stopped by max_steps, not at a t_end that a shortened step would land on
    first = solvers.simulate(eq, "imex", t_end=0.06, max_steps=3, y0=y0, outputs=[solvers.Checkpoint(tmp_path)],
                             **run)
    store = Checkpoints(tmp_path)
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
                            controller_state=meta.get("controller"), **run)
    assert rest.step == straight.step == 6 and rest.t == straight.t
    assert np.array_equal(np.asarray(rest.state), np.asarray(straight.state))


def test_a_checkpoint_read_without_its_grid_says_how(tmp_path):
    eq = _channel((17, 16), None)
    sol = solvers.simulate(eq, "imex", t_end=0.01, controller=solvers.FixedStep(0.01), rows=False,
                           outputs=[solvers.Checkpoint(tmp_path)])
    store = Checkpoints(tmp_path)
    with pytest.raises(ValueError, match=r"does not hold shapes \[\(1, 17, 8\)\].*pass grid=equation.grid"):
        store.restore(1, sol.state)
    store.close()
