"""A user-defined equation (2D Kuramoto-Sivashinsky in a module outside the package, with its ``RunSpec``) through
the main job (``solvers.run``) and the command line (``python -m solvers run mykse:SPEC``, through its entry point
``solvers.cli.main`` in this process: it finds the module in the current directory itself): diagnostics,
checkpoints, plots, resume, an output's stop times."""

import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import solvers
from solvers import RunConfig, run
from solvers.cli import main
from solvers.io import Checkpoints, read_csv

KS = Path(__file__).with_name("ks_equation.py")
L = 32 * math.pi


def _cfg(out, **kw):
    base = dict(equation="mykse:SPEC", n=(32, 32), box_length=L, dt=0.5, t_end=4.0,
                dtype="float64", diag_every=1, checkpoint_every=3, out=str(out), progress=False, plots=False,
                params={"amplitude": 0.5})
    base.update(kw)
    return RunConfig(**base)


def test_user_equation_simulate_cli_and_resume(tmp_path, monkeypatch, meshes, capsys):
    shutil.copy(KS, tmp_path / "mykse.py")  # the user's own file, in the user's own directory
    monkeypatch.chdir(tmp_path)
    # the command line puts the current directory on the path itself, as ``python -m`` does; what it adds goes
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    # the command line, stopped after 4 steps (its programs are the main job's below: one compile for both) ...
    code = main(["run", "mykse:SPEC", "--n", "32", "32", "--box-length", str(L), "--dt", "0.5", "--t-end", "4",
                 "--dtype", "float64", "--diag-every", "1", "--checkpoint-every", "3", "--param", "amplitude=0.5",
                 "--max-steps", "4", "--out", "part", "--no-progress", "--no-plots"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "done: 4 steps" in out.out
    # the main job, the whole run, with plots
    full = run(_cfg(tmp_path / "full", plots=True), mesh=meshes["slab"])
    assert full["steps"] == 8 and full["physics"]["equation"] == "mykse:SPEC"
    assert full["physics"]["integrator"] == "etdrk4" and full["physics"]["params"] == {"alpha": 1.0, "amplitude": 0.5}
    rows = read_csv(tmp_path / "full" / "diagnostics.csv")
    assert [int(r["step"]) for r in rows] == list(range(9))
    e = np.array([float(r["energy"]) for r in rows])
    assert np.all(np.isfinite(e)) and e[-1] > e[0]  # the k < 1 band is linearly unstable: KS grows first
    assert (tmp_path / "full" / "energy.png").read_bytes()[:4] == b"\x89PNG"
    assert Checkpoints(tmp_path / "full" / "checkpoints").steps() == [6, 8]
    # ... and resumed through the main job: every digit of every row equals the uninterrupted run's
    rest = run(_cfg(tmp_path / "part", resume=True), mesh=meshes["slab"])
    assert rest["steps"] == 8 and rest["steps_this_run"] == 4
    assert (tmp_path / "part" / "diagnostics.csv").read_bytes() == (tmp_path / "full" / "diagnostics.csv").read_bytes()
    # an output of the run (the protocol snapshot writers use): exact landing on requested times, every step seen
    class Stops(solvers.Output):
        def __init__(self):
            self.seen, self.closed = [], False

        def stop_time(self, t):
            return next((s for s in (1.2, 2.9) if s > t), None)

        def next_step(self, step):  # every step's state
            return step + 1

        def start(self, run, event):
            self.on_event(event)

        def on_event(self, event):
            self.seen.append((event.step, event.t, event.last, float(np.abs(np.asarray(event.state)).max())))

        def close(self):
            self.closed = True

    hook = Stops()
    s = run(_cfg(tmp_path / "hook"), mesh=meshes["slab"], outputs=[hook])
    times = [t for _, t, _, _ in hook.seen]
    assert times == [0.0, 0.5, 1.0, 1.2, 1.7, 2.2, 2.7, 2.9, 3.4, 3.9, 4.0] and s["t"] == 4.0
    assert [st for st, *_ in hook.seen] == list(range(11)) and [la for _, _, la, _ in hook.seen][-2:] == [False, True]
    assert hook.closed and all(np.isfinite(m) for *_, m in hook.seen)
    with pytest.raises(ValueError, match="alpha: checkpoint 1.0 vs now 2.0"):
        run(_cfg(tmp_path / "part", resume=True, params={"amplitude": 0.5, "alpha": 2.0}), mesh=meshes["slab"])
