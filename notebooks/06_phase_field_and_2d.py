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
# # 6. Phase field, 2D turbulence and Burgers shocks with `solvers`
#
# Four more equations built only on xfft's sharded transforms, each one file behind the `Equation` base class
# (`linear()` is the stiff diagonal part integrated exactly by ETDRK4, `nonlinear()` the pseudo-spectral rest):
#
# | CLI name | equation | checked here against |
# | --- | --- | --- |
# | `cahn-hilliard` | `c_t = lap(c^3 - c - eps^2 lap c)` | linear growth rate, mass, free energy |
# | `allen-cahn` | `c_t = eps^2 lap c - (c^3 - c)` | linear growth rate, free energy |
# | `navier-stokes-2d` | `w_t + u.grad w = nu lap w + f_w` (2D grid) | Taylor-Green decay, Kolmogorov laminar state |
# | `burgers` | `u_t + (u.grad)u = nu lap u` (3D vector) | Basdevant et al. (1986) shock, to 0.1% |
#
# Everything but the Burgers shock runs on 8 virtual CPU devices; the validation numbers use float64.

# %%
import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = " ".join(
    [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    + ["--xla_force_host_platform_device_count=8"]
)

import math  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import xfft  # noqa: E402
from solvers import ETDRK4, SpectralGrid  # noqa: E402
from solvers.equations import AllenCahn, Burgers, CahnHilliard, NavierStokes2D  # noqa: E402

jax.config.update("jax_enable_x64", True)
slab, pencil = xfft.make_mesh("slab"), xfft.make_mesh("pencil")
print(jax.device_count(), "devices; slab", dict(slab.shape), "pencil", dict(pencil.shape))


# %% [markdown]
# `advance` takes many steps in **one** compiled `fori_loop` (one dispatch per call, compiled once per
# integrator, dt and step count). On virtual CPU devices it is also wise to keep one sharded program in flight
# at a time, hence the `block_until_ready`. `transforms(grid)` likewise jits a grid's `rfft` and `irfft` once: a new
# `jax.jit(grid.irfft)` wraps a new bound method, and compiles again at every call.

# %%
_compiled = {}


def advance(integ, state, dt, steps, t0=0.0):
    """``steps`` steps of ``dt`` from ``t0`` as one compiled loop."""
    key = (id(integ), dt, steps)
    if key not in _compiled:
        def run(s, t0):
            c = integ.coefficients(dt)
            return jax.lax.fori_loop(0, steps, lambda i, s: integ.step(s, t0 + i * dt, dt, c), s)

        _compiled[key] = (integ, jax.jit(run))
    with jax.set_mesh(integ.equation.grid.mesh):
        return jax.block_until_ready(_compiled[key][1](state, t0))


_transforms = {}


def transforms(grid):
    """The grid's jitted ``(rfft, irfft)``, made once per grid: ``jax.jit(grid.irfft)`` of a new bound method
    each time would compile again at every call."""
    if id(grid) not in _transforms:
        _transforms[id(grid)] = (grid, jax.jit(grid.rfft), jax.jit(grid.irfft))
    return _transforms[id(grid)][1:]


def real(grid, f_hat):
    return np.asarray(transforms(grid)[1](f_hat))


# %% [markdown]
# ## 1. Cahn-Hilliard: linear stability of a uniform mixture
#
# About a uniform `c0`, a mode `exp(i k.x)` of a small perturbation grows at
# `sigma(k) = -k^2 (eps^2 k^2 + f''(c0))` with `f''(c) = 3 c^2 - 1`: unstable (spinodal) for `|c0| < 1/sqrt(3)`
# and `k < sqrt(-f''(c0)) / eps`. A 2D grid is `SpectralGrid(n, mesh, ndim=2)`. We seed six modes with
# amplitude `1e-7` and compare each one's growth with `exp(sigma t)`.

# %%
grid = SpectralGrid(32, slab, ndim=2, dtype=jnp.float64)
modes = [(1, 0), (3, 0), (0, 4), (2, 2), (-5, 2), (6, 3)]
x, y = grid.coordinates()
perturbation = jax.jit(lambda x, y: 1e-7 * sum(jnp.cos(mx * x + my * y) for mx, my in modes))(x, y)
growth = {}
for cls, c0, t_end in ((CahnHilliard, 0.0, 0.2), (CahnHilliard, 0.3, 0.2), (AllenCahn, 0.0, 2.0)):
    eq = cls(grid, eps=0.2, c0=c0)
    c_hat = transforms(grid)[0](c0 + perturbation)
    out = advance(ETDRK4(eq), c_hat, t_end / 400, 400)
    a, b = np.asarray(c_hat), np.asarray(out)
    k2 = np.array([mx ** 2 + my ** 2 for mx, my in modes], float)
    measured = np.array([(b[mx % 32, my] / a[mx % 32, my]).real for mx, my in modes])
    growth[(cls.label(), c0)] = np.max(np.abs(measured / np.exp(eq.growth_rate(k2) * t_end) - 1))
    print(f"{cls.label():14s} c0 = {c0}: max relative error of exp(sigma t) over 6 modes "
          f"{growth[(cls.label(), c0)]:.1e}")

kk = np.linspace(0, 7, 200)
eq = CahnHilliard(grid, eps=0.2)
plt.figure(figsize=(5, 3))
for c0 in (0.0, 0.3, 0.6):
    plt.plot(kk, eq.growth_rate(kk ** 2, c0), label=f"CH, c0 = {c0}")
plt.scatter(np.sqrt(k2), eq.growth_rate(k2, 0.0), color="k", zorder=3, label="seeded modes")
plt.axhline(0, color="gray", lw=0.5)
plt.xlabel("|k|")
plt.ylabel("sigma(k)")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 2. Spinodal decomposition: mass conserved, free energy decreasing
#
# `CahnHilliard(grid, eps, c0, amplitude)` with the `random` initial condition (zero-mean noise around `c0`).
# Diagnostics are sharded reductions: `energy` is the free energy `F = <(c^2-1)^2/4 + eps^2 |grad c|^2 / 2>`,
# `mass` is `<c>`.
# The scheme splits `L = -k^2 (eps^2 k^2 + S)` (exact) from `N = -k^2 F[c^3 - (1 + S) c]` with `S = 2`.

# %%
grid = SpectralGrid(64, pencil, ndim=2, dtype=jnp.float64, box_length=math.pi)
ch = CahnHilliard(grid, eps=0.05, c0=0.0, amplitude=0.05)
c = ch.initial_state("random", seed=3)
integ, diag = ETDRK4(ch), jax.jit(ch.diagnostics)
history, snapshots = [], {}
dt, chunk = 4e-4, 50
for i in range(16):
    with jax.set_mesh(grid.mesh):
        d = {k: float(v) for k, v in diag(c, 0.0, dt).items()}
    history.append((i * chunk * dt, d["energy"], d["mass"]))
    if i in (3, 7, 15):
        snapshots[round(i * chunk * dt, 3)] = real(grid, c)
    c = advance(integ, c, dt, chunk, t0=i * chunk * dt)
history = np.array(history)
fig, ax = plt.subplots(1, 4, figsize=(13, 3))
for a_, (t_, f_) in zip(ax, snapshots.items()):
    a_.imshow(f_.T, origin="lower", cmap="RdBu_r", vmin=-1, vmax=1)
    a_.set_title(f"c, t = {t_}")
ax[3].plot(history[:, 0], history[:, 1], "o-")
ax[3].set_xlabel("t")
ax[3].set_title("free energy")
plt.tight_layout()
plt.show()
ch_mass_drift = np.max(np.abs(history[:, 2] - history[0, 2]))
ch_energy_steps = np.diff(history[:, 1])
print(f"mass drift {ch_mass_drift:.1e}; largest free-energy step {ch_energy_steps.max():.2e} (never positive)")

# %% [markdown]
# ## 3. Allen-Cahn: the non-conserved cousin
#
# Same class family (`mobility` 1 instead of `k^2`): no mass conservation, faster coarsening by motion by
# curvature; the free energy still only decreases.

# %%
ac = AllenCahn(grid, eps=0.05, c0=0.0, amplitude=0.5)
c = ac.initial_state("random", seed=3)
integ, diag = ETDRK4(ac), jax.jit(ac.diagnostics)
ac_energy = []
for i in range(8):
    with jax.set_mesh(grid.mesh):
        ac_energy.append(float(diag(c, 0.0, 0.01)["energy"]))
    c = advance(integ, c, 0.01, 50, t0=0.5 * i)
ac_final = real(grid, c)
plt.figure(figsize=(3, 3))
plt.imshow(ac_final.T, origin="lower", cmap="RdBu_r", vmin=-1, vmax=1)
plt.title("Allen-Cahn, t = 4")
plt.show()
print("free energy every t = 0.5:", np.round(ac_energy, 5))

# %% [markdown]
# ## 4. 2D Navier-Stokes in vorticity form
#
# The state is the vorticity spectrum; `u = (d_y psi, -d_x psi)` with `lap psi = -w`. Two exact solutions:
#
# * **Taylor-Green** `w = 2 k sin(kx) sin(ky)`: the nonlinear term vanishes, `w(t) = w(0) exp(-2 nu k^2 t)`.
# * **Kolmogorov flow** with forcing `f = F sin(k_f y) x_hat`: the laminar state `w = -F/(nu k_f) cos(k_f y)` is
#   steady, and a fluid at rest approaches it as `1 - exp(-nu k_f^2 t)` (a single shear mode has no nonlinear
#   term), with injection = dissipation = `F^2 / (2 nu k_f^2)`.

# Every equation declares its parameters (and each initial condition its own): the constructor checks them, and
# `python -m solvers list`, `--param KEY=VALUE` and `solvers.run(RunConfig(params=...))` use the same declarations.

# %%
for p in NavierStokes2D.parameters:
    print(f"{p.name:<10} default {p.default!r:<8} {p.allowed():<28} {p.help}")
try:
    NavierStokes2D(SpectralGrid(32, slab, ndim=2), drag=-1.0)
except ValueError as e:
    print("ValueError:", e)

# %%
grid2 = SpectralGrid(32, slab, ndim=2, dtype=jnp.float64)
nu = 0.05
tg = NavierStokes2D(grid2, nu=nu, mode=2)
w0 = tg.initial_state("taylor-green")
w1 = advance(ETDRK4(tg), w0, 0.05, 20)
tg_err = np.max(np.abs(real(grid2, w1) - np.exp(-2 * nu * 4 * 1.0) * real(grid2, w0))) / np.max(np.abs(real(grid2, w0)))
print(f"Taylor-Green (k = 2) at t = 1: max relative error {tg_err:.1e}")

kol = NavierStokes2D(grid2, nu=0.1, forcing=1.0, kf=4, amplitude=0.0)
lam = kol.initial_state("kolmogorov")
w = advance(ETDRK4(kol), lam, 0.02, 50)
kol_steady_err = np.max(np.abs(real(grid2, w) - real(grid2, lam))) / np.max(np.abs(real(grid2, lam)))
with jax.set_mesh(grid2.mesh):
    kd = {k: float(v) for k, v in jax.jit(kol.diagnostics)(w, 1.0, 0.02).items()}
balance = 1.0 / (2 * 0.1 * 16)
print(f"Kolmogorov laminar state after t = 1: relative change {kol_steady_err:.1e}; "
      f"injection {kd['injection']:.12f}, dissipation {kd['dissipation']:.12f}, F^2/(2 nu kf^2) = {balance}")

# %% [markdown]
# At higher Reynolds number the laminar Kolmogorov state is unstable; a 64^2 run from a slightly perturbed
# laminar state (float32, the CLI default; with linear drag) becomes unstable and rolls up into vortices:

# %%
grid3 = SpectralGrid(64, slab, ndim=2, dtype=jnp.float32)
turb = NavierStokes2D(grid3, nu=2e-3, forcing=0.05, kf=2, drag=0.02, amplitude=0.05)
k2_3 = np.asarray(grid3.k2())


def off_laminar(w):
    """Share of the kinetic energy in x-dependent modes (kx != 0); 0 for the laminar state."""
    e = np.abs(np.asarray(w)) ** 2 / np.where(k2_3 > 0, k2_3, 1)
    return 1 - e[0].sum() / e.sum()


w = turb.initial_state("kolmogorov", seed=1)
share = [off_laminar(w)]
integ = ETDRK4(turb)
for i in range(4):
    w = advance(integ, w, 0.025, 100, t0=2.5 * i)
    share.append(off_laminar(w))
plt.figure(figsize=(3.5, 3))
plt.imshow(real(grid3, w).T, origin="lower", cmap="RdBu_r")
plt.title("Kolmogorov flow, vorticity, t = 10")
plt.colorbar()
plt.show()
print("energy share off the laminar mode at t = 0, 2.5, 5, 7.5, 10:", np.round(share, 3))

# %% [markdown]
# ## 5. Burgers shock on a long thin 3D grid
#
# `Burgers` is the 3D vector equation (rotational form, 4 + 6 fields per evaluation). A planar field
# `u = (u(x), 0, 0)` stays planar, so an `n x 4 x 4` grid (the fewest points a Fourier axis takes) solves the
# classic 1D test: `u0 = -sin(pi x)` on [-1, 1], `nu = 0.01/pi`. Basdevant et
# al. (1986) give `max |du/dx| = 152.00516` at `t = 1.6037/pi` (Cole-Hopf). 864 points (2/3 dealiased) reach
# 0.1%; 840 is the smallest multiple of 8 that does. The grid holds 13824 points: on one device, as the command
# line would run it (8 virtual CPU devices exchange more than they share below 32768 points each).

# %%
n = 864
one_device = xfft.make_mesh("slab", devices=jax.devices()[:1])
gridb = SpectralGrid((n, 4, 4), one_device, dtype=jnp.float64, box_length=(2.0, 8 / n, 8 / n))
bu = Burgers(gridb, nu=0.01 / math.pi)
u0 = bu.initial_state("sine")
t_star = 1.6037 / math.pi
u = advance(ETDRK4(bu), u0, t_star / 200, 200)  # CFL 1.1: 300 steps move max |du/dx| by 2e-7
with jax.set_mesh(gridb.mesh):
    bd = {k: float(v) for k, v in jax.jit(bu.diagnostics)(u, t_star, t_star / 200).items()}
burgers_err = bd["max_dudx"] / 152.00516 - 1
print(f"max |du/dx| = {bd['max_dudx']:.5f} vs 152.00516: relative error {burgers_err:.1e}")
xs = np.arange(n) * 2.0 / n - 1
ux = real(gridb, u)[0, :, 0, 0]
plt.figure(figsize=(5, 3))
plt.plot(xs, real(gridb, u0)[0, :, 0, 0], label="t = 0")
plt.plot(xs, ux, label="t = 1.6037/pi")
plt.xlabel("x")
plt.legend()
plt.show()

# %% [markdown]
# From the command line (`python -m solvers list` shows them all; `--param KEY=VALUE` sets equation parameters):
#
# ```bash
# python -m solvers run cahn-hilliard --ic random --n 128 --integrator etdrk4 --dt 4e-4 --t-end 0.3 --param eps=0.05
# python -m solvers run allen-cahn --ic random --n 128 --integrator etdrk4 --dt 0.01 --t-end 4 --param amplitude=0.5
# python -m solvers run navier-stokes-2d --ic kolmogorov --n 256 --nu 2e-3 --integrator etdrk4 --t-end 50 \
#     --param forcing=0.05 --param kf=2 --param drag=0.02 --param amplitude=0.05
# python -m solvers run burgers --ic sine --n 864 --param ny=8 --param nz=8 --box-length 2 --nu 0.0031831 \
#     --integrator etdrk4 --dtype float64 --t-end 0.5105 --cfl 0.3
# ```

# %% [markdown]
# ## Checks

# %%
assert all(v < 1e-6 for v in growth.values()), growth
assert ch_mass_drift < 1e-14 and np.all(ch_energy_steps <= 1e-12), (ch_mass_drift, ch_energy_steps.max())
assert history[-1, 1] < 0.8 * history[0, 1]
assert np.all(np.diff(ac_energy) <= 1e-12) and ac_final.max() > 0.9 and ac_final.min() < -0.9
assert tg_err < 1e-12, tg_err
assert kol_steady_err < 1e-13, kol_steady_err
assert abs(kd["injection"] / balance - 1) < 1e-12 and abs(kd["dissipation"] / balance - 1) < 1e-12, kd
assert abs(burgers_err) < 1e-3, burgers_err
assert share[0] < 0.01 and share[-1] > 0.3, share  # the laminar Kolmogorov flow is unstable
