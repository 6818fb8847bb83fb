"""Benchmark: time per step of the wall equations against Dedalus 3 on one CPU device, float64, one process each.

Cases (Dedalus's ``Nx x Nz``; our grids list the wall-normal axis first):

- no-slip Rayleigh-Benard, Dedalus's ``examples/ivp_2d_rayleigh_benard`` as it ships (``Lx = 4``, ``Ra = 2e6``,
  ``Pr = 1``, RealFourier x ChebyshevT, 3/2 dealiasing, RK222), at 64x32 and 256x128, and the same problem with a
  second Fourier axis at 32^3;
- the plane channel (the same formulation without buoyancy, a uniform body force, walls at ``z = -1, 1``) at
  128x64 and 32^3.

Ours: ``python -m solvers run``'s step (IMEX ARS(4,4,3), float64) of ``rayleigh-benard --walls no-slip`` and
``channel`` on one CPU device (``--xla_force_host_platform_device_count=1``). Each scheme as it ships: Dedalus's
RK222 has two stages, ARS(4,4,3) four. Each (side, case) runs in a process of its own, the sides in turn for
``--rounds`` rounds (the 1-minute load average is recorded around every measurement); medians of the per-step
times. Dedalus runs with ``OMP_NUM_THREADS=1`` as its docs advise for one process; XLA's CPU client runs a step
on its pool of threads, so on a machine busy with other work a ratio favours our side: read ratios at a low load.

Dedalus lives in a virtual environment of its own (``--dedalus-python``, default ``/tmp/dedalus-venv/bin/python``:
``python3 -m venv /tmp/dedalus-venv``, ``apt-get install libfftw3-dev libfftw3-mpi-dev libopenmpi-dev``, then
``pip install mpi4py dedalus==3.0.5`` with ``MPI_INCLUDE_PATH``/``FFTW_INCLUDE_PATH`` set). ``--baseline DIR``
also times our step on the code in ``DIR`` (a checkout of the commit before).

Writes ``benchmarks/results/dedalus_walls.json`` and ``.png``. Run:
``python benchmarks/dedalus_walls.py [--baseline DIR] [--rounds 2] [--steps 20] [--cases rb-2d-256x128 ...]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: name -> (equation, Dedalus sizes (Nx[, Ny], Nz), our grid (wall-normal first))
CASES = {
    "rb-2d-64x32": ("rb", (64, 32), (32, 64)),
    "rb-2d-256x128": ("rb", (256, 128), (128, 256)),
    "rb-3d-32": ("rb", (32, 32, 32), (32, 32, 32)),
    "channel-2d-128x64": ("channel", (128, 64), (64, 128)),
    "channel-3d-32": ("channel", (32, 32, 32), (32, 32, 32)),
}
DT = 1e-3


def dedalus_steps(equation: str, sizes: tuple[int, ...], steps: int) -> list[float]:
    """Seconds of each of ``steps`` Dedalus steps (after 5 warm-up steps that build and factor the matrices)."""
    import dedalus.public as d3
    import numpy as np

    dim = len(sizes)
    names = ("x", "y", "z")[:dim - 1] + ("z",)
    coords = d3.CartesianCoordinates(*names)
    dist = d3.Distributor(coords, dtype=np.float64)
    walls = (0.0, 1.0) if equation == "rb" else (-1.0, 1.0)
    lengths = (4.0,) * (dim - 1) if equation == "rb" else (4 * np.pi, 2 * np.pi)[:dim - 1]
    periodic = [d3.RealFourier(coords[c], size=n, bounds=(0, L), dealias=3 / 2)
                for c, n, L in zip(names[:-1], sizes[:-1], lengths)]
    zbasis = d3.ChebyshevT(coords["z"], size=sizes[-1], bounds=walls, dealias=3 / 2)
    bases = (*periodic, zbasis)
    p = dist.Field(name="p", bases=bases)
    u = dist.VectorField(coords, name="u", bases=bases)
    tau_p = dist.Field(name="tau_p")
    tau_u1 = dist.VectorField(coords, name="tau_u1", bases=tuple(periodic))
    tau_u2 = dist.VectorField(coords, name="tau_u2", bases=tuple(periodic))
    ez = coords.unit_vector_fields(dist)[-1]
    ex = coords.unit_vector_fields(dist)[0]
    lift_basis = zbasis.derivative_basis(1)

    def lift(a):
        return d3.Lift(a, lift_basis, -1)

    grad_u = d3.grad(u) + ez * lift(tau_u1)
    grid = dist.local_grids(*bases)
    z = grid[-1]
    if equation == "rb":  # examples/ivp_2d_rayleigh_benard/rayleigh_benard.py
        rayleigh, prandtl = 2e6, 1.0
        kappa = (rayleigh * prandtl) ** (-1 / 2)
        nu = (rayleigh / prandtl) ** (-1 / 2)
        b = dist.Field(name="b", bases=bases)
        tau_b1 = dist.Field(name="tau_b1", bases=tuple(periodic))
        tau_b2 = dist.Field(name="tau_b2", bases=tuple(periodic))
        grad_b = d3.grad(b) + ez * lift(tau_b1)
        problem = d3.IVP([p, b, u, tau_p, tau_b1, tau_b2, tau_u1, tau_u2], namespace=locals())
        problem.add_equation("trace(grad_u) + tau_p = 0")
        problem.add_equation("dt(b) - kappa*div(grad_b) + lift(tau_b2) = - u@grad(b)")
        problem.add_equation("dt(u) - nu*div(grad_u) + grad(p) - b*ez + lift(tau_u2) = - u@grad(u)")
        problem.add_equation("b(z=0) = 1")
        problem.add_equation("u(z=0) = 0")
        problem.add_equation("b(z=1) = 0")
        problem.add_equation("u(z=1) = 0")
        problem.add_equation("integ(p) = 0")
        b.fill_random("g", seed=42, distribution="normal", scale=1e-3)
        b["g"] *= z * (1 - z)
        b["g"] += 1 - z
    else:  # the plane channel: a uniform body force along x drives Poiseuille flow, plus noise
        nu, force = 1 / 2000.0, 2 / 2000.0
        problem = d3.IVP([p, u, tau_p, tau_u1, tau_u2], namespace=locals())
        problem.add_equation("trace(grad_u) + tau_p = 0")
        problem.add_equation("dt(u) - nu*div(grad_u) + grad(p) + lift(tau_u2) = - u@grad(u) + force*ex")
        problem.add_equation("u(z=-1) = 0")
        problem.add_equation("u(z=1) = 0")
        problem.add_equation("integ(p) = 0")
        u.fill_random("g", seed=42, distribution="normal", scale=1e-2)
        u["g"] *= 1 - z * z
        u["g"][0] += 1 - z * z
    solver = problem.build_solver(d3.RK222)
    for _ in range(5):
        solver.step(DT)
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        solver.step(DT)
        out.append(time.perf_counter() - t0)
    return out


def xfft_steps(equation: str, shape: tuple[int, ...], steps: int) -> list[float]:
    """Seconds of each of ``steps`` donated steps of our wall equation on one CPU device (after 2 warm-up steps)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import solvers
    import xfft
    from solvers import RunConfig

    if equation == "rb":
        name, params, ic = "rayleigh-benard", {"Ra": 5000.0, "walls": "no-slip"}, "random"
    elif len(shape) == 3:
        name, params, ic = "channel", {"Re": 2000.0, "amplitude": 0.2}, "turbulent"
    else:
        name, params, ic = "channel", {"Re": 10000.0}, "tollmien-schlichting"
    cfg = RunConfig(equation=name, n=shape, dtype="float64", integrator="imex", dt=DT, out="/tmp/xfft-dedalus-walls",
                    ic=ic, params=params, overwrite=True, progress=False, plots=False)
    mesh = xfft.make_mesh("slab")
    built = solvers.build(cfg, mesh=mesh)
    eq, integ = built.equation, built.integrator
    with jax.set_mesh(mesh):
        state = eq.initial_state(ic)
        coeffs = jax.jit(integ.coefficients)(DT)
        step = jax.jit(integ.step, donate_argnums=0)
        for _ in range(2):
            state = jax.block_until_ready(step(state, 0.0, DT, coeffs))
        out = []
        for _ in range(steps):
            t0 = time.perf_counter()
            state = jax.block_until_ready(step(state, 0.0, DT, coeffs))
            out.append(time.perf_counter() - t0)
    return out


