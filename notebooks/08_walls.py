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
# # 8. Walls: sine and cosine transforms, Poisson in a box, Rayleigh-Benard convection
#
# Every transform so far was periodic. Walls need sine and cosine series: xfft has sharded real-to-real
# transforms with `scipy.fft` semantics, and one transform that mixes kinds per axis, so a solver with walls in z
# and periodic x, y does **one** planned transform per field (same all-to-alls as a complex FFT).
#
# | function | like | per axis | walls it fits (cell-centred grid) |
# | --- | --- | --- | --- |
# | `xdctn(x, type=1..4, axes, norm)` | `scipy.fft.dctn` | DCT of one type on every listed axis | Neumann (`type=2`) |
# | `xdstn(x, type=1..4, axes, norm)` | `scipy.fft.dstn` | DST of one type | Dirichlet (`type=2`) |
# | `ixdctn`, `ixdstn` | `scipy.fft.idctn`, `idstn` | inverses; return the input's layout | |
# | `xr2rn(x, kinds, axes, norm)` | the 1D transforms composed | `"fft"`, `"rfft"`, `"dct1"`..`"dst4"` | mixed |
# | `ixr2rn(k, kinds, axes, norm, *, s=)` | its inverse | | |
#
# For example `xr2rn(u, ("dst2", "fft", "fft"))`: sine series in z, Fourier in x and y.
# Layouts are those of `xfftn` over the same axes: slab `P('x')` -> `P(None, 'x')` (1 all-to-all), pencil
# `P('x', 'y')` -> `P(None, 'x', 'y')` (2). Everything is jit-able and differentiable.

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
import scipy.fft as sf  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import solvers  # noqa: E402
import xfft  # noqa: E402
from solvers import ETDRK4, PoissonWalls, RayleighBenardFreeSlip  # noqa: E402
from solvers.equations.rayleigh_benard import K_CRITICAL, RA_CRITICAL, growth_rate  # noqa: E402

jax.config.update("jax_enable_x64", True)
slab, pencil = xfft.make_mesh("slab"), xfft.make_mesh("pencil")
print(jax.device_count(), "devices; slab", dict(slab.shape), "pencil", dict(pencil.shape))

# %% [markdown]
# ## The transforms against scipy
# Every type of DCT and DST, on a slab and a pencil, against `scipy.fft` on the gathered array; plus the
# all-to-all count of each compiled program.

# %%
rng = np.random.default_rng(0)
xn = rng.standard_normal((16, 8, 12))
rows = []
for name, m, spec in (("slab", slab, P("x")), ("pencil", pencil, P("x", "y"))):
    x = jax.device_put(xn, NamedSharding(m, spec))
    for kind, f, ref in (("dct", xfft.xdctn, sf.dctn), ("dst", xfft.xdstn, sf.dstn)):
        for t in (1, 2, 3, 4):
            compiled = jax.jit(lambda a, f=f, t=t: f(a, type=t, norm="ortho")).lower(x).compile()
            err = np.max(np.abs(np.asarray(compiled(x)) - ref(xn, type=t, norm="ortho")))
            rows.append((name, f"{kind}{t}", err, compiled.as_text().count("all-to-all(")))
print(f"{'mesh':8s}{'kind':6s}{'max error vs scipy':>20s}{'all-to-alls':>13s}")
for r in rows:
    print(f"{r[0]:8s}{r[1]:6s}{r[2]:20.2e}{r[3]:13d}")
assert max(r[2] for r in rows) < 1e-13
assert {r[3] for r in rows if r[0] == "slab"} == {1} and {r[3] for r in rows if r[0] == "pencil"} == {2}

# %% [markdown]
# The mixed transform: sine in z (axis 0, walls), FFT in x and real FFT in y, equals numpy/scipy's composition.

# %%
x = jax.device_put(xn, NamedSharding(pencil, P("x", "y")))
kinds = ("dst2", "fft", "rfft")
y = jax.jit(lambda a: xfft.xr2rn(a, kinds))(x)
ref = np.fft.fft(np.fft.rfft(sf.dst(xn, type=2, axis=0), axis=2), axis=1)
back = jax.jit(lambda a: xfft.ixr2rn(a, kinds))(y)
print("spectrum", y.shape, y.sharding.spec, "| error", np.max(np.abs(np.asarray(y) - ref)),
      "| round trip", np.max(np.abs(np.asarray(back) - xn)), back.sharding.spec)
assert np.max(np.abs(np.asarray(y) - ref)) < 1e-12 and np.max(np.abs(np.asarray(back) - xn)) < 1e-13

# %% [markdown]
# ## Poisson with walls
# `PoissonWalls(shape, bc)` solves `lap(phi) - lambda phi = f` with one boundary condition per axis (Dirichlet ->
# DST-II, Neumann -> DCT-II, periodic -> FFT) in one forward and one inverse `xr2rn`. An exact solution with
# Dirichlet walls in z, Neumann in x, periodic in y:

