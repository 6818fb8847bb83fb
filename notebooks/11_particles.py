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
# # 11. Particles on sharded meshes: Landau damping and the growth of cosmic structure
#
# `solvers.particles` runs particle codes through the same `solvers.simulate` as the fields: a state of
# `Particles` (positions, velocities, weights) sharded over every device, an equation whose force comes from a
# sharded mesh (`xfft.paint`, a Poisson solve with `xfft.xrfftn`, `xfft.readout`), and the kick-drift-kick
# `Leapfrog`. Two runs on 8 virtual CPU devices, float64:
#
# 1. **electrostatic particle-in-cell**: Landau damping of a Langmuir wave at `k lambda_D = 0.5`, against the root
#    of the dispersion relation (`omega = 1.4157`, `gamma = -0.1534`), and the phase space it leaves;
# 2. **particle-mesh N-body** in an Einstein-de Sitter universe: a small Gaussian field's power spectrum grows as
#    `a^2` on large scales.

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
import xfft  # noqa: E402
from solvers.particles import (  # noqa: E402
    ComovingNBody,
    Leapfrog,
    VlasovPoisson,
    fit_damped_oscillation,
    landau_root,
    periodic_grid,
    power_spectrum,
)

jax.config.update("jax_enable_x64", True)

# %% [markdown]
# ## Landau damping
#
# 4096 electrons in a box of `4 pi` Debye lengths on 32 cells (both sharded over the 8 devices of a slab mesh),
# loaded as a weighted multi-beam quiet start (128 beams evenly spaced in velocity, each on its own lattice, weighted
# by the Maxwellian) with a density perturbation `1 + 0.01 cos(x / 2)`. An output records the field's fundamental
# `E_k` every step; the fit of `A exp(gamma t) cos(omega t + phi)` gives the frequency and damping rate.


# %%
class ModeRecorder(solvers.Output):
    row_every = 1

    def __init__(self):
        self.t, self.e_k, self.field_energy = [], [], []

    def on_rows(self, rows):
        self.t += [r.t for r in rows]
        self.e_k += [complex(r.values["mode_re"], r.values["mode_im"]) for r in rows]
        self.field_energy += [r.values["field_energy"] for r in rows]


mesh = xfft.make_mesh("slab")
plasma = VlasovPoisson(periodic_grid(32, 4 * math.pi, mesh, dtype=jnp.float64), particles=4096, kernel="tsc")
rec = ModeRecorder()
sol = solvers.simulate(plasma, Leapfrog, t_end=20.0, y0=plasma.initial_state("landau", alpha=0.01),
                       controller=solvers.FixedStep(0.2), outputs=[rec])
omega, gamma = fit_damped_oscillation(rec.t, np.imag(rec.e_k), t_min=4.0)
theory = landau_root(0.5)
print(f"omega = {omega:.4f} (theory {theory.real:.4f}), gamma = {gamma:.4f} (theory {theory.imag:.4f})")

# %%
t = np.array(rec.t)
x = np.asarray(sol.state.positions)[:, 0]
v = np.asarray(sol.state.velocities)[:, 0]
w = np.asarray(sol.state.weights)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
a1.semilogy(t, rec.field_energy, label="field energy")
a1.semilogy(t, rec.field_energy[0] * np.exp(2 * theory.imag * t), "k--", label=r"$\propto e^{2\gamma t}$ (theory)")
a1.set_xlabel(r"$t\,\omega_p$")
a1.legend()
a2.scatter(x, v, c=w, s=2, cmap="viridis")
a2.set_xlim(0, 4 * math.pi)
a2.set_ylim(-4, 4)
a2.set_xlabel(r"$x / \lambda_D$")
a2.set_ylabel(r"$v / v_{th}$")
a2.set_title(r"phase space at $t = 20$ (colour: weight)")
plt.tight_layout()
plt.show()

# %% [markdown]
# The phase space shows the beams of the quiet start sheared by free streaming; near the resonant velocity
# `omega / k = 2.8` they carry the wave's energy away.
#
# ## Linear growth in a comoving particle-mesh run
#
# `ComovingNBody` takes the scale factor `a` as its time. A Gaussian field (`P ~ k^-1`, rms contrast 0.005 at
# `a0 = 0.1`) displaced onto 16^3 particles by the Zel'dovich approximation, run to `a = 0.4` on a 16^3 pencil mesh
# (2 x 4 devices): linear theory says `P(k, a) = (a / a0)^2 P(k, a0)`, 16 times, while the contrast is small.

# %%
pencil = xfft.make_mesh("pencil")
universe = ComovingNBody(periodic_grid((16, 16, 16), 1.0, pencil, dtype=jnp.float64))
y0 = universe.initial_state("gaussian", a0=0.1, sigma=0.005, index=-1.0, seed=1)
end = solvers.simulate(universe, Leapfrog, t0=0.1, t_end=0.4, y0=y0, controller=solvers.FixedStep(0.03))
k0, p0 = power_spectrum(universe.mesh.contrast(y0.positions), 1.0)
k1, p1 = power_spectrum(universe.mesh.contrast(end.state.positions), 1.0)
fig, ax = plt.subplots(figsize=(5.5, 3.8))
ax.loglog(k0, p0, "o-", label="a = 0.1")
ax.loglog(k1, p1, "s-", label="a = 0.4")
ax.loglog(k0, p0 * 16, "k--", label=r"$(a/a_0)^2\,P(k, a_0)$")
ax.set_xlabel("k")
ax.set_ylabel("P(k)")
ax.legend()
plt.show()
print("P(k, 0.4) / P(k, 0.1) on the largest scales:", np.round(p1[:3] / p0[:3], 2))

# %% [markdown]
# The largest scales follow linear theory; smaller ones (near the mesh's resolution) deviate, from the mesh's
# force and the particles' discreteness. The checks:

# %%
assert abs(omega / theory.real - 1) < 0.01 and abs(gamma / theory.imag - 1) < 0.03, (omega, gamma)
assert abs(p1[0] / p0[0] / 16 - 1) < 0.03, p1[0] / p0[0]
