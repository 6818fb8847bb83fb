"""Poisson solver: manufactured solutions on one device and on a pencil mesh."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers import Poisson, SpectralGrid


@pytest.mark.parametrize("kind", ["single", "pencil"])
def test_poisson_manufactured_solution(meshes, kind):
    grid = SpectralGrid((16, 16, 32), meshes[kind], dtype=jnp.float64, box_length=(2 * np.pi, 2 * np.pi, 4 * np.pi))
    x, y, z = grid.coordinates()

    @jax.jit
    def solve(x, y, z):
        phi = jnp.sin(x) * jnp.cos(2 * y) * jnp.sin(1.5 * z) + 0.5 * jnp.cos(3 * x + y) + 0.25 * jnp.sin(2 * z)
        lap = (-(1 + 4 + 2.25) * jnp.sin(x) * jnp.cos(2 * y) * jnp.sin(1.5 * z) - 0.5 * 10 * jnp.cos(3 * x + y)
               - 0.25 * 4 * jnp.sin(2 * z))
        p = Poisson(grid)
        return p.solve(lap + 7.0) - phi, p.gradient(lap)[0] - jnp.cos(x) * jnp.cos(2 * y) * jnp.sin(1.5 * z) \
            + 1.5 * jnp.sin(3 * x + y)

    err, gerr = solve(x, y, z)
    assert err.sharding.spec == grid.real_sharding().spec
    assert float(jnp.max(jnp.abs(err))) < 1e-13  # phi (zero mean; the mean of the source is ignored)
    assert float(jnp.max(jnp.abs(gerr))) < 1e-13  # d phi / dx
