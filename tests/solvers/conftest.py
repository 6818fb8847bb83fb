"""Fixtures of the solver tests: meshes of the 8 CPU devices that tests/conftest.py provides, and shared
equations (one compile per grid/mesh for the whole session: compiles dominate these tests' time)."""

import jax
import jax.numpy as jnp
import pytest

import xfft
from solvers import RK4, NavierStokes, SpectralGrid
from solvers import diagnostics as D


@pytest.fixture(scope="session")
def meshes():
    """None (one device), a slab mesh (8) and a pencil mesh (2 x 4)."""
    return {"single": None, "slab": xfft.make_mesh("slab"), "pencil": xfft.make_mesh("pencil")}


@pytest.fixture(scope="session")
def ns(meshes):
    """``ns(kind, n=16, nu=0.02, dealias="2/3")``: a cached float64 NavierStokes with an ``rk4`` attribute."""
    cache = {}

    def get(kind: str = "single", n: int = 16, nu: float = 0.02, dealias: str = "2/3") -> NavierStokes:
        key = (kind, n, nu, dealias)
        if key not in cache:
            eq = NavierStokes(SpectralGrid(n, meshes[kind], dtype=jnp.float64, dealias=dealias), nu=nu)
            eq.rk4 = RK4(eq)
            eq.summary = jax.jit(lambda u, g=eq.grid: {
                "energy": D.kinetic_energy(g, u), "enstrophy": D.enstrophy(g, u), "max_div": D.max_divergence(g, u),
                "spectrum": D.energy_spectrum(g, u)})
            cache[key] = eq
        return cache[key]

    return get
