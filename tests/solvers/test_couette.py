"""Plane Couette flow (walls at y = -1, 1 moving at u = -1, +1): the Orr-Sommerfeld eigenvalues against an
independent collocation solver, laminar U = y steady to round-off, the least stable mode decaying at its
eigenvalue's rate through the main job, a long run past its transient growth that reports the energy of its fields, a
sharded run equal to one device, and the bad inputs."""

import sys
from pathlib import Path

import jax
import numpy as np
import pytest
import scipy.linalg
from numpy.polynomial import chebyshev as C

import xfft
from solvers import IMEX, REGISTRY, RunConfig
from solvers import run as run_job
from solvers.cli import main
from solvers.equations import Couette
from solvers.equations.couette import LAMINAR_ENERGY
from solvers.stability import orr_sommerfeld

sys.path.insert(0, str(Path(__file__).parent))
from _walls import energy_rate, fields_and_diagnostics, wall_flow  # noqa: E402

#: the 3D runs: 9x16x8, both periodic axes sharded on the pencil mesh, 3/2 dealiasing, 4 IMEX steps of 5e-3 (one
#: compiled loop per mesh, shared by the laminar and the sharded tests)
SHAPE_3D, STEPS_3D, DT_3D = (9, 16, 8), 4, 5e-3


def _couette(shape, mesh, dealias="2/3", **params):
    return wall_flow(Couette, shape, mesh, dealias, **params)


def _collocation_phase_speeds(re: float, alpha: float, n: int) -> np.ndarray:
    """Orr-Sommerfeld for U = y by Chebyshev collocation (Trefethen, Spectral Methods in MATLAB, program 40: the
    clamped fourth derivative through v = (1 - y^2) p), a discretization independent of the tau solver's."""
    k = np.arange(n + 1)
    x = np.cos(np.pi * k / n)
    c = np.where((k == 0) | (k == n), 2.0, 1.0) * (-1.0) ** k
    dx = x[:, None] - x[None, :]
    d = np.outer(c, 1 / c) / (dx + np.eye(n + 1))
    d -= np.diag(d.sum(axis=1))
    s = np.diag(np.r_[0, 1 / (1 - x[1:n] ** 2), 0])
    d4 = (np.diag(1 - x ** 2) @ np.linalg.matrix_power(d, 4) - 8 * np.diag(x) @ np.linalg.matrix_power(d, 3)
          - 12 * d @ d) @ s
    inner = slice(1, n)
    d2, d4 = (d @ d)[inner, inner], d4[inner, inner]
    eye = np.eye(n - 1)
    lap = d2 - alpha ** 2 * eye
    a = (d4 - 2 * alpha ** 2 * d2 + alpha ** 4 * eye) / re - 1j * alpha * np.diag(x[inner]) @ lap  # U'' = 0
    lam = scipy.linalg.eigvals(a, lap)  # growth rates lambda = -i alpha c
    c = 1j * lam[np.isfinite(lam)] / alpha
    return c[np.argsort(-c.imag)]


def test_orr_sommerfeld_of_couette_flow_matches_collocation():
    """Re = 1000, alpha = 1: the three least stable phase speeds of the tau solver (``profile="couette"``) equal
    those of an independent collocation solver to 1e-9; the least stable pair is c = +-0.605343 - 0.1192302 i,
    every mode decays (Couette flow is linearly stable). The collocation runs at 50 points: it has converged there
    (45 and 60 points agree to 3e-10) while its round-off, which grows with the points (its fourth-derivative
    matrix's condition number grows like n^8), stays near 1e-11; at 80 points it is about 1e-9 and depends on the
    machine's LAPACK."""
    tau = orr_sommerfeld.eigenvalues(1000.0, 1.0, profile="couette")
    col = _collocation_phase_speeds(1000.0, 1.0, 50)
    for c in tau[:3]:
        assert np.min(np.abs(col - c)) < 1e-9, (c, col[:4])
    assert abs(abs(tau[0].real) - 0.605343) < 1e-6 and abs(tau[0].imag + 0.1192302) < 1e-7
    assert abs(tau[1] + np.conj(tau[0])) < 1e-9  # the symmetric partner -conj(c)
    assert tau.imag.max() < 0
    with pytest.raises(ValueError, match="profile must be one of"):
        orr_sommerfeld.eigenvalues(1000.0, 1.0, profile="pipe")


