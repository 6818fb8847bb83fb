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
# # 5. Quantum fields: Schrödinger–Poisson and Gross–Pitaevskii on a sharded grid
#
# Two nonlinear Schrödinger equations for a complex wavefunction `psi` (units hbar = m = 1):
#
# * **Schrödinger–Poisson** (fuzzy dark matter): `i psi_t = -lap psi / 2 + V psi`, `lap V = 4 pi G (|psi|^2 - rho0)`;
# * **Gross–Pitaevskii** (Bose–Einstein condensates): `i psi_t = -lap psi / 2 + V_trap psi + g |psi|^2 psi`.
#
# Both are solved with the **split-step Fourier** method (Strang, kick-drift-kick): a kick `exp(-i V dt/2)` in
# real space, an exact drift `exp(-i k^2 dt/2)` in Fourier space, another kick. Every factor is a pure phase, so
# the norm is conserved to round-off. The transforms are xfft's complex `xfftn`/`ixfftn` on 8 CPU devices, and
# the gravitational potential comes from `solvers.Poisson` on the same sharded grid. We check:
#
# 1. the quantum Jeans dispersion relation `omega^2 = k^4/4 - 4 pi G rho0` (growth and oscillation);
# 2. the harmonic-trap ground state by imaginary time (`E/N = 3/2` for `g = 0`), then with repulsion;
# 3. a bright soliton of the focusing equation against its closed form.

