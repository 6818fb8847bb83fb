"""Plane channel flow (Chebyshev tau in y, Fourier in x, z): laminar Poiseuille flow steady to round-off on a slab
and a pencil mesh and under both drives, a Tollmien-Schlichting wave growing at the Orr-Sommerfeld rate through the
main job, sharded runs equal to one device, bit-identical resume, and the bad inputs."""

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


# The sampled cases: 2D on the slab mesh with the pressure drive, 3D on the pencil mesh with the flow-rate drive
# (the drives differ only in the mean flow's solve, which is the same code in 2D and 3D).
@pytest.mark.parametrize("dim,kind,drive", [(2, "slab", "pressure"), (3, "pencil", "flow-rate")])
def test_laminar_poiseuille_flow_is_steady_to_round_off(meshes, flows, dim, kind, drive):
    """U = 1 - y^2 stays put (coefficients to 1e-15 of the state): energy 4/15, bulk velocity 2/3, wall shear
    2 nu on both walls, no perturbation energy."""
    if dim == 2:
        eq = _channel((17, 8), meshes[kind], Re=100.0, drive=drive)
        s0 = eq.initial_state("laminar")
        s1 = IMEX(eq).advance(s0, 0.0, 0.01, 10)
    else:
        eq, integ = flows(kind)
        assert eq.drive == drive
        s0 = eq.initial_state("laminar")
        s1 = integ.advance(s0, 0.0, DT_3D, STEPS_3D)
    _, d = fields_and_diagnostics(eq, s1)
    assert np.max(np.abs(np.asarray(s1) - np.asarray(s0))) < 1e-14  # (on the host: no program to compile)
    nu = 1.0 / eq.Re
    assert abs(d["energy"] - 4 / 15) < 1e-14 and abs(d["bulk_velocity"] - LAMINAR_BULK) < 1e-14
    assert abs(d["wall_shear_bottom"] - 2 * nu) < 1e-14 and abs(d["wall_shear_top"] - 2 * nu) < 1e-14
    assert d["perturbation_energy"] < 1e-28


def test_sharded_runs_equal_one_device(flows):
    """A 3D random perturbation of laminar flow (constant flow rate, 3/2 dealiasing in every direction), 4 IMEX
    steps: the velocity of a pencil run equals the one-device run's to 1e-12 (measured 6.5e-15 on 9x16x8, 1.5e-14
    on 17x16x16; the raw coefficients of ``lap v`` differ by 1e-12 of their largest, round-off amplified by the
    stiff solves); the flow rate stays at 2/3. (9x16x8: both periodic axes sharded; the fields transformed one at
    a time, as on a large grid, where a grid this small would transform them together. A slab shards one of
    them: the 2D runs on 8 devices, tests/solvers/test_grid_points.py and the laminar flows here.)"""
    out = {}
    for kind in ("single", "pencil"):
        eq, integ = flows(kind)
        s = integ.advance(eq.initial_state("turbulent", amplitude=0.2, seed=3), 0.0, DT_3D, STEPS_3D)
        out[kind], d = fields_and_diagnostics(eq, s)
        assert abs(d["bulk_velocity"] - LAMINAR_BULK) < 1e-13
    for name, ref in out["single"].items():
        assert np.max(np.abs(out["pencil"][name] - ref)) < 1e-12 * np.max(np.abs(ref)), name


#: the main job's runs of the resume tests: 2D, ten steps of 0.01, a row every step
RESUME = dict(equation="channel", ic="turbulent", n=(9, 16), dtype="float64", dt=0.01, t_end=0.1,
              params={"Re": 1000.0}, diag_every=1, progress=False, plots=False)
#: what the rows written after a resume on another mesh (or from another layout) must match, to round-off
COLUMNS = ("energy", "perturbation_energy", "bulk_velocity", "wall_shear_bottom", "wall_shear_top")