@pytest.fixture(scope="module")
def flows(meshes):
    """``flows(kind)``: the 3D Couette flow (Re = 400) on ``single`` or ``pencil`` and its IMEX integrator, built
    once per mesh."""
    cache = {}

    def get(kind):
        if kind not in cache:
            eq = _couette(SHAPE_3D, meshes[kind], dealias="3/2", Re=400.0)
            cache[kind] = eq, IMEX(eq)
        return cache[kind]

    return get


@pytest.fixture(scope="module")
def long_flow():
    """The 2D Couette flow of the long run (25x16, Re = 1000, one device) and its IMEX integrator: the 2D laminar
    test takes the long run's compiled loop (100 steps of 0.1) and its fields program."""
    eq = _couette((25, 16), None, Re=1000.0)
    return eq, IMEX(eq)


# The sampled cases: 2D on one device (the long run's equation and loop), 3D on the pencil mesh (the sharded test's
# equation and loop). (The 2D wall grid on 8 devices: test_channel.py's resumed runs, test_grid_points.py.)
@pytest.mark.parametrize("dim,kind", [(2, "single"), (3, "pencil")])
def test_laminar_couette_flow_is_steady_to_round_off(long_flow, flows, dim, kind):
    """U = y stays put (the state, which holds u - y, stays 0): energy 1/6, bulk velocity 0, wall shear nu on
    both walls, no perturbation energy; the walls keep their speeds."""
    if dim == 2:
        eq, integ = long_flow
        s1 = integ.advance(eq.initial_state("laminar"), 0.0, 0.1, 100)
    else:
        eq, integ = flows(kind)
        s1 = integ.advance(eq.initial_state("laminar"), 0.0, DT_3D, STEPS_3D)
    _, d, profile = fields_and_diagnostics(eq, s1, mean_profile=True)
    assert np.max(np.abs(np.asarray(s1))) < 1e-15  # the state holds u - y (on the host: no program to compile)
    nu = 1.0 / eq.Re
    assert abs(d["energy"] - LAMINAR_ENERGY) < 1e-14 and abs(d["bulk_velocity"]) < 1e-15
    assert abs(d["wall_shear_bottom"] - nu) < 1e-15 and abs(d["wall_shear_top"] - nu) < 1e-15
    assert d["perturbation_energy"] < 1e-30
    np.testing.assert_allclose(np.polynomial.chebyshev.chebval([-1.0, 1.0], profile), [-1.0, 1.0], atol=1e-14)


def _mean_square_of_fields(a: np.ndarray, y: np.ndarray) -> float:
    """Volume mean of ``a^2`` for a field on the Chebyshev points ``y`` (axis 0) and uniform periodic points: the
    polynomial through each column squared and integrated exactly (numpy), the mean over the columns."""
    c = C.chebfit(y, a, len(y) - 1)
    total = 0.0
    for j in range(a.shape[1]):
        integral = C.chebint(C.chebmul(c[:, j], c[:, j]))
        total += C.chebval(1.0, integral) - C.chebval(-1.0, integral)
    return total / (2.0 * a.shape[1])


def test_a_long_run_stays_bounded_and_reports_the_energy_of_its_fields(long_flow):
    """A 2D random perturbation of rms 0.3 at Re = 1000, 1200 IMEX steps to t = 120 (far past the transient): the
    perturbation energy grows for a while (transient growth) and then only decays, to a tenth of its peak; the
    walls keep their speeds, and the energy the run reports equals the energy of its physical fields (numpy, exact
    polynomial integration) to 1e-12: nothing grows unseen."""
    eq, integ = long_flow
    s = eq.initial_state("turbulent", amplitude=0.3, seed=2)
    history = [fields_and_diagnostics(eq, s, mean_profile=True)[1]["perturbation_energy"]]
    for k in range(12):
        s = integ.advance(s, 10.0 * k, 0.1, 100)
        f, d, _ = fields_and_diagnostics(eq, s, mean_profile=True)  # (one program: the laminar test's)
        history.append(d["perturbation_energy"])
    # measured: 0.09, 0.105, 0.111 (t = 20: transient growth, Orr mechanism), then 0.0936 ... 0.0058 at t = 120 (the
    # same within 1% at dt = 0.02, 0.05 and 0.1)
    peak = int(np.argmax(history))
    assert peak <= 3, history
    after = history[peak:]
    assert all(b < a for a, b in zip(after, after[1:])), history  # past the transient it only decays
    assert history[-1] < 0.1 * history[peak], history
    y = eq.grid.bases[0].points()
    np.testing.assert_allclose(f["u"][[0, -1]], [[-1.0] * 16, [1.0] * 16], atol=1e-12)
    fields = 0.5 * (_mean_square_of_fields(f["u"], y) + _mean_square_of_fields(f["v"], y))
    assert abs(fields - d["energy"]) < 1e-12 * d["energy"], (fields, d["energy"])
    assert d["energy"] < REGISTRY["couette"].energy_bound(eq, LAMINAR_ENERGY)


