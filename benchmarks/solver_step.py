"""Benchmark: the solver step against a single-device JAX peer (exponax), and the main job against its bare step.

1. ``--peer``: one device, float64, ETDRK4, the same initial condition and dt: ``solvers`` (navier-stokes-2d at
   ``--n2d``, navier-stokes at ``--n3d``) against exponax (``NavierStokesVorticity``/``NavierStokesVelocity``,
   ``order=4``; its steps take and return physical fields, so each holds one more forward and inverse transform).
   Both run ``--steps`` steps inside one compiled ``lax.fori_loop``; the cases take turns (round-robin) and the
   medians are reported, with the largest difference of the two answers after the steps.
2. ``--driver``: all devices (8 CPU devices by default; ``JAX_PLATFORMS=cuda``: the GPUs), float32, CFL control: the
   main job's time loop (:meth:`solvers.simulation.loop.Loop.run` after its first segments compiled, with the main
   job's diagnostics CSV and resolution check every 10 steps, as ``python -m solvers run`` runs it) per step
   against the bare compiled step (``Integrator.advance``: a fixed-dt ``fori_loop``) at 32^3 (navier-stokes,
   lsrk4) and 256^2 (navier-stokes-2d, rk4), ``--driver-steps`` steps per call, alternating; ``main_over_bare``
   is the median of the per-round ratios (with quartiles), which a slow spell of the shared machine moves less
   than a ratio of medians. ``--decompose`` adds, in the same rounds, one step program
   (:meth:`solvers.simulation.loop.Loop.run_segment`, segments of ``8 * --diag-every`` steps, the main job's) three
   ways: a fixed dt without rows (``segment_fixed_over_bare``: the segment loop itself), CFL control without rows
   (``segment_cfl_over_bare``) and CFL control with the rows (``segment_rows_over_bare``): where the main job's
   time beyond the bare step goes (on a GPU: host round trips of the loop, the CFL step, the rows).

exponax is installed only for this benchmark (``pip install exponax``; it is no dependency of xfft). Writes
``benchmarks/results/solver_step.json`` and ``.png`` (``--tag`` adds a suffix, e.g. ``_gpu``).

Run: ``python benchmarks/solver_step.py [--peer] [--driver [--decompose]] [--repeats 7] [--driver-steps 500]
[--diag-every 10]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
from pathlib import Path

import jax  # noqa: E402
from _timing import (  # sets 8 CPU devices: before jax (benchmarks/ is the script's directory)
    HERE,
    paired_ratio,
    round_robin,
    round_robin_samples,
)

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import solvers  # noqa: E402
import xfft  # noqa: E402
from solvers import (  # noqa: E402
    ETDRK4,
    INTEGRATORS,
    DiagnosticsCSV,
    FixedStep,
    NavierStokes,
    NavierStokes2D,
    ResolutionCheck,
    RunConfig,
    SpectralGrid,
)
from solvers.outputs import RunInfo  # noqa: E402
from solvers.simulation.loop import Clock, Loop  # noqa: E402
from solvers.stepping import host_control_flow  # noqa: E402
from solvers.stepping.core import ROWS_PER_SEGMENT  # noqa: E402


def peer(n2d: int, n3d: int, steps: int, repeats: int) -> dict:
    """ETDRK4 on one device: xfft solvers vs exponax, 2D vorticity and 3D velocity."""
    import exponax as ex

    one = xfft.make_mesh((1,), devices=jax.devices()[:1])
    return {f"{dim}d": _peer_case(ex, one, dim, n, steps, repeats) for dim, n in ((2, n2d), (3, n3d))}


def _peer_case(ex, one, dim: int, n: int, steps: int, repeats: int) -> dict:
    """One dimension of :func:`peer`."""
    nu, dt, L = 1e-3, 1e-3 if dim == 2 else 2e-3, 2 * np.pi
    grid = SpectralGrid(n, one, ndim=dim, dtype=jnp.float64)
    eq = NavierStokes2D(grid, nu=nu) if dim == 2 else NavierStokes(grid, nu=nu)
    integ = ETDRK4(eq)
    x = np.arange(n) * L / n
    if dim == 2:
        X, Y = np.meshgrid(x, x, indexing="ij")
        w = 2 * np.sin(X) * np.sin(Y) + 0.3 * np.cos(3 * X + 1) * np.sin(2 * Y)
        phys = jnp.asarray(w[None])
        # exponax's vorticity is u_y - v_x (its stream function solves lap psi = omega): our -omega
        state = jax.jit(lambda f: grid.dealias(grid.rfft(-f[0])))(phys)
        stepper = ex.stepper.NavierStokesVorticity(2, L, n, dt, diffusivity=nu, order=4)
    else:
        X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
        u = np.stack([np.sin(X) * np.cos(Y) * np.cos(Z), -np.cos(X) * np.sin(Y) * np.cos(Z), 0 * X])
        u[2] += 0.2 * np.sin(2 * X + 1)  # divergence-free: depends on x only
        phys = jnp.asarray(u)
        state = jax.jit(lambda f: grid.dealias(grid.project(grid.rfft(f))))(phys)
        stepper = ex.stepper.NavierStokesVelocity(3, L, n, dt, diffusivity=nu, order=4)
    coeffs = jax.jit(integ.coefficients)(dt)

    @jax.jit
    def ours(s):
        return jax.lax.fori_loop(0, steps, lambda i, s: integ.step(s, i * dt, dt, coeffs), s)

    @jax.jit
    def theirs(f):
        return jax.lax.fori_loop(0, steps, lambda i, f: stepper(f), f)

    a = np.asarray(jax.jit(lambda s: grid.irfft(s))(ours(state)))
    b = np.asarray(theirs(phys))
    a = a if dim == 3 else -a[None]
    diff = float(np.abs(a - b).max()) / float(np.abs(b).max())
    t = round_robin({"xfft": lambda: jax.block_until_ready(ours(state)),
                     "exponax": lambda: jax.block_until_ready(theirs(phys))}, repeats)
    row = {"n": n, "steps": steps, "dt": dt, "nu": nu, "xfft_ms_per_step": 1e3 * t["xfft"] / steps,
                      "exponax_ms_per_step": 1e3 * t["exponax"] / steps,
                      "ratio_xfft_over_exponax": t["xfft"] / t["exponax"], "max_rel_difference": diff}
    print(json.dumps({f"{dim}d": row}), flush=True)
    return row


def driver(repeats: int, steps: int, diag_every: int = 10, decompose: bool = False) -> dict:
    """Main job per step (CFL, diagnostics every 10) vs the bare fixed-dt compiled step, alternating."""
    cases = (("3d", "navier-stokes", 32, "lsrk4"), ("2d", "navier-stokes-2d", 256, "rk4"))
    return {c[0]: _driver_case(*c, repeats, steps, diag_every, decompose) for c in cases}


def _segments(job: dict, state, dt: float, steps: int, diag_every: int) -> tuple[dict, int]:
    """``--decompose``: zero-argument timers of the step program (whole segments of the main job's length ``seg``,
    as many as fit in ``steps``, at least one) with a fixed dt and no rows, CFL control and no rows, CFL control and
    the rows, CFL control and rows without the spectrum; each from its own copy of ``state`` (the program donates
    it). Returns ``(timers, seg)``."""
    loop, control, synced = job["loop"], job["control"], job["synced"]
    fixed = Loop(loop.integ, FixedStep(dt), [], None, False, synced)  # the segment loop itself
    plain = Loop(loop.integ, control, [], None, False, synced)
    # rows without the spectrum (the resolution check's rows alone: the diagnostics' values, no shell binning)
    nospec = Loop(loop.integ, control, [ResolutionCheck(diag_every)], None, True, synced)
    seg = ROWS_PER_SEGMENT * diag_every  # the most steps of a segment with rows every diag_every steps

    def timer(program, force):
        box = [jax.tree.map(jnp.copy, state), None]  # state, clock (the controller's state and input in it)

        def go():
            if box[1] is None:
                box[1] = program.clock(box[0])[0]
            for _ in range(max(1, steps // seg)):
                box[0], out = program.run_segment(box[0], box[1], seg, math.inf, dt_force=force)
                box[1].step, box[1].t = box[1].step + out.steps, box[1].t + sum(out.dts)
        return go

    return {"segment_fixed": timer(fixed, dt), "segment_cfl": timer(plain, 0.0),
            "segment_rows": timer(loop, 0.0), "segment_rows_no_spectrum": timer(nospec, 0.0)}, seg


def _driver_case(name: str, eqname: str, n: int, integ_name: str, repeats: int, steps: int,
                 diag_every: int = 10, decompose: bool = False) -> dict:
    """One grid of :func:`driver`."""
    mesh = xfft.make_mesh("slab")
    cfg = RunConfig(equation=eqname, n=n, t_end=1e9, dtype="float32", integrator=integ_name, max_steps=steps,
                    diag_every=diag_every,
                    out=f"/tmp/xfft-bench-driver-{name}", overwrite=True, progress=False, plots=False,
                    params={"nu": 1e-3} if eqname == "navier-stokes-2d" else {})
    parts = solvers.build(cfg, mesh=mesh)
    grid, eq, integ = parts.grid, parts.equation, parts.integrator
    with jax.set_mesh(grid.mesh):
        # the main job's time loop: its controller, the rows of its diagnostics CSV and resolution check
        synced = host_control_flow(grid.mesh)
        control = parts.controller.resolve(integ, integ.stable_dt())
        outputs = [DiagnosticsCSV(cfg.out, every=diag_every), ResolutionCheck(diag_every)]
        loop = Loop(integ, control, outputs, None, True, synced)
        job = {"loop": loop, "control": control, "synced": synced}

        def run(state, clock: Clock | None, steps: int):
            """``steps`` steps of the main job's loop from ``clock`` (None: the initial state, with its row)."""
            step0, t0 = (0, 0.0) if clock is None else (clock.step, clock.t)
            saved = None if clock is None else loop.saved_controller(clock)
            for f in ("diagnostics.csv", "spectra.csv"):  # each call writes its own rows (no resume truncation)
                (Path(cfg.out) / f).unlink(missing_ok=True)
            info = RunInfo(eq, integ, control, t0, cfg.t_end, step0, step0 + steps, clock is not None, True,
                           loop.columns, loop.has_spectrum)
            return loop.run(state, info, None, saved)

        state, clock = run(parts.initial_state(), None, steps)  # compiles the segments
        bare = INTEGRATORS[integ_name](eq)
        dt = clock.dt
        box = {"state": state, "clock": clock, "bare": jax.block_until_ready(bare.advance(state, 0.0, dt, 1))}

        def main_job():
            box["state"], box["clock"] = run(box["state"], box["clock"], steps)

        def bare_step():
            box["bare"] = bare.advance(box["bare"], 0.0, dt, steps)

        cases = {"main": main_job, "bare": bare_step}
        seg = None
        if decompose:
            more, seg = _segments(job, box["bare"], dt, steps, diag_every)
            cases |= more
        samples = round_robin_samples(cases, repeats)
    t = {k: statistics.median(v) for k, v in samples.items()}
    ratio = paired_ratio(samples["main"], samples["bare"])
    row = {"equation": eqname, "n": n, "integrator": integ_name, "steps": steps, "repeats": repeats,
           "diag_every": diag_every,
           "main_job_ms_per_step": 1e3 * t["main"] / steps, "bare_ms_per_step": 1e3 * t["bare"] / steps,
           "main_over_bare": ratio["median"], "main_over_bare_q1": ratio["q1"], "main_over_bare_q3": ratio["q3"],
           "ratio_of_medians": t["main"] / t["bare"]}
    if decompose:  # segments of ``seg`` steps, as many as fit in ``steps`` (at least one)
        per = seg * max(1, steps // seg) / steps
        for k in ("segment_fixed", "segment_cfl", "segment_rows", "segment_rows_no_spectrum"):
            r = paired_ratio([v / per for v in samples[k]], samples["bare"])
            row |= {f"{k}_ms_per_step": 1e3 * t[k] / (seg * max(1, steps // seg)),
                    f"{k}_over_bare": r["median"], f"{k}_over_bare_q1": r["q1"], f"{k}_over_bare_q3": r["q3"]}
    print(json.dumps({name: row}), flush=True)
    return row


def plot(result: dict, path: Path, where: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, 2, i) for i in (1, 2)]
    panels = (("peer", "xfft_ms_per_step", "xfft solvers", "exponax_ms_per_step", "exponax",
               "ms per ETDRK4 step (median)", "one device, float64"),
              ("driver", "main_job_ms_per_step", "main job", "bare_ms_per_step", "bare step",
               "ms per step (median)", f"{where}, float32, CFL"))
    for ax, (part, k1, l1, k2, l2, ylabel, title) in zip(axes, panels):
        if part not in result:
            continue
        rows = result[part]
        xs = np.arange(len(rows))
        ax.bar(xs - 0.2, [v[k1] for v in rows.values()], 0.4, label=l1)
        ax.bar(xs + 0.2, [v[k2] for v in rows.values()], 0.4, label=l2)
        ax.set_xticks(xs, [f"{k} ({v['n']})" for k, v in rows.items()])
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend()
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--peer", action="store_true")
    p.add_argument("--driver", action="store_true")
    p.add_argument("--n2d", type=int, default=256)
    p.add_argument("--n3d", type=int, default=48)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--driver-steps", type=int, default=500, help="steps per timed call of --driver")
    p.add_argument("--diag-every", type=int, default=10, help="diagnostics rows of --driver (the main job's default)")
    p.add_argument("--decompose", action="store_true",
                   help="--driver: also the step program with a fixed dt, with CFL control, with rows")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--tag", default="", help="suffix of the output files, e.g. _gpu")
    a = p.parse_args()
    for flag, v in (("--driver-steps", a.driver_steps), ("--diag-every", a.diag_every), ("--repeats", a.repeats)):
        if v < 1:
            p.error(f"{flag} must be an integer >= 1, got {v}")
    if not (a.peer or a.driver):
        a.peer = a.driver = True
    a.out.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()[0]
    result = {}
    if a.peer:
        result["peer"] = peer(a.n2d, a.n3d, a.steps, a.repeats)
    if a.driver:
        result["driver"] = driver(a.repeats, a.driver_steps, a.diag_every, a.decompose)
    dev = jax.devices()[0]
    where = f"{jax.device_count()} {'CPU devices' if dev.platform == 'cpu' else dev.device_kind}"
    result["meta"] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
                      "machine": platform.machine(), "cpu_count": os.cpu_count(), "jax": jax.__version__,
                      "devices": jax.device_count(), "device_kind": dev.device_kind,
                      "load_average_1min_start_end": [load0, os.getloadavg()[0]]}
    stem = f"solver_step{a.tag}"
    (a.out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(result, a.out / f"{stem}.png", where)
    print(f"wrote {a.out / (stem + '.json')}")


if __name__ == "__main__":
    main()
