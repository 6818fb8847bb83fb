"""Benchmark: one RK4 Navier-Stokes step on 8 CPU devices, in seconds and in units of one xfft3d.

For each size the same run measures (medians of compiled calls, ``block_until_ready``): one complex ``xfft3d``
of an ``n^3`` complex array, one real ``xrfft3d``, and one full RK4 step of :class:`solvers.NavierStokes`
(Taylor-Green initial condition, 2/3 dealiasing, 4 nonlinear evaluations = 8 batched transform calls, 36 real
3D FFTs). The step time divided by the ``xfft3d`` time, per RK stage, is the cost model of the issue
(target <= 12 per stage). Writes ``benchmarks/results/navier_stokes.json`` and ``.png``.

Run: ``python benchmarks/navier_stokes.py [--sizes 64 128] [--mesh slab] [--dtype float32]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout's packages, also before `pip install -e .` ran

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import xfft  # noqa: E402
from solvers import RK4, NavierStokes, SpectralGrid  # noqa: E402


def median_time(fn, args: tuple, repeats: int) -> float:
    """Median wall time (s) of ``fn(*args)`` after one warm-up call."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_size(n: int, mesh_kind: str, dtype: str, repeats: int) -> dict:
    mesh = xfft.make_mesh(mesh_kind)
    grid = SpectralGrid(n, mesh, dtype=jnp.dtype(dtype))
    eq = NavierStokes(grid, nu=1 / 1600)
    rk4 = RK4(eq)
    u_hat = eq.initial_state("taylor-green")
    cdt = grid.cdtype
    x = jax.jit(lambda: jnp.ones(grid.shape, cdt), out_shardings=grid.real_sharding())()
    xr = jax.jit(lambda: jnp.ones(grid.shape, grid.dtype), out_shardings=grid.real_sharding())()
    fft = jax.jit(lambda a: xfft.xfft3d(a, backend=grid.backend))
    rfft = jax.jit(lambda a: xfft.xrfft3d(a, backend=grid.backend))
    step = jax.jit(rk4.step)
    dt = 1e-3
    t_fft = median_time(fft, (x,), repeats)
    t_rfft = median_time(rfft, (xr,), repeats)
    t_step = median_time(step, (u_hat, 0.0, dt, ()), max(3, repeats // 2))
    ratio = t_step / t_fft
    return {"n": n, "mesh": dict(zip(mesh.axis_names, map(int, mesh.axis_sizes))), "dtype": dtype,
            "xfft3d_s": t_fft, "xrfft3d_s": t_rfft, "rk4_step_s": t_step, "step_over_xfft3d": ratio,
            "per_rk_stage_over_xfft3d": ratio / 4, "real_ffts_per_stage": 9}


def plot(results: list[dict], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    a1, a2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    labels = [f"{r['n']}^3" for r in results]
    xs = range(len(results))
    a1.bar([i - 0.2 for i in xs], [r["rk4_step_s"] * 1e3 for r in results], 0.4, label="RK4 step")
    a1.bar([i + 0.2 for i in xs], [r["xfft3d_s"] * 1e3 for r in results], 0.4, label="one xfft3d")
    a1.set_yscale("log")
    a1.set_xticks(list(xs), labels)
    a1.set_ylabel("ms (median)")
    a1.legend()
    a1.set_title("Navier-Stokes RK4 step, 8 CPU devices")
    a2.bar(list(xs), [r["per_rk_stage_over_xfft3d"] for r in results], 0.5, color="C2")
    a2.axhline(12, color="k", ls="--", label="target 12")
    a2.set_xticks(list(xs), labels)
    a2.set_ylabel("RK stage time / xfft3d time")
    a2.legend()
    a2.set_title("cost of one RK stage in xfft3d units")
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    p.add_argument("--mesh", default="slab")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--out", type=Path, default=HERE / "results")
    a = p.parse_args()
    if a.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    a.out.mkdir(parents=True, exist_ok=True)
    results = []
    for n in a.sizes:
        r = run_size(n, a.mesh, a.dtype, a.repeats)
        print(json.dumps(r), flush=True)
        results.append(r)
    meta = {"date": datetime.date.today().isoformat(), "machine": platform.machine(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "devices": jax.device_count(), "jax": jax.__version__, "backend": jax.default_backend(),
            "load_average_1min": os.getloadavg()[0]}
    (a.out / "navier_stokes.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    plot(results, a.out / "navier_stokes.png")
    print(f"wrote {a.out / 'navier_stokes.json'} and {a.out / 'navier_stokes.png'}")


if __name__ == "__main__":
    main()
