"""Benchmark: the cost of one field snapshot against one time step (Navier-Stokes, 8 CPU devices).

Writes ``benchmarks/results/snapshots.json`` and ``benchmarks/results/snapshots.png``. For each grid size: the
median wall time of one RK4 step and of one snapshot (all 7 Navier-Stokes fields: computed on the devices, copied
block by block to the host, written by h5py, master file and XDMF), split into the field computation and the
host/disk part; the per-device memory of the field computation (``compiled.memory_analysis()``, in units of one
local float32 block, beside the RK4 step's) and the peak host memory the writer allocates (``tracemalloc``: numpy
and h5py buffers), also in local blocks.
Run: ``python benchmarks/snapshots.py [--sizes 64 128] [--repeats 5] [--dir /tmp/x]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import xfft  # noqa: E402
from solvers import RK4, NavierStokes, SpectralGrid  # noqa: E402
from solvers.io import SnapshotWriter  # noqa: E402

HERE = Path(__file__).resolve().parent


def measure(n: int, repeats: int, directory: Path) -> dict:
    eq = NavierStokes(SpectralGrid(n, xfft.make_mesh("slab"), dtype=jnp.float32), nu=1 / 1600)
    u = eq.initial_state("random-isotropic", seed=1)
    integ = RK4(eq)
    dt = 1e-3
    coef = integ.coefficients(dt)
    step = jax.jit(integ.step)
    step(u, 0.0, dt, coef).block_until_ready()
    writer = SnapshotWriter(directory, eq, every=1)
    writer.write(u, 0, 0.0)  # compile the field function
    fields = writer._compute
    compiled = fields.lower(u).compile()
    mem = compiled.memory_analysis()
    block = 4 * n ** 3 // jax.device_count()
    step_mem = step.lower(u, 0.0, dt, coef).compile().memory_analysis()
    t_step, t_snap, t_fields = [], [], []
    peak = 0
    for i in range(repeats):
        t0 = time.perf_counter()
        step(u, 0.0, dt, coef).block_until_ready()
        t_step.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        jax.block_until_ready(fields(u))
        t_fields.append(time.perf_counter() - t0)
        tracemalloc.start()
        t0 = time.perf_counter()
        writer.write(u, i + 1, 0.1 * (i + 1))
        t_snap.append(time.perf_counter() - t0)
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    files = sorted(directory.glob("snap_00001*"))
    return {"n": n, "devices": jax.device_count(), "fields": len(writer.fields),
            "step_median_s": statistics.median(t_step), "snapshot_median_s": statistics.median(t_snap),
            "fields_compute_median_s": statistics.median(t_fields),
            "snapshot_over_step": statistics.median(t_snap) / statistics.median(t_step),
            "local_block_bytes": block,
            "device_output_blocks": mem.output_size_in_bytes / block,
            "device_temp_blocks": mem.temp_size_in_bytes / block,
            "step_device_temp_blocks": step_mem.temp_size_in_bytes / block,
            "host_peak_bytes": peak, "host_peak_blocks": peak / block,
            "bytes_on_disk": sum(p.stat().st_size for p in files)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default=None, help="where to write the snapshots (default: a temporary directory)")
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        d = Path(args.dir or tempfile.mkdtemp()) / f"snap{n}"
        rows.append(measure(n, args.repeats, d))
        print(json.dumps(rows[-1]), flush=True)
        shutil.rmtree(d, ignore_errors=True)
    result = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "machine": platform.platform(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(), "rows": rows}
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "snapshots.json").write_text(json.dumps(result, indent=2) + "\n")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ns = [r["n"] for r in rows]
    ax.loglog(ns, [r["step_median_s"] for r in rows], "ko-", label="one RK4 step")
    ax.loglog(ns, [r["snapshot_median_s"] for r in rows], "C3s-", label=f"one snapshot ({rows[0]['fields']} fields)")
    ax.loglog(ns, [r["fields_compute_median_s"] for r in rows], "C0^--", label="  of which: fields on devices")
    ax.set_xticks(ns, [f"{n}^3" for n in ns])
    ax.set_xlabel("grid")
    ax.set_ylabel("median wall time [s]")
    ax.set_title(f"Navier-Stokes snapshot vs step, {rows[0]['devices']} CPU devices")
    ax.legend(fontsize=8)
    fig.savefig(out / "snapshots.png", dpi=110)


if __name__ == "__main__":
    main()
