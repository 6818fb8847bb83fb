"""Presets of known cases (``--preset``): they fill what the command line leaves out, a flag given wins (also one
that sets a default value), the Python API applies them once, and an unknown one is named."""

import math

import pytest

import solvers
from solvers.cli.flags import config
from solvers.cli.parser import parser
from solvers.job.config import with_preset


def _cfg(*args):
    return config(parser().parse_args(["run", "channel", "--preset", "re-tau-180", *args]))


def test_the_preset_fills_what_is_not_given():
    cfg = _cfg()
    assert cfg.n == (129, 128, 128) and cfg.box_length == (2.0, 4 * math.pi, 4 * math.pi / 3)
    assert cfg.dtype == "float64" and cfg.ic == "turbulent" and cfg.stats_every == 10
    assert cfg.params["Re"] == pytest.approx(1 / (3.5e-4 * 2 / 3))  # Lee & Moser's nu with this code's units
    assert cfg.preset is None and cfg.applied_preset == "re-tau-180"


def test_a_flag_given_wins_even_at_its_default_value():
    cfg = _cfg("--n", "33", "16", "16", "--stats-every", "0", "--dtype", "float32", "--param", "Re=3000")
    assert cfg.n == (33, 16, 16) and cfg.stats_every == 0 and cfg.dtype == "float32"
    assert cfg.params["Re"] == "3000" and cfg.params["amplitude"] == 0.3


def test_the_python_api_applies_a_preset_once():
    cfg = with_preset(solvers.RunConfig(equation="channel", preset="re-tau-180-minimal", t_end=5.0))
    assert cfg.t_end == 5.0 and cfg.n == (65, 48, 32) and cfg.applied_preset == "re-tau-180-minimal"
    assert with_preset(cfg) == cfg
    with pytest.raises(solvers.ConfigError, match="no preset 're-tau-1000'.*re-tau-180"):
        with_preset(solvers.RunConfig(equation="channel", preset="re-tau-1000"))
    with pytest.raises(solvers.ConfigError, match="navier-stokes has no preset"):
        with_preset(solvers.RunConfig(preset="re-tau-180"))
