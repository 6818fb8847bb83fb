"""Benchmark: one Navier-Stokes step per integrator, in seconds, in units of one xfft3d, and in bytes per point.

For each size the same run measures (medians of compiled calls, ``block_until_ready``): one complex ``xfft3d``
of an ``n^3`` complex array, one real ``xrfft3d``, and one full step (state donated, each step on the last one's
output, as the driver runs it) of :class:`solvers.NavierStokes` (Taylor-Green
initial condition, 2/3 dealiasing) for each integrator (default ``lsrk4``, the Navier-Stokes default, 5 stages,
and ``rk4``, 4 stages; each stage is 9 scalar transforms). The step time divided by the ``xfft3d`` time, per
stage, is the cost model of issue 10 (target <= 8 per stage on a GPU).

Memory: the step compiled with its state donated (``jax.jit(step, donate_argnums=0)``, as the driver runs it),
``compiled.memory_analysis()``: arguments + outputs + temporaries - aliased bytes. XLA reports one device's
program, so the figure is multiplied by the device count and divided by ``n^3``: bytes per grid point for the
whole step. From it, the largest cube ``n^3`` whose step fits ``--device-memory-gb`` (default: the device's own
``bytes_limit`` when it reports one, else 80 GB) is estimated as ``floor((memory / bytes_per_point)^(1/3))``
rounded down to a multiple of 64 (and the exact cube root is given too). The estimate uses the figure of the
platform measured: bytes per point on a GPU differ from the CPU program's. A step that does not fit (out of
memory) is recorded with its error and the other cases still run.

Platforms: ``--platform cpu`` (default) forces the CPU with 8 virtual devices (a slab mesh of 8);
``--platform auto`` runs on whatever accelerator JAX finds (all its devices; one GPU gives a one-device mesh).

Writes ``benchmarks/results/navier_stokes.json`` and ``.png`` (``--tag`` adds a suffix, e.g. ``_gpu``).

Run: ``python benchmarks/navier_stokes.py [--sizes 64 128] [--integrators lsrk4 rk4] [--platform auto]``.
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

HERE = Path(__file__).resolve().parent


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    p.add_argument("--integrators", nargs="+", default=["lsrk4", "rk4"])
    p.add_argument("--mesh", default="slab")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--platform", choices=("cpu", "auto"), default="cpu",
                   help="cpu: 8 virtual CPU devices; auto: whatever accelerator JAX finds")
    p.add_argument("--device-memory-gb", type=float, default=None,
                   help="memory of one device for the largest-grid estimate (default: reported, else 80)")
    p.add_argument("--tag", default="", help="suffix of the output files, e.g. _gpu")
    p.add_argument("--out", type=Path, default=HERE / "results")
    return p.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is None or ARGS.platform == "cpu":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_force_host_platform_device_count=8").strip()

sys.path.insert(0, str(HERE.parent))  # the checkout's packages, also before `pip install -e .` ran

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import xfft  # noqa: E402
from solvers import INTEGRATORS, NavierStokes, SpectralGrid  # noqa: E402

STAGES = {"rk4": 4, "lsrk4": 5, "ifrk4": 4, "etdrk4": 4}


def median_time(fn, args: tuple, repeats: int) -> float:
    """Median wall time (s) of ``fn(*args)`` after one warm-up call."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def step_memory(eq: NavierStokes, integ) -> dict:
    """Bytes per grid point of one donated step (XLA's per-device figures times the device count)."""
    like = eq.abstract_state()
    coeffs = jax.eval_shape(integ.coefficients, 1e-3)
    m = jax.jit(integ.step, donate_argnums=0).lower(like, 0.0, 1e-3, coeffs).compile().memory_analysis()
    scale = eq.grid.mesh.size / eq.grid.size
    parts = {"argument": m.argument_size_in_bytes, "output": m.output_size_in_bytes,
             "temporary": m.temp_size_in_bytes, "aliased": m.alias_size_in_bytes}
    out = {f"{k}_bytes_per_point": v * scale for k, v in parts.items()}
    out["bytes_per_point"] = (parts["argument"] + parts["output"] + parts["temporary"] - parts["aliased"]) * scale
    return out


