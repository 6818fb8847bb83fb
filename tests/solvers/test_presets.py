"""Presets of known cases (``--preset``): the resolver fills what the command line leaves out, a flag given wins (also
one that sets a default value), the Python API and the command line resolve alike, and an unknown one is named."""

import dataclasses
import math

import pytest

import solvers
from solvers.cli.flags import config
from solvers.cli.parser import parser
from solvers.job import resolve


def _cfg(*args):
    return config(parser().parse_args(["run", "channel", "--preset", "re-tau-180", *args]))


def test_the_preset_fills_what_is_not_given():
    cfg = _cfg()
    assert cfg.n is None and cfg.preset == "re-tau-180"  # the command line applies nothing: the resolver does
    plan = resolve(cfg)
    assert plan.shape == (129, 128, 128) and plan.box_length == (2.0, 4 * math.pi, 4 * math.pi / 3)
    assert plan.config.dtype == "float64" and plan.ic == "turbulent" and plan.config.stats_every == 10
    assert plan.eq_params["Re"] == pytest.approx(1 / (3.5e-4 * 2 / 3))  # Lee & Moser's nu with this code's units
    assert plan.preset == "re-tau-180" and {"n", "ic", "Re", "stats_every"} <= plan.from_preset
    assert resolve(plan.config) == dataclasses.replace(plan, from_preset=frozenset())  # applied once: a fixed point


def test_a_flag_given_wins_even_at_its_default_value():
    plan = resolve(_cfg("--n", "33", "16", "16", "--stats-every", "0", "--dtype", "float32", "--param", "Re=3000"))
    assert plan.shape == (33, 16, 16) and plan.config.stats_every == 0 and plan.config.dtype == "float32"
    assert plan.eq_params["Re"] == 3000.0 and plan.ic_params["amplitude"] == 0.3
    assert not {"n", "stats_every", "dtype", "Re"} & plan.from_preset


def test_the_python_api_resolves_a_preset_as_the_command_line_does():
    given = {"n": (33, 16, 16), "stats_every": 0, "dtype": "float32", "t_end": 5.0}
    api = resolve(solvers.RunConfig(equation="channel", preset="re-tau-180", **given, params={"nu": 1 / 3000}))
    assert api == resolve(_cfg("--n", "33", "16", "16", "--stats-every", "0", "--dtype", "float32", "--t-end", "5",
                               "--nu", str(1 / 3000)))
    assert api.config.t_end == 5.0 and api.config.cfl == 0.5 and api.config.dt_max == 0.02  # the preset's dt_max
    with pytest.raises(solvers.ConfigError, match="no preset 're-tau-1000'.*re-tau-180"):
        resolve(solvers.RunConfig(equation="channel", preset="re-tau-1000"))
    with pytest.raises(solvers.ConfigError, match="navier-stokes has no preset"):
        resolve(solvers.RunConfig(preset="re-tau-180"))
