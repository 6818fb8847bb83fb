"""Benchmark: the step of the wall equations (channel, no-slip Rayleigh-Benard) in float64 on 8 CPU devices (slab).

For each case (equation and grid) one process measures:

- bytes per grid point of the step program as a run compiles it (:class:`solvers.simulation.loop.Loop`: fixed dt,
  diagnostics rows every 10 steps with the spectrum, the state donated) and of the bare donated step:
  ``memory_analysis()`` arguments + outputs + temporaries - aliased, summed over the devices, per grid point; the
  step's arguments split into the state and the implicit factors (the IMEX coefficients);
- time per step (median of the donated step called on its own output, as the driver runs it), of the step's 4
  implicit solves (factors prepared once per dt) and of its 4 nonlinear evaluations (the transforms and
  products): the solves must stay below the transforms.

``--baseline DIR`` measures the same cases for the code in ``DIR`` (a checkout of the commit before, e.g.
``git worktree add /tmp/before <commit>``): each (tree, case) runs in a process of its own, the two trees in
turn for ``--rounds`` rounds, so before and after come from one run under the same load (the 1-minute load
average is recorded around every measurement). Medians over the rounds.

Writes ``benchmarks/results/walls.json`` and ``.png``. Run:
``python benchmarks/walls.py [--baseline DIR] [--rounds 2] [--repeats 7] [--cases channel-3d rb-2d ...]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: name -> (equation, grid, parameters, initial condition); the wall-normal axis first
CASES = {
    "channel-3d": ("channel", (65, 64, 64), {"Re": 2000.0, "amplitude": 0.2}, "turbulent"),
    "rb-3d": ("rayleigh-benard", (65, 64, 64), {"Ra": 5000.0, "walls": "no-slip"}, "random"),
    "channel-2d": ("channel", (129, 512), {"Re": 10000.0}, "tollmien-schlichting"),
    "rb-2d": ("rayleigh-benard", (129, 512), {"Ra": 5000.0, "walls": "no-slip"}, "random"),
    "channel-3d-small": ("channel", (33, 32, 32), {"Re": 2000.0, "amplitude": 0.2}, "turbulent"),
    "rb-3d-small": ("rayleigh-benard", (33, 32, 32), {"Ra": 5000.0, "walls": "no-slip"}, "random"),
    "channel-2d-small": ("channel", (65, 256), {"Re": 10000.0}, "tollmien-schlichting"),
    "rb-2d-small": ("rayleigh-benard", (65, 256), {"Ra": 5000.0, "walls": "no-slip"}, "random"),
}
DEFAULT = ("channel-3d", "rb-3d", "channel-2d", "rb-2d")
DT = 2e-3


class _Rows:
    """The outputs of a run with diagnostics rows every ``every`` steps (spectrum included), no samples."""

    wants_spectrum = True
    name = "rows"

    def __init__(self, every: int = 10):
        self.row_every = every

    def sampler(self, equation):
        return None


def _per_point(nbytes: float, devices: int, points: int) -> float:
    return nbytes * devices / points


def measure(case: str, repeats: int) -> dict:
    """One case in this process: bytes per point and medians of the step, the solves and the nonlinear terms."""
    sys.path.insert(0, str(HERE))
    import _timing  # 8 CPU devices, before jax; it puts this checkout first on the path, which the tree decides

    if sys.path[0] == str(HERE.parent):
        sys.path.pop(0)
    import jax

    jax.config.update("jax_enable_x64", True)
    import solvers
    import xfft
    from solvers import RunConfig
    from solvers.simulation.loop import Loop
    from solvers.stepping import host_control_flow

    name, shape, params, ic = CASES[case]
    load0 = os.getloadavg()[0]
    mesh = xfft.make_mesh("slab")
    cfg = RunConfig(equation=name, n=shape, dtype="float64", integrator="imex", dt=DT, out="/tmp/xfft-walls",
                    ic=ic, params=params, overwrite=True, progress=False, plots=False)
    built = solvers.build(cfg, mesh=mesh)
    eq, integ, grid = built.equation, built.integrator, built.grid
    points, devices = math.prod(grid.shape), mesh.size
    loop = Loop(integ, built.controller.resolve(integ), [_Rows()], None, True, host_control_flow(mesh))
    t0 = time.perf_counter()
    program = loop.lower().compile()
    compile_s = time.perf_counter() - t0
    m = program.memory_analysis()
    loop_bpp = _per_point(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
                          - m.alias_size_in_bytes, devices, points)
    with jax.set_mesh(mesh):
        state = eq.initial_state(ic)
        coeffs = jax.jit(integ.coefficients)(DT)
        like = eq.abstract_state()
        step = jax.jit(integ.step, donate_argnums=0).lower(like, 0.0, DT, coeffs).compile()
        s = step.memory_analysis()
        state_b = sum(x.nbytes for x in jax.tree.leaves(state))
        factor_b = sum(x.nbytes for x in jax.tree.leaves(coeffs))
        factor = coeffs[0.5]  # ARS(4,4,3): every implicit stage solves (I - dt/2 L) y = rhs
        solves = jax.jit(lambda r: [eq.implicit_solve(r * (1 + i), factor) for i in range(4)])
        nonlin = jax.jit(lambda s: [eq.nonlinear(s * (1 + 1e-3 * i), 0.0) for i in range(4)])
        box = {"s": jax.jit(lambda s: s + 0)(state)}

        def one_step():
            box["s"] = jax.block_until_ready(step(box["s"], 0.0, DT, coeffs))

        t = _timing.round_robin({"step": one_step, "solves": lambda: jax.block_until_ready(solves(state)),
                         "nonlinear": lambda: jax.block_until_ready(nonlin(state))}, repeats)
    return {
        "case": case, "equation": name, "shape": list(shape), "params": params,
        "bytes_per_point": loop_bpp,
        "step_bytes_per_point": _per_point(s.argument_size_in_bytes + s.output_size_in_bytes
                                           + s.temp_size_in_bytes - s.alias_size_in_bytes, devices, points),
        "step_state_bytes_per_point": state_b / points, "step_factor_bytes_per_point": factor_b / points,
        "step_temp_bytes_per_point": _per_point(s.temp_size_in_bytes, devices, points),
        "step_ms": 1e3 * t["step"], "implicit_solves_ms": 1e3 * t["solves"], "nonlinear_ms": 1e3 * t["nonlinear"],
        "solves_over_nonlinear": t["solves"] / t["nonlinear"], "program_compile_s": compile_s,
        "load_average_1min_start_end": [load0, os.getloadavg()[0]],
        "code": {"solvers": str(Path(sys.modules["solvers"].__file__).parent), "xfft": str(Path(xfft.__file__).parent)},
    }


def run_child(tree: Path, case: str, repeats: int) -> dict:
    """:func:`measure` in a fresh process on the code in ``tree`` (its ``solvers``; this checkout's ``xfft``
    unless ``PYTHONPATH`` names another first)."""
    env = dict(os.environ)
    paths = [q for q in env.get("PYTHONPATH", "").split(os.pathsep) if q]
    others = [q for q in paths if not (Path(q) / "solvers").is_dir()]  # e.g. a checkout of xfft alone
    env["PYTHONPATH"] = os.pathsep.join(others + [str(tree)] + [q for q in paths if q not in others])
    code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import walls; "
            f"print(json.dumps(walls.measure({case!r}, {repeats})))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd="/", capture_output=True, text=True,
                         check=False)
    if out.returncode:
        raise RuntimeError(f"{case} on {tree}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _medians(runs: list[dict]) -> dict:
    out = dict(runs[0])
    for k, v in runs[0].items():
        if isinstance(v, float) and k != "load_average_1min_start_end":
            out[k] = statistics.median(r[k] for r in runs)
    out["rounds"] = [{k: r[k] for k in ("step_ms", "implicit_solves_ms", "nonlinear_ms",
                                        "load_average_1min_start_end")} for r in runs]
    return out


def plot(results: dict, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), layout="constrained")
    FigureCanvasAgg(fig)
    trees = list(results)
    cases = [r["case"] for r in results[trees[0]]]
    w = 0.8 / len(trees)
    for col, (key, label, log) in enumerate((("bytes_per_point", "bytes per grid point (step program)", False),
                                             ("step_ms", "ms per step (median)", True))):
        ax = fig.add_subplot(1, 2, col + 1)
        for j, tree in enumerate(trees):
            ax.bar([x + (j - (len(trees) - 1) / 2) * w for x in range(len(cases))],
                   [r[key] for r in results[tree]], w, label=tree)
        if key == "bytes_per_point":
            ax.axhline(250, color="k", lw=0.8, ls="--", label="250 B/pt")
        ax.set_xticks(range(len(cases)), [c.replace("-", "\n", 1) for c in cases], fontsize=8)
        ax.set_ylabel(label)
        if log:
            ax.set_yscale("log")
        ax.legend(fontsize=8)
    fig.suptitle("IMEX ARS(4,4,3) step of the wall equations, float64, 8 CPU devices")
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=list(DEFAULT), choices=list(CASES))
    p.add_argument("--baseline", type=Path, default=None, help="a checkout of the code before (its solvers/)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--name", default="walls")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    trees = {"after": HERE.parent}
    if a.baseline is not None:
        trees["before"] = a.baseline.resolve()
    load0 = os.getloadavg()[0]
    runs = {t: {c: [] for c in a.cases} for t in trees}
    for _ in range(a.rounds):
        for case in a.cases:
            for tree, path in trees.items():
                r = run_child(path, case, a.repeats)
                print(tree, json.dumps(r), flush=True)
                runs[tree][case].append(r)
    results = {t: [_medians(runs[t][c]) for c in a.cases] for t in trees}
    import jax

    meta = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"), "machine": platform.machine(),
            "processor": platform.processor(), "cpu_count": os.cpu_count(), "devices": 8, "jax": jax.__version__,
            "dt": DT, "rounds": a.rounds, "repeats": a.repeats, "trees": {t: str(p) for t, p in trees.items()},
            "load_average_1min_start_end": [load0, os.getloadavg()[0]]}
    rows = [{"tree": t, **r} for t in trees for r in results[t]]  # one row per (tree, case): the docs' table
    (a.out / f"{a.name}.json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")
    plot(results, a.out / f"{a.name}.png")
    print(f"wrote {a.out / a.name}.json")


if __name__ == "__main__":
    main()
