"""A time-step controller of the user's own, named on the command line (``--controller MODULE:NAME``) and in a
:class:`~solvers.RunConfig` (``controller="MODULE:NAME"``): it chooses every step, its state is checkpointed, and a
run stopped on the command line and resumed through the main job writes every row as the uninterrupted run."""

import pytest

from solvers import RunConfig, run
from solvers.cli import main
from solvers.io import Checkpoints, read_csv
from solvers.job import ConfigError, resolve

SCHEDULE = '''
from dataclasses import dataclass

import jax.numpy as jnp


@dataclass(frozen=True)
class Schedule:
    """dt = dt0 (1 + 10 t); the state counts the steps."""

    dt0: float = 0.01
    wants_rate = False

    def init(self, y0):
        return {"steps": jnp.zeros((), jnp.int32)}

    def choose(self, aux, state, t, t_stop):
        return self.dt0 * (1 + 10 * t), {"steps": state["steps"] + 1}


fast = Schedule(0.02)
not_a_controller = 3
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "mysched.py").write_text(SCHEDULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _cfg(out, **kw):
    base = dict(equation="navier-stokes-2d", n=16, t_end=0.1, dtype="float64", diag_every=1, checkpoint_every=3,
                out=str(out), progress=False, plots=False, controller="mysched:Schedule")
    base.update(kw)
    return RunConfig(**base)


def test_a_controller_named_on_the_command_line_chooses_every_step_and_resumes_to_the_bit(user_module, meshes,
                                                                                          capsys):
    tmp = user_module
    full = run(_cfg(tmp / "full"), mesh=meshes["slab"])
    rows = read_csv(tmp / "full" / "diagnostics.csv")
    t = [float(r["t"]) for r in rows]
    dts = [b - a for a, b in zip(t, t[1:])]
    # the schedule's steps (dt = 0.01 (1 + 10 t) at the step's start), the last one shortened to land on t_end
    for a, dt in zip(t[:-2], dts[:-1]):
        assert dt == pytest.approx(0.01 * (1 + 10 * a), rel=1e-12)
    assert t[-1] == pytest.approx(0.1, abs=1e-14) and full["steps"] == len(rows) - 1 == 8
    assert full["physics"]["controller"] == "mysched:Schedule" and full["physics"]["dt"] is None
    ck = Checkpoints(tmp / "full" / "checkpoints")
    meta = ck.read_meta(ck.steps()[-1])
    assert meta["controller"]["state"] == [ck.steps()[-1]]  # the controller's own state: the steps it chose
    # the command line (its entry point, in this process: the shell's view is tests/solvers/test_solver_cli.py's),
    # stopped after 4 steps, then resumed through the main job: every digit of every row
    code = main(["run", "navier-stokes-2d", "--n", "16", "--t-end", "0.1", "--dtype", "float64", "--diag-every", "1",
                 "--checkpoint-every", "3", "--max-steps", "4", "--controller", "mysched:Schedule", "--out", "part",
                 "--no-progress", "--no-plots"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "done: 4 steps" in out.out
    rest = run(_cfg(tmp / "part", resume=True), mesh=meshes["slab"])
    assert rest["steps"] == 8 and rest["steps_this_run"] == 4
    assert (tmp / "part" / "diagnostics.csv").read_bytes() == (tmp / "full" / "diagnostics.csv").read_bytes()
    # a resume that names another controller (or none) is refused, naming it
    with pytest.raises(ConfigError, match="controller: checkpoint 'mysched:Schedule' vs now 'mysched:fast'"):
        run(_cfg(tmp / "part", resume=True, t_end=0.2, controller="mysched:fast"), mesh=meshes["slab"])
    # and with --dt on the command line, argparse says the two exclude each other (status 2)
    code = main(["run", "navier-stokes-2d", "--dt", "0.01", "--controller", "mysched:Schedule", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and "--controller" in err and "not allowed with" in err, err


@pytest.mark.parametrize("name, message", [
    ("mysched", "controller must be MODULE:NAME"),
    ("nosuchmodule:Schedule", "cannot import 'Schedule' from module 'nosuchmodule'"),
    ("mysched:Nothing", "cannot import 'Nothing' from module 'mysched'"),
    ("mysched:not_a_controller", "is not a time-step controller: it needs init"),
])
def test_a_controller_name_that_does_not_make_a_controller_is_refused(user_module, name, message):
    with pytest.raises(ConfigError, match=message) as e:
        resolve(_cfg("out", controller=name))
    assert e.value.fields == ("controller",)


def test_a_controller_instance_or_class_is_taken_and_dt_excludes_it(user_module):
    plan = resolve(_cfg("out", controller="mysched:fast"))
    assert type(plan.controller).__name__ == "Schedule" and plan.controller.dt0 == 0.02
    assert resolve(_cfg("out")).controller.dt0 == 0.01  # a class: made without arguments
    with pytest.raises(ConfigError, match="controller and dt both given") as e:
        resolve(_cfg("out", dt=0.01))
    assert e.value.fields == ("controller", "dt")
