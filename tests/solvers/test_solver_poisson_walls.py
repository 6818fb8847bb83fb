"""PoissonWalls: Dirichlet/Neumann/periodic sides per axis, exact solutions to round-off on slab and pencil meshes."""

import math

import jax
import jax.numpy as jnp
import pytest

from solvers import PoissonWalls

L = (1.0, 2.0, 3.0)


def _terms(bc: str, x, d: int) -> list:
    """Eigenfunctions of the axis (with its boundary condition) and their ``-d^2/dx^2`` eigenvalues."""
    k = math.pi / L[d]
    if bc == "dirichlet":
        return [(jnp.sin(3 * k * x), (3 * k) ** 2), (0.5 * jnp.sin(k * x), k ** 2)]
    if bc == "neumann":
        return [(jnp.cos(2 * k * x), (2 * k) ** 2), (0.25 + 0 * x, 0.0)]
    return [(jnp.cos(4 * k * x + 0.3), (4 * k) ** 2)]


@pytest.mark.parametrize("kind,bc,lam", [
    ("slab", ("dirichlet", "periodic", "periodic"), 0.0),
    ("pencil", ("neumann", "dirichlet", "periodic"), 2.5),
    ("slab", ("dirichlet", "dirichlet", "neumann"), 0.0),
    ("pencil", "neumann", 1.0),
])
def test_exact_solution(meshes, kind, bc, lam):
    p = PoissonWalls((8, 16, 12), bc, meshes[kind], box_length=L, helmholtz=lam)
    xyz = p.coordinates()

    @jax.jit
    def err(*xyz):
        terms = [_terms(p.bc[d], xyz[d], d) for d in range(3)]
        phi = f = 0.0
        for a in terms[0]:
            for b in terms[1]:
                for c in terms[2]:
                    v = a[0] * b[0] * c[0]
                    k2 = a[1] + b[1] + c[1]
                    phi = phi + (v if k2 + lam > 0 else 0)  # the constant mode of pure Neumann is dropped
                    f = f - (k2 + lam) * v
        return p.solve(f) - phi

    e = err(*xyz)
    assert e.sharding.is_equivalent_to(p.sharding, 3)
    assert float(jnp.max(jnp.abs(e))) < 1e-13


def test_neumann_constant_and_errors(meshes):
    p = PoissonWalls((8, 8), "neumann", meshes["slab"])
    x, y = p.coordinates()

    @jax.jit  # one program (eager, each array operation would compile its own)
    def err(x):
        f = jnp.cos(math.pi * x) + 3.0  # the mean of f is ignored (pure Neumann): phi has zero mean
        return jnp.max(jnp.abs(p.solve(f) + jnp.cos(math.pi * x) / math.pi ** 2))

    assert float(err(x)) < 1e-14
    with pytest.raises(ValueError, match="bc"):
        PoissonWalls((8, 8), ("dirichlet", "robin"))
    with pytest.raises(ValueError, match="helmholtz"):
        PoissonWalls((8, 8), "dirichlet", helmholtz=-1.0)
    with pytest.raises(ValueError, match="box_length"):
        PoissonWalls((8, 8), "dirichlet", box_length=(1.0, -2.0))
