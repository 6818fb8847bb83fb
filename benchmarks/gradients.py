"""Benchmark: the cost of a gradient through a sharded Navier-Stokes rollout, in time and in bytes per grid point.

For one grid (default 128^3 float32, Taylor-Green, nu = 1/1600, LSRK4, slab of 8 CPU devices) and ``--steps``
steps, it compiles and times:

- the forward rollout ``jax.jit(solvers.rollout(...))`` (no gradient);
- ``jax.value_and_grad`` of ``L(u0) = energy(run(u0))`` for each checkpointing policy in ``--policies``
  (``none``: no recomputation; an integer ``k``: blocks of ``k`` steps under ``jax.checkpoint``; ``k1,k2``: nested).

Time: the compiled programs (``lower().compile()``, so compilation is not timed) called round robin, ``--repeats``
rounds, ``block_until_ready``: wall time and this process's CPU time (XLA's threads included). Minimum and median
of each, and the ratios gradient / forward: of the median wall times, of the minima, and of the median CPU times
(the steadiest figure when other jobs share the cores; the plot shows it).

Memory: ``compiled.memory_analysis()``: arguments + outputs + temporaries - aliased bytes. XLA reports the
program of one device, so the figure is multiplied by the device count and divided by ``n^3``: bytes per grid point
of the whole program, forward or forward + backward. ``states`` divides it by the bytes per point of one state
(``3 (n/2+1) / n`` complex numbers per point). A policy whose estimated footprint exceeds ``--max-run-gb`` is
compiled (memory figures) but not run.

Writes ``benchmarks/results/gradients.json`` and ``.png`` (``--tag`` adds a suffix, e.g. ``_gpu``).

Run: ``python benchmarks/gradients.py [--n 128] [--steps 20] [--policies none 1 10] [--platform auto]``
(``--replot results/gradients.json`` only redraws the figure).
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
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--policies", nargs="+", default=["none", "1", "10"])
    p.add_argument("--integrator", default="lsrk4")
    p.add_argument("--mesh", default="slab")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--dt", type=float, default=2e-3)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--max-run-gb", type=float, default=12.0,
                   help="compile but do not run a program whose footprint (all devices) exceeds this")
    p.add_argument("--platform", choices=("cpu", "auto"), default="cpu",
                   help="cpu: 8 virtual CPU devices; auto: whatever accelerator JAX finds")
    p.add_argument("--tag", default="", help="suffix of the output files, e.g. _gpu")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--replot", type=Path, default=None, help="only redraw the PNG of this JSON file")
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
from solvers import NavierStokes, SpectralGrid, rollout  # noqa: E402


def policy(text: str):
    """``none`` -> None, ``10`` -> 10, ``100,10`` -> (100, 10)."""
    if text == "none":
        return None
    parts = tuple(int(v) for v in text.split(","))
    return parts[0] if len(parts) == 1 else parts


def memory(compiled, devices: int, points: int) -> dict:
    """Bytes per grid point of a compiled program (XLA's per-device figures times the device count)."""
    m = compiled.memory_analysis()
    parts = {"argument": m.argument_size_in_bytes, "output": m.output_size_in_bytes,
             "temporary": m.temp_size_in_bytes, "aliased": m.alias_size_in_bytes}
    total = parts["argument"] + parts["output"] + parts["temporary"] - parts["aliased"]
    out = {f"{k}_bytes_per_point": v * devices / points for k, v in parts.items()}
    out["bytes_per_point"] = total * devices / points
    out["total_bytes"] = total * devices
    return out


def timed_once(fn, args: tuple, into: dict) -> None:
    """One call: wall time and this process's CPU time (XLA's threads included; other jobs' load does not count)."""
    t0, c0 = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn(*args))
    into.setdefault("times_s", []).append(time.perf_counter() - t0)
    into.setdefault("cpu_s", []).append(time.process_time() - c0)


def summarize(entry: dict, forward: dict) -> None:
    entry["min_s"], entry["median_s"] = min(entry["times_s"]), statistics.median(entry["times_s"])
    entry["min_cpu_s"], entry["median_cpu_s"] = min(entry["cpu_s"]), statistics.median(entry["cpu_s"])
    if entry is not forward:
        entry["over_forward"] = entry["median_s"] / forward["median_s"]
        entry["over_forward_best"] = entry["min_s"] / forward["min_s"]
        entry["over_forward_cpu"] = entry["median_cpu_s"] / forward["median_cpu_s"]


