"""The main job from Python: ``solvers.build`` (the parts a run uses), ``solvers.run`` from a given state with the
compilation cache turned on, and the default mesh of small grids on the virtual CPU devices a process made."""

import json
import re
import sys

import jax
import numpy as np
import pytest

import solvers
from solvers.outputs import read_csv

RUN = sys.modules["solvers.job.run"]
BUILD = sys.modules["solvers.job.build"]


def test_build_gives_the_runs_parts_and_run_starts_from_a_given_state(tmp_path, monkeypatch):
    cfg = solvers.RunConfig(equation="navier-stokes-2d", n=16, dt=0.01, t_end=0.02, out=str(tmp_path / "run"),
                            progress=False, plots=False, dtype="float64", diag_every=1)
    parts = solvers.build(cfg)
    assert isinstance(parts, solvers.Built) and parts.grid.shape == (16, 16) and parts.ic == "taylor-green"
    assert type(parts.integrator).__name__ == "RK4" and parts.controller == solvers.FixedStep(0.01)
    assert not (tmp_path / "run").exists()  # building writes nothing
    y0 = jax.tree.map(lambda a: 0.5 * a, parts.initial_state())
    e0 = float(jax.jit(parts.equation.energy)(parts.initial_state()))
    cached = []
    monkeypatch.setattr(RUN, "enable_compilation_cache", lambda: cached.append(True))
    message = "y0: expected arrays [((8, 16), 'complex128')] (the equation's state on its grid), got [((8, 8), "
    with pytest.raises(ValueError, match=re.escape(message)):
        solvers.run(cfg, y0=np.zeros((8, 8), complex), compile_cache=False)
    assert cached == []
    summary = solvers.run(cfg, y0=y0)
    assert cached == [True]  # as python -m solvers run: the persistent compilation cache on
    rows = read_csv(tmp_path / "run" / "diagnostics.csv")
    assert summary["steps"] == 2 and float(rows[0]["energy"]) == pytest.approx(0.25 * e0, rel=1e-14)


@pytest.fixture
def made_here(monkeypatch):
    """The process's 8 CPU devices as if it had made them itself (what ``python -m solvers run`` does; the tests'
    come from ``XLA_FLAGS``)."""
    monkeypatch.setattr(BUILD, "_made_here", lambda n: True)


def test_small_grids_run_on_fewer_of_the_virtual_devices(tmp_path, made_here, capsys):
    def parts(equation, n):
        return solvers.build(solvers.RunConfig(equation=equation, n=n, out=str(tmp_path / "x")))

    assert solvers.job.MIN_POINTS_PER_DEVICE == 32768
    small = parts("channel", (9, 8))
    assert small.grid.mesh.size == 1
    assert small.mesh_note == "1 device (grid too small to gain from 8: 72 points, under 32768 per device)"
    assert parts("navier-stokes", 32).grid.mesh.size == 1  # 32768 points: 16384 a device on 2
    assert parts("navier-stokes-2d", (256, 256)).grid.mesh.size == 2
    big = parts("navier-stokes", 64)
    assert big.grid.mesh.size == 8 and big.mesh_note is None
    cfg = solvers.RunConfig(equation="navier-stokes-2d", n=16, dt=0.01, max_steps=1, out=str(tmp_path / "run"),
                            progress=False, plots=False)
    summary = solvers.run(cfg, compile_cache=False)
    note = "1 device (grid too small to gain from 8: 256 points, under 32768 per device)"
    assert f"navier-stokes-2d: mesh: {note}" in capsys.readouterr().out
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["mesh"] == {"x": 1} and summary["mesh_note"] == note


def test_configured_devices_are_used_as_they_are(tmp_path):
    """Devices configured outside the process (here ``XLA_FLAGS``, as the tests run) are all used."""
    parts = solvers.build(solvers.RunConfig(equation="channel", n=(9, 8), out=str(tmp_path)))
    assert parts.grid.mesh.size == 8 and parts.mesh_note is None


def test_a_dry_run_compiles_nothing_and_bounds_the_memory(tmp_path, made_here, monkeypatch):
    """A grid that does not trivially fit: the state's size and the per-point bound, not a probe's compile."""
    monkeypatch.setattr(BUILD, "check_memory", lambda *a, **k: pytest.fail("compiled a probe"))
    info = solvers.dry_run(solvers.RunConfig(equation="channel", preset="re-tau-180", out=str(tmp_path / "x")))
    assert info["mesh"] == {"x": 8} and "mesh_note" not in info
    assert info["memory"].startswith("between 4.0") and "(the state) and 4.03 GiB per device" in info["memory"]
