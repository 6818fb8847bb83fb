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
# # 10. Walls that stick: a Tollmien–Schlichting wave and no-slip convection
#
# Free-slip walls are sine/cosine series (notebook 8). **No-slip** walls need a polynomial basis: `solvers` puts a
# Chebyshev basis on the wall-normal axis (Gauss–Lobatto points, walls included, transformed by the sharded DCT-I
# of `xfft.xr2rn`), Fourier on the others, and imposes the wall conditions with the **tau method** inside the
# implicit part of an IMEX step: per horizontal wavenumber a quasi-tridiagonal (banded) solve, local to each device
# because the wall-normal axis stays unsharded in spectral space.
#
# | basis | points | transform | boundary conditions | cost per implicit solve |
# | --- | --- | --- | --- | --- |
# | `Fourier`, `RealFourier` | uniform | `fft`, `rfft` | periodic | a division |
# | `Cosine`, `Sine` | cell-centred | `dct2`, `dst2` | free-slip / fixed value | a division |
# | `Chebyshev` | Gauss–Lobatto | `dct1` | any, by tau in the solves | O(n) per wavenumber |
#
# The velocity between walls is carried in the velocity–vorticity form of Kim, Moin & Moser (1987): `lap v` and
# the wall-normal vorticity per horizontal wavenumber, the mean flow separately; `v = v' = 0` at the walls comes
# from the influence-matrix method. Continuity holds by construction.

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

import solvers  # noqa: E402
from solvers import IMEX, Channel, RayleighBenardNoSlip, wall_grid  # noqa: E402
from solvers.stability import orr_sommerfeld  # noqa: E402
from solvers.stability import rayleigh_benard as rb_stability  # noqa: E402

jax.config.update("jax_enable_x64", True)

# %% [markdown]
# ## The Orr–Sommerfeld spectrum of plane Poiseuille flow
#
# `solvers.stability.orr_sommerfeld` solves the linear stability problem of `U = 1 - y^2` (Chebyshev tau, numpy).
# At `Re = 10000`, `alpha = 1` one eigenvalue has `c_i > 0`: the Tollmien–Schlichting wave. Orszag (1971) gives
# `c = 0.23752649 + 0.00373967 i`.

# %%
Re, alpha = 10000.0, 1.0
c_all = orr_sommerfeld.eigenvalues(Re, alpha, n=100)
c_ts, v_coef = orr_sommerfeld.least_stable_mode(Re, alpha, n=100)
print("least stable c =", c_ts, "  Orszag 1971: 0.23752649 + 0.00373967i")
fig, ax = plt.subplots(figsize=(5, 4))
ax.plot(c_all.real, c_all.imag, "k.", ms=4)
ax.plot(c_ts.real, c_ts.imag, "ro", mfc="none", ms=10, label="Tollmien-Schlichting")
ax.set_xlim(0, 1)
ax.set_ylim(-1, 0.1)
ax.axhline(0, color="0.7", lw=0.8)
ax.set_xlabel("$c_r$")
ax.set_ylabel("$c_i$")
ax.set_title("Orr-Sommerfeld spectrum, Re = 10000, alpha = 1")
ax.legend()
plt.show()

# %% [markdown]
# ## The wave in the channel solver
#
# Laminar flow plus `1e-5` times that mode (`--ic tollmien-schlichting`), 65 Chebyshev points, IMEX ARS(4,4,3)
# with `dt = 0.02`. In the linear regime the perturbation energy grows as `exp(2 alpha c_i t)`. The same run from the
# command line: `python -m solvers run channel --ic tollmien-schlichting --n 65 8 --param Re=10000 --dt 0.02
# --t-end 20 --dtype float64` (its `diagnostics.csv` has `perturbation_energy`).

# %%
grid = wall_grid((65, 8), walls=(-1.0, 1.0), lengths=(2 * math.pi / alpha,), dtype=jnp.float64)  # y first
channel = Channel(grid, Re=Re)
state = channel.initial_state("tollmien-schlichting", alpha=alpha, amplitude=1e-5)
step = IMEX(channel)
with jax.set_mesh(grid.mesh):
    perturbation_energy = jax.jit(channel.perturbation_energy)  # one program, not one per array operation
    times, energies = [0.0], [float(perturbation_energy(state))]
    for k in range(8):
        state = step.advance(state, 2.5 * k, 0.02, 125)  # the same compiled 125-step loop every time
        times.append(2.5 * (k + 1))
        energies.append(float(perturbation_energy(state)))
rate = math.log(energies[-1] / energies[4]) / (times[-1] - times[4])
print(f"d ln E / dt = {rate:.8f}   2 alpha c_i = {2 * alpha * c_ts.imag:.8f}   relative error "
      f"{abs(rate / (2 * alpha * c_ts.imag) - 1):.1e}")

fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
a1.semilogy(times, energies, "o-", label="solver")
a1.semilogy(times, energies[0] * np.exp(2 * alpha * c_ts.imag * np.array(times)), "k--", label=r"$e^{2\alpha c_i t}$")
a1.set_xlabel("t")
a1.set_ylabel("perturbation energy")
a1.legend()
y = np.asarray(grid.bases[0].points())
x = np.asarray(grid.bases[1].points())
with jax.set_mesh(grid.mesh):
    fields = jax.jit(channel.physical_fields)(state)
