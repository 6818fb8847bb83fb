"""The equation/run contract: every bad input is one clear error before any compute (CLI: exit status 2 and one
line naming the flag or parameter; Python: ValueError/TypeError), and defaults resolve in one place, so
``solvers.run(RunConfig(equation=NAME))`` runs every registered equation."""

import dataclasses
import math
import resource
import shutil
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import xfft
from solvers import REGISTRY, ConfigError, NavierStokes, RunConfig, SpectralGrid, run
from solvers.cli import main, with_flags
from solvers.equations import GrossPitaevskii, NavierStokes2D
from solvers.io import read_csv

KS = Path(__file__).with_name("ks_equation.py")
NS = ["run", "navier-stokes", "--n", "16", "--dtype", "float64"]

BAD = [  # (argv, text the one-line message must contain)
    (["run", "euler"], "unknown equation 'euler'"),
    (["run", "nomodule:Foo"], "cannot import 'Foo' from module 'nomodule'"),
    (NS + ["--ic", "vortex-ring"], "--ic: unknown initial condition 'vortex-ring'"),
    (NS + ["--nu", "-0.1"], "parameter nu (--nu or --re) must be a number >= 0"),
    (NS + ["--nu", "abc"], "argument --nu: invalid float value: 'abc'"),
    (NS + ["--re", "-5"], "--re must be a positive number"),
    (NS + ["--nu", "0.1", "--param", "nu=0.2"], "--nu and --param nu both given"),
    (["run", "navier-stokes", "--n", "12", "--dealias", "none"],
     "--n/--mesh: a slab mesh of 8 devices cannot hold a 12^3 grid"),
    (["run", "navier-stokes", "--n", "30", "--dealias", "none"], "none of their sizes (30, 30, 30) is divisible by 8 "
     "(JAX shards arrays evenly); nearest sizes this mesh holds: 24 or 32; with dealias 2/3 or 3/2 the grid's "
     "modes would be held on more points"),
    (["run", "channel", "--n", "33", "30", "30", "--dealias", "none"], "cannot hold a 33x30x30 grid (dealias none)"),
    (NS[:2] + ["--n", "15"], "--n: grid sizes must be even integers >= 4"),
    (NS[:2] + ["--n", "16", "16"], "--n: navier-stokes runs on 3D grids"),
    (NS + ["--box-length", "1", "2"], "--box-length: navier-stokes runs on 3D grids"),
    (NS + ["--box-length", "-1"], "--box-length: box sides must be positive"),
    (NS + ["--integrator", "euler"], "--integrator: unknown integrator 'euler'"),
    (NS + ["--integrator", "split-step"], "--integrator split-step cannot advance navier-stokes"),
    (NS + ["--param", "nu"], "--param expects KEY=VALUE"),
    (NS + ["--param", "gamma=2"], "takes no parameter 'gamma'"),
    (NS + ["--seed", "3"], "navier-stokes takes no parameter 'seed'; its parameters: forcing_epsilon, nu; initial "
     "condition taylor-green: v0"),
    (NS + ["--ic", "random-isotropic", "--k0", "-3"], "parameter k0 (--k0) must be a number > 0"),
    (NS + ["--ic", "random-isotropic", "--energy", "0"], "parameter energy (--energy) must be a number > 0"),
    (NS + ["--forcing-epsilon", "-1"], "parameter forcing_epsilon (--forcing-epsilon) must be a number >= 0"),
    (["run", "navier-stokes-2d", "--n", "16", "--ic", "kolmogorov"],
     "needs a forcing: parameter forcing (--param forcing=...) > 0"),
    (["run", "navier-stokes-2d", "--n", "16", "--param", "kf=9"], "kf (--param kf=...) must be an integer in 1..4"),
    (["run", "navier-stokes-2d", "--n", "16", "--param", "kf=1.5"], "kf (--param kf=...) must be an integer"),
    (["run", "gross-pitaevskii", "--n", "16", "--ic", "bright-soliton"],
     "attractive interaction: parameter g (--param g=...) < 0"),
    (["run", "gross-pitaevskii", "--n", "16", "--ic", "bright-soliton", "--param", "g=1"],
     "parameter g (--param g=...) < 0, got g=1"),
    (["run", "burgers", "--n", "16", "0", "16"], "--n: grid sizes must be even integers >= 4"),
    (["run", "cahn-hilliard", "--n", "16", "--param", "eps=0"], "parameter eps (--param eps=...) must be a number > 0"),
    (["run", "cahn-hilliard", "--n", "16", "--param", "eps=abc"], "parameter eps (--param eps=...) must be a number"),
    (["run", "cahn-hilliard", "--n", "16", "--param", "mode=1.5"], "mode (--param mode=...) must be an integer"),
    (["run", "MYKS", "--n", "16", "16", "--box-length", "100"], "--cfl: mykse:SPEC has no CFL rate"),
    (["run", "MYKS", "--n", "16", "16", "--dt", "0.1", "--param", "amplitude=-1"], "amplitude (--param amplitude=...)"),
    (NS + ["--dt", "-1"], "--dt must be positive"),
    (NS + ["--t-end", "0"], "--t-end must be positive"),
    (NS + ["--dealias", "1/2"], "--dealias: unknown dealiasing rule '1/2'"),
    (NS + ["--dtype", "float16"], "--dtype must be float32 or float64"),
    (NS + ["--mesh", "cube"], "--mesh must be slab, pencil or auto"),
    (NS + ["--backend", "nope"], "--backend: unknown or unavailable xfft backend 'nope'"),
    (NS + ["--keep", "0"], "--keep must be an integer >= 1"),
    (NS + ["--max-steps", "-1"], "--max-steps must be an integer >= 0"),
    (NS + ["--resume", "--overwrite"], "--resume and --overwrite exclude each other"),
    (NS + ["--snapshot-every", "-1"], "--snapshot-every must be an integer >= 0"),
    (NS + ["--snapshot-times", "0.5,abc"], "--snapshot-times expects comma-separated times"),
    (NS + ["--snapshot-times", "0.5,5"], "--snapshot-times: every time must lie in (0, t_end = 1]"),
    (NS + ["--snapshot-dtype", "int8"], "--snapshot-dtype must be float32 or float64"),
    (NS + ["--out", "FILE/sub"], "--out: output directory"),
    (NS + ["--diag-every", "0"], "--diag-every must be an integer >= 1, got 0"),
    (NS + ["--checkpoint-every", "-1"], "--checkpoint-every must be an integer >= 0, got -1"),
    (NS + ["--diag-every", "x"], "argument --diag-every: invalid int value: 'x'"),
    (NS + ["--n", "abc"], "argument --n: invalid int value: 'abc'"),
    (NS + ["--ic", "random-isotropic", "--seed", "-1"], "parameter seed (--seed) must be an integer >= 0"),
    (NS + ["--cpu-devices", "0"], "argument --cpu-devices: must be an integer >= 1 and <= 4096, got 0"),
    (NS + ["--cpu-devices", "-2"], "argument --cpu-devices: must be an integer >= 1 and <= 4096, got -2"),
]
# grids no machine here holds: refused from a small-grid compile, before anything is allocated (each compiles a
# probe: checked once, by test_too_big_grids_are_refused_in_seconds_without_allocating, with the checks of BAD)
TOO_BIG = [
    (["run", "navier-stokes", "--n", "100000"], "--n: a 100000^3 navier-stokes run needs about"),
    (["run", "navier-stokes", "--n", "4096"], "--n: a 4096^3 navier-stokes run needs about"),
    (["run", "navier-stokes-2d", "--n", "200000", "200000"], "--n: a 200000^2 navier-stokes-2d run needs about"),
    (NS + ["--n", "4096", "--dry-run"], "--n: a 4096^3 navier-stokes run needs about"),
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
    """At least 25 bad inputs (too big grids: the next test): exit status 2, one line naming the flag or parameter,
    nothing computed/written."""
    blocker = user_module / "file"
    blocker.write_text("not a directory")
    argv = [a.replace("FILE", str(blocker)).replace("MYKS", "mykse:SPEC") for a in argv]
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
    with pytest.raises(ValueError, match=r"NavierStokes parameter nu must be a number >= 0, got -1"):
        NavierStokes(grid, nu=-1)
    with pytest.raises(TypeError, match="gamma"):
        NavierStokes(grid, gamma=2)
    with pytest.raises(ValueError, match="runs on 2D grids"):
        NavierStokes2D(grid)
    with pytest.raises(ValueError, match=r"parameter k0 must be a number > 0"):
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
        with pytest.raises(ConfigError, match=r"^dtype float64 needs JAX's 64-bit mode"):
            run(RunConfig(dtype="float64", n=16, out="unused"))
    for cfg, message in [
        (RunConfig(equation="cahn-hilliard", params={"eps": -1}), "eps"),
        (RunConfig(equation="navier-stokes", n=(16, 16)), "^n: navier-stokes runs on 3D grids"),
        (RunConfig(equation="navier-stokes", ic="random-isotropic", params={"k0": "x"}), "k0"),
        (RunConfig(equation=int), "not a subclass of solvers.Equation"),
    ]:
        with pytest.raises(ValueError, match=message):
            run(cfg)


def test_too_big_grids_are_refused_in_seconds_without_allocating(tmp_path, capsys):
    """The grids of issue 19 that crashed (an XLA out-of-memory traceback, or the kernel's OOM killer) are refused
    with one line saying what the run needs, what there is and the largest grid that fits, in seconds, and the
    process's peak memory does not grow by anything near a grid (a few hundred MB for the probe's compile)."""
    for argv, message in TOO_BIG:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        start = time.perf_counter()
        assert main(argv + ["--out", str(tmp_path / "out"), "--no-progress"]) == 2
        took = time.perf_counter() - start
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert message in err, err
        assert "per device (" in err and "available for its 8 devices" in err and "fits" in err, err
        assert took < 60, (argv, took)  # measured 2-5 s on a 2-core machine at load 16
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before < 2 ** 30
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_library_errors_name_fields_and_the_cli_names_flags(tmp_path):
    """The Python API's messages name RunConfig fields and parameters (``t_end``), never flags; the command line
    prints the same message with its flags (``--t-end``)."""
    cases = [
        (RunConfig(t_end=-1), "t_end must be positive, got -1", "--t-end must be positive, got -1"),
        (RunConfig(diag_every=0), "diag_every must be an integer >= 1", "--diag-every must be an integer >= 1"),
        (RunConfig(keep=1.5), "keep must be an integer >= 1, got 1.5", "--keep must be an integer >= 1"),
        (RunConfig(max_steps="3"), "max_steps must be an integer >= 0, got '3'", "--max-steps must be"),
        (RunConfig(resume=True, overwrite=True), "resume and overwrite exclude", "--resume and --overwrite exclude"),
        (RunConfig(n=12, dealias="none"), "n/mesh: a slab mesh of 8 devices cannot hold a 12^3 grid",
         "--n/--mesh: a slab mesh of 8 devices"),
        (RunConfig(dealias="1/2"), "dealias: unknown dealiasing rule '1/2'", "--dealias: unknown"),
        (RunConfig(ic="vortex"), "ic: unknown initial condition 'vortex'", "--ic: unknown initial condition"),
        (RunConfig(n=16, params={"nu": -1}), "navier-stokes parameter nu must be a number >= 0",
         "navier-stokes parameter nu (--nu or --re) must be"),
        (RunConfig(n=16, params={"seed": 1}), "navier-stokes takes no parameter 'seed'; its parameters: "
         "forcing_epsilon, nu; initial condition taylor-green: v0", "takes no parameter 'seed'"),
        (RunConfig(equation="navier-stokes-2d", n=16, ic="kolmogorov"),
         "navier-stokes-2d initial condition kolmogorov needs a forcing: parameter forcing > 0",
         "parameter forcing (--param forcing=...) > 0"),
        (RunConfig(equation="navier-stokes-2d", n=16, dt=0.1, integrator="split-step"),
         "integrator split-step cannot advance navier-stokes-2d", "--integrator split-step cannot advance"),
        (RunConfig(n=4096), "n: a 4096^3 navier-stokes run needs about", "--n: a 4096^3 navier-stokes run"),
    ]
    for cfg, message, cli_message in cases:
        with pytest.raises(ConfigError) as info:
            run(dataclasses.replace(cfg, out=str(tmp_path / "out"), progress=False, plots=False))
        text = str(info.value)
        assert text.startswith(message) or message in text, text
        assert "--" not in text, text
        assert cli_message in with_flags(info.value), with_flags(info.value)


@pytest.mark.parametrize("argv", [
    NS,
    ["run", "channel", "--n", "17", "16", "--dtype", "float64"],
    ["run", "rayleigh-benard", "--n", "17", "16", "--param", "walls=no-slip"],
], ids=["navier-stokes", "channel", "rayleigh-benard-no-slip"])
def test_dry_run_prints_the_resolved_run_and_writes_nothing(tmp_path, capsys, argv):
    """``--dry-run``: exit 0, the resolved configuration (defaults filled in), the mesh and the memory per device
    (on grids this small: the bound under which a run needs no estimate; nothing compiled), and no file or directory
    written."""
    out = tmp_path / "never" / "made"
    assert main(argv + ["--dry-run", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert not (tmp_path / "never").exists()
    for key in ("equation:", "ic:", "integrator:", "parameters:", "grid:", "dtype:", "dealias:", "time:", "mesh:",
                "memory:", "outputs:"):
        assert f"\n  {key}" in text, (key, text)
    assert "mesh:" in text and "{'x': 8} (8 cpu devices, 1 process)" in text
    assert "per device (" in text and "fits: under" in text and "nothing compiled" in text
    name = argv[1]
    integrator = {"navier-stokes": "lsrk4", "channel": "imex", "rayleigh-benard": "imex"}[name]
    assert f"integrator: {integrator}" in " ".join(text.split())


@pytest.mark.parametrize("name", list(REGISTRY))
def test_defaults_run_every_registered_equation(tmp_path, name):
    """``solvers.run(RunConfig(equation=NAME))`` with only defaults (IC, integrator, parameters) takes a step.

    (On one device and an 8-point grid per axis: compiles dominate, and what is checked here is the defaults'
    resolution, which no mesh changes; the equations' sharded runs are their own tests'.)"""
    spec = REGISTRY[name]
    n = 16 if name == "navier-stokes-2d" else 8  # (its default forcing wavenumber kf = 4 needs 16 points)
    cfg = RunConfig(equation=name, n=n, max_steps=1, out=str(tmp_path), progress=False, plots=False)
    s = run(cfg, mesh=xfft.make_mesh((1,), devices=jax.devices()[:1]))
    rows = read_csv(tmp_path / "diagnostics.csv")
    assert s["steps"] == 1 and [int(r["step"]) for r in rows] == [0]  # (a max_steps stop adds no row)
    assert s["physics"]["ic"] == next(iter(spec.initial_conditions()))
    assert s["physics"]["integrator"] == spec.default_integrator({})
    assert math.isfinite(float(rows[0]["energy"]))
