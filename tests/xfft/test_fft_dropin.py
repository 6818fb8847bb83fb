"""A single-device spectral solver written only against ``jax.numpy.fft`` runs sharded by changing its import.

The solver below is plain single-device code of the kind found in the JAX ecosystem: 2D incompressible
Navier–Stokes in vorticity form, pseudo-spectral with 2/3 dealiasing and RK4, using ``rfftn``/``irfftn``,
``rfft2``, ``fftfreq``/``rfftfreq`` and ``fftshift``. It receives its FFT module as an argument, exactly as a user
would swap ``import jax.numpy.fft as fft`` for ``import xfft.fft as fft``. Run on a slab ``P('x')`` and on a
pencil ``P('y', 'x')`` of a (2, 4) mesh (a 2D pencil shards both axes, so the half axis's 8 coefficients must
divide over its mesh axis: 14 columns) it equals the one-device run (float64, 1e-12) and compiles without an
all-gather.
"""

from __future__ import annotations

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, mesh, random, rel_err
from jax.sharding import NamedSharding, PartitionSpec

import xfft.fft

SHAPE, STEPS = (16, 14), 8  # 14: the half axis (8 coefficients) divides over a pencil's 2-device axis


def navier_stokes_2d(fft: types.ModuleType, shape: tuple[int, int] = SHAPE, nu: float = 2e-2, dt: float = 2e-2):
    """A vorticity stepper written against the numpy.fft API only (``fft`` is the module to use)."""
    nx, ny = shape
    kx = fft.fftfreq(nx, 1.0 / nx)
    ky = fft.rfftfreq(ny, 1.0 / ny)
    KX, KY = jnp.meshgrid(kx, ky, indexing="ij")
    k2 = KX**2 + KY**2
    inv_k2 = jnp.where(k2 > 0, 1.0 / jnp.where(k2 > 0, k2, 1.0), 0.0)
    keep = (jnp.abs(KX) < nx / 3) & (jnp.abs(KY) < ny / 3)

    def rhs(w_hat):
        psi_hat = w_hat * inv_k2
        u = fft.irfftn(1j * KY * psi_hat, s=shape)
        v = fft.irfftn(-1j * KX * psi_hat, s=shape)
        wx = fft.irfftn(1j * KX * w_hat, s=shape)
        wy = fft.irfftn(1j * KY * w_hat, s=shape)
        return -jnp.where(keep, fft.rfftn(u * wx + v * wy), 0) - nu * k2 * w_hat

    def step(_, w_hat):
        a = rhs(w_hat)
        b = rhs(w_hat + 0.5 * dt * a)
        c = rhs(w_hat + 0.5 * dt * b)
        d = rhs(w_hat + dt * c)
        return w_hat + dt / 6 * (a + 2 * b + 2 * c + d)

    def run(w):
        w_hat = jax.lax.fori_loop(0, STEPS, step, fft.rfftn(w))
        return fft.irfftn(w_hat, s=shape), fft.fftshift(jnp.abs(fft.rfft2(w)), axes=0)

    return run


@functools.cache
def _one_device_run():
    """The initial field and the one-device ``jax.numpy.fft`` run (once for both meshes: one program)."""
    w0 = random(SHAPE, np.float64, seed=5)
    return (w0,) + tuple(np.asarray(v) for v in jax.jit(navier_stokes_2d(jnp.fft))(jnp.asarray(w0)))


@pytest.mark.parametrize("mesh_shape,spec", [((8,), ("x",)), ((2, 4), ("y", "x"))], ids=["slab", "pencil"])
def test_single_device_solver_runs_sharded_by_changing_its_import(mesh_shape, spec):
    w0, ref_w, ref_spec = _one_device_run()
    m = mesh(mesh_shape)
    x = jax.device_put(w0, NamedSharding(m, PartitionSpec(*spec)))
    run = jax.jit(navier_stokes_2d(xfft.fft))
    compiled = run.lower(x).compile()
    w, spectrum = compiled(x)
    assert rel_err(w, ref_w) < 1e-12 and rel_err(spectrum, ref_spec) < 1e-12
    assert w.sharding.is_equivalent_to(x.sharding, 2)  # the round trip keeps the layout
    text = compiled.as_text()
    assert count_op(text, "all-gather") == 0 and count_op(text, "all-to-all") > 0