u_pert = np.asarray(fields["u"]) - (1 - y ** 2)[:, None]
xx = np.linspace(0, 2 * math.pi, 97)
uu = np.real(np.fft.ifft(np.fft.fft(u_pert, axis=1), n=8, axis=1))  # (the field is band-limited: 8 points exact)
im = a2.pcolormesh(x, y, uu, shading="nearest", cmap="RdBu_r")
a2.set_xlabel("x")
a2.set_ylabel("y (Chebyshev points)")
a2.set_title("streamwise perturbation u' at t = 20")
fig.colorbar(im, ax=a2)
plt.show()

# %% [markdown]
# ## Convection between rigid plates
#
# `rayleigh-benard --param walls=no-slip`: Chebyshev in z with `u = theta = 0` at both plates. Linear theory
# (`solvers.stability.rayleigh_benard`, Chandrasekhar 1961): onset at `Ra_c = 1707.762`, `k_c = 3.117`. The solver's
# growth rates just below and just above it, from one compiled `solvers.rollout` (notebook 9) that takes the Rayleigh
# number as a float parameter (`params={"Ra": ...}`): the second run reuses the first one's program.

# %%
ra_c, k_c = rb_stability.onset("no-slip")
print(f"onset: Ra_c = {ra_c:.4f} at k_c = {k_c:.4f}")


g = RayleighBenardNoSlip.make_grid((17, 8), lengths=(2 * math.pi / k_c,), dtype=jnp.float64)  # z first
eq = RayleighBenardNoSlip(g, Ra=ra_c, Pr=1.0, amplitude=1e-8)
# the states at t = 0.5 and t = 1; Ra is a float parameter of the run, so both Rayleigh numbers share one program
linear_run = jax.jit(solvers.rollout(eq, "imex", dt=2e-3, steps=500, save_every=250))
energies_of = jax.jit(jax.vmap(eq.energy))
s0 = eq.initial_state("single-mode")


def solver_rate(Ra):
    """Growth rate of sqrt(kinetic energy) of the roll of wavenumber k_c (2D, one wavelength, linear)."""
    with jax.set_mesh(g.mesh):
        e1, e2 = np.asarray(energies_of(linear_run(s0, {"Ra": Ra})))
    return math.log(e2 / e1) / 2 / 0.5


rates = {f: solver_rate(ra_c * f) for f in (1 - 1e-3, 1 + 1e-3)}
for f, r in rates.items():
    print(f"Ra = Ra_c x {f}: solver {r:+.6f}, linear theory {rb_stability.growth_rate(k_c, ra_c * f, 1.0):+.6f}")

# %% [markdown]
# Above onset the rolls saturate. At `Ra = 5000`, `Pr = 1` (25 x 32 points, one critical wavelength) the heat flux
# through the bottom plate, the top plate and the volume agree in the steady state:

# %%
g = RayleighBenardNoSlip.make_grid((25, 32), lengths=(2 * math.pi / k_c,), dtype=jnp.float64)
rb = RayleighBenardNoSlip(g, Ra=5000.0, Pr=1.0, amplitude=0.2)
s = IMEX(rb).advance(rb.initial_state("single-mode"), 0.0, 5e-3, 1000)
with jax.set_mesh(g.mesh):
    nu_bottom, nu_top, nu_volume = (float(v) for v in jax.jit(lambda s: (*rb.plate_nusselt(s), rb.nusselt(s)))(s))
    T = np.asarray(jax.jit(rb.temperature)(s))
print(f"Nusselt: bottom {nu_bottom:.8f}, top {nu_top:.8f}, volume {nu_volume:.8f}")
z = np.asarray(g.bases[0].points())
xg = np.asarray(g.bases[1].points())
fig, ax = plt.subplots(figsize=(7, 3))
im = ax.pcolormesh(xg, z, T, shading="gouraud", cmap="inferno")
ax.set_xlabel("x")
ax.set_ylabel("z (Chebyshev points)")
ax.set_title(f"no-slip convection rolls, Ra = 5000: temperature, Nu = {nu_volume:.4f}")
fig.colorbar(im, ax=ax)
plt.show()

# %% [markdown]
# A 3D turbulent channel (`--ic turbulent`, e.g. `--n 65 64 64 --param Re=4200` for Lee & Moser's
# `Re_tau = 180` at lower resolution) runs the same way; it needs a GPU or many CPU cores to reach a statistically
# steady state, so it is not part of this notebook.

# %% [markdown]
# ## Checks

# %%
assert abs(c_ts - (0.23752649 + 0.00373967j)) < 1e-8
assert abs(rate / (2 * alpha * 0.00373967) - 1) < 1e-5
assert abs(ra_c - 1707.762) < 1e-3 and abs(k_c - 3.117) < 1e-3
assert rates[1 - 1e-3] < 0 < rates[1 + 1e-3]
assert abs(nu_bottom - nu_top) < 1e-10 and abs(nu_volume / nu_bottom - 1) < 1e-5 and nu_volume > 1.5
print("all checks passed")
