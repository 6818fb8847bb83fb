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
# # 11. Electrostatic particle-in-cell: Landau damping and the two-stream instability
#
# `solvers.particles` runs particle codes through the same `solvers.simulate` as the fields: a state of
# `Particles` (positions, velocities, weights) sharded over every device, an equation whose force comes from a
# sharded mesh (`xfft.paint`, a Poisson solve with `xfft.xrfftn`, `xfft.readout`), and the kick-drift-kick
# `Leapfrog`. `VlasovPoisson` is a 1D-3D electrostatic plasma in plasma units (lengths in Debye lengths, times in
# `1 / omega_p`, electrons on a fixed neutralizing background). Two runs on 8 virtual CPU devices, float64:
#
# 1. **Landau damping** of a Langmuir wave at `k lambda_D = 0.5` in a thermal plasma, against the root of the
#    dispersion relation (`omega = 1.4157`, `gamma = -0.1534`), and the phase space it leaves;
# 2. **the cold two-stream instability**: two counter-streaming beams, the exponential growth of the field against
#    the dispersion relation, its saturation by particle trapping and the phase-space vortex it leaves.

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
    Leapfrog,
    VlasovPoisson,
    fit_damped_oscillation,
    fit_growth_rate,
    landau_root,
    periodic_grid,
    two_stream_growth,
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
a1.set_ylabel("field energy per unit length")
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
# ## The cold two-stream instability
#
# Two cold electron beams at `+-v0`, each of half the density: the dispersion relation
# `1 = (1/2) / (omega - k v0)^2 + (1/2) / (omega + k v0)^2` has a purely growing root for `a = k v0 < 1`,
#
# `gamma^2 = (sqrt(1 + 8 a^2) - 1 - 2 a^2) / 2`,
#
# largest at `a = sqrt(3/8)`, where `gamma = 1 / (2 sqrt 2) = 0.35355` (`two_stream_growth`). The box holds one
# wavelength of that fastest mode, `L = 2 pi / k` with `k = sqrt(3/8)` (its harmonics have `a >= 1` and are stable),
# on 64 cells with 8192 particles; a density perturbation of `1e-6` seeds it. A `Callback` on the diagnostics rows
# records `|E_k|` every step; another, `on="states"`, copies the phase space every 20 steps (2 time units). The
# growth rate is fitted while `|E_k|` grows from `1e-4` to `1e-2`, well inside the linear phase.

# %%
k = math.sqrt(3 / 8)
beams = VlasovPoisson(periodic_grid(64, 2 * math.pi / k, mesh, dtype=jnp.float64), particles=8192)
amplitude, snapshots = {"t": [], "E_k": []}, {}


def record(row):
    amplitude["t"].append(row.t)
    amplitude["E_k"].append(row.values["mode_amplitude"])


def keep(event):  # the state is donated to the next step: copy what is kept
    snapshots[round(event.t, 6)] = (np.asarray(event.state.positions)[:, 0].copy(),
                                    np.asarray(event.state.velocities)[:, 0].copy())


run = solvers.simulate(beams, Leapfrog, t_end=48.0, y0=beams.initial_state("two-stream", alpha=1e-6, v0=1.0),
                       controller=solvers.FixedStep(0.1),
                       outputs=[solvers.Callback(record, every=1), solvers.Callback(keep, every=20, on="states")])
t2, e_k = np.array(amplitude["t"]), np.array(amplitude["E_k"])
growth = fit_growth_rate(t2, e_k, low=1e-4, high=1e-2)
growth_theory = two_stream_growth(k, 1.0)
first_max = np.argmax((e_k[1:-1] > 0.1) & (e_k[1:-1] >= e_k[:-2]) & (e_k[1:-1] >= e_k[2:])) + 1
print(f"{run.steps_taken} steps in {run.wall_s:.1f} s; |E_k| stops growing at {e_k[first_max]:.3f} "
      f"(t = {t2[first_max]:.1f})")
