"""What ``python -m solvers list`` and the plots say about each equation agrees with the code.

* Time step: the driver refuses a run without ``--dt`` exactly when the equation's ``max_rate`` returns None;
  ``list`` prints "--dt DT (required ...)" for those and "--cfl C (adaptive ...) or --dt DT" for the others,
  computed from the same fact (``cli.listing._needs_dt``). Issue 19: ``list`` used to say that Cahn-Hilliard and
  Gross-Pitaevskii need ``--dt``, but both have a rate and run without it.
* Energy plot: the curve is labelled with the ``energy_label`` of the equation's ``RunSpec.plot``
  (Schroedinger-Poisson's ``energy`` column is the total energy, which the plot used to call "kinetic energy E").
"""

import shutil
from pathlib import Path

import pytest

from solvers import REGISTRY, CFLStep, ConfigError, RunConfig
from solvers import io as sio
from solvers.cli.listing import _needs_dt, listing
from solvers.job import lookup
from solvers.job.build import build, validate

KS = Path(__file__).with_name("ks_equation.py")


def _driver_needs_dt(equation, out: Path) -> bool:
    """True if the driver refuses the run without ``dt`` (its CFL check), False if it builds it."""
    cfg = RunConfig(equation=equation, n=16, out=str(out))
    try:
        build(cfg, validate(cfg))
    except ConfigError as e:
        assert str(e).startswith("cfl:") and "time step dt" in str(e), e  # fields; the CLI prints flags
        return True
    return False


@pytest.mark.parametrize("name", list(REGISTRY))
def test_list_says_what_the_driver_does(name, tmp_path):
    """Every registered equation: ``list``'s time-step line, ``_needs_dt`` and the driver agree (an equation
    without a CFL rate runs on its spec's fixed ``dt`` where it has one: the comoving N-body code)."""
    spec = REGISTRY[name]
    need = _needs_dt(spec)
    assert need == (name == "comoving-nbody") and not _driver_needs_dt(name, tmp_path)
    lines = listing().splitlines()
    i = next(i for i, line in enumerate(lines) if line.split()[:1] == [name])
    want = f"--dt DT (default {spec.dt:g}: no CFL rate)" if need else "--cfl C (adaptive, the default) or --dt DT"
    assert f"time step: {want}" in lines[i + 1], lines[i + 1]


def test_user_equation_without_a_rate_needs_dt(tmp_path, monkeypatch):
    """The README's Kuramoto-Sivashinsky class has no ``max_rate``: both say ``--dt`` is required (for its
    ``RunSpec``)."""
    shutil.copy(KS, tmp_path / "ks_equation.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec, _ = lookup("ks_equation:SPEC")
    assert _needs_dt(spec) and _driver_needs_dt(spec, tmp_path / "out")


def test_cahn_hilliard_and_gross_pitaevskii_run_without_dt(tmp_path):
    """The two equations ``list`` used to send to ``--dt`` step adaptively (``max_rate`` is finite and > 0)."""
    import jax

    for name in ("cahn-hilliard", "gross-pitaevskii"):
        cfg = RunConfig(equation=name, n=16, out=str(tmp_path / name))
        parts = build(cfg, validate(cfg))
        grid, eq, controller = parts.grid, parts.equation, parts.controller
        with jax.set_mesh(grid.mesh):
            rate = float(jax.jit(eq.max_rate)(eq.initial_state(validate(cfg).ic)))
        assert 0 < rate < float("inf") and type(controller) is CFLStep, (name, rate)


def test_energy_plot_label(tmp_path):
    """The curve and the axis carry the label given; each equation's label says what its ``energy`` is."""
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    sio.plot_history(ax, [{"t": 0.0, "energy": -12.6}, {"t": 1.0, "energy": -12.5}], "total energy E = K + W")
    assert ax.get_lines()[0].get_label() == "total energy E = K + W" and ax.get_ylabel() == "total energy E = K + W"
    labels = {name: spec.plot.energy_label for name, spec in REGISTRY.items()}
    assert labels["schrodinger-poisson"].startswith("total energy") and labels["gross-pitaevskii"] == \
        labels["schrodinger-poisson"]
    assert labels["cahn-hilliard"] == labels["allen-cahn"] == "free energy F"
    for name in ("navier-stokes", "navier-stokes-2d", "burgers", "channel", "rayleigh-benard"):
        assert labels[name] == "kinetic energy E", name