def main() -> None:
    a = ARGS or parse_args()
    if a.replot:
        data = json.loads(a.replot.read_text())
        meta = data["meta"]
        plot(data["results"], a.replot.with_suffix(".png"), f"{meta['devices']} {meta['backend'].upper()} devices")
        return
    if a.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    a.out.mkdir(parents=True, exist_ok=True)
    mesh = xfft.make_mesh(a.mesh)
    grid = SpectralGrid(a.n, mesh, dtype=jnp.dtype(a.dtype))
    eq = NavierStokes(grid, nu=1 / 1600)
    u0 = eq.initial_state("taylor-green")
    devices, points = mesh.size, grid.size
    state_bpp = 3 * (a.n // 2 + 1) / a.n * jnp.dtype(grid.cdtype).itemsize
    results = {"n": a.n, "steps": a.steps, "integrator": a.integrator, "dtype": a.dtype, "dt": a.dt,
               "mesh": dict(zip(mesh.axis_names, map(int, mesh.axis_sizes))),
               "state_bytes_per_point": state_bpp, "policies": {}}
    with jax.set_mesh(mesh):
        run = rollout(eq, a.integrator, dt=a.dt, steps=a.steps)
        t = time.perf_counter()
        fwd = jax.jit(run).lower(u0).compile()
        fwd_mem = memory(fwd, devices, points)
        results["forward"] = {"compile_s": time.perf_counter() - t, **fwd_mem,
                              "states": fwd_mem["bytes_per_point"] / state_bpp}
        print("forward", json.dumps(results["forward"]), flush=True)
        programs = {"forward": fwd}
        for text in a.policies:
            run = rollout(eq, a.integrator, dt=a.dt, steps=a.steps, checkpoint_every=policy(text))
            grad = jax.jit(jax.value_and_grad(lambda u, run=run: eq.energy(run(u))))
            t = time.perf_counter()
            compiled = grad.lower(u0).compile()
            mem = memory(compiled, devices, points)
            entry = {"checkpoint_every": policy(text), "compile_s": time.perf_counter() - t, **mem,
                     "states": mem["bytes_per_point"] / state_bpp}
            if mem["total_bytes"] <= a.max_run_gb * 1e9:
                programs[text] = compiled
            else:
                entry["not_run"] = f"footprint {mem['total_bytes'] / 1e9:.1f} GB > --max-run-gb {a.max_run_gb:g}"
            results["policies"][text] = entry
            print(text, json.dumps(entry), flush=True)
        # round robin: every program once per round, so the load of other jobs falls on all of them alike
        loads = [os.getloadavg()[0]]
        for r in range(a.repeats):
            for name, prog in programs.items():
                entry = results["forward"] if name == "forward" else results["policies"][name]
                timed_once(prog, (u0,), entry)
                print(f"round {r} {name}: {entry['times_s'][-1]:.1f} s, cpu {entry['cpu_s'][-1]:.1f} s", flush=True)
                loads.append(os.getloadavg()[0])
        for name in programs:
            summarize(results["forward"] if name == "forward" else results["policies"][name], results["forward"])
    dev = jax.devices()[0]
    meta = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
            "machine": platform.machine(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "devices": jax.device_count(), "device_kind": dev.device_kind, "jax": jax.__version__,
            "backend": jax.default_backend(), "load_average_1min_during_timing": loads,
            "memory_note": "bytes/point of the compiled programs (memory_analysis, all devices); time: compiled "
                           "calls, compilation excluded"}
    stem = f"gradients{a.tag}"
    (a.out / f"{stem}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    plot(results, a.out / f"{stem}.png", f"{jax.device_count()} {dev.platform.upper()} devices")
    print(f"wrote {a.out / (stem + '.json')} and {a.out / (stem + '.png')}")


def plot(results: dict, path: Path, title: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax_t, ax_m = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    names = ["forward"] + [f"grad, ckpt {k}" for k in results["policies"]]
    entries = [results["forward"]] + list(results["policies"].values())
    xs = range(len(names))
    ratios = [e.get("median_cpu_s", float("nan")) / results["forward"]["median_cpu_s"] for e in entries]
    bars = ax_t.bar(xs, ratios, color=["gray"] + ["C0"] * (len(names) - 1))
    ax_t.bar_label(bars, [f"{r:.2f}x" for r in ratios], fontsize=8)
    ax_t.axhline(4, color="k", ls="--", label="target 4x")
    ax_t.set_ylabel("CPU time / forward CPU time (medians)")
    ax_t.set_title(f"{results['n']}^3 {results['dtype']}, {results['steps']} steps {results['integrator']}, {title}",
                   fontsize=9)
    bars = ax_m.bar(xs, [e["bytes_per_point"] for e in entries], color=["gray"] + ["C1"] * (len(names) - 1))
    ax_m.bar_label(bars, [f"{e['bytes_per_point']:.0f}" for e in entries], fontsize=8)
    ax_m.set_ylabel("bytes per grid point (memory_analysis)")
    ax_m.axhline(results["state_bytes_per_point"], color="k", ls=":", label="one state")
    ax_m.legend(fontsize=8)
    ax_m.set_yscale("log")
    ax_m.set_title("program footprint, all devices / n^3", fontsize=9)
    for ax in (ax_t, ax_m):
        ax.set_xticks(list(xs), names, rotation=20, fontsize=8)
    ax_t.legend(fontsize=8)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
