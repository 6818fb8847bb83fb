"""The command line: run as users run it (subprocesses with hard deadlines) for a real run with plots and the default
8 CPU devices, resume, the local launcher and bad input (exit 2 before any compute); its entry point
(``solvers.cli.main``, what ``python -m solvers`` calls) in this process for list, every bad input and blow-up
(exit 3), which need no fresh process."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from solvers.cli import main
from solvers.io import read_csv

ROOT = Path(__file__).resolve().parents[2]
RUN = ["run", "navier-stokes", "--ic", "taylor-green", "--n", "16", "--dtype", "float64"]


def _env(keep_device_flags: bool = True) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if not keep_device_flags:  # what a user's shell looks like: nothing configures the devices
        # (the suite's compile options stay: they change how fast XLA compiles, not the devices, and the
        # programs then come from the suite's compilation cache)
        flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "", env.get("XLA_FLAGS", "")).split()
        env["XLA_FLAGS"] = " ".join(flags)
        env.pop("JAX_NUM_CPU_DEVICES", None)
    return env


def cli(*args, timeout=180, env=None, module=("-m", "solvers")):
    return subprocess.run([sys.executable, *module, *args], cwd=ROOT, env=env or _env(), capture_output=True,
                          text=True, timeout=timeout)


def test_list_names_everything_on_offer(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("navier-stokes", "taylor-green", "abc", "random-isotropic", "poisson", "rk4", "etdrk4", "ifrk4",
                 "imex", "slab", "pencil", "2/3", "3/2"):
        assert name in out


@pytest.mark.parametrize(("args", "message"), [
    (["run", "euler"], "unknown equation 'euler'; available: navier-stokes"),
    (["run", "navier-stokes", "--ic", "vortex-ring"], "unknown initial condition 'vortex-ring'"),
    (RUN + ["--nu", "-0.1"], "parameter nu (--nu or --re) must be a number >= 0"),
    (RUN + ["--re", "-5"], "--re must be a positive number"),
    (["run", "navier-stokes", "--n", "12", "--dealias", "none"], "mesh of 8 devices cannot hold a 12^3 grid"),
    (RUN + ["--integrator", "euler"], "unknown integrator 'euler'"),
    (RUN + ["--integrator", "split-step"], "--integrator split-step cannot advance navier-stokes"),
    (RUN + ["--param", "nu"], "--param expects KEY=VALUE"),
    (RUN + ["--param", "gamma=2"], "navier-stokes takes no parameter 'gamma'; its parameters: forcing_epsilon, nu; "
     "initial condition taylor-green: v0"),
    (RUN + ["--out", "FILE/sub"], "is not writable"),
])
def test_bad_input_exits_2_before_any_compute(tmp_path, capsys, args, message):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    args = [a.replace("FILE", str(blocker)) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out" / "diagnostics.csv").exists() and not (tmp_path / "out" / "checkpoints").exists()


def test_bad_input_from_the_shell_exits_2_in_one_line(tmp_path):
    """The same as a user's shell sees it: ``python -m solvers`` exits 2, one line, no traceback."""
    r = cli(*RUN, "--integrator", "euler", "--out", str(tmp_path / "out"), timeout=90)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "unknown integrator 'euler'" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out" / "diagnostics.csv").exists()


def test_run_plots_resume_and_the_local_launcher(tmp_path):
    out = tmp_path / "tgv"
    r = cli(*RUN, "--t-end", "0.2", "--dt", "0.05", "--out", str(out), "--diag-every", "1", env=_env(False))
    assert r.returncode == 0, r.stderr
    assert "done: 4 steps to t = 0.2" in r.stdout and "E=" in r.stderr  # summary line and progress bar
    info = json.loads((out / "run.json").read_text())
    # the CLI makes 8 CPU devices and runs a grid this small (4096 points) on one of them, saying why
    assert info["devices"] == 1 and info["mesh"] == {"x": 1}, info
    assert "grid too small to gain from 8" in info["mesh_note"] and "mesh: 1 device" in r.stdout
    for png in ("energy.png", "spectrum.png", "vorticity.png", "summary.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = read_csv(out / "diagnostics.csv")
    assert [int(r["step"]) for r in rows] == [0, 1, 2, 3, 4] and float(rows[0]["energy"]) == 0.125
    mp = tmp_path / "mp"
    shutil.copytree(out, mp)  # the single-process run's checkpoint (step 4, t = 0.2), for the launcher below
    # --resume continues the same run further (on the same 1-device mesh: the programs come from the cache)
    r = cli(*RUN, "--t-end", "0.3", "--dt", "0.05", "--out", str(out), "--diag-every", "1", "--resume",
            "--no-plots", "--no-progress", env=_env(False))
    assert r.returncode == 0, r.stderr
    assert [int(r["step"]) for r in read_csv(out / "diagnostics.csv")] == [0, 1, 2, 3, 4, 5, 6]
    # The same command under the local launcher (2 processes x 4 CPU devices) resumes the checkpoint written by
    # 1 process x 8 devices and gives the same numbers.
    r = cli("-n", "2", "--devices-per-process", "4", "--timeout", "200", "-m", "solvers", *RUN, "--t-end", "0.3",
            "--dt", "0.05", "--out", str(mp), "--diag-every", "1", "--resume", "--no-progress", "--no-plots",
            module=("-m", "xfft.launch"), env=_env(False), timeout=240)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert json.loads((mp / "run.json").read_text())["processes"] == 2
    single, multi = read_csv(out / "diagnostics.csv"), read_csv(mp / "diagnostics.csv")
    assert [int(r["step"]) for r in multi] == [0, 1, 2, 3, 4, 5, 6]
    for a, b in zip(single, multi, strict=True):
        for col in ("t", "energy", "enstrophy"):
            assert float(b[col]) == pytest.approx(float(a[col]), rel=1e-13)


def test_blow_up_exits_3_naming_step_and_time(tmp_path, capsys):
    out = tmp_path / "boom"
    # the run of test_solver_run.py's blow-up test (the same programs), from the command line
    code = main(["run", "navier-stokes", "--ic", "random-isotropic", "--energy", "50", "--k0", "3", "--n", "16",
                 "--nu", "0", "--dtype", "float64", "--integrator", "rk4", "--dt", "0.5", "--t-end", "100",
                 "--diag-every", "2", "--checkpoint-every", "1", "--keep", "5", "--out", str(out), "--no-progress",
                 "--no-plots"])
    err = capsys.readouterr().err
    assert code == 3, err
    line = err.strip().splitlines()[-1]
    assert "blow-up: the solution became NaN/inf at step" in line and "(t = " in line
    step = int(line.split("at step ")[1].split()[0])
    assert f"last good checkpoint: step {step - 1}" in line
    kept = sorted(int(p.name) for p in (out / "checkpoints").iterdir() if p.name.isdigit())
    assert kept[-1] == step - 1
    assert np.isfinite([float(r["energy"]) for r in read_csv(out / "diagnostics.csv")]).all()
