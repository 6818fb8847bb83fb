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
# # 12. Particle-mesh N-body in comoving coordinates: the Zel'dovich pancake and linear growth
#
# `solvers.particles.ComovingNBody` is a particle-mesh N-body code for an Einstein-de Sitter universe (units
# `H_0 = 1`, box length 1): particles of the comoving positions `x` and canonical momenta `p = a^2 dx/dt`, their
# density painted on a sharded mesh (`xfft.paint`), the Poisson equation solved with `xfft.xrfftn`, the force read
# back (`xfft.readout`). Its time is the **scale factor** `a`, advanced by the kick-drift-kick `Leapfrog` through
# `solvers.simulate` like any other equation. Two runs on 8 virtual CPU devices (a 2 x 4 pencil mesh), float64:
#
# 1. **the Zel'dovich pancake**: a plane wave that collapses into a sheet, against its exact solution up to shell
#    crossing, and what happens after;
# 2. **linear growth**: a small Gaussian random field whose power spectrum grows as `a^2` on large scales.

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
    periodic_grid,
    power_spectrum,
    zeldovich_plane_wave,
)

jax.config.update("jax_enable_x64", True)

# %% [markdown]
# ## The Zel'dovich pancake
#
# In the Zel'dovich approximation the particle of Lagrangian coordinate `q` moves to `x = q + D(a) s(q)`, with
# the growth factor `D = a` in Einstein-de Sitter. For a plane wave `s = -(A / k) sin(k q)` this is exact, not an
# approximation (Zel'dovich 1970): in one dimension the force on a particle depends only on how much mass lies on
# either side of it, which does not change until particles overtake each other. The density
# `1 / (1 - a A cos(k q))` becomes infinite at `q = 0` when `a = 1 / A`: the first **shell crossing**, a caustic,
# the "pancake" (in 3D, a sheet). After it the exact solution no longer holds: the streams that crossed feel the
# sheet's gravity pull them back, and a multi-stream region forms.
#
# The test (Efstathiou et al. 1985): `A = 1` along axis 0 of a `(64, 8, 8)` mesh of a `1 x 0.25 x 0.25` box, one
# particle per cell, started on the exact solution at `a0 = 0.1` and run to `a = 2` in steps `da = 0.01` with the
# triangular-shaped-cloud (`tsc`) kernel. A `Callback` with `on="states"` copies the particles every 10 steps.

# %%
pencil = xfft.make_mesh("pencil")
slab = ComovingNBody(periodic_grid((64, 8, 8), (1.0, 0.25, 0.25), pencil, dtype=jnp.float64), kernel="tsc")
y0 = slab.initial_state("plane-wave", a0=0.1, amplitude=1.0)
states = {}


def keep(event):  # the state is donated to the next step: copy what is kept
    states[round(event.t, 6)] = (np.asarray(event.state.positions)[:, 0].copy(),
                                 np.asarray(event.state.velocities)[:, 0].copy())


pancake = solvers.simulate(slab, Leapfrog, t0=0.1, t_end=2.0, y0=y0, controller=solvers.FixedStep(0.01),
                           outputs=[solvers.Callback(keep, every=10, on="states")])
q = np.asarray(y0.positions)[:, 0] - np.asarray(y0.velocities)[:, 0] / math.sqrt(0.1)  # Lagrangian coordinate
errors = {}
for a in (0.5, 0.8, 1.0, 2.0):
    x, p = states[a]
    xe, pe = zeldovich_plane_wave(q, a, 1.0, 2 * math.pi)
    errors[a] = (np.max(np.abs((x - xe + 0.5) % 1.0 - 0.5)) / np.max(np.abs(xe - q)),
                 np.max(np.abs(p - pe)) / np.max(np.abs(pe)))
    print(f"a = {a:3.1f}: largest position error {errors[a][0]:.2e} of the largest displacement, "
          f"momentum error {errors[a][1]:.2e} of the largest momentum")
print(f"{slab.particles} particles, {pancake.steps_taken} steps in {pancake.wall_s:.1f} s")

# %%
qs = np.linspace(-0.5, 0.5, 801)  # the exact curve, in the order of q: centred on the pancake at x = 0
fig, axes = plt.subplots(1, 3, figsize=(12, 3.9), sharey=True, layout="constrained")
for ax, a in zip(axes, (0.5, 1.0, 2.0)):
    x, p = states[a]
    xe, pe = zeldovich_plane_wave(qs, a, 1.0, 2 * math.pi)
    ax.plot((x + 0.5) % 1.0 - 0.5, p, ".", ms=4, label="particles")
    ax.plot(xe, pe, "k-", lw=0.8, label="Zel'dovich (exact before crossing)")
    ax.set_xlim(-0.5, 0.5)
    ax.set_title(f"a = {a:g}" + (" (shell crossing)" if a == 1.0 else " (after crossing)" if a > 1 else ""))