def child(side: str, case: str, steps: int) -> None:
    """One measurement in this process: print a JSON line with the per-step seconds."""
    equation, dsizes, shape = CASES[case]
    load0 = os.getloadavg()[0]
    times = dedalus_steps(equation, dsizes, steps) if side == "dedalus" else xfft_steps(equation, shape, steps)
    print(json.dumps({"side": side, "case": case, "step_s": times, "median_s": statistics.median(times),
                      "load_average_1min_start_end": [load0, os.getloadavg()[0]]}), flush=True)


def run_child(side: str, case: str, steps: int, python: str, tree: Path | None) -> dict:
    """:func:`child` in a fresh process: Dedalus's interpreter, or this one on the code in ``tree``."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1")
    if side == "dedalus":
        env.update(OMP_NUM_THREADS="1", NUMEXPR_MAX_THREADS="1")
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(tree)] + [q for q in env.get("PYTHONPATH", "").split(os.pathsep) if q])
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import dedalus_walls; "
            f"dedalus_walls.child({side if side == 'dedalus' else 'xfft'!r}, {case!r}, {steps})")
    out = subprocess.run([python, "-c", code], env=env, cwd="/tmp", capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"{side} {case}: {out.stderr[-3000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["side"] = side
    return r


def summarize(runs: dict, sides: list[str]) -> list[dict]:
    """One row per case: the median ms per step of each side over every step of every round, and the ratios."""
    rows = []
    for case, by_side in runs.items():
        row = {"case": case, "equation": CASES[case][0], "dedalus_sizes": list(CASES[case][1]),
               "xfft_shape": list(CASES[case][2])}
        for side in sides:
            row[f"{side}_ms"] = 1e3 * statistics.median(t for r in by_side[side] for t in r["step_s"])
            row[f"{side}_ms_rounds"] = [1e3 * r["median_s"] for r in by_side[side]]
            row[f"{side}_loads"] = [r["load_average_1min_start_end"] for r in by_side[side]]
        row["ratio"] = row["xfft_ms"] / row["dedalus_ms"]
        if "xfft_before" in by_side:
            row["ratio_before"] = row["xfft_before_ms"] / row["dedalus_ms"]
        rows.append(row)
    return rows


def write(rows: list[dict], meta: dict, out: Path) -> None:
    """``dedalus_walls.json`` and ``.png`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "dedalus_walls.json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")
    plot(rows, [k[:-3] for k in rows[0] if k.endswith("_ms")], out / "dedalus_walls.png")
    for row in rows:
        print(row["case"], {k: round(v, 3) for k, v in row.items() if isinstance(v, float)}, flush=True)
    print(f"wrote {out / 'dedalus_walls.json'}", flush=True)


def plot(rows: list[dict], sides: list[str], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    cases = [r["case"] for r in rows]
    w = 0.8 / len(sides)
    for j, side in enumerate(sides):
        ax.bar([i + (j - (len(sides) - 1) / 2) * w for i in range(len(cases))],
               [r[f"{side}_ms"] for r in rows], w, label=side)
    for i, r in enumerate(rows):
        ax.annotate(f"{r['ratio']:.2f}", (i, max(r[f"{s}_ms"] for s in sides)), ha="center", va="bottom",
                    fontsize=8)
    ax.set_xticks(range(len(cases)), cases, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("ms per step (median)")
    ax.set_title("Wall steps on one CPU device, float64 (label: xfft / Dedalus)")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--dedalus-python", default="/tmp/dedalus-venv/bin/python")
    p.add_argument("--baseline", type=Path, default=None, help="a checkout of the code before (its solvers/, xfft/)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out", type=Path, default=HERE / "results")
    a = p.parse_args(argv)
    for flag, v in (("--rounds", a.rounds), ("--steps", a.steps)):
        if v < 1:
            p.error(f"{flag} must be a positive integer, got {v}")
    if not Path(a.dedalus_python).exists():
        p.error(f"--dedalus-python: no interpreter at {a.dedalus_python}")
    trees = {"xfft": HERE.parent} | ({"xfft_before": a.baseline.resolve()} if a.baseline is not None else {})
    sides = ["dedalus", *trees]
    load0 = os.getloadavg()[0]
    runs: dict = {c: {s: [] for s in sides} for c in a.cases}
    for done in range(1, a.rounds + 1):
        for case in a.cases:
            for side in sides:
                python = a.dedalus_python if side == "dedalus" else sys.executable
                r = run_child(side, case, a.steps, python, trees.get(side))
                print(side, case, f"{1e3 * r['median_s']:.2f} ms", r["load_average_1min_start_end"], flush=True)
                runs[case][side].append(r)
        meta = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
                "machine": platform.machine(), "processor": platform.processor(), "cpu_count": os.cpu_count(),
                "devices": 1, "dt": DT, "rounds": done, "steps": a.steps,
                "trees": {k: str(v) for k, v in trees.items()},
                "schemes": {"dedalus": "RK222 (2 stages)", "xfft": "IMEX ARS(4,4,3) (4 stages)"},
                "dedalus": "3.0.5, OMP_NUM_THREADS=1", "load_average_1min_start_end": [load0, os.getloadavg()[0]]}
        write(summarize(runs, sides), meta, a.out)  # after every round: an interrupted run keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
