"""The equation/run contract: every bad input is one clear error before any compute (CLI: exit status 2 and one
line naming the flag or parameter; Python: ValueError/TypeError), and defaults resolve in one place, so
``simulate(RunConfig(equation=NAME))`` runs every registered equation."""

import math
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from solvers import EQUATIONS, ConfigError, NavierStokes, RunConfig, SpectralGrid, simulate
from solvers.cli import main
from solvers.equations import GrossPitaevskii, NavierStokes2D
from solvers.io import read_csv

KS = Path(__file__).with_name("ks_equation.py")
NS = ["run", "navier-stokes", "--n", "16", "--dtype", "float64"]

BAD = [  # (argv, text the one-line message must contain)
    (["run", "euler"], "unknown equation 'euler'"),
    (["run", "nomodule:Foo"], "cannot import 'Foo' from module 'nomodule'"),
    (NS + ["--ic", "vortex-ring"], "--ic: unknown initial condition 'vortex-ring'"),
    (NS + ["--nu", "-0.1"], "parameter nu (--nu or --re) must be a number >= 0"),
    (NS + ["--nu", "abc"], "parameter nu (--nu or --re) must be a number"),
    (NS + ["--re", "-5"], "--re must be positive"),
    (NS + ["--nu", "0.1", "--param", "nu=0.2"], "--nu and --param nu both given"),
    (["run", "navier-stokes", "--n", "12"], "--n/--mesh: a slab mesh of 8 devices cannot hold a 12^3 grid"),
    (NS[:2] + ["--n", "15"], "--n: grid sizes must be even integers >= 4"),
    (NS[:2] + ["--n", "16", "16"], "--n: navier-stokes runs on 3D grids"),
    (NS + ["--box-length", "1", "2"], "--box-length: navier-stokes runs on 3D grids"),
    (NS + ["--box-length", "-1"], "--box-length: box sides must be positive"),
    (NS + ["--integrator", "euler"], "--integrator: unknown integrator 'euler'"),
    (NS + ["--integrator", "split-step"], "--integrator split-step cannot advance navier-stokes"),
    (NS + ["--param", "nu"], "--param expects KEY=VALUE"),
    (NS + ["--param", "gamma=2"], "takes no parameter 'gamma'"),
    (NS + ["--seed", "3"], "navier-stokes with --ic taylor-green takes no parameter 'seed'"),
    (NS + ["--ic", "random-isotropic", "--k0", "-3"], "parameter k0 (--k0) must be a number > 0"),
    (NS + ["--ic", "random-isotropic", "--energy", "0"], "parameter energy (--energy) must be a number > 0"),
    (NS + ["--forcing-epsilon", "-1"], "parameter forcing_epsilon (--forcing-epsilon) must be a number >= 0"),
    (["run", "navier-stokes-2d", "--n", "16", "--ic", "kolmogorov"], "needs a forcing: --param forcing=F > 0"),
    (["run", "navier-stokes-2d", "--n", "16", "--param", "kf=9"], "kf (--param kf=...) must be an integer in 1..4"),
    (["run", "navier-stokes-2d", "--n", "16", "--param", "kf=1.5"], "kf (--param kf=...) must be an integer"),
    (["run", "gross-pitaevskii", "--n", "16", "--ic", "bright-soliton"], "attractive interaction: --param g < 0"),
    (["run", "gross-pitaevskii", "--n", "16", "--ic", "bright-soliton", "--param", "g=1"], "--param g < 0, got g=1"),
    (["run", "burgers", "--n", "16", "0", "16"], "--n: grid sizes must be even integers >= 4"),
    (["run", "cahn-hilliard", "--n", "16", "--param", "eps=0"], "parameter eps (--param eps=...) must be a number > 0"),
    (["run", "cahn-hilliard", "--n", "16", "--param", "eps=abc"], "parameter eps (--param eps=...) must be a number"),
    (["run", "cahn-hilliard", "--n", "16", "--param", "mode=1.5"], "mode (--param mode=...) must be an integer"),
    (["run", "MYKS", "--n", "16", "16", "--box-length", "100"], "--cfl: KuramotoSivashinsky has no advective rate"),
    (["run", "MYKS", "--n", "16", "16", "--dt", "0.1", "--param", "amplitude=-1"], "amplitude (--param amplitude=...)"),
    (NS + ["--dt", "-1"], "--dt must be positive"),
    (NS + ["--t-end", "0"], "--t-end must be positive"),
    (NS + ["--dealias", "1/2"], "--dealias: unknown dealiasing rule '1/2'"),
    (NS + ["--dtype", "float16"], "--dtype must be float32 or float64"),
    (NS + ["--mesh", "cube"], "--mesh must be slab, pencil or auto"),
    (NS + ["--backend", "nope"], "--backend: unknown or unavailable xfft backend 'nope'"),
    (NS + ["--keep", "0"], "--keep must be >= 1"),
    (NS + ["--max-steps", "-1"], "--max-steps must be >= 0"),
    (NS + ["--resume", "--overwrite"], "--resume and --overwrite exclude each other"),
    (NS + ["--snapshot-every", "-1"], "--snapshot-every must be >= 0"),
    (NS + ["--snapshot-times", "0.5,abc"], "--snapshot-times expects comma-separated times"),
    (NS + ["--snapshot-times", "0.5,5"], "--snapshot-times: every time must lie in (0, t_end = 1]"),
    (NS + ["--snapshot-dtype", "int8"], "--snapshot-dtype must be float32 or float64"),
    (NS + ["--out", "FILE/sub"], "--out: output directory"),
]


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """The Kuramoto-Sivashinsky module copied outside the package, importable as ``mykse`` from the cwd."""
    shutil.copy(KS, tmp_path / "mykse.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(("argv", "message"), BAD, ids=[" ".join(a[1:4]) + f" #{i}" for i, (a, _) in enumerate(BAD)])
def test_bad_input_is_one_line_and_exit_2(user_module, capsys, argv, message):
    """At least 25 bad inputs: exit status 2, one line naming the flag or parameter, nothing computed/written."""
    blocker = user_module / "file"
    blocker.write_text("not a directory")
    argv = [a.replace("FILE", str(blocker)).replace("MYKS", "mykse:KuramotoSivashinsky") for a in argv]
    if "--out" not in argv:
        argv += ["--out", str(user_module / "out")]
    assert main(argv + ["--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert message in err, err
    assert "Traceback" not in err
    assert not (user_module / "out" / "diagnostics.csv").exists()


def test_python_api_raises_value_errors():
    """The same checks from Python: ValueError/TypeError naming the argument."""
    grid = SpectralGrid(16)
    with pytest.raises(ValueError, match=r"parameter nu \(--nu or --re\) must be a number >= 0, got -1"):
        NavierStokes(grid, nu=-1)
    with pytest.raises(TypeError, match="gamma"):
        NavierStokes(grid, gamma=2)
    with pytest.raises(ValueError, match="runs on 2D grids"):
        NavierStokes2D(grid)
    with pytest.raises(ValueError, match=r"k0 \(--k0\) must be a number > 0"):
        NavierStokes(grid).initial_state("random-isotropic", k0=-3)
    with pytest.raises(ValueError, match="needs an attractive interaction"):
        GrossPitaevskii(grid).initial_state("bright-soliton")
    with pytest.raises(ValueError, match="unknown initial condition 'vortex'"):
        NavierStokes(grid).initial_state("vortex")
    with pytest.raises(TypeError, match="real floating dtype"):
        SpectralGrid(16, dtype=jnp.int32)
    with pytest.raises(ValueError, match="box_length must be positive"):
        SpectralGrid(16, box_length=(1.0, 2.0))
    with jax.enable_x64(False):  # float64 without 64-bit mode: an error that says how, never a silent complex64
        with pytest.raises(ValueError, match=r"jax_enable_x64"):
            SpectralGrid(16, dtype=jnp.float64)
        with pytest.raises(ConfigError, match=r"--dtype float64 needs JAX's 64-bit mode"):
            simulate(RunConfig(dtype="float64", n=16, out="unused"))
    for cfg, message in [
        (RunConfig(equation="cahn-hilliard", params={"eps": -1}), "eps"),
        (RunConfig(equation="navier-stokes", n=(16, 16)), "--n"),
        (RunConfig(equation="navier-stokes", ic="random-isotropic", params={"k0": "x"}), "k0"),
        (RunConfig(equation=int), "not a subclass of solvers.Equation"),
    ]:
        with pytest.raises(ValueError, match=message):
            simulate(cfg)


@pytest.mark.parametrize("name", list(EQUATIONS))
def test_defaults_run_every_registered_equation(tmp_path, meshes, name):
    """``simulate(RunConfig(equation=NAME))`` with only defaults (IC, integrator, parameters) takes a step."""
    n = 16 if EQUATIONS[name].ndims[0] == 2 else 8  # (8^3 grids: compiles dominate)
    cfg = RunConfig(equation=name, n=n, max_steps=1, out=str(tmp_path), progress=False, plots=False)
    s = simulate(cfg, mesh=meshes["slab"])
    rows = read_csv(tmp_path / "diagnostics.csv")
    assert s["steps"] == 1 and [int(r["step"]) for r in rows] == [0]  # (a max_steps stop adds no row)
    assert s["physics"]["ic"] == next(iter(EQUATIONS[name].initial_conditions))
    assert s["physics"]["integrator"] == EQUATIONS[name].default_integrator
    assert math.isfinite(float(rows[0]["energy"]))
