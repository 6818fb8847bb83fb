# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 9. Gradients through sharded simulations: 4D-Var and a viscosity from an energy curve
#
# `solvers.rollout(eq, integrator, dt=..., steps=..., checkpoint_every=...)` turns a simulation into a pure
# function `run(state0, params=None)` of sharded arrays: `jax.jit`, `jax.grad`, `jax.vjp` and `jax.jvp` go
# through it, in the initial state and in the equation's float parameters (`params={"nu": ...}`), on any mesh.
# Reverse mode through `steps` steps would keep every stage of every step; `checkpoint_every=k` keeps one state
# per block of `k` steps and recomputes a block at a time in the backward pass.
#
# Two inverse problems on a 2D decaying turbulence (vorticity form, 32^2, 8 CPU devices, float64):
#
# 1. **4D-Var**: recover the initial vorticity from the state at a later time, minimizing the misfit with
#    optax's L-BFGS on its gradient (reverse mode through checkpointed blocks of steps);
# 2. **parameter estimation**: the viscosity from an observed energy curve, by Gauss-Newton with forward-mode
#    derivatives (`jax.jvp`).

# %%
import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = " ".join(
    [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    + ["--xla_force_host_platform_device_count=8"]
)

import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import solvers  # noqa: E402
import xfft  # noqa: E402
from solvers import SpectralGrid  # noqa: E402
from solvers.equations import NavierStokes2D  # noqa: E402

jax.config.update("jax_enable_x64", True)
print(jax.device_count(), "devices")

# %% [markdown]
# ## The mesh: why an Auto one here
#
# optax's L-BFGS takes inner products of the unknowns with `jnp.vdot`. On a mesh with **Explicit** axes (xfft's
# default) JAX refuses a dot product whose operands are sharded along the contracted axis ("ambiguous output
# sharding"), so L-BFGS runs on a slab mesh with **Auto** axes, where XLA picks the reduction (a local dot and an
# all-reduce: the field is never gathered). The solvers run unchanged on both kinds; element-wise optimizers
# (`optax.adam`, `optax.sgd`) work on Explicit meshes as they are.

# %%
mesh = xfft.make_mesh("slab", axis_types="auto")
grid = SpectralGrid(32, mesh, ndim=2, dtype=jnp.float64)
eq = NavierStokes2D(grid, nu=2e-3)
truth_hat = eq.initial_state("random", seed=0, k0=3.0, energy=0.5)
steps, dt = 6, 0.05  # t = 0.3: about one eddy turnover time (u_rms = 1, k0 = 3)
run = solvers.rollout(eq, "etdrk4", dt=dt, steps=steps, checkpoint_every=3)
print(run, "| state:", truth_hat.shape, truth_hat.dtype, truth_hat.sharding.spec)

# %% [markdown]
# ## 1. 4D-Var: the initial vorticity from one later observation
#
# The unknown is the real vorticity field `w0` (sharded like every real field of the grid); the run starts from
# its dealiased spectrum. The misfit is the relative mean square of the difference with the observed state
# at `t = 0.3`. The first guess is the observation itself (persistence).

# %%
with jax.set_mesh(mesh):
    observed = jax.jit(run)(truth_hat)
    to_real = jax.jit(grid.irfft)
    truth = to_real(truth_hat)


def misfit(w):
    return grid.mean_square(run(grid.dealias(grid.rfft(w))) - observed) / grid.mean_square(observed)


def relative_rms(a, b):
    return float(jnp.sqrt(jnp.mean((a - b) ** 2) / jnp.mean(b ** 2)))


# %% [markdown]
# ### The gradient, its memory and a check
#
# The gradient of the misfit compiled without checkpointing and with blocks of 3 steps. XLA's buffer assignment
# (`memory_analysis()`: one device's program, times the 8 devices, per grid point) says what the backward pass
# keeps; a state is `16 (n/2+1)/n` = 8.5 bytes per point here (complex128 half spectrum). The checkpointed
# gradient is then checked along a random direction `v` against a central difference.
# `benchmarks/gradients.py` measures the same for 3D Navier-Stokes at 128^3 (README, "Gradients").

# %%
like = jax.ShapeDtypeStruct(grid.shape, grid.dtype, sharding=grid.real_sharding())
state_bpp = 16 * (grid.shape[1] // 2 + 1) / grid.shape[1]
memory, compiled = {}, {}
for every in (None, 3):
    r = solvers.rollout(eq, "etdrk4", dt=dt, steps=steps, checkpoint_every=every)

    def loss(w, r=r):
        return grid.mean_square(r(grid.dealias(grid.rfft(w))) - observed) / grid.mean_square(observed)

    with jax.set_mesh(mesh):
        compiled[every] = jax.jit(jax.grad(loss)).lower(like).compile()
    m = compiled[every].memory_analysis()
    total = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
    memory[every] = total * mesh.size / grid.size
    print(f"checkpoint_every={every!s:>4}: {memory[every]:6.0f} bytes per grid point "
          f"({memory[every] / state_bpp:.0f} states)")

with jax.set_mesh(mesh):
    first = to_real(observed)
    grad = compiled[3](first)
    v = jax.device_put(np.random.default_rng(1).standard_normal(grid.shape), grid.real_sharding())
    h = 1e-4
    fwd = jax.jit(misfit)
    fd = float(fwd(first + h * v) - fwd(first - h * v)) / (2 * h)
    by_grad = float(jnp.sum(grad * v))
fd_error = abs(by_grad / fd - 1)
print(f"directional derivative: gradient {by_grad:.10f}, central difference {fd:.10f}, relative error "
      f"{fd_error:.1e}; gradient sharding {grad.sharding.spec}")

# %% [markdown]
# L-BFGS (optax, with its zoom line search; every evaluation is a forward run and a checkpointed backward run):

# %%
opt = optax.lbfgs()
value_and_grad_from_state = optax.value_and_grad_from_state(misfit)


def placed_like(state, w):
    """optax's initial state as `iterate` returns its successors: strongly typed (optax starts with weakly typed
    scalars) and the L-BFGS history (one field per stored step) sharded like the field; otherwise `iterate`
    would compile a second time for the second call."""
    def place(a):
        a = jnp.asarray(a, a.dtype)
        spec = P(*(None,) * (a.ndim - w.ndim), *w.sharding.spec) if a.ndim >= w.ndim else P()
        return jax.device_put(a, NamedSharding(mesh, spec))

    return jax.tree.map(place, state)


@jax.jit
def iterate(w, state):
    value, grad = value_and_grad_from_state(w, state=state)
    updates, state = opt.update(grad, state, w, value=value, grad=grad, value_fn=misfit)
    return optax.apply_updates(w, updates), state, value


start = time.perf_counter()
with jax.set_mesh(mesh):
    state = placed_like(opt.init(first), first)
    w, history = first, []
    for _ in range(25):
        w, state, value = iterate(w, state)
        history.append(float(value))
    history.append(float(fwd(w)))
first_error, final_error = relative_rms(first, truth), relative_rms(w, truth)
print(f"25 L-BFGS iterations in {time.perf_counter() - start:.1f} s: misfit {history[0]:.3g} -> {history[-1]:.3g}; "
      f"error of the initial vorticity {first_error:.1%} (first guess) -> {final_error:.1%}")

# %%
fig, ax = plt.subplots(1, 5, figsize=(17, 3.2))
ax[0].semilogy(history, "o-", ms=3)
ax[0].set_xlabel("L-BFGS iteration")
ax[0].set_title("misfit at t = 0.3")
lim = float(jnp.max(jnp.abs(truth)))
zoom = lim / float(jnp.max(jnp.abs(w - truth)))
fields = [("truth w(0)", truth), ("observed w(0.3) = first guess", first), ("recovered w(0)", w),
          (f"(recovered - truth) x {zoom:.0f}", zoom * (w - truth))]
for a, (title, f) in zip(ax[1:], fields):
    a.imshow(np.asarray(f).T, origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim)
    a.set_title(title)
    a.set_xticks([])
    a.set_yticks([])
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 2. The viscosity from an observed energy curve
#
# `save_every=2` makes the rollout return the states after steps 2, 4, ..., 20, stacked along a new leading axis
# (sharded like the state behind it); the energy of each is a sharded reduction. The observations come from
# `nu = 0.01`; the estimate starts 4x off. The unknown is `log nu` (positive by construction), and each
# Gauss-Newton step needs the derivative of the whole curve in that one parameter: one `jax.jvp` (forward mode)
# through the rollout, with ETDRK4's phi functions of `nu k^2` computed inside the trace.

# %%
nu_true = 0.01
curve_run = solvers.rollout(eq, "etdrk4", dt=0.05, steps=20, checkpoint_every=5, save_every=2)


def energy_curve(log_nu):
    return jax.vmap(eq.energy)(curve_run(truth_hat, {"nu": jnp.exp(log_nu)}))


curve_and_slope = jax.jit(lambda x: jax.jvp(energy_curve, (x,), (jnp.ones_like(x),)))  # one compile for all
with jax.set_mesh(mesh):
    observed_curve = np.asarray(curve_and_slope(np.log(nu_true))[0])
    x, estimates, curve_misfits, curves = np.log(0.04), [0.04], [], []
    for _ in range(8):
        curve, slope = map(np.asarray, curve_and_slope(x))
        r = curve - observed_curve
        curve_misfits.append(np.sum(r * r) / np.sum(observed_curve ** 2))
        curves.append(curve)
        x = x - np.sum(r * slope) / np.sum(slope * slope)  # Gauss-Newton: the least-squares step in log nu
        estimates.append(float(np.exp(x)))
nu_error = abs(estimates[-1] / nu_true - 1)
print("nu iterates:", " ".join(f"{v:.6g}" for v in estimates))
print(f"estimated nu = {estimates[-1]:.12f} (true {nu_true}), relative error {nu_error:.1e}")

# %%
times = np.array(curve_run.saved_times)
fig, ax = plt.subplots(1, 2, figsize=(10, 3.2))
ax[0].plot(times, observed_curve, "ko", label="observed (nu = 0.01)")
for i in (0, 1, 2, 7):
    ax[0].plot(times, curves[i], label=f"iteration {i}, nu = {estimates[i]:.4g}")
ax[0].set_xlabel("t")
ax[0].set_ylabel("energy")
ax[0].legend(fontsize=8)
ax[1].semilogy(curve_misfits, "o-")
ax[1].set_xlabel("Gauss-Newton iteration")
ax[1].set_title("misfit of the energy curve")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Checks

# %%
assert fd_error < 1e-6, fd_error
assert history[-1] < 1e-4 * history[0], history
assert first_error > 0.3 and final_error < 0.02, (first_error, final_error)
assert nu_error < 1e-8 and curve_misfits[-1] < 1e-12 * curve_misfits[0], (estimates, curve_misfits)
assert memory[3] < memory[None], memory
