"""Plane channel flow (Chebyshev tau in y, Fourier in x, z): laminar Poiseuille flow steady to round-off on a pencil
mesh, a Tollmien-Schlichting wave growing at the Orr-Sommerfeld rate through the main job under the pressure drive
(which holds the laminar mean flow), sharded runs equal to one device, bit-identical resume, a full-spectrum
checkpoint resumed on another mesh, and the bad inputs."""

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
from _walls import energy_rate, fields_and_diagnostics, wall_flow  # noqa: E402

#: the 3D runs: 9x16x8, both periodic axes sharded on the pencil mesh, 3/2 dealiasing in every direction, 4 IMEX
#: steps of 5e-3 (one compiled loop per mesh, shared by the laminar and the sharded tests)
SHAPE_3D, STEPS_3D, DT_3D = (9, 16, 8), 4, 5e-3


def _channel(shape, mesh, dealias="2/3", **params):
    return wall_flow(Channel, shape, mesh, dealias, **params)


@pytest.fixture(scope="module")
def flows(meshes):
    """``flows(kind)``: the 3D channel (flow-rate drive, Re = 2000) on ``single`` or ``pencil`` and its IMEX
    integrator, built once per mesh (the fields transformed one at a time, as large grids transform them; Couette's
    test transforms them together)."""
    cache = {}

    def get(kind):
        if kind not in cache:
            eq = _channel(SHAPE_3D, meshes[kind], dealias="3/2", Re=2000.0)
            eq.kmm.batched = False
            cache[kind] = eq, IMEX(eq)
        return cache[kind]

    return get


# 3D on the pencil mesh with the flow-rate drive (the sharded test's equation and loop). The pressure drive (the drives
# differ only in the mean flow's solve, the same code in 2D and 3D) holds the laminar mean flow in the
# Tollmien-Schlichting run below; 2D on the slab mesh: the resume tests' runs.
def test_laminar_poiseuille_flow_is_steady_to_round_off(flows):
    """U = 1 - y^2 stays put (coefficients to 1e-15 of the state): energy 4/15, bulk velocity 2/3, wall shear
    2 nu on both walls, no perturbation energy."""
    eq, integ = flows("pencil")
    assert eq.drive == "flow-rate"
    s0 = eq.initial_state("laminar")
    s1 = integ.advance(s0, 0.0, DT_3D, STEPS_3D)
    _, d = fields_and_diagnostics(eq, s1)
    assert np.max(np.abs(np.asarray(s1) - np.asarray(s0))) < 1e-14  # (on the host: no program to compile)
    nu = 1.0 / eq.Re
    assert abs(d["energy"] - 4 / 15) < 1e-14 and abs(d["bulk_velocity"] - LAMINAR_BULK) < 1e-14
    assert abs(d["wall_shear_bottom"] - 2 * nu) < 1e-14 and abs(d["wall_shear_top"] - 2 * nu) < 1e-14
    assert d["perturbation_energy"] < 1e-28


def test_sharded_runs_equal_one_device(flows):
    """A 3D random perturbation of laminar flow (constant flow rate, 3/2 dealiasing in every direction; built on
    one device and placed on each mesh), 4 IMEX steps: the velocity of a pencil run equals the one-device run's
    to 1e-12 (measured 6.5e-15 on 9x16x8, 1.5e-14
    on 17x16x16; the raw coefficients of ``lap v`` differ by 1e-12 of their largest, round-off amplified by the
    stiff solves); the flow rate stays at 2/3. (9x16x8: both periodic axes sharded; the fields transformed one at
    a time, as on a large grid, where a grid this small would transform them together. A slab shards one of
    them: the 2D runs on 8 devices, tests/solvers/test_grid_points.py and the laminar flows here.)"""
    out = {}
    s0 = np.asarray(flows("single")[0].initial_state("turbulent", amplitude=0.2, seed=3))  # built once, placed
    for kind in ("single", "pencil"):
        eq, integ = flows(kind)
        s = integ.advance(jax.device_put(s0, eq.abstract_state().sharding), 0.0, DT_3D, STEPS_3D)
        out[kind], d = fields_and_diagnostics(eq, s)
        assert abs(d["bulk_velocity"] - LAMINAR_BULK) < 1e-13
    for name, ref in out["single"].items():
        assert np.max(np.abs(out["pencil"][name] - ref)) < 1e-12 * np.max(np.abs(ref)), name


#: the main job's runs of the resume tests: 2D, ten steps of 0.01, a row every step, a checkpoint at steps 5 and 10
RESUME = dict(equation="channel", ic="turbulent", n=(9, 16), dtype="float64", dt=0.01, t_end=0.1,
              params={"Re": 1000.0}, diag_every=1, checkpoint_every=5, progress=False, plots=False)
#: what the rows written after a resume on another mesh (or from another layout) must match, to round-off
COLUMNS = ("energy", "perturbation_energy", "bulk_velocity", "wall_shear_bottom", "wall_shear_top")


@pytest.fixture(scope="module")
def straight(tmp_path_factory, meshes):
    """The uninterrupted run on the 8-device slab mesh: its output folder (checkpoints of steps 5 and 10)."""
    out = tmp_path_factory.mktemp("straight")
    assert run(RunConfig(out=str(out), **RESUME), mesh=meshes["slab"])["steps"] == 10
    return out


