"""solvers.PoissonChebyshev against exact solutions: a smooth non-polynomial solution with non-zero wall values
converges exponentially (Dirichlet and Neumann walls), the same on one device and a slab mesh; bad input names the
argument."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xfft
from solvers import PoissonChebyshev

LAM = 1.0


def _exact(x0, x1):
    """phi = exp(sin 2 x0) cos x1, its f = lap phi - LAM phi, and d phi / d x0."""
    s = jnp.sin(2 * x0)
    phi = jnp.exp(s) * jnp.cos(x1)
    dphi = 2 * jnp.cos(2 * x0) * phi
    d2 = (4 * jnp.cos(2 * x0) ** 2 - 4 * s) * phi
    return phi, d2 - phi - LAM * phi, dphi


def _error(n: int, bc: str, mesh=None) -> float:
    """Max error of the solve on ``(n, 16)`` points: the exact solution, its data and the solve in one compiled
    program (eager, each array operation would compile a program of its own)."""
    eq = PoissonChebyshev((n, 16), (bc, "periodic"), mesh, box_length=(1.0, 2 * np.pi), helmholtz=LAM)

    @jax.jit
    def solve_and_error(x0, x1):
        phi, f, _ = _exact(x0, x1)
        edge = 0 if bc == "dirichlet" else 2  # the wall data: phi (Dirichlet) or d phi / d x0 (Neumann)
        bottom, top = _exact(0 * x0, x1)[edge], _exact(0 * x0 + 1.0, x1)[edge]
        got = eq.solve(f, bottom, top)
        return got, jnp.max(jnp.abs(got - phi))

    got, err = solve_and_error(*eq.coordinates())
    assert got.sharding.is_equivalent_to(eq.sharding, 2)
    return float(err)


@pytest.mark.parametrize("bc", ["dirichlet", "neumann"])
def test_smooth_solution_converges_exponentially(bc):
    errors = [_error(n, bc) for n in (9, 17, 33)]
    assert errors[0] > 1e3 * errors[1] > 0, errors  # spectral: each doubling gains orders of magnitude
    assert errors[2] < 1e-12, errors


def test_slab_mesh_equals_one_device():
    mesh = xfft.make_mesh("slab")
    assert abs(_error(17, "dirichlet", mesh) - _error(17, "dirichlet")) < 1e-13


@pytest.mark.parametrize("kwargs, match", [
    (dict(shape=(17, 16), bc="robin"), "bc"),
    (dict(shape=(17, 16, 16, 16)), "shape"),
    (dict(shape=(17, 16), helmholtz=-1.0), "helmholtz"),
])
def test_bad_input_names_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PoissonChebyshev(**kwargs)
