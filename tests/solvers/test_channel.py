"""Plane channel flow (Chebyshev tau in y, Fourier in x, z): laminar Poiseuille flow steady to round-off on every
mesh and drive, a Tollmien-Schlichting wave growing at the Orr-Sommerfeld rate through the main job, sharded runs equal
to one device, bit-identical resume, and the bad inputs."""

import shutil
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import xfft
from solvers import IMEX, RunConfig, run
from solvers.cli import main
from solvers.equations.channel import LAMINAR_BULK, Channel
from solvers.io import Checkpoints, read_csv

sys.path.insert(0, str(Path(__file__).parent))
from _walls import energy_rate, fields_and_diagnostics, max_change_and_diagnostics, wall_flow  # noqa: E402


def _channel(shape, mesh, dealias="2/3", **params):
    return wall_flow(Channel, shape, mesh, dealias, **params)


@pytest.mark.parametrize("shape,kind", [((17, 8), "slab"), ((17, 16, 16), "pencil")])
def test_laminar_poiseuille_flow_is_steady_to_round_off(meshes, shape, kind):
    """U = 1 - y^2 under both drives stays put (coefficients to 1e-15): energy 4/15, bulk velocity 2/3, wall
    shear 2 nu on both walls, no perturbation energy."""
    for drive in ("flow-rate", "pressure"):
        eq = _channel(shape, meshes[kind], Re=100.0, drive=drive)
        s0 = eq.initial_state("laminar")
        s1 = IMEX(eq).advance(s0, 0.0, 0.01, 10)
        change, d = max_change_and_diagnostics(eq, s1, s0)
        assert change < 1e-14
        assert abs(d["energy"] - 4 / 15) < 1e-14 and abs(d["bulk_velocity"] - LAMINAR_BULK) < 1e-14
        assert abs(d["wall_shear_bottom"] - 0.02) < 1e-14 and abs(d["wall_shear_top"] - 0.02) < 1e-14
        assert d["perturbation_energy"] < 1e-28


def test_sharded_runs_equal_one_device(meshes):
    """A 3D random perturbation of laminar flow (constant flow rate, 3/2 dealiasing in every direction), 4 IMEX
    steps: the velocity of a pencil run equals the one-device run's to 1e-12 (measured 6.5e-15 on 9x16x8, 1.5e-14
    on 17x16x16; the raw coefficients of ``lap v`` differ by 1e-12 of their largest, round-off amplified by the
    stiff solves); the flow rate stays at 2/3. (9x16x8: both periodic axes sharded; the fields transformed one at
    a time, as on a large grid, where a grid this small would transform them together. A slab shards one of
    them: the 2D runs on 8 devices, tests/solvers/test_grid_points.py and the laminar flows here.)"""
    out = {}
    for kind in ("single", "pencil"):
        eq = _channel((9, 16, 8), None if kind == "single" else meshes[kind], dealias="3/2", Re=2000.0)
        eq.kmm.batched = False  # one field at a time, as large grids transform them (Couette's test: together)
        s = IMEX(eq).advance(eq.initial_state("turbulent", amplitude=0.2, seed=3), 0.0, 5e-3, 4)
        out[kind], d = fields_and_diagnostics(eq, s)
        assert abs(d["bulk_velocity"] - LAMINAR_BULK) < 1e-13
    for name, ref in out["single"].items():
        assert np.max(np.abs(out["pencil"][name] - ref)) < 1e-12 * np.max(np.abs(ref)), name


def test_resume_is_bit_identical_and_restores_on_another_mesh(tmp_path):
    """Ten steps straight, or five, a checkpoint, and five more after --resume: the same CSV, byte for byte; the
    step-5 checkpoint (written on the 8-device slab mesh) also continues on a 2-device mesh, to the straight run's
    diagnostics within round-off (2D: the driver's path is the same in 3D, whose compile would triple the test's
    time)."""
    common = ["run", "channel", "--ic", "turbulent", "--n", "9", "8", "--dtype", "float64", "--dt", "0.01",
              "--param", "Re=1000", "--diag-every", "1", "--no-progress", "--no-plots", "--t-end", "0.1"]
    assert main(common + ["--out", str(tmp_path / "a")]) == 0
    assert main(common + ["--max-steps", "5", "--out", str(tmp_path / "b")]) == 0
    shutil.copytree(tmp_path / "b", tmp_path / "c")
    assert main(common + ["--resume", "--out", str(tmp_path / "b")]) == 0
    a, b = ((tmp_path / d / "diagnostics.csv").read_bytes() for d in "ab")
    assert a == b and len(a.splitlines()) == 12
    two = xfft.make_mesh((2,), devices=jax.devices()[:2])
    cfg = RunConfig(equation="channel", ic="turbulent", n=(9, 8), dtype="float64", dt=0.01, t_end=0.1,
                    params={"Re": 1000.0}, diag_every=1, progress=False, plots=False, resume=True,
                    out=str(tmp_path / "c"))
    other = run(cfg, mesh=two)
    assert other["steps"] == 10 and other["mesh"] == {"x": 2}
    ra, rc = read_csv(tmp_path / "a" / "diagnostics.csv"), read_csv(tmp_path / "c" / "diagnostics.csv")
    assert [r["step"] for r in rc] == [r["step"] for r in ra]
    for x, y in zip(ra[6:], rc[6:]):  # the rows written on the other mesh
        for col in ("energy", "perturbation_energy", "bulk_velocity", "wall_shear_bottom", "wall_shear_top"):
            assert float(y[col]) == pytest.approx(float(x[col]), rel=1e-12, abs=1e-15), col


