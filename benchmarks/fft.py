"""Benchmark: distributed FFTs on 8 CPU devices vs single-device and XLA's own sharded jnp.fft.fftn.

Writes ``benchmarks/results/fft.json`` and ``benchmarks/results/fft.png``. Times are medians of repeated runs of
compiled functions (``block_until_ready``), timed round-robin across cases; ratios compare numbers measured in the
same run. Per-device temporary
memory comes from ``compiled.memory_analysis()``. Run: ``python benchmarks/fft.py [--sizes 64 128 256]``.
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

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

import xfft  # noqa: E402

HERE = Path(__file__).resolve().parent


def measure_interleaved(cases: list[tuple[str, object, jax.Array]], repeats: int) -> list[dict]:
    """Median wall time of each case, timed round-robin so machine load hits every case alike."""
    compiled = []
    for name, f, x in cases:
        c = jax.jit(f).lower(x).compile()
        c(x).block_until_ready()  # warm-up
        compiled.append((name, c, x))
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(repeats):
        for name, c, x in compiled:
            t0 = time.perf_counter()
            c(x).block_until_ready()
            times[name].append(time.perf_counter() - t0)
    rows = []
    for name, c, x in compiled:
        mem = c.memory_analysis()
        n_dev = len(x.sharding.device_set)
        rows.append({
            "case": name,
            "median_s": statistics.median(times[name]),
            "min_s": min(times[name]),
            "temp_bytes_per_device": int(mem.temp_size_in_bytes),
            "temp_over_local_block": mem.temp_size_in_bytes / (x.nbytes // n_dev),
            "devices": n_dev,
        })
    return rows


def run_size(n: int, repeats: int) -> list[dict]:
    shape = (n, n, n)
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    c = a.astype(np.complex64)
    slab = xfft.make_mesh("slab")
    pencil = xfft.make_mesh("pencil")
    xs = jax.device_put(c, NamedSharding(slab, PartitionSpec("x")))
    xp = jax.device_put(c, NamedSharding(pencil, PartitionSpec("x", "y")))
    rs = jax.device_put(a, NamedSharding(slab, PartitionSpec("x")))
    one = jax.device_put(c, jax.devices()[0])
    rows = measure_interleaved([
        ("xfft3d slab", xfft.xfft3d, xs),
        ("xfft3d pencil", xfft.xfft3d, xp),
        ("xrfft3d slab", xfft.xrfft3d, rs),
        ("jnp.fft.fftn 1 device", jnp.fft.fftn, one),
    ], repeats)
    # XLA's own sharded fftn is 10-20x slower: timed separately with fewer repeats.
    rows += measure_interleaved([("jnp.fft.fftn sharded (XLA)", jnp.fft.fftn, xs)], max(2, repeats // 4))
    try:  # optional backend rows (jaxdecomp), when the extra is installed
        sys.path.insert(0, str(HERE))
        import fft_backends

        rows += fft_backends.rows(n, repeats)
    except ImportError as e:
        print(f"[fft] skipping backend comparison: {e}", file=sys.stderr)
    for r in rows:
        r["n"] = n
    return rows


def summarize(rows: list[dict]) -> dict:
    by = {(r["n"], r["case"]): r for r in rows}
    out = {}
    for n in sorted({r["n"] for r in rows}):
        single = by[(n, "jnp.fft.fftn 1 device")]["median_s"]
        slab = by[(n, "xfft3d slab")]["median_s"]
        out[n] = {
            "xfft3d_slab_over_single_device": slab / single,
            "xfft3d_pencil_over_single_device": by[(n, "xfft3d pencil")]["median_s"] / single,
            "xrfft3d_over_xfft3d": by[(n, "xrfft3d slab")]["median_s"] / slab,
            "xla_sharded_over_single_device": by[(n, "jnp.fft.fftn sharded (XLA)")]["median_s"] / single,
            "xfft3d_slab_temp_over_local_block": by[(n, "xfft3d slab")]["temp_over_local_block"],
        }
    return out


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = ["xfft3d slab", "xfft3d pencil", "xrfft3d slab", "jnp.fft.fftn 1 device", "jnp.fft.fftn sharded (XLA)"]
    extra = ["jaxdecomp pfft3d slab (transposed)", "jaxdecomp xfft3d slab (natural, kernel)"]
    present = {r["case"] for r in rows}
    sizes = sorted({r["n"] for r in rows})
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, case in enumerate(c for c in main + extra if c in present):
        pts = [(r["n"], r["median_s"] * 1e3) for r in rows if r["case"] == case]
        style = "o-" if case in main else "s--"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=f"C{i}", label=case)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [f"{n}^3" for n in sizes])
    ax.set_xlabel("grid")
    ax.set_ylabel("median time per transform [ms]")
    ax.set_title(f"3D FFT, complex64, {jax.device_count()} CPU devices ({os.cpu_count()} cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256])
    p.add_argument("--repeats", type=int, default=0, help="repetitions per case (default: by size)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--replot", action="store_true", help="only redraw the PNG from an existing fft.json")
    args = p.parse_args(argv)
    if args.replot:
        plot(json.loads((args.out / "fft.json").read_text())["rows"], args.out / "fft.png")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.sizes:
        reps = args.repeats or {64: 30, 128: 15}.get(n, 9)
        new = run_size(n, reps)
        rows += new
        for r in new:
            ms, tl = r["median_s"] * 1e3, r.get("temp_over_local_block", float("nan"))
            print(f"{n:4d}^3  {r['case']:44s} {ms:9.2f} ms  temp/local {tl:.2f}")
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {jax.device_count()} virtual CPU devices",
        "jax": jax.__version__,
        "rows": rows,
        "summary": summarize(rows),
    }
    (args.out / "fft.json").write_text(json.dumps(result, indent=2))
    plot(rows, args.out / "fft.png")
    print(json.dumps(result["summary"], indent=2))


if __name__ == "__main__":
    main()
