"""Where a main-job step's time goes on the devices: one segment of the step program under ``jax.profiler``.

Runs one compiled segment (:meth:`solvers.simulation.loop.Loop.run_segment`, CFL control, diagnostics rows every
``--diag-every`` steps, as ``python -m solvers run`` takes them) after a warm-up segment, traces it, and sums the
XLA CPU thunks of every device thread by kind: all-to-alls, all-reduces, FFTs, and the rest. Collectives include
the time a device waits there for the others (on 8 CPU devices sharing 2 cores, most of it). Prints, and writes
JSON and a PNG with ``--out``; times are per device thread, under the profiler (which slows the segment by about 20%).

Run: ``python benchmarks/profile_step.py [--equation navier-stokes-2d] [--n 256] [--integrator rk4]
[--steps 80] [--out DIR]``. Needs ``jax.profiler.ProfileData`` (jax 0.4.36 or later); CPU devices only (the
thunk names are XLA CPU's).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import math
import os
import platform
import re
import sys
import tempfile
from pathlib import Path

import _timing  # noqa: F401  (sets 8 CPU devices before JAX starts; benchmarks/ is the script's directory)
import jax  # noqa: E402

import solvers  # noqa: E402
import xfft  # noqa: E402
from solvers import DiagnosticsCSV, RunConfig  # noqa: E402
from solvers.simulation.loop import Loop  # noqa: E402
from solvers.stepping import host_control_flow  # noqa: E402

#: thunk kinds, by the HLO instruction name a thunk carries
KINDS = (("all-to-all", re.compile(r"^all-to-all(\.\d+)?$")), ("all-reduce", re.compile(r"^all-reduce(\.\d+)?$")),
         ("fft", re.compile(r"^fft(\.\d+)?$")))


def kind_of(name: str) -> str | None:
    """The kind of a thunk event (None: a container such as a while loop or conditional, or not a thunk)."""
    for kind, pattern in KINDS:
        if pattern.match(name):
            return kind
    if re.match(r"^[\w\-]+(\.\d+)?$", name) and not re.match(r"^(while|conditional|call)", name) \
            and name != "Rendezvous" and not name.startswith(("Wait", "ThunkExecutor", "InvokeRendezvous")):
        return "other"
    return None


def profile(equation: str, n: int, integrator: str, steps: int, diag_every: int) -> dict:
    """Per-device-thread milliseconds of one ``steps``-step segment, by thunk kind."""
    cfg = RunConfig(equation=equation, n=n, t_end=1e9, dtype="float32", integrator=integrator, max_steps=1,
                    diag_every=diag_every, out=tempfile.mkdtemp(prefix="xfft-profile-"), overwrite=True,
                    progress=False, plots=False)
    parts = solvers.build(cfg, mesh=xfft.make_mesh("slab"))
    grid, integ = parts.grid, parts.integrator
    with jax.set_mesh(grid.mesh):
        # the main job's step program: its controller, the rows of its diagnostics CSV
        control = parts.controller.resolve(integ, integ.stable_dt())
        loop = Loop(integ, control, [DiagnosticsCSV(cfg.out, every=diag_every)], None, True,
                    host_control_flow(grid.mesh))
        state = parts.initial_state()

        clock = loop.clock(state)[0]  # step 0 at t = 0: rows after the segment's steps diag_every, ...
        state, _ = loop.run_segment(state, clock, 1, math.inf)  # the first step (the CFL dt chosen)
        clock = loop.clock(state)[0]
        state, _ = loop.run_segment(state, clock, steps, math.inf)  # compiles
        with tempfile.TemporaryDirectory() as d:
            jax.profiler.start_trace(d)
            state, seg = loop.run_segment(state, loop.clock(state)[0], steps, math.inf)
            jax.profiler.stop_trace()
            data = jax.profiler.ProfileData.from_file(str(next(Path(d).rglob("*.xplane.pb"))))
            total: dict[str, float] = collections.defaultdict(float)
            threads = set()
            for plane in data.planes:
                for line in plane.lines:
                    if not line.name.startswith("tf_XLAEigen"):  # the device threads of XLA CPU
                        continue
                    end = -1  # the outermost program executions: the thread's time in the segment
                    for ev in sorted(line.events, key=lambda e: (e.start_ns, -e.duration_ns)):
                        if ev.name == "ThunkExecutor::Execute" and ev.start_ns >= end:
                            threads.add(line.name)
                            total["program"] += ev.duration_ns
                            end = ev.end_ns
                        k = kind_of(ev.name)
                        if k is not None:
                            total[k] += ev.duration_ns
    assert seg.steps == steps, seg.steps
    per = {k: v / 1e6 / max(1, len(threads)) for k, v in total.items()}
    out = {"equation": equation, "n": n, "integrator": integrator, "steps": steps, "diag_every": diag_every,
           "device_threads": len(threads), "ms_per_thread": per,
           "share": {k: per[k] / per["program"] for k in per if k != "program"}}
    print(json.dumps(out), flush=True)
    return out


def plot(prof: dict, path: Path) -> None:
    """One horizontal bar: the share of the segment's device-thread time of each thunk kind."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 2.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    left = 0.0
    for kind, share in sorted(prof["share"].items(), key=lambda kv: -kv[1]):
        ax.barh([0], [100 * share], left=[left], label=f"{kind} {100 * share:.0f}%")
        left += 100 * share
    ax.set_xlim(0, 100)
    ax.set_yticks([])
    ax.set_xlabel("% of each device thread's time in the segment")
    ax.set_title(f"{prof['equation']} {prof['n']}, {prof['integrator']}, {prof['steps']} steps, "
                 f"{prof['device_threads']} CPU devices")
    fig.legend(ncols=4, fontsize=8, loc="outside lower center")
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--equation", default="navier-stokes-2d")
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--integrator", default="rk4")
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--diag-every", type=int, default=10)
    p.add_argument("--out", type=Path, default=None, help="folder for profile_step.json (default: print only)")
    a = p.parse_args(argv)
    if jax.default_backend() != "cpu":
        p.error("the thunk kinds are XLA CPU's: run on CPU devices")
    for flag, v in (("--n", a.n), ("--steps", a.steps), ("--diag-every", a.diag_every)):
        if v < 1:
            p.error(f"{flag} must be a positive integer, got {v}")
    load0 = os.getloadavg()[0]
    prof = profile(a.equation, a.n, a.integrator, a.steps, a.diag_every)
    result = {"machine": {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                          "machine": platform.machine(), "cpu_count": os.cpu_count(), "jax": jax.__version__,
                          "devices": jax.device_count(), "load_average_1min_start_end": [load0, os.getloadavg()[0]]},
              "profile": prof}
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "profile_step.json").write_text(json.dumps(result, indent=2) + "\n")
        plot(prof, a.out / "profile_step.png")
        print(f"wrote {a.out / 'profile_step.json'} and profile_step.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
