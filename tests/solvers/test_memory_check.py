"""The memory check before compute (solvers/job/memory.py): the probe's per-point figure against the program compiled
at full size, and the refusal's arithmetic (what is needed, what there is, the largest grid that fits)."""

from __future__ import annotations

import math

import pytest

import xfft
from solvers import CFLStep, DiagnosticsCSV
from solvers.equations import NavierStokes, NavierStokes2D
from solvers.integrators import INTEGRATORS
from solvers.job import lookup
from solvers.job import memory as _memory
from solvers.job.build import _RowsProbe, build, validate
from solvers.simulation.loop import Loop
from solvers.stepping import host_control_flow


def _make(cls, mesh, integrator, dtype="float32"):
    spec = lookup(cls)[0]

    def make(shape):
        grid = spec.grid(shape, mesh, spec.default_box(len(shape), {}), dtype=dtype, dealias="2/3", backend=None)
        eq = cls(grid)
        return eq, INTEGRATORS[integrator](eq)
    return make


def _cfl_stepper(eq, integ):  # the main job's CFL step program with its rows, as the run builds it
    control = CFLStep(0.5).resolve(integ, math.inf)
    return Loop(integ, control, [_RowsProbe(10)], None, True, host_control_flow(eq.grid.mesh))


@pytest.mark.parametrize("cls, integrator, shape, dtype", [
    (NavierStokes, "lsrk4", (64, 64, 64), "float32"),
    (NavierStokes2D, "etdrk4", (384, 384), "float32"),
    (NavierStokes2D, "lsrk4", (768, 768), "float64"),
], ids=["navier-stokes-64^3", "navier-stokes-2d-384^2", "navier-stokes-2d-lsrk4-float64-768^2"])
def test_probe_scaled_per_point_is_close_above_the_full_compile(cls, integrator, shape, dtype):
    """The per-point figure of the small probe, scaled to the run's grid with ``HEADROOM``, is within 0 to +20% of
    the same programs compiled at full size: tables and scalars are over-counted, and the margin covers XLA's
    buffer assignment, which varies with the size (without it the last case was 0.981 of the full compile,
    2026-11-25)."""
    mesh = xfft.make_mesh("slab")
    make = _make(cls, mesh, integrator, dtype)
    ic = next(iter(cls.initial_conditions))
    est = _memory.estimate(shape, mesh.size, make, ic, {}, _cfl_stepper)
    assert math.prod(est.probe) < math.prod(shape)
    eq, integ = make(shape)
    full = max(_memory.program_bytes(eq, _cfl_stepper(eq, integ), ic, {}).values())
    ratio = est.per_device / full
    assert 1.0 <= ratio < 1.2, (est.probe, est.per_device, full, ratio)
    assert est.per_device == pytest.approx(_memory.HEADROOM * max(est.programs.values())
                                           * math.prod(shape) / math.prod(est.probe), rel=1e-6)