def _rows_after_resume_match(straight, out):
    ra, rb = read_csv(straight / "diagnostics.csv"), read_csv(out / "diagnostics.csv")
    assert [r["step"] for r in rb] == [r["step"] for r in ra]
    for x, y in zip(ra[6:], rb[6:]):  # the rows after the resume
        for col in COLUMNS:
            assert float(y[col]) == pytest.approx(float(x[col]), rel=1e-12, abs=1e-15), col


def test_resume_from_a_checkpoint_is_bit_identical(tmp_path, meshes, straight):
    """The straight run's folder as a run stopped after its step-5 checkpoint (the step-10 checkpoint removed),
    resumed on the same mesh: it rewrites the rows after step 5, and the CSV is the straight run's, byte for byte.
    (A run stopped by ``max_steps`` and resumed: tests/solvers/test_wall_statistics.py; the command line's
    ``--resume``: tests/solvers/test_solver_cli.py.)"""
    b = tmp_path / "b"
    shutil.copytree(straight, b)
    shutil.rmtree(b / "checkpoints" / "10")
    store = Checkpoints(b / "checkpoints")
    assert store.latest_step() == 5
    store.close()
    assert run(RunConfig(out=str(b), resume=True, **RESUME), mesh=meshes["slab"])["steps"] == 10
    a = (straight / "diagnostics.csv").read_bytes()
    assert (b / "diagnostics.csv").read_bytes() == a and len(a.splitlines()) == 12


def test_2d_checkpoint_of_the_full_spectrum_resumes_on_another_mesh(tmp_path, monkeypatch, meshes, straight):
    """2D wall grids hold a half spectrum of their periodic axis; a checkpoint written when they held all ``nx``
    coefficients (forced here: the grid built with ``real_last=False``), on one device, resumes on the half
    spectrum on the 8-device slab mesh, and the run ends where the uninterrupted run ends, to rounding (a checkpoint
    restored on another mesh and converted from the full spectrum, in one resume, which runs the straight run's
    programs; 2D: the driver's path is the same in 3D)."""
    import solvers.grids.walls as walls

    one = xfft.make_mesh((1,), devices=jax.devices()[:1])
    periodic_bases = walls.periodic_bases
    with monkeypatch.context() as m:
        m.setattr(walls, "periodic_bases", lambda *a, **k: periodic_bases(*a, **{**k, "real_last": False}))
        part = run(RunConfig(out=str(tmp_path / "b"), max_steps=5, **RESUME), mesh=one)
    store = Checkpoints(tmp_path / "b" / "checkpoints")
    state, _ = store.restore(5, jax.ShapeDtypeStruct((1, 9, 16), np.complex128))  # all 16 coefficients stored
    store.close()
    assert part["steps"] == 5 and part["mesh"] == {"x": 1} and np.abs(np.asarray(state)[0, :, 9:]).max() > 0
    rest = run(RunConfig(out=str(tmp_path / "b"), resume=True, **RESUME), mesh=meshes["slab"])
    assert rest["steps"] == 10 and rest["mesh"] == {"x": 8}
    _rows_after_resume_match(straight, tmp_path / "b")


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
    """Re = 10000, alpha = 1 (box 2 pi), 49 Chebyshev points, amplitude 1e-5 (linear): the perturbation energy
    grows as exp(2 alpha c_i t), c = 0.23752649 + 0.00373967 i (Orszag 1971), measured from the diagnostics
    CSV of the main job between t = 10 and t = 20 to 5 significant digits (the Orr-Sommerfeld c_i on 49 points is
    within 6e-7 of it). (The README's command, ``channel --ic tollmien-schlichting --n 65 8 ...``, on fewer points
    and steps and one device: steps of one streamwise mode per device are latency on 8; the command line's own path
    is the bad-input tests'.)"""
    out = tmp_path / "ts"
    cfg = RunConfig(equation="channel", ic="tollmien-schlichting", n=(49, 8), params={"Re": 10000.0,
                    "drive": "pressure"}, dtype="float64", dt=0.04, t_end=20.0, diag_every=250, out=str(out),
                    progress=False, plots=False)
    run(cfg, mesh=xfft.make_mesh((1,), devices=jax.devices()[:1]))
    rate = energy_rate(out, 10.0, 20.0)
    exact = 2 * 1.0 * 0.00373967
    assert abs(rate / exact - 1) < 5e-6, rate  # measured: 0.0074793301 on 49 points, dt 0.04 (1.3e-6)
    # The pressure drive (the laminar test's drive is the flow rate) holds the laminar mean flow: the wave's
    # Reynolds stress, O(amplitude^2), moves the bulk velocity by 3e-12 and the wall shear by 3e-13 by t = 20 (a
    # pressure gradient off by 1e-6 of 2 nu would move the bulk velocity by 4e-9).
    for r in read_csv(out / "diagnostics.csv"):
        assert abs(float(r["bulk_velocity"]) - LAMINAR_BULK) < 1e-10, r
        for wall in ("bottom", "top"):
            assert abs(float(r[f"wall_shear_{wall}"]) - 2e-4) < 1e-10, r
