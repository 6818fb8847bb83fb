"""Benchmark: the cost of a step of the wall equations (issue 16): channel (3D) and no-slip Rayleigh-Benard.

For each equation and size, on 8 CPU devices (slab), float64, IMEX ARS(4,4,3) at a fixed dt, the same run times
(round-robin, medians): one step (state donated, as the driver runs it), the step's 4 implicit solves with the
factors prepared once per dt (what the step does now), the same 4 solves refactoring every time (the one-shot
solves the step did before), and the step's 4 nonlinear evaluations (its transforms and products). It also reports
bytes per grid point of the donated step (``memory_analysis``), its compile time and the ``while`` loops in its HLO.

Writes ``benchmarks/results/walls.json`` and ``.png``. Run: ``python benchmarks/walls.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import jax  # noqa: E402
from _timing import HERE, round_robin  # sets 8 CPU devices: before jax (benchmarks/ is the script's directory)

jax.config.update("jax_enable_x64", True)

import xfft  # noqa: E402
from solvers import IMEX, RunConfig  # noqa: E402
from solvers.job.build import build, validate  # noqa: E402

CASES = (("channel", (33, 32, 32), {"Re": 2000.0}, "turbulent", {"amplitude": 0.2}),
         ("channel", (65, 64, 64), {"Re": 2000.0}, "turbulent", {"amplitude": 0.2}),
         ("rayleigh-benard", (17, 32, 32), {"Ra": 5000.0, "walls": "no-slip"}, "random", {}),
         ("rayleigh-benard", (33, 64, 64), {"Ra": 5000.0, "walls": "no-slip"}, "random", {}))


def one_case(name, shape, params, ic, ic_params, repeats: int, dt: float = 2e-3) -> dict:
    mesh = xfft.make_mesh("slab")
    cfg = RunConfig(equation=name, n=shape, dtype="float64", integrator="imex", dt=dt, out="/tmp/xfft-walls",
                    ic=ic, params={**params, **ic_params})
    res = validate(cfg)
    parts = build(cfg, res, mesh)
    grid, eq, integ = parts.grid, parts.equation, parts.integrator
    assert isinstance(integ, IMEX)
    with jax.set_mesh(grid.mesh):
        state = eq.initial_state(res.ic, **res.ic_params)
        coeffs = jax.jit(integ.coefficients)(dt)
        g = 0.5  # ARS(4,4,3): every implicit stage solves (I - dt/2 L) y = rhs
        factor = coeffs[g]
        like = eq.abstract_state()
        t0 = time.perf_counter()
        compiled = jax.jit(integ.step, donate_argnums=0).lower(like, 0.0, dt, coeffs).compile()
        compile_s = time.perf_counter() - t0
        m = compiled.memory_analysis()
        bpp = (m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes) \
            * mesh.size / grid.size
        whiles = compiled.as_text().count(" while(")
        solves = jax.jit(lambda r: [eq.implicit_solve(r * (1 + i), factor) for i in range(4)])
        oneshot = jax.jit(lambda r: [eq.implicit_solve(r * (1 + i), eq.implicit_factor(g * dt)) for i in range(4)])
        nonlin = jax.jit(lambda s: [eq.nonlinear(s * (1 + 1e-3 * i), 0.0) for i in range(4)])
        box = {"s": jax.jit(lambda s: s + 0)(state)}

        def step():
            box["s"] = jax.block_until_ready(compiled(box["s"], 0.0, dt, coeffs))

        t = round_robin({"step": step, "solves": lambda: jax.block_until_ready(solves(state)),
                         "oneshot": lambda: jax.block_until_ready(oneshot(state)),
                         "nonlinear": lambda: jax.block_until_ready(nonlin(state))}, repeats)
    out = {"equation": name, "shape": list(shape), "params": params, "step_ms": 1e3 * t["step"],
           "implicit_solves_ms": 1e3 * t["solves"], "implicit_solves_refactoring_ms": 1e3 * t["oneshot"],
           "nonlinear_ms": 1e3 * t["nonlinear"], "solves_share_of_step": t["solves"] / t["step"],
           "solves_over_nonlinear": t["solves"] / t["nonlinear"], "bytes_per_point": bpp,
           "step_compile_s": compile_s, "while_loops_in_step": whiles}
    print(json.dumps(out), flush=True)
    return out


def plot(results: list[dict], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    labels = [f"{r['equation']}\n{'x'.join(map(str, r['shape']))}" for r in results]
    xs = range(len(results))
    w = 0.2
    for j, (key, lab) in enumerate((("step_ms", "step"), ("nonlinear_ms", "4 nonlinear terms"),
                                    ("implicit_solves_ms", "4 solves (factored)"),
                                    ("implicit_solves_refactoring_ms", "4 solves (refactoring)"))):
        ax.bar([x + (j - 1.5) * w for x in xs], [r[key] for r in results], w, label=lab)
    ax.set_xticks(list(xs), labels)
    ax.set_yscale("log")
    ax.set_ylabel("ms (median)")
    ax.set_title("IMEX step of the wall equations, 8 CPU devices, float64")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=HERE / "results")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()[0]
    results = [one_case(*c, repeats=a.repeats) for c in CASES]
    meta = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"), "machine": platform.machine(),
            "cpu_count": os.cpu_count(), "devices": jax.device_count(), "jax": jax.__version__,
            "load_average_1min_start_end": [load0, os.getloadavg()[0]]}
    (a.out / "walls.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    plot(results, a.out / "walls.png")
    print(f"wrote {a.out / 'walls.json'}")


if __name__ == "__main__":
    main()