print(f"gamma = {growth:.6f} (theory {growth_theory:.6f}, {growth / growth_theory - 1:+.2e})")

# %%
beam = snapshots[0.0][1] > 0  # which beam each particle started in (particles keep their place in the state)
i0, i1 = np.argmax(e_k > 1e-4), np.argmax(e_k > 1e-2)  # the fit window
line = e_k[i0] * np.exp(growth_theory * (t2 - t2[i0]))
fig, axes = plt.subplot_mosaic([["E"] * 4, [30.0, 40.0, 44.0, 48.0]], figsize=(12, 6.6), layout="constrained",
                               height_ratios=[1, 1.1])
ax = axes["E"]
ax.semilogy(t2, e_k, label=r"$|E_k|$ (run)")
ax.semilogy(t2[: i1 + 60], line[: i1 + 60], "k--",
            label=rf"$\propto e^{{\gamma t}}$, theory $\gamma = {growth_theory:.5f}\,\omega_p$")
ax.axvspan(t2[i0], t2[i1], color="0.9", zorder=0, label="fit window")
for ts in (30.0, 40.0, 44.0, 48.0):
    ax.axvline(ts, color="0.6", lw=0.8, ls=":")
ax.set_xlim(0, 48)
ax.set_ylim(1e-7, 1)
ax.set_xlabel(r"$t\,\omega_p$")
ax.set_ylabel(r"$|E_k|$ of the fundamental")
ax.legend(loc="lower right")
for ts in (30.0, 40.0, 44.0, 48.0):
    xs, vs = snapshots[ts]
    axp = axes[ts]
    axp.scatter(xs[beam], vs[beam], s=0.5, c="C0", label=r"beam started at $+v_0$")
    axp.scatter(xs[~beam], vs[~beam], s=0.5, c="C3", label=r"beam started at $-v_0$")
    axp.set_xlim(0, 2 * math.pi / k)
    axp.set_ylim(-2.6, 2.6)
    axp.set_title(f"phase space at t = {ts:g}")
    axp.set_xlabel(r"$x\,\omega_p / v_0$")
    if ts != 30.0:
        axp.tick_params(labelleft=False)
axes[30.0].set_ylabel(r"$v / v_0$")
axes[30.0].legend(loc="center", markerscale=8, fontsize="small")
plt.show()

# %% [markdown]
# The seed excites all four roots of the dispersion relation (one growing, one damped, two oscillating); after
# `t ~ 10` the growing one dominates, and `|E_k|` follows `exp(gamma t)` over more than four decades, the fitted
# rate within `1e-4` of theory. It leaves the exponential near `t ~ 38`, stops growing at `|E_k| ~ 0.28` near
# `t = 43` and then oscillates. The phase space (dotted times in the upper panel):
#
# - `t = 30`: `|E_k|` has grown to about `4e-3`, yet the beams still look cold and unperturbed: the linear phase
#   is invisible in phase space;
# - `t = 40`: both beams carry a visible velocity modulation, mirror images of each other;
# - `t = 44`: the modulation has steepened and turned over. Each beam has folded: over the middle of the box the
#   `+v0` beam is accelerated to `2 v0`, near `x ~ 7.6` slowed down past `v = 0` (the `-v0` beam the same way,
#   mirrored), so the two beams now overlap in velocity. The particles are trapped in the wave's potential well,
#   which ends the growth;
# - `t = 48`: the beams have rolled up into a single vortex about `v = 0` in the middle of the box, each beam's
#   particles in both of its arms: the phase-space vortex (the hole) of the trapped electrons. Its rotation makes
#   the field oscillate after saturation. (Past the end of this run the arms wind up into ever finer filaments.)
#
# The checks:

# %%
assert abs(omega / theory.real - 1) < 0.01 and abs(gamma / theory.imag - 1) < 0.03, (omega, gamma)
assert abs(growth / growth_theory - 1) < 0.01, (growth, growth_theory)