# %%
pw = PoissonWalls((16, 16, 16), ("dirichlet", "neumann", "periodic"), pencil, box_length=(1.0, 2.0, 2 * math.pi))
z, xx, yy = pw.coordinates()
phi = jnp.sin(2 * math.pi * z) * jnp.cos(math.pi * xx) * jnp.sin(3 * yy)
f = -((2 * math.pi) ** 2 + math.pi ** 2 + 9) * phi
err = float(jnp.max(jnp.abs(jax.jit(pw.solve)(f) - phi)))
print("max error", err)
assert err < 1e-13

# %% [markdown]
# ## Rayleigh-Benard convection between free-slip plates
# `RayleighBenardFreeSlip` (CLI: `python -m solvers run rayleigh-benard --param Ra=2000 --param Pr=1`) keeps `w` and the
# temperature perturbation as sine series in z, horizontal velocity as cosine series, Fourier horizontally.
# A single mode `(k, m = 1)` grows at the larger root of `(s + Pr K^2)(s + K^2) = Ra Pr k^2 / K^2`; the onset is at
# `Ra_c = 27 pi^4 / 4` with `k_c = pi / sqrt(2)`. The solver's rate of the critical mode, just below and above:

# %%
grid = RayleighBenardFreeSlip.make_grid((8, 8), slab, lengths=(2 * math.pi / K_CRITICAL,), dtype=jnp.float64)
eq = RayleighBenardFreeSlip(grid, Ra=650.0, Pr=1.0, amplitude=1e-8)
s0 = eq.initial_state("single-mode")
# the states at t = 1 and t = 2 (the decaying root is gone after t = 1), with Ra a float parameter of the run
# (solvers.rollout, notebook 9): one compiled program for both Rayleigh numbers
linear_run = jax.jit(solvers.rollout(eq, "etdrk4", dt=0.005, steps=400, save_every=200))
rates = {}
for Ra in (650.0, 665.0):
    with jax.set_mesh(grid.mesh):
        s1, s2 = np.asarray(linear_run(s0, {"Ra": Ra}))
    rates[Ra] = math.log(abs(s2[2, 1, 1]) / abs(s1[2, 1, 1]))
    print(f"Ra = {Ra}: solver {rates[Ra]: .8f}, closed form {growth_rate(K_CRITICAL, Ra, 1.0): .8f}")
ra_c = 650 + 15 * -rates[650.0] / (rates[665.0] - rates[650.0])
print(f"onset (linear interpolation of the solver's rates) Ra_c = {ra_c:.3f}; 27 pi^4 / 4 = {RA_CRITICAL:.3f}")
assert abs(ra_c / RA_CRITICAL - 1) < 1e-4

# %% [markdown]
# ## Steady rolls at Ra = 2000
# One critical wavelength (two rolls), 16 x 32 points, from a small single-mode perturbation. The Nusselt number
# (heat flux / conductive flux) through the bottom plate, the top plate and the volume average `1 + <w theta>` must
# agree once the rolls are steady.

# %%
grid = RayleighBenardFreeSlip.make_grid((16, 32), slab, lengths=(2 * math.pi / K_CRITICAL,), dtype=jnp.float64)
eq = RayleighBenardFreeSlip(grid, Ra=2000.0, Pr=1.0, amplitude=1e-2)
integ = ETDRK4(eq)
state, t, history = eq.initial_state("single-mode"), 0.0, []
diag = jax.jit(lambda s: eq.diagnostics(s, 0.0, 0.0))
for _ in range(10):
    state = integ.advance(state, t, 0.0015, 100)
    t += 0.15
    d = {k: float(v) for k, v in diag(state).items()}
    history.append((t, d))
print(f"t = {t:.2f}: Nu = {d['nusselt']:.7f}, Nu(bottom) = {d['nusselt_bottom']:.7f}, "
      f"Nu(top) = {d['nusselt_top']:.7f}, kinetic energy = {d['energy']:.5f}")
assert abs(d["nusselt_bottom"] - d["nusselt_top"]) < 1e-10 and abs(d["nusselt"] / d["nusselt_bottom"] - 1) < 1e-5
assert abs(history[-1][1]["energy"] / history[-2][1]["energy"] - 1) < 1e-6

# %%
T = np.asarray(jax.jit(eq.temperature)(state))
zc, xc = (np.asarray(c) for c in eq.grid.coordinates())
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 3.4), gridspec_kw={"width_ratios": [2.2, 1]})
im = ax0.contourf(xc, zc, T, levels=24, cmap="RdBu_r")
fig.colorbar(im, ax=ax0, label="T")
ax0.set_aspect("equal")
ax0.set(xlabel="x", ylabel="z", title=f"Rayleigh-Benard rolls, free-slip plates, Ra = 2000, Pr = 1, t = {t:.2f}")
ts = [h[0] for h in history]
for key, style in (("nusselt", "-"), ("nusselt_bottom", "--"), ("nusselt_top", ":")):
    ax1.plot(ts, [h[1][key] for h in history], style, label=key)
ax1.set(xlabel="t (thermal time)", ylabel="Nu", title="heat flux")
ax1.legend()
fig.tight_layout()
if os.environ.get("XFFT_RB_FIGURE"):  # e.g. docs/rb_rolls.png (the README's picture)
    fig.savefig(os.environ["XFFT_RB_FIGURE"], dpi=110)
plt.show()