fig.supxlabel("comoving position x along the wave (box length 1, shifted to put the pancake at x = 0)",
              fontsize="medium")
axes[0].set_ylabel(r"momentum $p = a^{3/2}\,dx/da$")
axes[0].legend(loc="upper right", fontsize="small")
plt.show()

# %% [markdown]
# Before the crossing (`a = 0.5`, `0.8`) the particles sit on the exact curve: positions within a few `1e-3` of the
# largest displacement, momenta within `1e-2` of the largest momentum. At `a = 1` the curve has a vertical
# tangent at `x = 0`, where the density is infinite; the positions still match to a few `1e-3`, the momenta only
# to about `2e-2`, the worst next to the caustic, where the mesh force (smoothed over a few cells by `tsc`) cannot
# follow an infinitely thin sheet. At `a = 2` the formula, continued past its validity, lets the streams run
# through each other into a wide S-shaped loop. In the run the sheet's gravity has pulled the crossed particles
# back: near the pancake they have wound up into a spiral about `x = 0, p = 0`, several streams at the same `x`,
# the multi-stream region; farther out, particles that have not yet reached the sheet still follow the formula.
#
# ## Linear growth in a comoving particle-mesh run
#
# A Gaussian field (`P ~ k^-1` up to half the mesh's Nyquist wavenumber, none beyond; rms contrast 0.005 at
# `a0 = 0.1`) displaced onto 16^3 particles by the Zel'dovich approximation, run to `a = 0.4` on a 16^3 pencil mesh
# (2 x 4 devices) with the equation's default kernel, TSC, its window deconvolved (the `ComovingNBody` notes say
# why not CIC: deconvolved, it amplifies the mesh's shortest waves into a growing checkerboard). Linear theory says
# `P(k, a) = (a / a0)^2 P(k, a0)`, 16 times, while the contrast is small.

# %%
universe = ComovingNBody(periodic_grid((16, 16, 16), 1.0, pencil, dtype=jnp.float64))
y0 = universe.initial_state("gaussian", a0=0.1, sigma=0.005, index=-1.0, seed=1)
end = solvers.simulate(universe, Leapfrog, t0=0.1, t_end=0.4, y0=y0, controller=solvers.FixedStep(0.03))
k0, p0 = power_spectrum(universe.mesh.contrast(y0.positions), 1.0)
k1, p1 = power_spectrum(universe.mesh.contrast(end.state.positions), 1.0)
fig, ax = plt.subplots(figsize=(5.5, 3.8))
ax.loglog(k0, p0, "o-", label="a = 0.1")
ax.loglog(k1, p1, "s-", label="a = 0.4")
ax.loglog(k0, p0 * 16, "k--", label=r"linear theory: $(a/a_0)^2\,P(k, a_0)$")
ax.set_xlabel("k")
ax.set_ylabel("P(k)")
ax.legend()
plt.show()
print("P(k, 0.4) / P(k, 0.1) shell by shell:", np.round(p1 / p0, 1))

# %% [markdown]
# Every shell the initial field fills grows as linear theory says, to within a few percent (a little less towards
# the mesh's scale, where the mesh's force is least accurate: 15.8 times in the first shell, 15.1 in the fourth).
# Beyond the field's cut-off (the last four shells) the field starts with almost no power (round-off and the
# lattice's discreteness), and there the power grows much faster than `a^2`, by 220 to 280 times against 16: it is
# fed by the larger scales (mode coupling, second order in the contrast, which grows as `a^4 = 256` times here), and
# linear theory leaves it out. The checks:

# %%
for a in (0.5, 0.8, 1.0):  # positions to 1e-2 up to the crossing, momenta to 1e-2 before it (3e-2 at it)
    assert errors[a][0] < 1e-2 and errors[a][1] < (3e-2 if a == 1.0 else 1e-2), (a, errors[a])
assert np.all(np.abs(p1[:4] / p0[:4] / 16 - 1) < 0.07), p1[:4] / p0[:4]  # every shell the initial field fills
assert abs(p1[0] / p0[0] / 16 - 1) < 0.03, p1[0] / p0[0]  # the largest scale
assert np.all(p1[4:] / p0[4:] > 10 * 16), p1[4:] / p0[4:]  # past the cut-off: far faster than linear
