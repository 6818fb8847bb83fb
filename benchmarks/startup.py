"""Start-up of the main job: wall time and compiled programs of command-line runs, with JAX's persistent
compilation cache cold (an empty directory) and warm (the same directory again), for this checkout and, with
``--before DIR``, for another checkout of the package (e.g. a ``git worktree`` of an earlier commit) in the same run.

Usage (from the repository root):
    python benchmarks/startup.py [--before /tmp/old] [--only NAME ...] [--out benchmarks/results]

Each command is run as ``python -m solvers run ...`` in a fresh process from inside the checkout it measures (so that
checkout's packages are imported), with ``JAX_LOG_COMPILES=1``; long commands are capped with ``--max-steps`` (the
time to start and take those steps). The earlier checkout has no cache switch of its own: its cold and warm runs set
``JAX_COMPILATION_CACHE_DIR`` the same way (what a user who knew would do). Writes ``startup.json`` and
``startup.png`` (with the date, the machine and its load).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

#: the command-line runs of the README and the docs (name, arguments); long ones capped by --max-steps
COMMANDS = [
    ("demo (tgv 64^3, 50 steps)", "navier-stokes --ic taylor-green --n 64 --re 1600 --t-end 20 --max-steps 50"),
    ("tgv 64^3 to t=2", "navier-stokes --ic taylor-green --n 64 --re 1600 --t-end 2"),
    ("ns 256^3 (5 steps)", "navier-stokes --n 256 --t-end 20 --max-steps 5"),
    ("ns 30^3 on 8 devices", "navier-stokes --n 30 --t-end 0.5"),
    ("gross-pitaevskii ground state", "gross-pitaevskii --ic gaussian --integrator split-step-imaginary --dt 0.05 "
                                      "--t-end 5 --n 32 --box-length 16"),
    ("schrodinger-poisson", "schrodinger-poisson --ic gaussian-collapse --dt 0.0025 --t-end 0.5 --n 64 --param G=1"),
    ("cahn-hilliard 256^2 (100 steps)", "cahn-hilliard --ic random --n 256 --dt 4e-4 --t-end 0.3 --param eps=0.05 "
                                        "--max-steps 100"),
    ("kolmogorov 256^2 (200 steps)", "navier-stokes-2d --ic kolmogorov --n 256 --nu 2e-3 --integrator etdrk4 "
                                     "--t-end 50 --param forcing=1 --max-steps 200"),
    ("burgers 864x8x8 (200 steps)", "burgers --ic sine --n 864 8 8 --box-length 2 0.0185185 0.0185185 --nu 0.0031831 "
                                    "--t-end 1 --max-steps 200"),
    ("abc 128x64x64 (20 steps)", "navier-stokes --ic abc --n 128 64 64 --box-length 12.566371 6.283185 6.283185 "
                                 "--re 100 --max-steps 20"),
    ("channel TS 65x8 to t=2", "channel --ic tollmien-schlichting --n 65 8 --param Re=10000 --dt 0.02 --t-end 2 "
                               "--dtype float64"),
    ("channel turbulent 65x64x64 (10 steps)", "channel --ic turbulent --n 65 64 64 --param Re=4200 --dt 0.005 "
                                              "--t-end 100 --max-steps 10"),
    ("no-slip convection 25x32 to t=1", "rayleigh-benard --param walls=no-slip --param Ra=5000 --n 25 32 --t-end 1 "
                                        "--dtype float64"),
    ("couette OS 49x8 to t=1", "couette --ic orr-sommerfeld --n 49 8 --param Re=1000 --dt 0.01 --t-end 1 "
                               "--dtype float64"),
    ("couette turbulent 33x64x64 (10 steps)", "couette --ic turbulent --n 33 64 64 --param Re=400 --dt 0.01 "
                                              "--t-end 200 --max-steps 10"),
    ("free-slip convection 16x32 to t=3", "rayleigh-benard --n 16 32 --param Ra=2000 --param Pr=1 --t-end 3 "
                                          "--dtype float64"),
    ("free-slip convection 16x32x32 to t=0.5", "rayleigh-benard --n 16 32 32 --param Ra=5000 --ic random --seed 1 "
                                               "--t-end 0.5 --dtype float64"),
]


def run(checkout: Path, args: str, cache: Path | None, out: Path) -> dict:
    env = {**os.environ, "JAX_LOG_COMPILES": "1", "PYTHONUNBUFFERED": "1"}
    for k in ("JAX_COMPILATION_CACHE_DIR", "XFFT_CACHE_DIR", "XFFT_COMPILATION_CACHE", "PYTHONPATH"):
        env.pop(k, None)
    if cache is None:
        env["XFFT_COMPILATION_CACHE"] = "0"
        env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    else:
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache)
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.2"
    cmd = [sys.executable, "-m", "solvers", "run", *args.split(), "--no-progress", "--out", str(out), "--overwrite"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    compiles = re.findall(r"Finished XLA compilation of (\S+) in ([0-9.]+) sec", p.stderr)
    return {"ok": p.returncode == 0, "wall_s": round(wall, 2), "programs": len(compiles),
            "compile_s": round(sum(float(s) for _, s in compiles), 2),
            "error": None if p.returncode == 0 else p.stderr.strip().splitlines()[-1][:300]}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", type=Path, default=None, help="another checkout to measure beside this one")
    p.add_argument("--only", nargs="*", default=None, help="substrings of the command names to run")
    p.add_argument("--out", type=Path, default=HERE / "benchmarks" / "results")
    args = p.parse_args(argv)
    checkouts = {"after": HERE} | ({"before": args.before.resolve()} if args.before else {})
    commands = [c for c in COMMANDS if not args.only or any(s in c[0] for s in args.only)]
    work = Path(tempfile.mkdtemp(prefix="startup-"))
    results = []
    load = os.getloadavg()
    for name, cmd in commands:
        row = {"name": name, "command": f"python -m solvers run {cmd}"}
        for label, checkout in checkouts.items():
            cache = work / f"cache-{label}-{len(results)}"
            cold = run(checkout, cmd, cache, work / "run")
            row[label] = {"cold": cold, "warm": run(checkout, cmd, cache, work / "run")}
            shutil.rmtree(cache, ignore_errors=True)
        results.append(row)
        print(json.dumps(row), flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{platform.node()} ({os.cpu_count()} cores)",
            "load_before": load, "load_after": os.getloadavg(), "python": sys.version.split()[0],
            "command": "python benchmarks/startup.py" + (f" --before {args.before}" if args.before else "")}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "startup.json").write_text(json.dumps({"meta": meta, "runs": results}, indent=1) + "\n")
    _plot(results, meta, args.out / "startup.png")
    shutil.rmtree(work, ignore_errors=True)


def _plot(results: list[dict], meta: dict, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 0.45 * len(results) + 1.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    names = [r["name"] for r in results]
    bars = [(lab, temp) for lab in ("before", "after") for temp in ("cold", "warm") if lab in results[0]]
    height = 0.8 / len(bars)
    for i, (lab, temp) in enumerate(bars):
        vals = [r[lab][temp]["wall_s"] if r[lab][temp]["ok"] else 0 for r in results]
        ax.barh([k + i * height for k in range(len(names))], vals, height, label=f"{lab}, cache {temp}")
    ax.set_yticks([k + 0.4 - height / 2 for k in range(len(names))], names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("wall time of the command (s)")
    ax.legend(fontsize=8)
    ax.set_title(f"python -m solvers run: start-up, {meta['date']}, {meta['machine']}, "
                 f"load {meta['load_before'][0]:.1f}", fontsize=9)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
