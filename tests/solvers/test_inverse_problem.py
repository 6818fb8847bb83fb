"""Inverse problems through solvers.rollout (issue 20), end to end on a small 2D decaying turbulence.

- 4D-Var: the initial vorticity recovered from the state at a later time by optax's L-BFGS on the gradient of the
  misfit; the reference is the true initial field (the first guess, the observation itself, is 54% off).
- The viscosity estimated from an observed energy curve by Gauss-Newton on ``log nu`` with forward-mode
  derivatives (``jax.jvp``); the reference is the viscosity that made the observations.

The notebook ``notebooks/09_gradients.py`` runs the same on a sharded mesh at 32^2; here one device and 16^2
keep it to a few seconds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

import solvers
from solvers import SpectralGrid
from solvers.equations import NavierStokes2D


def relative_rms(a: jax.Array, b: jax.Array) -> float:
    return float(jnp.sqrt(jnp.mean((a - b) ** 2) / jnp.mean(b ** 2)))


def test_4dvar_recovers_the_initial_vorticity():
    eq = NavierStokes2D(SpectralGrid(16, None, ndim=2, dtype=jnp.float64), nu=2e-3)
    g = eq.grid
    truth_hat = eq.initial_state("random", seed=0, k0=3.0, energy=0.5)
    # t = 0.5, two eddy turnovers (no checkpoints: 16^2 states are small; rollout's tests check checkpointed
    # gradients)
    run = solvers.rollout(eq, "etdrk4", dt=0.05, steps=10)

    with jax.set_mesh(g.mesh):
        observed = jax.jit(run)(truth_hat)
        truth = jax.jit(g.irfft)(truth_hat)

        def misfit(w):  # the unknown is the real vorticity field (its dealiased spectrum starts the run)
            return g.mean_square(run(g.dealias(g.rfft(w))) - observed) / g.mean_square(observed)

        opt = optax.lbfgs()
        value_and_grad = optax.value_and_grad_from_state(misfit)

        @jax.jit
        def iterate(w, state):
            value, grad = value_and_grad(w, state=state)
            updates, state = opt.update(grad, state, w, value=value, grad=grad, value_fn=misfit)
            return optax.apply_updates(w, updates), state, value

        w = jax.jit(g.irfft)(observed)  # first guess: the observation
        first_error = relative_rms(w, truth)
        state = jax.tree.map(lambda a: jnp.asarray(a, a.dtype), opt.init(w))  # strong types: one compile
        history = []
        for _ in range(30):
            w, state, value = iterate(w, state)
            history.append(float(value))
    assert first_error > 0.5, first_error
    assert history[-1] < 1e-3 * history[0], history
    assert all(b <= a for a, b in zip(history, history[1:])), history  # the line search only accepts descent
    assert relative_rms(w, truth) < 0.1, relative_rms(w, truth)


def test_viscosity_from_an_observed_energy_curve():
    eq = NavierStokes2D(SpectralGrid(16, None, ndim=2, dtype=jnp.float64), nu=0.01)
    w0 = eq.initial_state("random", seed=0, k0=3.0, energy=0.5)
    run = solvers.rollout(eq, "etdrk4", dt=0.05, steps=20, checkpoint_every=5, save_every=2)

    def energy_curve(log_nu):
        return jax.vmap(eq.energy)(run(w0, {"nu": jnp.exp(log_nu)}))

    with jax.set_mesh(eq.grid.mesh):
        observed = jax.jit(energy_curve)(np.log(0.01))
        assert observed.shape == (10,) and float(observed[-1]) < 0.9 * float(observed[0])

        @jax.jit
        def gauss_newton(x):
            curve, slope = jax.jvp(energy_curve, (x,), (jnp.ones_like(x),))
            r = curve - observed
            return x - jnp.sum(r * slope) / jnp.sum(slope * slope), jnp.sum(r * r) / jnp.sum(observed ** 2)

        x, misfits = jnp.log(jnp.asarray(0.04)), []  # start 4x off
        for _ in range(8):
            x, m = gauss_newton(x)
            misfits.append(float(m))
    assert abs(float(jnp.exp(x)) - 0.01) < 1e-8, (float(jnp.exp(x)), misfits)
    assert misfits[-1] < 1e-12 * misfits[0], misfits