def largest_cube(bytes_per_point: float, memory_bytes: float, devices: int) -> dict:
    """Largest ``n`` with ``bytes_per_point * n^3 <= devices * memory`` (exact, and as a multiple of 64)."""
    n = (devices * memory_bytes / bytes_per_point) ** (1 / 3)
    return {"n_exact": round(n, 1), "n_multiple_of_64": int(n // 64) * 64}


def run_size(n: int, a: argparse.Namespace, memory_bytes: float, est_devices: int) -> dict:
    mesh = xfft.make_mesh(a.mesh)
    grid = SpectralGrid(n, mesh, dtype=jnp.dtype(a.dtype))
    eq = NavierStokes(grid, nu=1 / 1600)
    cdt = grid.cdtype
    x = jax.jit(lambda: jnp.ones(grid.shape, cdt), out_shardings=grid.real_sharding())()
    xr = jax.jit(lambda: jnp.ones(grid.shape, grid.dtype), out_shardings=grid.real_sharding())()
    fft = jax.jit(lambda v: xfft.xfft3d(v, backend=grid.backend))
    rfft = jax.jit(lambda v: xfft.xrfft3d(v, backend=grid.backend))
    t_fft = median_time(fft, (x,), a.repeats)
    t_rfft = median_time(rfft, (xr,), a.repeats)
    del x, xr  # the steps below get the device's memory (1024^3 on one GPU)
    out = {"n": n, "mesh": dict(zip(mesh.axis_names, map(int, mesh.axis_sizes))), "dtype": a.dtype,
           "xfft3d_s": t_fft, "xrfft3d_s": t_rfft, "scalar_transforms_per_stage": 9, "integrators": {}}
    for name in a.integrators:
        integ = INTEGRATORS[name](eq)
        stages = STAGES.get(name, integ.order)
        try:
            with jax.set_mesh(mesh):
                mem = step_memory(eq, integ)
                t_step = donated_step_time(eq, integ, max(3, a.repeats // 2))
        except Exception as e:  # out of memory at the largest sizes: recorded, the other cases still run
            out["integrators"][name] = {"stages": stages, "error": f"{type(e).__name__}: {str(e)[:400]}"}
            print(f"{n}^3 {name}: {out['integrators'][name]['error']}", file=sys.stderr, flush=True)
            continue
        out["integrators"][name] = {
            "step_s": t_step, "stages": stages, "step_over_xfft3d": t_step / t_fft,
            "stage_over_xfft3d": t_step / t_fft / stages, **mem,
            "largest_cube": largest_cube(mem["bytes_per_point"], memory_bytes, est_devices)}
    return out


def donated_step_time(eq: NavierStokes, integ, repeats: int) -> float:
    """Median wall time (s) of one step as the driver runs it: state donated, each step on the last one's
    output, so only one state and the step's temporaries are live (1024^3 float32 on one 80 GB GPU)."""
    step = jax.jit(integ.step, donate_argnums=0)
    c = jax.jit(integ.coefficients)(1e-3)
    s = jax.block_until_ready(step(eq.initial_state("taylor-green"), 0.0, 1e-3, c))  # compiles; warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        s = jax.block_until_ready(step(s, 0.0, 1e-3, c))
        times.append(time.perf_counter() - t0)
    del s
    return statistics.median(times)


def plot(results: list[dict], path: Path, title: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, 3, i) for i in (1, 2, 3)]
    names = list(results[0]["integrators"])
    results = [r for r in results if all("error" not in r["integrators"][k] for k in names)]  # plot what ran
    if not results:
        return
    labels = [f"{r['n']}^3" for r in results]
    xs = range(len(results))
    width = 0.8 / (len(names) + 1)
    for j, name in enumerate(names):
        off = (j - len(names) / 2) * width
        axes[0].bar([i + off for i in xs], [r["integrators"][name]["step_s"] * 1e3 for r in results], width,
                    label=f"{name} step")
        axes[1].bar([i + off for i in xs], [r["integrators"][name]["stage_over_xfft3d"] for r in results], width,
                    label=name)
        axes[2].bar([i + off for i in xs], [r["integrators"][name]["bytes_per_point"] for r in results], width,
                    label=name)
    axes[0].bar([i + (len(names) / 2) * width for i in xs], [r["xfft3d_s"] * 1e3 for r in results], width,
                label="one xfft3d", color="gray")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("ms (median)")
    axes[0].set_title(f"Navier-Stokes step, {title}")
    axes[1].axhline(8, color="k", ls="--", label="GPU target 8")
    axes[1].set_ylabel("stage time / xfft3d time")
    axes[1].set_title("cost of one stage in xfft3d units")
    axes[2].axhline(64, color="k", ls="--", label="target 64")
    axes[2].set_ylabel("bytes per grid point")
    axes[2].set_title("donated step, memory_analysis")
    for ax in axes:
        ax.set_xticks(list(xs), labels)
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)


def main() -> None:
    a = ARGS or parse_args()
    if a.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    a.out.mkdir(parents=True, exist_ok=True)
    dev = jax.devices()[0]
    reported = (dev.memory_stats() or {}).get("bytes_limit") if hasattr(dev, "memory_stats") else None
    memory = a.device_memory_gb * 1e9 if a.device_memory_gb else (reported or 80e9)
    if dev.platform == "cpu" and not a.device_memory_gb:
        memory = 80e9  # a host's "device" memory means nothing here: estimate for one 80 GB accelerator
    # on CPU: the whole step's bytes on ONE accelerator of `memory` bytes; on accelerators: all of them
    devices_for_estimate = 1 if dev.platform == "cpu" else jax.device_count()
    results = []
    for n in a.sizes:
        r = run_size(n, a, memory, devices_for_estimate)
        print(json.dumps(r), flush=True)
        results.append(r)
    meta = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
            "machine": platform.machine(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "devices": jax.device_count(), "device_kind": dev.device_kind, "jax": jax.__version__,
            "backend": jax.default_backend(), "load_average_1min": os.getloadavg()[0],
            "memory_for_estimate_bytes": memory, "devices_for_estimate": devices_for_estimate,
            "memory_note": "bytes/point of the compiled step on this platform; the largest cube is an estimate "
                           "from it (memory / bytes per point), not a run"}
    stem = f"navier_stokes{a.tag}"
    (a.out / f"{stem}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    title = f"{jax.device_count()} {dev.platform.upper()} devices"
    plot(results, a.out / f"{stem}.png", title)
    print(f"wrote {a.out / (stem + '.json')} and {a.out / (stem + '.png')}")


if __name__ == "__main__":
    main()
