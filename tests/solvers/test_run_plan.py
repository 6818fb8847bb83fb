"""One resolved run plan: a command-line run resolves its configuration once (``lookup``, the preset, the checks,
the output directory, each parameter's range), ``--nu`` and ``--re`` reach the parameter through its declared
reciprocal, and the plan is what the dry run, the run and ``solvers.build`` read."""

import collections
import inspect
import json
import sys

import pytest

import solvers
from solvers.cli import main
from solvers.cli.flags import config
from solvers.cli.parser import parser
from solvers.job import Plan, RunConfig, resolve
from solvers.model import Param

PLAN = sys.modules["solvers.job.plan"]
BUILD = sys.modules["solvers.job.build"]
RUN = sys.modules["solvers.job.run"]
JOB = sys.modules["solvers.job"]


@pytest.fixture
def counts(monkeypatch):
    """Calls of each resolution step, wherever it is imported from; ``Param.check`` of ``nu`` by who calls it."""
    seen = collections.Counter()

    def wrap(module, name, key=None, when=lambda *a: True):
        f = getattr(module, name)

        def counted(*args, **kwargs):
            if when(*args):
                seen[key or name] += 1
            return f(*args, **kwargs)
        monkeypatch.setattr(module, name, counted)

    for module in (PLAN, BUILD, JOB):  # a resolution is a RunConfig turned into a plan (a plan passes through)
        wrap(module, "resolve", when=lambda cfg, *a: isinstance(cfg, RunConfig))
    for module in (BUILD, RUN, JOB):
        wrap(module, "validate")
    wrap(PLAN, "lookup")
    wrap(PLAN, "apply_preset")
    wrap(PLAN, "split_params")
    wrap(BUILD, "check_output_dir")
    check = Param.check

    def checked(self, value, owner=""):
        if self.name == "nu":
            callers = {f.function for f in inspect.stack()[1:8]}
            seen["check nu: " + ("resolver" if "split_params" in callers else
                                 "constructor" if "__init__" in callers else "elsewhere")] += 1
        return check(self, value, owner)
    monkeypatch.setattr(Param, "check", checked)
    monkeypatch.setattr(BUILD, "_made_here", lambda n: True)  # the 16^2 grid on one of the 8 devices: quick
    return seen


ONCE = {"resolve": 1, "lookup": 1, "apply_preset": 1, "split_params": 1, "validate": 1, "check_output_dir": 1,
        "check nu: resolver": 1, "check nu: constructor": 1}


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_a_command_line_run_resolves_its_configuration_once(tmp_path, counts, capsys, dry):
    """Each step once; ``nu`` (given as ``--re``) is checked once by the resolver and once by the equation's own
    constructor (the model's contract for every caller), not by a second resolution."""
    out = tmp_path / "run"
    args = ["run", "navier-stokes-2d", "--n", "16", "--re", "100", "--dt", "0.01", "--t-end", "0.02", "--out",
            str(out), "--dtype", "float64", "--no-plots", "--no-progress", "--no-compile-cache"]
    assert main(args + (["--dry-run"] if dry else [])) == 0, capsys.readouterr().err
    assert dict(counts) == ONCE
    text = capsys.readouterr().out
    if dry:
        assert "parameters: nu=0.01, forcing=0.0" in text and not out.exists()
    else:
        info = json.loads((out / "run.json").read_text())
        assert info["steps"] == 2 and info["physics"]["params"]["nu"] == 0.01 and info["config"]["preset"] is None


def test_nu_and_re_are_one_parameter_by_its_declared_reciprocal():
    def plan(*flags, equation="channel", n=("9", "8")):
        return resolve(config(parser().parse_args(["run", equation, "--n", *n, *flags])))

    channel = plan("--nu", "0.002")
    assert isinstance(channel, Plan) and channel == plan("--re", "500") == plan("--param", "Re=500")
    assert channel.eq_params["Re"] == 500.0 and "nu" not in channel.params
    ns = plan("--re", "1600", equation="navier-stokes", n=("16",))
    assert ns == plan("--nu", str(1 / 1600), equation="navier-stokes", n=("16",)) and ns.eq_params["nu"] == 1 / 1600
    # the declaration, not a table of flags: a user's parameter with a reciprocal takes it by the same rule
    decl = Param("kappa", 1.0, "diffusivity", low=0, low_open=True, reciprocal="Pe")
    assert decl.from_reciprocal("4", "heat") == 0.25
    with pytest.raises(ValueError, match=r"^heat: Pe must be a positive number \(it sets heat parameter kappa = "
                                         r"1 / Pe\), got 0$"):
        decl.from_reciprocal(0, "heat")
    with pytest.raises(solvers.ConfigError, match="channel: parameter Re and its reciprocal nu both given") as e:
        resolve(RunConfig(equation="channel", n=(9, 8), params={"Re": 500, "nu": 0.002}))
    assert {"Re", "nu"} <= set(e.value.params)


@pytest.mark.parametrize(("args", "message"), [
    (["--re", "-5"], "navier-stokes: --re must be a positive number (it sets navier-stokes parameter nu = 1 / Re), "
                     "got -5.0"),
    (["--re", "1600", "--param", "nu=0.1"], "navier-stokes: parameter nu (--nu or --re) and its reciprocal Re both "
                                            "given; give one"),
])
def test_a_bad_reciprocal_is_one_line_naming_the_flag(tmp_path, capsys, args, message):
    assert main(["run", "navier-stokes", "--n", "16", "--out", str(tmp_path / "x"), "--dry-run", *args]) == 2
    err = capsys.readouterr().err
    assert err == f"python -m solvers: error: {message}\n" and not (tmp_path / "x").exists()


def test_a_preset_and_a_flag_meet_in_the_resolver_alone(monkeypatch):
    """The command line only records the flags given and the preset's name; the resolver applies the preset (the
    reciprocal given replaces the preset's Re, a flag at its default value wins) in one call."""
    applied = []
    apply = PLAN.apply_preset
    monkeypatch.setattr(PLAN, "apply_preset", lambda *a: applied.append(a[0].preset) or apply(*a))
    cfg = config(parser().parse_args(["run", "channel", "--preset", "re-tau-180-minimal", "--nu", "0.001",
                                      "--stats-every", "0"]))
    assert applied == [] and cfg.preset == "re-tau-180-minimal" and cfg.n is None and cfg.params == {"nu": 0.001}
    plan = resolve(cfg)
    assert applied == ["re-tau-180-minimal"] and plan.shape == (65, 48, 32) and plan.eq_params["Re"] == 1000.0
    assert plan.config.stats_every == 0 and plan.config.t_end == 600.0 and plan.config.dtype == "float64"
    assert "stats_every" not in plan.from_preset and "Re" not in plan.from_preset and "t_end" in plan.from_preset