def test_refusal_names_need_and_pool_and_the_largest_grid_fits():
    est = _memory.Estimate((1024, 1024, 1024), (32, 32, 32), 8, {"step": 64 * 32 ** 3 // 8})
    assert est.bytes_per_point == pytest.approx(64 * _memory.HEADROOM)  # scaled: with the margin
    assert _memory.Estimate((32, 32, 32), (32, 32, 32), 8, est.programs).bytes_per_point == pytest.approx(64)
    pool = _memory.Pool(available=8 * 2 ** 30, share=8, kind="host")  # 8 GiB for 8 CPU devices
    assert not _memory.fits(est, pool)
    largest = _memory.largest_fitting(est, pool, lambda s: s[0] % 8 == 0)
    assert largest is not None and largest[0] % 8 == 0 and len(set(largest)) == 1
    assert _memory.fits(est.scaled(largest), pool)
    assert not _memory.fits(est.scaled((largest[0] + 8,) * 3), pool)
    line = _memory.refusal(est, pool, "navier-stokes", largest)
    assert line.startswith("n: a 1024^3 navier-stokes run needs about 8.4 GiB per device (67.2 GiB on 8 devices)"), line
    assert f"the largest cube that fits is about {largest[0]}^3" in line and "\n" not in line
    # an accelerator's own memory: per device
    gpu = _memory.Pool(available=80 * 10 ** 9, share=1, kind="device")
    assert "each device has 74.5 GiB available" in _memory.refusal(est.scaled((4096,) * 3), gpu, "navier-stokes",
                                                                   None)
    assert _memory.trivially_fits((16, 16, 16), 8, pool) and _memory.trivially_fits((4096,) * 3, 8, None)


def test_estimate_holds_the_main_jobs_step_program_not_the_bare_step(tmp_path):
    """Under CFL control the 2D Navier-Stokes step program holds more than the bare step (the rate field
    ``|u|/dx + |v|/dy`` of the fused CFL rate changes XLA's buffer assignment: 54.2 against 44.5 bytes per point at
    1024^2, LSRK4, measured 2026-11-24; at 512^2 since the 2D grid leaves out its Nyquist coefficient, 47.8 against
    44.1, 2026-11-25). The memory check compiles the run's own step program (dt control and diagnostics rows), so
    its probe, scaled with its margin, covers that program compiled at full size; compiling the bare step
    underestimated it."""
    import jax

    from solvers import RunConfig

    cfg = RunConfig(equation="navier-stokes-2d", n=512, integrator="lsrk4", dtype="float32", t_end=1.0,
                    out=str(tmp_path), progress=False, plots=False)
    res = validate(cfg)
    parts = build(cfg, res, xfft.make_mesh("slab"), estimate=True)
    grid, eq, integ, est = parts.grid, parts.equation, parts.integrator, parts.estimate
    assert math.prod(est.probe) < grid.size
    with jax.set_mesh(grid.mesh):
        # the main job's step program: its controller, its diagnostics CSV's rows
        control = parts.controller.resolve(integ, integ.stable_dt())
        loop = Loop(integ, control, [DiagnosticsCSV(tmp_path, every=cfg.diag_every)], None, True,
                    host_control_flow(grid.mesh))
        full = _memory._bytes(loop.lower().compile())
        coeffs = jax.eval_shape(integ.coefficients, 1e-3)
        bare = _memory._bytes(jax.jit(integ.step, donate_argnums=0).lower(eq.abstract_state(), 0.0, 1e-3,
                                                                           coeffs).compile())
    assert loop.core.rate and loop.row is not None
    assert full > 1.05 * bare, (full, bare)  # what the bare step left out
    assert 1.0 <= est.per_device / full < 1.3, (est.per_device, full)


@pytest.mark.parametrize("equation, n, ic, ic_most, step_most", [
    ("navier-stokes", 32, "random-isotropic", 60, 100),
    ("cahn-hilliard", 192, "random", 20, 100),
    ("gross-pitaevskii", 32, "gaussian", 30, 60),
])
def test_programs_build_only_their_blocks(tmp_path, equation, n, ic, ic_most, step_most):
    """The programs the memory check compiles, in bytes per grid point (8 CPU devices, float32, on the run's own
    grid): the noise of a random initial condition and the coordinates (``xmeshgrid``) of a potential are built
    block by block inside them. Before 2026-11-24 both were typed replicated inside a ``jit`` on an Explicit mesh,
    so every device built the global arrays: random-isotropic took 413 bytes per point (more than 6 steps),
    cahn-hilliard's random 132, and the gross-pitaevskii step program 236; a 1024^3 taylor-green run was refused
    for 121 GiB where its step needs 68. (The 32^3 navier-stokes step takes the batched transforms of small
    blocks since 2026-11-24: 92.8 bytes per point, against 72 with the scalar ones.)"""
    from solvers import RunConfig

    cfg = RunConfig(equation=equation, n=n, ic=ic, dtype="float32", t_end=1.0, out=str(tmp_path), progress=False,
                    plots=False)
    res = validate(cfg)
    parts = build(cfg, res, xfft.make_mesh("slab"), estimate=True)
    grid, est = parts.grid, parts.estimate
    assert est.probe == grid.shape
    per_point = {k: v * grid.mesh.size / grid.size for k, v in est.programs.items()}
    assert per_point["initial condition"] <= ic_most and per_point["step"] <= step_most, per_point
