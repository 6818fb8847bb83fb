"""Small runs on a small machine: the main job on 1, 2, 4 and 8 virtual CPU devices for the smallest grids of each
equation family, and the dry run's time and compiled programs.

For each case (equation and grid) and device count one fresh process (``XLA_FLAGS`` device count, JAX's persistent
compilation cache in an empty directory of its own) runs :func:`solvers.run` three times on the slab mesh of all its
devices (given explicitly, so the default rule does not pick it) for ``--steps`` steps twice: cold (every program
compiled) and again (the programs loaded from the cache: a repeated run). A :class:`solvers.Callback` stamps the
time every 10 steps; the time per step is the smaller of the two runs' between step 10 and the last stamp.
``process_s`` is the whole process (imports, device start-up, the two runs). The dry runs (``--dry-run``) are timed
as command-line processes with ``JAX_LOG_COMPILES=1``, counting the programs they compile.

Writes ``benchmarks/results/small_runs.json`` with the date, the machine, the 1-minute load average around every
measurement and ``uptime``. Run: ``python benchmarks/small_runs.py [--devices 1 2 4 8] [--cases ...] [--steps 60]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: name -> (equation, grid, fixed dt, parameters); the smallest grids each family takes on 8 devices and a few more
CASES = {
    "ns3d-8": ("navier-stokes", (8, 8, 8), 0.01, {}),
    "ns3d-16": ("navier-stokes", (16, 16, 16), 0.01, {}),
    "ns3d-32": ("navier-stokes", (32, 32, 32), 0.01, {}),
    "ns2d-16": ("navier-stokes-2d", (16, 16), 0.01, {}),
    "ns2d-128": ("navier-stokes-2d", (128, 128), 0.005, {}),
    "channel2d-17x8": ("channel", (17, 8), 0.01, {}),
    "channel2d-65x8": ("channel", (65, 8), 0.01, {}),
    "channel2d-65x64": ("channel", (65, 64), 0.01, {}),
    "channel3d-17x8x8": ("channel", (17, 8, 8), 0.01, {}),
    "channel3d-33x16x16": ("channel", (33, 16, 16), 0.01, {}),
    "convection2d-17x16": ("rayleigh-benard", (17, 16), 1e-3, {}),
    "convection3d-17x8x8": ("rayleigh-benard", (17, 8, 8), 1e-3, {}),
}
#: dry runs timed as command-line processes (the preset's grid and a large periodic one)
DRY_RUNS = {
    "channel re-tau-180": ["channel", "--preset", "re-tau-180"],
    "navier-stokes 512^3": ["navier-stokes", "--n", "512"],
    "channel 65x8": ["channel", "--n", "65", "8"],
}


def child(case: str, devices: int, steps: int) -> dict:
    """One case on ``devices`` devices in this (fresh) process: a cold run and a cached one, each timed whole and
    stamped every 10 steps (a :class:`solvers.Callback` on the states) for the time per step once compiled."""
    os.environ["XFFT_CACHE_DIR"] = tempfile.mkdtemp(prefix="xfft-small-cache-")  # solvers.run's cache, empty
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(ROOT))
    import jax

    import solvers
    import xfft

    name, shape, dt, params = CASES[case]
    mesh = xfft.make_mesh("slab")
    out = tempfile.mkdtemp(prefix="xfft-small-run-")
    result = {"devices": jax.device_count()}
    per_step = []
    for label in ("cold_s", "cached_s"):
        stamps = []
        cfg = solvers.RunConfig(equation=name, n=shape, dt=dt, t_end=1e6, max_steps=steps, params=params, out=out,
                                overwrite=True, progress=False, plots=False, diag_every=10)
        t0 = time.perf_counter()
        stamp = solvers.Callback(lambda e, seen=stamps: seen.append(time.perf_counter()), 10, on="states")
        solvers.run(cfg, mesh=mesh, outputs=[stamp])  # compile_cache=True: in $XFFT_CACHE_DIR
        result[label] = time.perf_counter() - t0
        steady = stamps[1:]  # from step 10: compiled
        per_step.append((steady[-1] - steady[0]) / (10 * (len(steady) - 1)))
        result[label.replace("_s", "_to_step_10_s")] = stamps[1] - t0
    result["ms_per_step"] = 1e3 * min(per_step)
    return result


def measure(case: str, devices: int, steps: int) -> dict:
    """:func:`child` in a fresh process, with the load around it and the whole process's wall time."""
    code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import small_runs; "
            f"print('RESULT', json.dumps(small_runs.child({case!r}, {devices}, {steps})))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_"))}
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"{case} on {devices}: {r.stderr[-2000:]}")
    equation, shape, dt, _ = CASES[case]
    return {"case": case, "equation": equation, "shape": list(shape), "points": math.prod(shape), "dt": dt,
            "steps": steps,
            **json.loads(line[7:]), "process_s": wall, "load_average_1min_start_end": [load0, os.getloadavg()[0]]}


def dry_run(name: str, args: list[str]) -> dict:
    """A ``--dry-run`` command-line process: its wall time and the programs it compiled."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_"))}, "JAX_LOG_COMPILES": "1",
           "XFFT_COMPILATION_CACHE": "0"}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "solvers", "run", *args, "--dry-run", "--out", d],
                           capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.perf_counter() - t0
    compiled = len(re.findall(r"Finished XLA compilation|Compiling [^\n]* with global shapes", r.stderr))
    return {"name": name, "args": args, "returncode": r.returncode, "wall_s": wall, "compiles": compiled,
            "memory": next((x for x in r.stdout.splitlines() if "memory" in x.lower()), ""),
            "load_average_1min_start_end": [load0, os.getloadavg()[0]]}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--devices", nargs="+", type=int, default=[1, 2, 4, 8])
    p.add_argument("--steps", type=int, default=60, help="steps of each run (a multiple of 10, >= 30)")
    p.add_argument("--no-dry-runs", action="store_true")
    p.add_argument("--out", default=str(HERE / "results" / "small_runs.json"))
    args = p.parse_args(argv)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    results, dry = [], []
    for case in args.cases:
        for d in args.devices:
            results.append(measure(case, d, args.steps))
            print(json.dumps(results[-1]), flush=True)
    if not args.no_dry_runs:
        for name, a in DRY_RUNS.items():
            dry.append(dry_run(name, a))
            print(json.dumps(dry[-1]), flush=True)
    doc = {"meta": {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
                    "machine": platform.machine(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "uptime_start": uptime,
                    "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()},
           "results": results, "dry_runs": dry}
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    return doc


if __name__ == "__main__":
    main()
