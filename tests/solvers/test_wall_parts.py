"""The implicit blocks between walls (solvers.Diffusion, NoSlipVelocity, WallEquation): a scalar's diffusion with a
time-dependent value below and a Robin condition above on a grid sharded over 8 devices, the grid checks of the
built-in wall equations, and the parts the memory check asks for."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers


def test_diffusion_block_on_a_sharded_grid(meshes):
    """``(I - h kappa lap) y = rhs`` with ``y(z=0) = 1 + t`` and ``2 y + dy/dz = 0.5`` at ``z = 2`` (the grid's
    units): the equation's rows and both conditions hold on the physical field, and ``y`` keeps the sharding."""
    grid = solvers.wall_grid((17, 16), meshes["slab"], walls=(0.0, 2.0), lengths=(2 * math.pi,), dtype=jnp.float64,
                             axis_names=("z", "x"))
    block = solvers.Diffusion(0.3, bc=(solvers.Dirichlet(lambda t: 1 + t), solvers.Robin(2.0, 1.0, 0.5)))
    z, x = grid.coordinates()
    h, t = 0.05, 0.5

    def run(t):
        rhs = grid.forward(jnp.cos(z) * (1 + jnp.sin(x)) + z * z)
        y = block.solve(grid, rhs, block.factor(grid, h), t=t)
        lap = grid.derivative(y, 0, 2) + grid.derivative(y, 1, 2)
        return y, rhs, y - h * 0.3 * lap, grid.backward(y), grid.backward(grid.derivative(y, 0))

    with jax.set_mesh(grid.mesh):
        y, rhs, lhs, yp, dyp = jax.jit(run)(t)
    assert y.sharding.spec == rhs.sharding.spec
    rows = np.abs(np.asarray(lhs - rhs)[:-2]).max()  # tau: the two highest rows are the conditions'
    assert rows <= 1e-12 * np.abs(np.asarray(rhs)).max(), rows
    zp = np.asarray(z)[:, 0]
    bottom, top = int(np.argmin(zp)), int(np.argmax(zp))
    np.testing.assert_allclose(np.asarray(yp)[bottom], 1 + t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(2 * np.asarray(yp)[top] + np.asarray(dyp)[top], 0.5, rtol=0, atol=1e-11)
    with jax.set_mesh(grid.mesh), pytest.raises(ValueError, match="function of time needs the time"):
        jax.eval_shape(lambda rhs: block.solve(grid, rhs, block.factor(grid, h)), rhs)  # (traced: nothing compiled)


def test_wall_equations_check_their_grid_and_name_their_parts(meshes):
    """A periodic grid is refused (not replaced); the parts whose programs depend on the run's size are the
    equation and its velocity machinery, found by protocol."""
    periodic = solvers.SpectralGrid((8, 8), meshes["slab"], ndim=2, box_length=(2.0, 6.0), dtype=jnp.float64)
    with pytest.raises(ValueError, match="Channel: grid axis 0 must be Chebyshev.*wall_grid"):
        solvers.Channel(periodic)
    with pytest.raises(ValueError, match="RayleighBenardNoSlip: grid axis 0 must be Chebyshev on \\[0, 1\\]"):
        solvers.RayleighBenardNoSlip(periodic)
    grid = solvers.RayleighBenardNoSlip.make_grid((9, 8), None, dtype=jnp.float64)
    eq = solvers.RayleighBenardNoSlip(grid)
    assert eq.grid is grid
    assert eq.planned_parts() == (eq, eq.kmm)
    assert [type(b) for b in eq.implicit_parts().values()] == [solvers.NoSlipVelocity, solvers.Diffusion]
    assert eq.implicit_parts()["velocity"].nu == eq.Pr


def _parabola(grid):
    z, x = grid.coordinates()
    return {"T": grid.forward(z ** 2 / 2 + 0 * x)}


class _Warming(solvers.WallEquation):
    """``T_t = T_zz`` with ``T = t`` at z = 0 and ``dT/dn = 1`` at z = 1: ``T = t + z^2 / 2`` exactly."""

    initial_conditions = {"parabola": solvers.InitialCondition(lambda eq: _parabola(eq.grid), ())}

    def implicit_parts(self):
        return {"T": solvers.Diffusion(1.0, bc=(solvers.Dirichlet(lambda t: t), solvers.Neumann(1.0)))}

    def nonlinear(self, s, t):
        return jax.tree.map(jnp.zeros_like, s)


def test_a_boundary_value_that_depends_on_time_is_held_at_every_stage():
    """An IMEX run hands each stage's time to the implicit solve: a wall held at ``T = t`` warms the solution
    ``t + z^2 / 2`` exactly (to round-off) through the scheme's four implicit stages."""
    grid = solvers.WallBuilder(walls=(0.0, 1.0), axis_names=("z", "x")).grid((9, 8), dtype=jnp.float64)
    eq = _Warming(grid)
    sol = solvers.simulate(eq, "imex", t_end=0.5, controller=solvers.FixedStep(0.05))
    z, x = grid.coordinates()
    got = np.asarray(jax.jit(grid.backward)(sol.state["T"]))
    np.testing.assert_allclose(got, np.broadcast_to(0.5 + np.asarray(z) ** 2 / 2, got.shape), rtol=0, atol=1e-12)
