"""Navier-Stokes: exact ABC decay, Taylor-Green at Re = 1600 against its published short-time expansion,
energy conservation of the nonlinear term, forcing power, random fields, sharded == single device.

Taylor-Green reference. Taylor & Green (1937, Proc. R. Soc. Lond. A 158, 499) expanded the flow in powers of t;
the mean-square vorticity (enstrophy Z = <|omega|^2>/2, Z0 = 3/8 for V0 = 1) starts as

    Z(t) / Z0 = 1 - 6 nu t + (18 nu^2 + 5/48) t^2 + O(t^3),

and Brachet et al. (1983, J. Fluid Mech. 130, 411) continued the same power series to high order to study the
inviscid flow. ``solvers.reference.taylor_green_series`` computes that series independently of the solver
(numpy, exact Fourier arithmetic: the order-n coefficient contains wavenumbers up to n + 1 only, so a
2(n + 2)-point grid is exact),
checks its first coefficients against the published ones, and sums it to order 22. The solver (48^3,
float64, 2/3 dealiasing, RK4 with dt = 1/80 or LSRK4 with dt = 1/40) matches energy and enstrophy at t = 0.5 and
t = 1 to a relative 1e-9 (measured: energy 3e-13 and 1e-11, enstrophy 2e-10 and 5e-10; RK4 at dt = 1/40 misses the
enstrophy by 9e-10; at 32^3 the enstrophy misses the 7e-8 held by |k| > 10 at t = 1).
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers import INTEGRATORS, NavierStokes, SpectralGrid
from solvers import diagnostics as D
from solvers.model import apply_linear, tree_add
from solvers.reference import taylor_green_series as tgv_series


def test_abc_flow_decays_exactly(ns):
    """ABC is a Beltrami field: E(t) = E0 exp(-2 nu t) to 1e-8 (float64, 16^3: its modes have |k| = 1, so the grid
    holds it exactly; what is measured is the time stepping), div u at round-off. RK4 on a slab (2/3 rule) and on a
    pencil (3/2 rule): the compiled loops of test_sharded_equals_single_device (the other integrators on 3D
    Navier-Stokes: test_solver_integrators.py::test_observed_order_of_convergence)."""
    for kind, dealias in (("slab", "2/3"), ("pencil", "3/2")):
        eq = ns(kind, dealias=dealias)
        nu = eq.nu
        u = eq.initial_state("abc")
        e0 = float(eq.summary(u)["energy"])
        assert e0 == pytest.approx(1.5, rel=1e-15)
        t = 0.0
        for _ in range(4):
            u = eq.rk4.advance(u, t, 0.05, 5)
            t += 0.25
            out = eq.summary(u)
            e, div = float(out["energy"]), float(out["max_div"])
            assert abs(e / (e0 * np.exp(-2 * nu * t)) - 1) < 1e-8, (kind, t, e)
        assert e < 0.97 * e0  # (nu = 0.02: E(1) = 0.96 E0)
        assert div < 1e-13


@pytest.mark.default_opt  # 80 steps of a 48^3 grid on one device: run time, which -O0 would quintuple
def test_taylor_green_matches_published_short_time_expansion(ns):
    """RK4 (dt = 1/80) and LSRK4 (dt = 1/40: its five stages are more accurate) against the series at t = 0.5 and 1
    (one subprocess for both: see default_opt)."""
    nu = 1 / 1600
    e_c, z_c = tgv_series(nu, 22)
    # The series' first coefficients are the published ones (Taylor & Green 1937).
    assert e_c[0] == pytest.approx(1 / 8, rel=1e-14) and z_c[0] == pytest.approx(3 / 8, rel=1e-14)
    assert z_c[1] / z_c[0] == pytest.approx(-6 * nu, rel=1e-10)
    assert z_c[2] / z_c[0] == pytest.approx(18 * nu**2 + 5 / 48, rel=1e-10)
    assert e_c[1] == pytest.approx(-2 * nu * z_c[0], rel=1e-10)  # dE/dt = -2 nu Z
    eq = ns("single", n=48, nu=nu)
    for integrator in ("rk4", "lsrk4"):
        integ = eq.rk4 if integrator == "rk4" else INTEGRATORS[integrator](eq)
        u = eq.initial_state("taylor-green")
        t = 0.0
        dt = 1 / 80 if integrator == "rk4" else 1 / 40
        for t_check in (0.5, 1.0):
            u = integ.advance(u, t, dt, round(0.5 / dt))
            t = t_check
            powers = t ** np.arange(len(e_c))
            assert abs(z_c[-1] * powers[-1]) < 1e-10 * z_c[0]  # the series has converged at t
            out = eq.summary(u)
            e, z = float(out["energy"]), float(out["enstrophy"])
            assert abs(e / (e_c @ powers) - 1) < 1e-9, (integrator, t, e, e_c @ powers)
            assert abs(z / (z_c @ powers) - 1) < 1e-9, (integrator, t, z, z_c @ powers)
            assert float(out["max_div"]) < 1e-14


def test_nonlinear_term_conserves_energy_and_forcing_injects_epsilon(ns):
    base = ns("slab")
    grid, eps = base.grid, 0.3
    forced = NavierStokes(grid, nu=base.nu, forcing_epsilon=eps)
    u = base.initial_state("random-isotropic", seed=1, k0=3.0, energy=0.5)  # (test_sharded_equals_single_device's)

    @jax.jit
    def rates(u):
        def inner(a, b):
            return (grid.mean_square(a + b) - grid.mean_square(a - b)) / 4  # = <a . b>, so dE/dt = <u . rhs>

        rhs = tree_add(apply_linear(forced.linear(), u), forced.nonlinear(u, 0.0))  # L u + N(u)
        return inner(u, base.nonlinear(u, 0.0)), inner(u, rhs), D.enstrophy(grid, u)

    transfer, de_dt, z = (float(v) for v in rates(u))
    assert abs(transfer) < 1e-14  # sum_k u_k* . N_k = 0: the dealiased rotational form conserves energy
    assert de_dt == pytest.approx(eps - 2 * base.nu * z, rel=1e-12)  # dE/dt = injection - dissipation


def test_random_isotropic_field(ns):
    """The field of test_sharded_equals_single_device (its programs: the pencil mesh, the 3/2 rule, which keeps
    every mode of 16^3): the energy asked for, divergence-free, the target spectrum, the same field on any mesh."""
    eq = ns("pencil", dealias="3/2")
    u = eq.initial_state("random-isotropic", seed=1, k0=3.0, energy=0.5)
    out = eq.summary(u)
    assert float(out["energy"]) == pytest.approx(0.5, rel=1e-13)
    assert float(out["max_div"]) < 1e-13
    spec = np.asarray(out["spectrum"])
    kj = np.arange(spec.size)
    shape = kj**4 * np.exp(-2 * (kj / 3.0) ** 2)
    full = slice(1, 5)  # shells entirely inside the kept modes (|k_i| <= 5 even under the 2/3 rule at 16^3) follow the
    np.testing.assert_allclose(spec[full] / spec[full].sum(), shape[full] / shape[full].sum(), rtol=1e-12)  # target
    single = ns("single", dealias="3/2")
    u1 = single.initial_state("random-isotropic", seed=1, k0=3.0, energy=0.5)
    np.testing.assert_allclose(np.asarray(u), np.asarray(u1), atol=1e-15)  # same field on any mesh
    u2 = single.initial_state("random-isotropic", seed=8, k0=3.0, energy=0.5)
    assert np.abs(np.asarray(u2) - np.asarray(u1)).max() > 1e-3


_REFERENCE = {}


# (mesh, dealias) sampled: the other two pairs, on points the mesh splits and the grid's modes do not, are
# test_grid_points.py::test_navier_stokes_of_14_modes_on_8_devices_is_the_14_point_run's
@pytest.mark.parametrize(("kind", "dealias"), [("slab", "2/3"), ("pencil", "3/2")])
def test_sharded_equals_single_device(ns, kind, dealias):
    def run(k):
        eq = ns(k, dealias=dealias)
        u = eq.initial_state("random-isotropic", seed=1, k0=3.0, energy=0.5)
        out = eq.rk4.advance(u, 0.0, 0.02, 5)
        if k != "single":
            assert out.sharding.spec == eq.grid.spectral_sharding(1).spec
        return np.asarray(out)

    if dealias not in _REFERENCE:
        _REFERENCE[dealias] = run("single")
    ref = _REFERENCE[dealias]
    assert np.abs(run(kind) - ref).max() < 1e-13 * np.abs(ref).max()


def _nonlinear_and_rate(eq, u):
    """The nonlinear term and the CFL rate as a CFL step's first stage takes them: from the term's own physical
    velocity where the equation fuses them, else (3/2 padding) ``max_rate``."""
    n, rate = eq.nonlinear_and_rate(u, 0.0)
    return n, eq.max_rate(u) if rate is None else rate


@pytest.mark.parametrize("dealias", ["2/3", "3/2"])
def test_small_blocks_batch_the_nonlinear_transforms(meshes, dealias):
    """On several devices with at most ``batched_points_per_device`` points each, the nonlinear term moves ``u``
    and ``omega`` to physical space in one batched transform and ``u x omega`` back in another: 2 all-to-alls on
    a slab instead of 9 (2026-11-24: an LSRK4 step at 32^3 on 8 CPU devices took 8.6 ms instead of 18.4), and
    the nine scalar transforms' numbers to rounding (float64; batched FFTs may round differently), CFL rate
    included."""
    grid = SpectralGrid(16, meshes["slab"], dtype=jnp.float64, dealias=dealias)
    batched, scalar = NavierStokes(grid, nu=0.02), NavierStokes(grid, nu=0.02)
    scalar.batched_points_per_device = 0
    assert batched.batched_transforms() and not scalar.batched_transforms()
    u = batched.initial_state("random-isotropic", seed=1, k0=3.0, energy=0.5)
    outs, counts = {}, {}
    with jax.set_mesh(grid.mesh):
        for name, eq in (("batched", batched), ("scalar", scalar)):
            f = jax.jit(lambda u, eq=eq: _nonlinear_and_rate(eq, u)).lower(u).compile()  # (once: run and read)
            outs[name] = jax.tree.map(np.asarray, f(u))
            counts[name] = len(re.findall(r" all-to-all(?:-start)?\(", f.as_text()))
    ref = outs["scalar"][0]
    assert np.abs(outs["batched"][0] - ref).max() < 1e-13 * np.abs(ref).max()
    assert outs["batched"][1] == pytest.approx(outs["scalar"][1], rel=1e-14) and outs["scalar"][1] > 0
    if dealias == "2/3":
        assert (counts["batched"], counts["scalar"]) == (2, 9), counts
    else:  # 3/2: the padded transforms move more, the batched ones still fewer times
        assert counts["batched"] < counts["scalar"], counts


def test_large_blocks_and_one_device_take_the_scalar_transforms(meshes):
    """The nine scalar transforms keep fewer full fields alive (72 against 89 bytes per point at 64^3): grids of
    more than ``batched_points_per_device`` points per device take them, and so does one device (no faster
    batched). A memory probe (:attr:`~solvers.VelocityEquation.planned_points`) chooses as the run it stands for."""
    assert not NavierStokes(SpectralGrid(16, meshes["single"])).batched_transforms()
    assert not NavierStokes(SpectralGrid(128, meshes["slab"], dtype=jnp.float32)).batched_transforms()
    assert NavierStokes(SpectralGrid(64, meshes["slab"], dtype=jnp.float32)).batched_transforms()
    probe = NavierStokes(SpectralGrid(32, meshes["slab"], dtype=jnp.float32))
    assert probe.batched_transforms()
    probe.planned_points = (128, 128, 128)
    assert not probe.batched_transforms()
    probe.planned_points = (32, 32, 32)
    assert probe.batched_transforms()


def test_memory_probe_compiles_the_runs_transforms(monkeypatch, tmp_path):
    """The memory check compiles a 256^3 run's programs on a 32^3 probe: the probe takes the run's scalar
    transforms (its own size would take the batched ones, about 20% more bytes per point: the estimate would
    refuse grids that fit), and a 32^3 run's own grid takes the batched ones."""
    import xfft
    from solvers import RunConfig
    from solvers.job import memory as _memory
    from solvers.job.build import check_memory, validate

    seen = []
    monkeypatch.setattr(_memory, "program_bytes", lambda eq, stepper, ic, p: seen.append(eq) or {"step": 1})
    for n, batched in ((256, False), (32, True)):
        cfg = RunConfig(equation="navier-stokes", n=n, dtype="float32", t_end=1.0, out=str(tmp_path / str(n)),
                        progress=False, plots=False)
        res = validate(cfg)
        check_memory(cfg, res, xfft.make_mesh("slab"), res.shape, always=True)
        assert seen[-1].grid.shape == (32, 32, 32) and seen[-1].batched_transforms() is batched, n
