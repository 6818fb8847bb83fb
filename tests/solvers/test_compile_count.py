"""A run compiles each of its programs once: at most 12 XLA programs for a whole command-line run (initial
condition, first row, coefficients, the step program that also lands, checkpoints, snapshots, plots), counted with
``JAX_LOG_COMPILES=1`` in a fresh process that starts with an empty persistent cache of its own; ``--dry-run``
compiles nothing. JAX logs a program loaded from the persistent cache as it logs a compiled one, so a resumed run,
which loads what the first run stored, is counted the same way without compiling it again."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 12


def _programs(args, cwd) -> tuple[list[str], str]:
    """The programs a CLI run in ``cwd`` compiles or loads, and its output. The persistent cache is ``cwd/jax``
    (every program stored, however fast it compiled): empty for a first run, what the first stored for a resume."""
    env = {**os.environ, "JAX_LOG_COMPILES": "1", "XFFT_COMPILATION_CACHE": "0",
           "JAX_ENABLE_COMPILATION_CACHE": "true", "JAX_COMPILATION_CACHE_DIR": str(Path(cwd) / "jax"),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("JAX_COMPILATION_CACHE_MAX_SIZE", None)
    p = subprocess.run([sys.executable, "-m", "solvers", "run", *args, "--no-progress"], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return re.findall(r"Finished XLA compilation of (\S+)", p.stderr), p.stdout


# One equation (each run is a fresh process that compiles every program): a periodic 2D flow under CFL control with
# spectra in transposed order (checkpoints convert), checkpoints, snapshots and plots, and its resume. (A wall flow's
# run, fixed dt, float64, was a second case; its programs are the same kinds: initial condition, rows,
# coefficients, the step program, checkpoints, snapshots, plots.)
ARGS = ["navier-stokes-2d", "--n", "16", "--t-end", "0.3", "--checkpoint-every", "3", "--snapshot-every", "3"]


def test_a_run_compiles_at_most_twelve_programs(tmp_path):
    args = ARGS
    programs, out = _programs([*args, "--out", "run"], tmp_path)
    assert "done:" in out
    assert len(programs) <= LIMIT, programs
    assert programs.count("jit(program)") == 1  # one step program: the landing step is the same program
    again, _ = _programs([*args, "--out", "run", "--resume", "--t-end", "0.6"], tmp_path)
    assert len(again) <= LIMIT, again
    assert any((tmp_path / "jax").iterdir())  # the first run stored its programs; the resume loaded them


def test_dry_run_compiles_nothing(tmp_path):
    programs, out = _programs(["channel", "--n", "33", "16", "16", "--dry-run"], tmp_path)
    assert "dry run" in out and programs == []


def test_a_particle_run_with_its_plot_panels_compiles_each_program_once(tmp_path):
    """A comoving N-body run draws a phase space and a power spectrum of its first and last states: their programs
    (the subsample, the contrast, the shell sums) compile once each, shared by both states (the contrast had been
    compiled twice, once per state)."""
    programs, out = _programs(["comoving-nbody", "--n", "16", "8", "--ic", "gaussian", "--t-end", "0.15",
                               "--out", "run"], tmp_path)
    assert "done: 5 steps to a = 0.15" in out
    assert len(programs) == len(set(programs)) and len(programs) <= LIMIT, programs
    assert {"jit(_subsample)", "jit(_contrast)", "jit(_shell_sums)"} <= set(programs), programs