@pytest.fixture(scope="module")
def straight(tmp_path_factory, meshes):
    """The uninterrupted run on the 8-device slab mesh: its output folder."""
    out = tmp_path_factory.mktemp("straight")
    assert run(RunConfig(out=str(out), **RESUME), mesh=meshes["slab"])["steps"] == 10
    return out


def _rows_after_resume_match(straight, out):
    ra, rb = read_csv(straight / "diagnostics.csv"), read_csv(out / "diagnostics.csv")
    assert [r["step"] for r in rb] == [r["step"] for r in ra]
    for x, y in zip(ra[6:], rb[6:]):  # the rows after the resume
        for col in COLUMNS:
            assert float(y[col]) == pytest.approx(float(x[col]), rel=1e-12, abs=1e-15), col


def test_resume_is_bit_identical_and_restores_on_another_mesh(tmp_path, meshes, straight):
    """Five steps, a checkpoint, and five more after a resume on the same mesh: the straight run's CSV, byte for
    byte; the step-5 checkpoint (written on the 8-device slab mesh) also continues on one device, to the straight
    run's diagnostics within round-off (2D: the driver's path is the same in 3D; the command line's ``--resume``
    is tests/solvers/test_solver_cli.py's)."""
    b = tmp_path / "b"
    assert run(RunConfig(out=str(b), max_steps=5, **RESUME), mesh=meshes["slab"])["steps"] == 5
    shutil.copytree(b, tmp_path / "c")
    assert run(RunConfig(out=str(b), resume=True, **RESUME), mesh=meshes["slab"])["steps"] == 10
    a = (straight / "diagnostics.csv").read_bytes()
    assert (b / "diagnostics.csv").read_bytes() == a and len(a.splitlines()) == 12
    one = xfft.make_mesh((1,), devices=jax.devices()[:1])
    other = run(RunConfig(out=str(tmp_path / "c"), resume=True, **RESUME), mesh=one)
    assert other["steps"] == 10 and other["mesh"] == {"x": 1}
    _rows_after_resume_match(straight, tmp_path / "c")


def test_2d_checkpoint_of_the_full_spectrum_resumes(tmp_path, monkeypatch, straight):
    """2D wall grids hold a half spectrum of their periodic axis; a checkpoint written when they held all ``nx``
    coefficients (forced here: the grid built with ``real_last=False``) resumes on the half spectrum, and the run
    ends where the uninterrupted run ends, to rounding (on one device: the conversion is the same on any mesh; its
    programs are those of the resume test's run on one device)."""
    import solvers.grids.walls as walls

    mesh = xfft.make_mesh((1,), devices=jax.devices()[:1])
    periodic_bases = walls.periodic_bases
    with monkeypatch.context() as m:
        m.setattr(walls, "periodic_bases", lambda *a, **k: periodic_bases(*a, **{**k, "real_last": False}))
        part = run(RunConfig(out=str(tmp_path / "b"), max_steps=5, **RESUME), mesh=mesh)
    store = Checkpoints(tmp_path / "b" / "checkpoints")
    state, _ = store.restore(5, jax.ShapeDtypeStruct((1, 9, 16), np.complex128))  # all 16 coefficients stored
    store.close()
    assert part["steps"] == 5 and np.abs(np.asarray(state)[0, :, 9:]).max() > 0
    rest = run(RunConfig(out=str(tmp_path / "b"), resume=True, **RESUME), mesh=mesh)
    assert rest["steps"] == 10
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
    cfg = RunConfig(equation="channel", ic="tollmien-schlichting", n=(49, 8), params={"Re": 10000.0},
                    dtype="float64", dt=0.04, t_end=20.0, diag_every=250, out=str(out), progress=False, plots=False)
    run(cfg, mesh=xfft.make_mesh((1,), devices=jax.devices()[:1]))
    rate = energy_rate(out, 10.0, 20.0)
    exact = 2 * 1.0 * 0.00373967
    assert abs(rate / exact - 1) < 5e-6, rate  # measured: 0.0074793301 on 49 points, dt 0.04 (1.3e-6)
