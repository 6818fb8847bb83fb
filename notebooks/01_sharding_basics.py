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
# # 1. Sharding basics: devices, meshes, shardings, and why a plain FFT gathers
#
# This notebook runs on a laptop: JAX can pretend that the CPU is 8 devices. Everything here works
# unchanged on 8 GPUs, or on many processes of a Slurm job (notebook 4).
#
# You will see
#
# 1. local vs global devices;
# 2. meshes, with `Explicit` and `Auto` axis types;
# 3. `NamedSharding` and `PartitionSpec`, and `jax.debug.visualize_array_sharding`;
# 4. what plain `jnp.fft.fftn` does to a sharded array: an **all-gather** of the global array, visible in the
#    compiled HLO and in `compiled.memory_analysis()`;
# 5. what `xfft.xfft3d` does instead: local FFTs plus one **all-to-all**, and no gathered copy.
#
# The device count must be set **before JAX is imported** (JAX creates its devices once per process).

# %%
import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = " ".join(
    [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    + ["--xla_force_host_platform_device_count=8"]
)

import importlib.util  # noqa: E402
import re  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import xfft  # noqa: E402

print("jax", jax.__version__, "| xfft", xfft.__version__)

# %% [markdown]
# ## 1. Local and global devices
#
# `jax.devices()` lists the **global** devices: every device of every process in the run.
# `jax.local_devices()` lists the ones this process drives. In a single process they are the same; with
# 4 processes of 2 devices each (notebook 4) every process sees 8 global but only 2 local devices, and a global
# array's blocks on other processes' devices are simply not *addressable* from here.

# %%
print("process", jax.process_index(), "of", jax.process_count())
print("global devices:", jax.device_count(), jax.devices())
print("local devices: ", jax.local_device_count(), jax.local_devices())

# %% [markdown]
# ## 2. Meshes
#
# A `Mesh` arranges devices in a named n-dimensional grid. Array axes are later mapped onto mesh axes by name.
# `jax.make_mesh` builds one (and picks a device order that suits the hardware). Each mesh axis has a type:
#
# * **Explicit** (the default): the sharding is part of an array's *type*. `jax.typeof(x)` prints it
#   (`float32[64@x,64]` means axis 0 is split over mesh axis `x`), every operation has a sharding rule,
#   the sharding is visible while tracing under `jax.jit`, and an ambiguous operation is an error rather
#   than a silent decision.
# * **Auto**: the type carries no sharding; the XLA compiler propagates shardings and inserts communication
#   as it sees fit. Hints go through `jax.lax.with_sharding_constraint`.
#
# `xfft.make_mesh("slab" | "pencil")` is a shortcut for the two meshes an FFT needs.

# %%
mesh_1d = jax.make_mesh((8,), ("x",))  # Explicit by default
mesh_2d = jax.make_mesh((2, 4), ("x", "y"))
mesh_auto = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
for m in (mesh_1d, mesh_2d, mesh_auto):
    print(m)
print(xfft.make_mesh("slab"))
print(xfft.make_mesh("pencil"))

# %% [markdown]
# ## 3. `NamedSharding` and `PartitionSpec`
#
# A `PartitionSpec` has one entry per array axis: a mesh-axis name (split this array axis over that mesh
# axis), `None` (not split), or a tuple of names (split over several mesh axes, major to minor). Together with
# a mesh it makes a `NamedSharding`; `jax.device_put` lays an array out with it.
#
# `jax.debug.visualize_array_sharding` draws which device holds which block of a 1D or 2D array. It needs
# the `rich` package; without it we print the same table as text.


# %%
def show_sharding(x: jax.Array) -> None:
    """Which devices hold which block of a 1D/2D array (rich drawing if available, else text)."""
    if importlib.util.find_spec("rich") is not None:
        jax.debug.visualize_array_sharding(x)
        return
    blocks: dict[tuple, list[int]] = {}
    for dev, idx in x.sharding.devices_indices_map(x.shape).items():
        key = tuple((s.start or 0, s.stop if s.stop is not None else n) for s, n in zip(idx, x.shape))
        blocks.setdefault(key, []).append(dev.id)
    for key, ids in sorted(blocks.items()):
        where = ", ".join(f"{a}:{b}" for a, b in key)
        print(f"  [{where}] -> CPU {','.join(map(str, sorted(ids)))}")


a = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
for mesh, spec in [(mesh_1d, P("x")), (mesh_1d, P(None, "x")), (mesh_2d, P("x", "y")), (mesh_2d, P("x")),
                   (mesh_2d, P(("x", "y")))]:
    xa = jax.device_put(a, NamedSharding(mesh, spec))
    print(f"{spec}  on mesh {dict(mesh.shape)}: type {jax.typeof(xa)}, "
          f"local block {xa.addressable_shards[0].data.shape}")
    show_sharding(xa)

# %% [markdown]
# The same five layouts as pictures: the 16 x 16 array with each block outlined and labelled by the devices that
# hold it.


# %%
def device_map(x: jax.Array) -> tuple[np.ndarray, dict[tuple, list[int]]]:
    """For each element of a 2D array, the lowest id of the devices that hold it; and the devices of each block."""
    owner = np.full(x.shape, -1)
    blocks: dict[tuple, list[int]] = {}
    for dev, idx in x.sharding.devices_indices_map(x.shape).items():
        key = tuple((s.start or 0, s.stop if s.stop is not None else n) for s, n in zip(idx, x.shape))
        blocks.setdefault(key, []).append(dev.id)
        owner[idx] = np.where(owner[idx] < 0, dev.id, np.minimum(owner[idx], dev.id))
    return owner, blocks


drawn = [(mesh_1d, P("x")), (mesh_1d, P(None, "x")), (mesh_2d, P("x", "y")), (mesh_2d, P("x")),
         (mesh_2d, P(("x", "y")))]
maps = [device_map(jax.device_put(a, NamedSharding(m, spec))) for m, spec in drawn]
fig, axes = plt.subplots(1, len(drawn), figsize=(14, 3.4), layout="constrained")
for ax, (m, spec), (owner, blocks) in zip(axes, drawn, maps):
    ax.imshow(owner, cmap="tab10", vmin=0, vmax=9)
    for ((r0, r1), (c0, c1)), ids in blocks.items():
        ax.add_patch(plt.Rectangle((c0 - 0.5, r0 - 0.5), c1 - c0, r1 - r0, fill=False, lw=1.5, ec="k"))
        ax.text((c0 + c1 - 1) / 2, (r0 + r1 - 1) / 2, ",".join(map(str, sorted(ids))), ha="center", va="center",
                fontsize=7 if len(ids) > 1 else 9)
    ax.set(title=f"{spec}\nmesh {dict(m.shape)}", xticks=[], yticks=[])
fig.suptitle("which devices hold each block of a 16 x 16 array")
plt.show()

# %% [markdown]
# `P("x")` on the 2D mesh splits rows over `x` and **replicates** over `y`: each block lives on 4 devices.
# `P(("x", "y"))` splits one array axis over all 8 devices.
#
# Each device holds only its block: `x.addressable_shards` lists (device, index, data) of the blocks this
# process can address. Elementwise operations keep the sharding and run block by block, no communication:

# %%
x2 = jax.device_put(a, NamedSharding(mesh_2d, P("x", "y")))
y2 = jnp.sin(x2) * 2 + 1
print("y2:", jax.typeof(y2), y2.sharding.spec)
for shard in y2.addressable_shards[:3]:
    print(" ", shard.device, shard.index, shard.data.shape)
print("sum over axis 0:", jax.typeof(jnp.sum(x2, axis=0)))  # a reduction keeps the other axis sharded

# %% [markdown]
# ### Explicit vs Auto in practice
#
# With Explicit axes, an operation whose output sharding is ambiguous is rejected at trace time. A matrix
# product of `P('x', 'y')` with itself contracts an axis split over `y` with one split over `x`: JAX refuses
# to guess and asks you to reshard (`jax.sharding.reshard`). With Auto axes the same code compiles and XLA
# chooses the communication.

# %%
try:
    x2 @ x2
    matmul_explicit_error = None
except Exception as e:  # jax's ShardingTypeError
    matmul_explicit_error = type(e).__name__
    print("Explicit:", type(e).__name__, "-", str(e).splitlines()[0][:150])

rows = jax.sharding.reshard(x2, NamedSharding(mesh_2d, P("x", None)))  # gather the columns of each row block
cols = jax.sharding.reshard(x2, NamedSharding(mesh_2d, P(None, "y")))
print("after reshard:", jax.typeof(rows), "@", jax.typeof(cols), "->", jax.typeof(rows @ cols))

x2_auto = jax.device_put(a, NamedSharding(mesh_auto, P("x", "y")))
prod_auto = x2_auto @ x2_auto
print("Auto: type", jax.typeof(prod_auto), "| sharding XLA chose:", prod_auto.sharding.spec)


# %% [markdown]
# Under `jax.jit`, an Explicit array's sharding is known while tracing; an Auto one's is not (XLA decides after
# tracing). That is why xfft can read the layout of Explicit inputs exactly and falls back to its canonical
# layout for Auto inputs under `jit`.

# %%
@jax.jit
def peek(x):
    print("  traced as", jax.typeof(x))
    return x


print("Explicit:")
peek(x2)
print("Auto:")
peek(x2_auto)

# %% [markdown]
# ## 4. What plain `jnp.fft.fftn` does to a sharded array
#
# Take a $64^3$ complex grid split into 8 slabs along the first axis. A 3D FFT needs every axis whole
# on some device at some point. `jnp.fft.fftn` knows nothing about the sharding, so XLA's partitioner does
# the simplest correct thing: **all-gather the whole array onto every device**, transform it there, and
# keep the slab each device owns. We compile it and read two things:
#
# * the compiled HLO (`.as_text()`): the collectives XLA inserted;
# * `memory_analysis()`: temporary bytes *per device*.

# %%
N = 64
mesh = xfft.make_mesh("slab")  # 8 devices, axis "x", Explicit
slab = NamedSharding(mesh, P("x", None, None))
rng = np.random.default_rng(0)
u_host = (rng.standard_normal((N, N, N)) + 1j * rng.standard_normal((N, N, N))).astype(np.complex64)
u = jax.device_put(u_host, slab)

global_bytes = u.nbytes
local_bytes = u.addressable_shards[0].data.nbytes
print(f"global array {global_bytes / 2**20:.1f} MiB, one device's block {local_bytes / 2**20:.2f} MiB")


def collectives(hlo_text: str) -> dict[str, int]:
    """Count the collective operations in compiled HLO text."""
    ops = ["all-gather", "all-to-all", "all-reduce", "collective-permute", "reduce-scatter"]
    return {op: len(re.findall(rf"[\s=]{op}(?:-start)?\(", hlo_text)) for op in ops}


plain = jax.jit(jnp.fft.fftn).lower(u).compile()
plain_hlo = plain.as_text()
plain_mem = plain.memory_analysis()
print("collectives:", collectives(plain_hlo))
for line in plain_hlo.splitlines():
    if "all-gather" in line and "=" in line:
        print("  ", line.strip()[:140])
print(f"temporaries per device: {plain_mem.temp_size_in_bytes / 2**20:.2f} MiB = "
      f"{plain_mem.temp_size_in_bytes / global_bytes:.2f} x the GLOBAL array = "
      f"{plain_mem.temp_size_in_bytes / local_bytes:.1f} x the local block")

# %% [markdown]
# The all-gather's result type is the full `c64[64,64,64]` on every device. Each of the 8 devices holds
# about twice the global array in temporaries and does the whole $N^3 \log N$ transform: a sharded array
# that fits only because it is sharded would not survive this. The same happens on an Auto mesh:

# %%
mesh_a = xfft.make_mesh("slab", axis_types="auto")
u_auto = jax.device_put(u_host, NamedSharding(mesh_a, P("x", None, None)))
plain_auto = jax.jit(jnp.fft.fftn).lower(u_auto).compile()
print("Auto mesh collectives:", collectives(plain_auto.as_text()),
      f"temporaries {plain_auto.memory_analysis().temp_size_in_bytes / global_bytes:.2f} x global")

# %% [markdown]
# ## 5. What xfft does instead
#
# `xfft.xfft3d` transforms the two local axes of each slab, then exchanges blocks with **one all-to-all**
# so that axis 0 becomes local and axis 1 sharded, then transforms axis 0. The spectrum comes back in its own
# layout `P(None, 'x', None)` (index `[i, j, k]` is still wavenumber `(kx[i], ky[j], kz[k])`), and each device
# only ever holds blocks of size ~`global / 8`.

# %%
ours = jax.jit(xfft.xfft3d).lower(u).compile()
ours_hlo = ours.as_text()
ours_mem = ours.memory_analysis()
print("collectives:", collectives(ours_hlo))
print(f"temporaries per device: {ours_mem.temp_size_in_bytes / 2**20:.2f} MiB = "
      f"{ours_mem.temp_size_in_bytes / local_bytes:.1f} x the local block "
      f"({ours_mem.temp_size_in_bytes / global_bytes:.2f} x global)")

k = xfft.xfft3d(u)
k_plain = jnp.fft.fftn(u)
print("spectrum sharding:", k.sharding.spec, "(plain fftn:", k_plain.sharding.spec, ")")
print("predicted by xfft.spectral_sharding:", xfft.spectral_sharding(slab, u.shape).spec)

ref = np.fft.fftn(u_host.astype(np.complex128))
err_xfft = float(np.max(np.abs(np.asarray(k) - ref)) / np.max(np.abs(ref)))
err_plain = float(np.max(np.abs(np.asarray(k_plain) - ref)) / np.max(np.abs(ref)))
print(f"relative error vs numpy: xfft {err_xfft:.1e}, plain fftn {err_plain:.1e}")
round_trip = xfft.ixfft3d(k)
print("round trip sharding:", round_trip.sharding.spec,
      "max error", float(jnp.max(jnp.abs(round_trip - u))))

# %% [markdown]
# (`np.asarray(k)` gathers the spectrum to the host: fine for checking a $64^3$ example, never done by xfft
# itself.)
#
# | | collectives | temporaries per device |
# |---|---|---|
# | `jnp.fft.fftn` on a sharded array | 1 all-gather of the global array | ~2 x the **global** array |
# | `xfft.xfft3d` (slab) | 1 all-to-all | ~2 **local** blocks |
#
# The memory ratio is the device count: with 8 devices xfft needs 8 times less scratch per device, and
# the gap grows with the mesh:

# %%
fig, ax = plt.subplots(figsize=(6, 2.6))
names = ["jnp.fft.fftn (gathers)", "xfft.xfft3d (slab)"]
mib = [plain_mem.temp_size_in_bytes / 2**20, ours_mem.temp_size_in_bytes / 2**20]
ax.barh(names, mib, color=["tab:red", "tab:blue"])
ax.axvline(global_bytes / 2**20, color="k", ls="--", label=f"the global array ({global_bytes / 2**20:.0f} MiB)")
ax.axvline(local_bytes / 2**20, color="gray", ls=":", label=f"one device's block ({local_bytes / 2**20:.1f} MiB)")
ax.set(xlabel="temporary memory per device (MiB)", title=f"3D FFT of a sharded {N}^3 complex64 array, 8 devices")
ax.legend(loc="lower right", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
#
# Notebook 2 goes on with pencils, real transforms, wavenumbers and derivatives.
#
# ## Checks
# The key results of this notebook, asserted (the test suite executes this notebook).

# %%
assert jax.device_count() == 8 and jax.local_device_count() == 8 and jax.process_count() == 1
assert mesh_1d.axis_types == (AxisType.Explicit,) and mesh_auto.axis_types == (AxisType.Auto, AxisType.Auto)
assert x2.addressable_shards[0].data.shape == (8, 4) and y2.sharding.spec == P("x", "y")
assert matmul_explicit_error is not None, "Explicit axes should reject the ambiguous matmul"
assert "@" not in str(jax.typeof(x2_auto)) and "@x" in str(jax.typeof(x2))
# the pictures: every element held, 8 blocks on one device each, or 2 blocks on 4 devices each for P("x") on 2 x 4
assert all((owner >= 0).all() for owner, _ in maps)
assert [sorted(len(ids) for ids in b.values()) for _, b in maps] == [[1] * 8, [1] * 8, [1] * 8, [4, 4], [1] * 8]

# plain jnp.fft.fftn: gathers the global array, temporaries ~2x global per device, on Explicit and Auto meshes
assert collectives(plain_hlo)["all-gather"] >= 1 and collectives(plain_hlo)["all-to-all"] == 0
assert collectives(plain_auto.as_text())["all-gather"] >= 1
assert plain_mem.temp_size_in_bytes >= 1.5 * global_bytes, plain_mem.temp_size_in_bytes / global_bytes

# xfft: exactly one all-to-all, no all-gather, temporaries a few local blocks
assert collectives(ours_hlo) == {"all-gather": 0, "all-to-all": 1, "all-reduce": 0, "collective-permute": 0,
                                 "reduce-scatter": 0}, collectives(ours_hlo)
assert ours_mem.temp_size_in_bytes <= 3 * local_bytes, ours_mem.temp_size_in_bytes / local_bytes
assert plain_mem.temp_size_in_bytes >= 0.75 * jax.device_count() * ours_mem.temp_size_in_bytes  # ~8x less
assert k.sharding.spec == P(None, "x", None) == xfft.spectral_sharding(slab, u.shape).spec
assert round_trip.sharding.is_equivalent_to(u.sharding, 3)
assert err_xfft < 1e-5 and err_plain < 1e-5, (err_xfft, err_plain)
print("all checks passed")