def test_2d_checkpoint_of_the_full_spectrum_resumes(tmp_path, monkeypatch):
    """2D wall grids hold a half spectrum of their periodic axis; a checkpoint written when they held all ``nx``
    coefficients (forced here: the grid built with ``real_last=False``) resumes on the half spectrum, and the run
    ends where the uninterrupted run ends, to rounding."""
    import solvers.grids.walls as walls

    cfg = dict(equation="channel", ic="tollmien-schlichting", n=(9, 16), dtype="float64", dt=0.01, t_end=0.1,
               params={"Re": 2000.0}, diag_every=1, progress=False, plots=False)
    mesh = xfft.make_mesh((1,), devices=jax.devices()[:1])  # the conversion is the same on any mesh
    full = run(RunConfig(out=str(tmp_path / "a"), **cfg), mesh=mesh)
    periodic_bases = walls.periodic_bases
    with monkeypatch.context() as m:
        m.setattr(walls, "periodic_bases", lambda *a, **k: periodic_bases(*a, **{**k, "real_last": False}))
        part = run(RunConfig(out=str(tmp_path / "b"), max_steps=5, **cfg), mesh=mesh)
    store = Checkpoints(tmp_path / "b" / "checkpoints")
    state, _ = store.restore(5, jax.ShapeDtypeStruct((1, 9, 16), np.complex128))  # all 16 coefficients stored
    store.close()
    assert part["steps"] == 5 and np.abs(np.asarray(state)[0, :, 9:]).max() > 0
    rest = run(RunConfig(out=str(tmp_path / "b"), resume=True, **cfg), mesh=mesh)
    assert rest["steps"] == full["steps"] == 10
    ra, rb = read_csv(tmp_path / "a" / "diagnostics.csv"), read_csv(tmp_path / "b" / "diagnostics.csv")
    for x, y in zip(ra[6:], rb[6:]):  # the rows after the resume
        for col in ("energy", "perturbation_energy", "wall_shear_bottom"):
            assert float(y[col]) == pytest.approx(float(x[col]), rel=1e-12, abs=1e-300), col


@pytest.mark.parametrize("argv,message", [
    (["--n", "17", "8", "--integrator", "rk4"], "--integrator rk4 cannot advance channel"),
    (["--n", "17", "8", "--param", "drive=suction"], "drive"),
    (["--n", "17", "8", "--box-length", "3", "6.28"], "the wall-normal box"),
    (["--n", "4", "8"], "NY >= 5"),
    (["--n", "17", "7"], "even"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    args = ["run", "channel", *argv, "--dtype", "float64", "--no-progress", "--no-plots", "--out", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_tollmien_schlichting_growth_rate_through_the_main_job(tmp_path):
    """Re = 10000, alpha = 1 (box 2 pi), 65 Chebyshev points, amplitude 1e-5 (linear): the perturbation energy
    grows as exp(2 alpha c_i t), c = 0.23752649 + 0.00373967 i (Orszag 1971), measured from the diagnostics
    CSV of the main job between t = 10 and t = 20 to 5 significant digits. (The README's command,
    ``channel --ic tollmien-schlichting --n 65 8 ...``, on one device: 1000 steps of one streamwise mode per device
    are latency on 8; the command line's own path is the resume and bad-input tests'.)"""
    out = tmp_path / "ts"
    cfg = RunConfig(equation="channel", ic="tollmien-schlichting", n=(65, 8), params={"Re": 10000.0},
                    dtype="float64", dt=0.02, t_end=20.0, diag_every=250, out=str(out), progress=False, plots=False)
    run(cfg, mesh=xfft.make_mesh((1,), devices=jax.devices()[:1]))
    rate = energy_rate(out, 10.0, 20.0)
    exact = 2 * 1.0 * 0.00373967
    assert abs(rate / exact - 1) < 5e-6, rate  # measured: 0.00747934 (2e-7 from the 9-digit eigenvalue)