def test_sharded_run_equals_one_device(flows):
    """A 3D random perturbation (3/2 dealiasing; built on one device and placed on each mesh), 4 IMEX steps: the
    pencil run's velocity equals one device's to
    1e-12; the walls keep their speeds (the mean profile is -1 and +1 there). (9x16x8: both periodic axes sharded
    on the pencil mesh; one device's block of a physical field under 64 KiB, so the fields are transformed
    together; the channel's test transforms them one at a time.)"""
    out = {}
    s0 = np.asarray(flows("single")[0].initial_state("turbulent", amplitude=0.2, seed=3))  # built once, placed
    for kind in ("single", "pencil"):
        eq, integ = flows(kind)
        assert eq.kmm.batched
        s = integ.advance(jax.device_put(s0, eq.abstract_state().sharding), 0.0, DT_3D, STEPS_3D)
        out[kind], _, profile = fields_and_diagnostics(eq, s, mean_profile=True)
        U = np.polynomial.chebyshev.chebval([-1.0, 1.0], profile)
        np.testing.assert_allclose(U, [-1.0, 1.0], atol=1e-13)
    for name, ref in out["single"].items():
        assert np.max(np.abs(out["pencil"][name] - ref)) < 1e-12 * np.max(np.abs(ref)), name
    u = out["single"]["u"]  # the walls' velocity on the first and last Chebyshev points (ascending: y = -1 first)
    np.testing.assert_allclose(u[0], -1.0, atol=1e-12)
    np.testing.assert_allclose(u[-1], 1.0, atol=1e-12)


def test_least_stable_mode_decays_at_its_rate_through_the_main_job(tmp_path):
    """Re = 1000, alpha = 1 (box 2 pi), 33 Chebyshev points, amplitude 1e-5: the perturbation energy decays as
    exp(2 alpha c_i t) with the Orr-Sommerfeld c_i, from the main job's CSV between t = 4 and t = 8, to 5
    significant digits (the Orr-Sommerfeld c_i on 33 points is within 1.5e-7 of the converged one; on one device:
    400 steps of one streamwise mode per device are latency on 8)."""
    out = tmp_path / "os"
    cfg = RunConfig(equation="couette", ic="orr-sommerfeld", n=(33, 8), params={"Re": 1000.0}, dtype="float64",
                    dt=0.02, t_end=8.0, diag_every=200, out=str(out), progress=False, plots=False)
    run_job(cfg, mesh=xfft.make_mesh((1,), devices=jax.devices()[:1]))
    rate = energy_rate(out, 4.0, 8.0)
    c = orr_sommerfeld.least_stable_mode(1000.0, 1.0, profile="couette")[0]
    assert abs(rate / (2 * c.imag) - 1) < 5e-6, (rate, 2 * c.imag)
    print(f"decay rate {rate:.9f}, 2 alpha c_i {2 * c.imag:.9f}, relative {rate / (2 * c.imag) - 1:.2e}")


@pytest.mark.parametrize("argv,message", [
    (["--n", "17", "8", "--param", "drive=pressure"], "takes no parameter 'drive'"),
    (["--n", "17", "8", "--ic", "tollmien-schlichting"], "unknown initial condition 'tollmien-schlichting'"),
    (["--n", "17", "8", "--box-length", "3", "6.28"], "couette: the wall-normal box"),
    (["--n", "17", "8", "--param", "Re=0"], "Re"),
    (["--n", "17", "8", "--integrator", "rk4"], "--integrator rk4 cannot advance couette"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    args = ["run", "couette", *argv, "--dtype", "float64", "--no-progress", "--no-plots", "--out", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