# %%
import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = " ".join(
    [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    + ["--xla_force_host_platform_device_count=8"]
)

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # validation numbers in float64

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import xfft  # noqa: E402
from solvers import SpectralGrid  # noqa: E402
from solvers.equations import GrossPitaevskii, SchrodingerPoisson  # noqa: E402
from solvers.equations.gross_pitaevskii import bright_soliton_field, gaussian  # noqa: E402
from solvers.integrators import ImaginaryTimeSplitStep, SplitStep  # noqa: E402

mesh = xfft.make_mesh("slab")
print(jax.device_count(), "devices, mesh", dict(mesh.shape))

# %% [markdown]
# ## 1. Schrödinger–Poisson: the quantum Jeans instability
#
# Linearise around a uniform state `psi = sqrt(rho0)`: a density wave `delta ~ exp(i (k x - omega t))` obeys
# `omega^2 = k^4/4 - 4 pi G rho0`. Quantum pressure (`k^4/4`) stabilises short waves, gravity destabilises long
# ones below the Jeans wavenumber `k_J = (16 pi G rho0)^(1/4)`. With `4 pi G rho0 = 1` on a `2 pi` box, `k = 1`
# grows as `cosh(gamma t)`, `gamma = sqrt(3)/2`, and `k = 2` oscillates as `cos(omega t)`, `omega = sqrt(3)`.
# The problem is 1D, so a thin `32 x 8 x 8` grid is enough; its real-space slabs sit on 8 devices.

# %%
grid = SpectralGrid((32, 8, 8), mesh, dtype=jnp.float64)
sp = SchrodingerPoisson(grid, G=1 / (4 * np.pi))
eps = 1e-6
x = grid.coordinates()[0]
psi = sp._state(lambda: 1 + eps * (jnp.cos(x) + jnp.cos(2 * x)))
print("state:", psi.shape, psi.dtype, psi.sharding.spec, "(full complex spectrum)")


@jax.jit
def modes(p):
    """Density Fourier amplitudes 2 <rho cos(k x)> for k = 1, 2 (sharded reductions)."""
    r = jnp.abs(sp.to_real(p)) ** 2
    return jnp.stack([2 * jnp.mean(r * jnp.cos(k * x)) for k in (1.0, 2.0)])


mass0, d0 = float(sp.mass(psi)), np.asarray(modes(psi))
rho0 = mass0 / sp.volume
gamma, omega = np.sqrt(-sp.jeans_omega2(1.0, rho0)), np.sqrt(sp.jeans_omega2(2.0, rho0))
stepper = SplitStep(sp)
ts, ds = [0.0], [np.ones(2)]
for j in range(30):
    psi = stepper.advance(psi, 0.1 * j, 0.01, 10)
    ts.append(0.1 * (j + 1))
    ds.append(np.asarray(modes(psi)) / d0)
ts, ds = np.array(ts), np.array(ds)
mass_err = abs(float(sp.mass(psi)) / mass0 - 1)
gamma_fit = np.arccosh(ds[-1, 0]) / ts[-1]
omega_fit = np.arccos(ds[15, 1]) / ts[15]
print(f"growth rate  k=1: measured {gamma_fit:.8f}, theory {gamma:.8f} (rel. err {abs(gamma_fit / gamma - 1):.1e})")
print(f"frequency    k=2: measured {omega_fit:.8f}, theory {omega:.8f} (rel. err {abs(omega_fit / omega - 1):.1e})")
print(f"mass change after 300 steps: {mass_err:.1e}")

fig, ax = plt.subplots(1, 2, figsize=(9, 3))
ax[0].semilogy(ts, ds[:, 0], "o", ts, np.cosh(gamma * ts), "-")
ax[0].set(title="k = 1 (unstable)", xlabel="t", ylabel="delta / delta0")
ax[1].plot(ts, ds[:, 1], "o", ts, np.cos(omega * ts), "-")
ax[1].set(title="k = 2 (stable)", xlabel="t")
plt.tight_layout()

# %% [markdown]
# ## 2. Gross–Pitaevskii: ground state in a harmonic trap by imaginary time
#
# Replacing `t -> -i tau` turns the evolution into `exp(-H tau)`, which damps every excited state like
# `exp(-(E_n - E_0) tau)`; renormalising each step keeps the particle number. The integrator
# `split-step-imaginary` does this. For `g = 0` in an isotropic unit trap the ground state is the Gaussian
# `pi^(-3/4) exp(-r^2/2)` with `E/N = 3/2`. We start from a wrong, off-centre Gaussian on a `32^3`, `L = 16` box.

# %%
tgrid = SpectralGrid(32, mesh, dtype=jnp.float64, box_length=16.0)
gp0 = GrossPitaevskii(tgrid, g=0.0, omega=1.0)
energy = jax.jit(lambda p: gp0.energy(p) / gp0.mass(p))
psi = gaussian(gp0, width=1.4, x0=0.5)
relax = ImaginaryTimeSplitStep(gp0)
history = [float(energy(psi))]
for _ in range(10):
    psi = relax.advance(psi, 0.0, 0.05, 20)
    history.append(float(energy(psi)))
ground_err = abs(history[-1] - 1.5)
print("E/N during relaxation:", np.round(history, 8))
print(f"ground-state energy {history[-1]:.10f} (exact 1.5, error {ground_err:.1e})")

# %% [markdown]
# With strong repulsion (`g = 500`) the cloud spreads out towards the Thomas–Fermi profile `rho = (mu - V)/g`
# (kinetic energy neglected), whose chemical potential for `N = 1` in a unit trap is
# `mu_TF = (15 g / (4 pi))^(2/5) / 2`. The kinetic energy at the edge keeps the true `mu` slightly above it.

# %%
gp = GrossPitaevskii(tgrid, g=500.0, omega=1.0)
psi_g = ImaginaryTimeSplitStep(gp).advance(psi, 0.0, 0.02, 300)
d = jax.jit(lambda p: gp.diagnostics(p, 0.0, 0.0))(psi_g)
mu, mu_tf = float(d["chemical_potential"]), 0.5 * (15 * 500 / (4 * np.pi)) ** 0.4
print(f"g = 500: mu = {mu:.4f}, Thomas-Fermi {mu_tf:.4f}; E/N = {float(d['energy']):.4f}")
cut = lambda p: np.abs(np.asarray(gp.to_real(p))[:, 16, 16]) ** 2  # noqa: E731
xs = np.asarray(gp.centered_coordinates()[0])[:, 0, 0]
plt.figure(figsize=(5, 3))
plt.plot(xs, cut(psi), label="g = 0")
plt.plot(xs, cut(psi_g), label="g = 500")
plt.plot(xs, np.maximum(mu_tf - xs ** 2 / 2, 0) / 500, "--", label="Thomas-Fermi")
plt.xlabel("x")
plt.ylabel("|psi|^2 on the axis")
plt.legend()
plt.show()

# %% [markdown]
# ### Real time: the norm is conserved and the centre of mass swings at the trap frequency
#
# Kohn's theorem: in a harmonic trap the centre of mass oscillates as `x0 cos(omega t)` whatever `g` is.

# %%
gk = GrossPitaevskii(tgrid, g=50.0, omega=1.0)
psi = gaussian(gk, width=1.2, x0=1.0)
diag = jax.jit(lambda p: gk.diagnostics(p, 0.0, 0.0))
n0 = float(diag(psi)["mass"])
rt = SplitStep(gk)
xm = []
for j in range(4):
    psi = rt.advance(psi, 0.5 * j, 0.01, 50)
    xm.append(float(diag(psi)["x_mean"]))
norm_err = abs(float(diag(psi)["mass"]) / n0 - 1)
kohn_err = np.max(np.abs(np.array(xm) - np.cos(0.5 * np.arange(1, 5))))
print(f"norm change {norm_err:.1e}; centre of mass vs cos(t): max error {kohn_err:.1e}")

# %% [markdown]
# ## 3. A bright soliton (focusing, `g < 0`, no trap)
#
# On a long thin box the condensate is uniform across and the equation is the 1D focusing NLS, whose bright
# soliton `psi = a sech(a (x - x0 - v t)) exp(i (v x + (a^2 - v^2) t / 2))` travels without changing shape.
# The velocity is a wavenumber of the box (`8 * 2 pi / 40`) so that `exp(i v x)` is periodic.

# %%
sgrid = SpectralGrid((256, 8, 8), mesh, dtype=jnp.float64, box_length=(40.0, 1.0, 1.0))
sol = GrossPitaevskii(sgrid, g=-1.0, omega=0.0, a=1.0, v=8 * 2 * np.pi / 40, x0=-2.0)
psi = SplitStep(sol).advance(sol.initial_state("bright-soliton"), 0.0, 0.01, 400)
xs = np.asarray(sol.centered_coordinates()[0])[:, 0, 0]
got = np.asarray(sol.to_real(psi))[:, 0, 0]
exact = bright_soliton_field(xs, 4.0, a=1.0, v=sol.ic_params["v"], x0=-2.0)
soliton_err = np.max(np.abs(got - exact))
print(f"t = 4: max |psi - psi_exact| = {soliton_err:.1e} (peak 1)")
plt.figure(figsize=(5, 3))
plt.plot(xs, np.abs(bright_soliton_field(xs, 0.0, v=sol.ic_params["v"], x0=-2.0)), ":", label="t = 0")
plt.plot(xs, np.abs(got), label="split-step, t = 4")
plt.plot(xs, np.abs(exact), "--", label="closed form")
plt.xlabel("x")
plt.legend()
plt.show()

# %% [markdown]
# ## The same from the command line
#
# ```bash
# python -m solvers run schrodinger-poisson --ic gaussian-collapse --integrator split-step --dt 0.0025 \
#     --t-end 0.5 --n 64 --param G=1 --param eps=2
# python -m solvers run gross-pitaevskii --ic gaussian --integrator split-step-imaginary --dt 0.05 \
#     --t-end 5 --n 32 --box-length 16 --param g=100
# ```
# Both write `diagnostics.csv` with `mass`, the energies, `resolution` and (Gross–Pitaevskii) `chemical_potential`.
# The collapse stays resolved to `t = 0.5` (its `resolution` column stays small); run on, its core falls
# below the grid spacing and the run warns (`ResolutionWarning`, see the README's "Resolution monitor").

# %% [markdown]
# ## Checks

# %%
assert mass_err < 1e-13, mass_err
assert abs(gamma_fit / gamma - 1) < 2e-5 and abs(omega_fit / omega - 1) < 2e-5, (gamma_fit, omega_fit)
assert ground_err < 1e-6, ground_err
assert norm_err < 1e-13 and kohn_err < 1e-4, (norm_err, kohn_err)
assert abs(mu / mu_tf - 1) < 0.1, (mu, mu_tf)
assert soliton_err < 1e-4, soliton_err
print("all checks passed")
