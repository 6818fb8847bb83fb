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
# # 4. Many processes: from the laptop to Slurm with the same script
#
# On a cluster every node (or every GPU) runs its own Python process, and the processes together drive one
# global mesh. A notebook is a single process, so it cannot *be* a multi-process run; it can write a script and
# start one, exactly like `srun` does on a cluster. That is the workflow here:
#
# 1. write a small script that does one distributed FFT and checks it;
# 2. run it with **4 local processes x 2 CPU devices** through `python -m xfft.launch` (8 global devices);
# 3. read its output and its saved results back into the notebook and compare them with a single-process run;
# 4. see the launcher fail fast when one rank dies;
# 5. run the very same script under Slurm (`srun`, `sbatch`), with the template from `slurm/`.

# %%
import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = " ".join(
    [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    + ["--xla_force_host_platform_device_count=8"]
)

import io  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import xfft  # noqa: E402
from xfft.launch import launch  # noqa: E402


def find_root() -> Path:
    """The repository root (it holds slurm/): from the notebook's folder, else from the installed package."""
    for p in [Path.cwd(), *Path.cwd().parents]:
        if (p / "slurm" / "cpu.sbatch").is_file():
            return p
    return Path(xfft.__file__).resolve().parents[1]


ROOT = find_root()
workdir = tempfile.TemporaryDirectory(prefix="xfft-notebook-")  # removed when the kernel exits
TMP = Path(workdir.name)
print("repository:", ROOT, "| scratch:", TMP, "|", jax.device_count(), "devices in this kernel")

# %% [markdown]
# ## 1. The script
#
# Three rules make a script run unchanged under every launcher:
#
# * call `xfft.distributed.initialize()` **first**, before any other JAX call. It finds out how the process was
#   started (`xfft.launch`, Slurm's `srun`, Open MPI's `mpirun`, or a plain `python`) and joins the run;
# * build global arrays **block by block** (`xfft.distributed.global_array`): each process computes only the
#   blocks of its own devices, and no process ever holds the whole grid;
# * print and write files from process 0 only; anything reduced with `jnp` (a max, a mean) is already a
#   global value on every process.

# %%
SCRIPT = '''
"""fft_demo.py: one distributed r2c FFT and a spectral derivative, checked against the exact answer."""
import argparse
import json
from pathlib import Path

import numpy as np

from xfft import distributed as xd


def field_block(idx, n):
    """Block idx of u = sin(x) cos(2y) + sin(3z)/2 on the n^3 grid, computed by the process that owns it."""
    x, y, z = (2 * np.pi * np.arange(s.start, s.stop) / n for s in idx)
    return np.sin(x)[:, None, None] * np.cos(2 * y)[None, :, None] + 0.5 * np.sin(3 * z)[None, None, :]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=32, help="grid size n^3")
    p.add_argument("--out", help="folder for process 0's results")
    p.add_argument("--fail-rank", type=int, default=-1, help="this rank raises (to watch fail-fast)")
    args = p.parse_args()

    spec = xd.initialize()  # FIRST: joins the run (xfft.launch, srun, mpirun) or does nothing for one process
    import jax
    import jax.numpy as jnp

    import xfft

    rank = jax.process_index()
    print(f"process {rank} of {jax.process_count()} ({spec.method}): {jax.local_device_count()} local of "
          f"{jax.device_count()} global devices", flush=True)
    if rank == args.fail_rank:
        raise RuntimeError(f"rank {rank} fails on purpose")

    n = args.n
    shape = (n, n, n)
    mesh = xfft.make_mesh("pencil")  # over all global devices
    rs = xfft.real_sharding(mesh, shape)
    u = xd.global_array(shape, rs, lambda idx: field_block(idx, n), np.float32)
    k = jax.jit(xfft.xrfft3d)(u)
    kx, _, _ = xfft.wavenumbers(rs, shape, real=True)
    dudx = xfft.ixrfft3d(1j * kx * k, s=shape)
    c = 2 * np.pi * np.arange(n, dtype=np.float32) / n
    x, y, _ = xfft.xmeshgrid(c, c, c, sharding=rs)
    err = float(jnp.max(jnp.abs(dudx - jnp.cos(x) * jnp.cos(2 * y))))  # sharded reduction, same on all ranks
    energy = float(jnp.mean(u**2))  # exact: 1/4 + 1/8
    blocks = sorted({tuple(s.indices(m)[:2] for s, m in zip(sh.index, shape)) for sh in u.addressable_shards})
    text = " ".join("[" + ", ".join(f"{a}:{b}" for a, b in blk) + "]" for blk in blocks)
    print(f"process {rank}: my blocks of u: {text}", flush=True)
    spectrum = xd.gather(k)  # small grids only: the whole spectrum on every process, for checking
    if rank == 0 and args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        np.save(out / "spectrum.npy", spectrum)
        result = {"processes": jax.process_count(), "devices": jax.device_count(),
                  "local_devices": jax.local_device_count(), "method": spec.method, "mesh": dict(mesh.shape),
                  "spectrum_spec": str(k.sharding.spec), "ddx_error": err, "energy": energy}
        (out / "result.json").write_text(json.dumps(result))
    xd.print0(f"fft_demo OK: {jax.process_count()} processes, d/dx error {err:.2e}, energy {energy:.6f}")


if __name__ == "__main__":
    main()
'''
script = TMP / "fft_demo.py"
script.write_text(textwrap.dedent(SCRIPT).lstrip())
print(f"wrote {script} ({len(SCRIPT.splitlines())} lines)")

# %% [markdown]
# ## 2. Four processes with `python -m xfft.launch`
#
# `xfft.launch` is `srun` for one machine: it starts N copies of the script with the variables that
# `initialize()` reads (coordinator address, process count and id, devices per process), prefixes each output
# line with `[rank i]`, stops every rank as soon as one fails, and kills the run at a hard deadline
# (`--timeout`, exit code 124). From a notebook we run it as a subprocess with a timeout of our own as well.

# %%
env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
cmd = [sys.executable, "-m", "xfft.launch", "-n", "4", "--devices-per-process", "2", "--timeout", "150",
       str(script), "--n", "32", "--out", str(TMP / "multi")]
print("$", shlex.join(["python", *cmd[1:]]))
t0 = time.perf_counter()
run = subprocess.run(cmd, env=env, cwd=TMP, capture_output=True, text=True, timeout=240)
multi_seconds = time.perf_counter() - t0
# The processes' own lines (JAX's CPU collectives library, Gloo, also logs its connections: left out here).
print("\n".join(line for line in run.stdout.splitlines() if "[Gloo]" not in line))
launcher_lines = [line for line in run.stderr.splitlines() if line.startswith("xfft.launch")]
print("\n".join(launcher_lines))
print(f"exit code {run.returncode}, {multi_seconds:.1f} s")
if run.returncode != 0:
    print(run.stderr[-3000:])

# %% [markdown]
# Every process sees 8 global devices but only its 2 local ones, and owns 2 of the 8 pencils of `u`. Drawn from
# the lines the processes printed: the $(x, y)$ plane of the grid, each pencil (whole along $z$) coloured by the
# process that holds it.

# %%
owner = np.full((32, 32), -1)
for rank, blocks_text in re.findall(r"\[rank \d+\] process (\d+): my blocks of u: (.*)", run.stdout):
    for x0, x1, y0, y1 in re.findall(r"\[(\d+):(\d+), (\d+):(\d+), \d+:\d+\]", blocks_text):
        owner[int(x0):int(x1), int(y0):int(y1)] = int(rank)
fig, ax = plt.subplots(figsize=(4.2, 3.6))
im = ax.imshow(owner.T, origin="lower", cmap="tab10", vmin=0, vmax=9, extent=(0, 32, 0, 32))
for rank in range(4):
    for i, j in zip(*np.nonzero(owner[::16, ::8] == rank)):
        ax.text(16 * i + 8, 8 * j + 4, f"process {rank}", ha="center", va="center", fontsize=8)
ax.set(xlabel="x index", ylabel="y index", title="who holds each pencil of u (4 x 2 devices)",
       xticks=[0, 16, 32], yticks=[0, 8, 16, 24, 32])
plt.tight_layout()
plt.show()

# %% [markdown]
# Process 0 wrote its results; read them back:

# %%
multi = json.loads((TMP / "multi" / "result.json").read_text())
spectrum_multi = np.load(TMP / "multi" / "spectrum.npy")
print(json.dumps(multi, indent=1))
print("spectrum:", spectrum_multi.shape, spectrum_multi.dtype)

# %% [markdown]
# ## 3. Same script, one process; same computation, in this notebook
#
# Without a launcher `initialize()` does nothing and the script uses this machine's 8 devices (the kernel's
# `XLA_FLAGS` are inherited). The numbers must not depend on how the 8 devices are spread over processes, and
# both must match numpy:

# %%
single = subprocess.run([sys.executable, str(script), "--n", "32", "--out", str(TMP / "single")], env=env,
                        cwd=TMP, capture_output=True, text=True, timeout=180)
print(single.stdout, "exit code", single.returncode)
if single.returncode != 0:
    print(single.stderr[-3000:])
spectrum_single = np.load(TMP / "single" / "spectrum.npy")

n = 32
c = 2 * np.pi * np.arange(n) / n
x, y, z = np.meshgrid(c, c, c, indexing="ij")
u_np = (np.sin(x) * np.cos(2 * y) + 0.5 * np.sin(3 * z)).astype(np.float32)
ref = np.fft.rfftn(u_np.astype(np.float64))
scale = np.max(np.abs(ref))
err_multi = float(np.max(np.abs(spectrum_multi - ref)) / scale)
err_single = float(np.max(np.abs(spectrum_single - ref)) / scale)
diff_multi_single = float(np.max(np.abs(spectrum_multi - spectrum_single)) / scale)

# In the notebook itself: 8 devices, one process.
rs = xfft.real_sharding(xfft.make_mesh("pencil"), (n, n, n))
k_here = xfft.xrfft3d(jax.device_put(u_np, rs))
err_here = float(jnp.max(jnp.abs(k_here - jnp.asarray(ref, k_here.dtype))) / scale)
print(f"relative error vs numpy.fft.rfftn: 4 processes {err_multi:.1e}, 1 process {err_single:.1e}, "
      f"this kernel {err_here:.1e}; 4 processes vs 1 process {diff_multi_single:.1e}")

# %% [markdown]
# ## 4. Fail fast
#
# In a multi-process JAX run a rank that dies leaves the others waiting in their next collective, by default
# for minutes. `initialize()` installs an exception hook that ends a failing process at once, and the launcher
# (like `srun --kill-on-bad-exit=1`) then stops every other rank and exits with the failing rank's code. The
# Python function `xfft.launch.launch` does the same as the command line and returns the exit code:

# %%
out, err = io.StringIO(), io.StringIO()
t0 = time.perf_counter()
fail_code = launch(str(script), ["--fail-rank", "2"], nprocs=4, devices_per_process=2, timeout=120,
                   env=env, stdout=out, stderr=err)
fail_seconds = time.perf_counter() - t0
fail_log = err.getvalue().splitlines()
print("\n".join(line for line in fail_log if line.startswith("xfft.launch") or "fails on purpose" in line))
print(f"exit code {fail_code} after {fail_seconds:.1f} s")

# %% [markdown]
# ## 5. The same script on a Slurm cluster
#
# Under `srun`, `initialize()` reads `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS` and the first node of the step, so
# the script needs no change. The templates in `slurm/` wrap the `srun` line; this is the CPU one (4 tasks x 2
# CPU devices, the same shape as the run above):

# %%
template = ROOT / "slurm" / "cpu.sbatch"
template_text = template.read_text()
print(f"--- {template.relative_to(ROOT)} ---")
print(template_text)
print("--- other templates:", ", ".join(p.name for p in sorted((ROOT / "slurm").glob("*.sbatch"))))

# %% [markdown]
# Copy `fft_demo.py` next to the repository (here it lives in a temporary folder) and use, from the
# repository root:
#
# ```bash
# # inside an allocation (salloc, or an interactive job): one srun line
# JAX_PLATFORMS=cpu XFFT_CPU_DEVICES=2 srun -n 4 -c 2 --kill-on-bad-exit=1 python -u fft_demo.py --n 32 --out results
#
# # as a batch job: the template runs $XFFT_SCRIPT; arguments after the template go to the script
# XFFT_SCRIPT=fft_demo.py sbatch slurm/cpu.sbatch --n 32 --out results
#
# # on GPUs, one process per GPU (2 nodes x 4 GPUs), and one process per node driving all its GPUs
# XFFT_SCRIPT=fft_demo.py sbatch slurm/gpu_per_process.sbatch --n 512 --out results
# XFFT_SCRIPT=fft_demo.py sbatch slurm/gpu_per_node.sbatch --n 512 --out results
# ```
#
# The lines below are printed from the files themselves, so they stay true if the templates change:

# %%
srun_lines = [line.strip() for line in template_text.splitlines() if line.strip().startswith("srun ")]
sbatch_opts = [line.strip() for line in template_text.splitlines() if line.startswith("#SBATCH")]
print("the template's srun line: ", *srun_lines)
print("its resources:            ", " ".join(o.split(None, 1)[1] for o in sbatch_opts))
submit = shlex.join(["sbatch", str(template.relative_to(ROOT)), "--n", "32", "--out", "results"])
print("submit this notebook's script with: XFFT_SCRIPT=fft_demo.py", submit)

# %% [markdown]
# ## Checks
# The key results of this notebook, asserted (the test suite executes this notebook).

# %%
# the 4-process run: exit code 0, every rank reported 2 local of 8 global devices, results from process 0
assert run.returncode == 0, run.stderr[-3000:]
for rank in range(4):
    assert re.search(rf"\[rank {rank}\] process {rank} of 4 \(\w+\): 2 local of 8 global", run.stdout), run.stdout
assert "[rank 0] fft_demo OK: 4 processes" in run.stdout and "[rank 1] fft_demo OK" not in run.stdout
assert multi["processes"] == 4 and multi["devices"] == 8 and multi["local_devices"] == 2, multi
assert multi["mesh"] == {"x": 2, "y": 4} and multi["spectrum_spec"] == "P(None, ('x', 'y'), None)", multi
assert multi["ddx_error"] < 1e-4 and abs(multi["energy"] - 0.375) < 1e-5, multi
assert sorted(np.unique(owner, return_counts=True)[1]) == [256] * 4  # each process holds 2 pencils of 16 x 8

# one process gives the same numbers; all agree with numpy
assert single.returncode == 0, single.stderr[-3000:]
assert re.search(r"process 0 of 1 \(\w+\): 8 local of 8 global", single.stdout), single.stdout
assert spectrum_multi.shape == spectrum_single.shape == k_here.shape == (n, n, n // 2 + 1)
assert err_multi < 1e-5 and err_single < 1e-5 and err_here < 1e-5, (err_multi, err_single, err_here)
assert diff_multi_single < 1e-6, diff_multi_single

# fail-fast: rank 2's exception ends the whole run with its exit code 1, long before any deadline
assert fail_code == 1, (fail_code, fail_log[-20:])
assert any(line.startswith("xfft.launch") and "rank 2" in line for line in fail_log), fail_log[-20:]
assert "[rank 2] RuntimeError: rank 2 fails on purpose" in fail_log, fail_log[-20:]
assert fail_seconds < 90, fail_seconds

# the Slurm template runs the script with srun, fail-fast, and takes the script from XFFT_SCRIPT
assert "#SBATCH" in template_text and len(srun_lines) == 1 and "--kill-on-bad-exit" in srun_lines[0]
assert "XFFT_SCRIPT" in template_text
print(f"all checks passed (4-process run {multi_seconds:.1f} s, fail-fast run {fail_seconds:.1f} s)")
