"""A user's wall-bounded equation end to end: the Chebyshev tau solves called directly on a wall grid's sharded
spectral arrays, and the equation run from the command line through its :class:`solvers.WallBuilder` spec
(tests/solvers/heat_walls.py, copied outside the package)."""

import math
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers.bases import tau
from solvers.cli import main
from solvers.outputs import read_csv

HEAT = Path(__file__).with_name("heat_walls.py")


def _field(grid):
    """A smooth field's coefficients, from one compiled program (eager operations on sharded arrays would compile
    one program each)."""
    def make():
        c = grid.coordinates()
        return grid.forward(jnp.exp(c[0]) * jnp.cos(c[1]) + jnp.sin(2 * c[-1]) * c[0] ** 2)

    with jax.set_mesh(grid.mesh):
        return jax.jit(make)()


@pytest.mark.parametrize("shape, kind", [((17, 16), "slab"), ((9, 8, 8), "pencil")])
def test_tau_solves_run_on_a_wall_grids_sharded_arrays(meshes, shape, kind):
    """On the grid's spectral sharding (a per-mode ``lam`` table replicated, as a grid's wavenumbers are) the solves
    and the derivative give the single-device results and keep the sharding; no ``grid.local_map`` needed."""
    grid = solvers.wall_grid(shape, meshes[kind], dtype=jnp.float64)
    f = _field(grid)
    lam = 1.0 + sum(grid.wavenumbers(a, odd=False) ** 2 for a in range(1, grid.ndim))[0]

    def solves(f, lam):
        return (tau.helmholtz_solve(tau.helmholtz_factor(shape[0], lam), f, 1.0, -1.0),
                tau.helmholtz(f, lam, "neumann"), tau.clamped_solve(f, lam, 0.01)[0], tau.derivative(f, 2))

    with jax.set_mesh(grid.mesh):
        got = jax.jit(solves)(f, lam)
    want = jax.jit(solves)(np.asarray(f), np.asarray(lam))  # one device, plain arrays
    for g, w in zip(got, want):
        assert g.sharding.spec == f.sharding.spec
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=1e-13 * float(np.abs(w).max()))
    u = np.asarray(got[0])  # u(+1) = 1, u(-1) = -1: the sums of its coefficients
    np.testing.assert_allclose(u.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose((u * (-1.0) ** np.arange(shape[0]).reshape((-1,) + (1,) * (u.ndim - 1))).sum(axis=0),
                               -1.0, atol=1e-12)


def test_a_sharded_chebyshev_axis_is_refused_by_name(meshes):
    f = jax.device_put(jnp.ones((16, 8)), jax.sharding.NamedSharding(meshes["slab"], jax.sharding.PartitionSpec("x")))
    with pytest.raises(ValueError, match="helmholtz_solve: f is sharded along its axis 0 over mesh axis 'x'"):
        tau.helmholtz_solve(tau.helmholtz_factor(16, 1.0), f)


def test_a_user_wall_equation_runs_from_the_command_line(tmp_path, monkeypatch):
    """``python -m solvers run heat_walls:SPEC`` on 8 devices: a mode between walls decays at the exact rate
    ``kappa (pi^2 + 1)`` (the energy at twice it)."""
    shutil.copy(HEAT, tmp_path / "heat_walls.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    assert main(["run", "heat_walls:SPEC", "--n", "17", "16", "--dtype", "float64", "--dt", "0.01", "--t-end", "0.2",
                 "--diag-every", "10", "--no-progress", "--no-plots", "--out", str(out)]) == 0
    rows = read_csv(out / "diagnostics.csv")
    e = {round(float(r["t"]), 6): float(r["energy"]) for r in rows}
    rate = math.log(e[0.2] / e[0.1]) / 0.1
    assert rate == pytest.approx(-2 * 0.1 * (math.pi ** 2 + 1), rel=1e-6)
    assert main(["run", "heat_walls:SPEC", "--n", "17", "16", "--box-length", "2", "6", "--dry-run",
                 "--out", str(tmp_path / "x")]) == 2


def test_the_wall_builder_says_what_it_takes():
    walls = solvers.WallBuilder(walls=(0.0, 1.0), lengths=3.0)
    assert walls.box(3, {}) == (1.0, 3.0, 3.0)
    kw = dict(dtype=jnp.float64, dealias="2/3", backend=None)
    grid = walls((9, 8), None, (1.0, 4.0), **kw)
    assert grid.box_length == (1.0, 4.0) and grid.bases[0].domain == (0.0, 1.0)
    with pytest.raises(ValueError, match=r"wall-normal box \(the first entry\) must be 1 .*RunSpec\(box=builder.box\)"):
        walls((9, 8), None, (2 * math.pi, 4.0), **kw)
    with pytest.raises(ValueError, match="takes Y X: at least 5 wall-normal points"):
        walls((3, 8), None, (1.0, 4.0), **kw)
    with pytest.raises(ValueError, match="walls must be an interval"):
        solvers.WallBuilder(walls=(1.0, 0.0))
