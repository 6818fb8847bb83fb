"""A grid the mesh cannot split (issue 16: ``--n 30`` on 8 devices).

JAX shards arrays evenly and :mod:`xfft` pads only in transit, so no layout holds 30^3 on 8 devices. The grid
holds every shape the transforms hold; a periodic grid of 30 modes that no layout holds is stored on the next
sizes the mesh splits (``SpectralGrid(..., points=...)``), and since dealiased products are exact on either, the
run equals the 30-point run to round-off.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
import xfft
from solvers import INTEGRATORS, REGISTRY, ConfigError, NavierStokes, RunConfig, SpectralGrid
from solvers.bases import Fourier
from solvers.io import read_csv
from solvers.outputs import PlotSpec
from solvers.outputs.plots import plane

SHAPES = [(30, 40, 50), (40, 30, 30), (30, 30, 32), (30, 30, 30), (24, 20, 18), (30, 40), (30, 30)]


def _transform_refusal(mesh, shape) -> str | None:
    """xfft's message refusing a real transform of ``shape`` on ``mesh`` (None: it plans one)."""
    try:
        xfft.spectral_sharding(xfft.real_sharding(mesh, shape, ndim=len(shape)), shape, real=True, ndim=len(shape))
    except ValueError as e:
        return str(e)
    return None


@pytest.mark.parametrize("kind", ["slab", "pencil"])
def test_the_grid_holds_every_shape_the_transforms_hold(meshes, kind):
    mesh = meshes[kind]
    held = []
    for shape in SHAPES:
        try:
            grid = SpectralGrid(shape, mesh, ndim=len(shape), dtype=jnp.float64)
        except ValueError as e:
            refusal = _transform_refusal(mesh, shape)
            assert refusal is not None and refusal in str(e), (shape, str(e))  # xfft's own reason
            continue
        assert _transform_refusal(mesh, shape) is None, shape
        held.append(shape)
        f = np.random.default_rng(len(held)).standard_normal(shape)
        with jax.set_mesh(mesh):
            c = jax.jit(grid.forward)(jax.device_put(f, grid.real_sharding()))  # one program, not op by op
            # the planned transform itself (xrfftn, norm="forward"), gathered, against numpy
            ref = np.fft.rfftn(f) / f.size
            ref = ref if grid.nyquist else ref[..., :-1]  # a 2D grid leaves out the Nyquist coefficient
            np.testing.assert_allclose(np.asarray(c), ref, rtol=0, atol=1e-15)
    assert (30, 40, 50) in held and (30, 30, 30) not in held  # as xfft: 30x40x50 runs on 8 devices, 30^3 does not


def test_modes_on_more_points_keep_the_modes_of_the_grid(meshes):
    mesh = meshes["slab"]
    with pytest.raises(ValueError, match="JAX shards arrays evenly"):
        SpectralGrid(30, mesh)
    grid = SpectralGrid(30, mesh, dtype=jnp.float64, points=32)
    assert grid.modes == (30, 30, 30) and grid.shape == (32, 32, 32) and grid.stored_on_more_points
    assert grid.bases[0].kept_modes == 30 and grid.bases[0].describe()["kept_modes"] == 30
    m = np.abs(np.fft.fftfreq(32, 1 / 32))
    nat = SpectralGrid(30, mesh, dtype=jnp.float64, points=32, order="natural")
    keep = [np.asarray(t).ravel() for t in nat.keep_tables()]
    np.testing.assert_array_equal(keep[0], m < 10)  # the 2/3 rule of 30 points, not of 32
    np.testing.assert_array_equal(keep[2], np.arange(17) < 10)
    three_halves = SpectralGrid(30, mesh, dtype=jnp.float64, points=32, dealias="3/2", order="natural")
    np.testing.assert_array_equal(np.asarray(three_halves.keep_tables()[0]).ravel(), m < 15)
    with jax.set_mesh(mesh):
        ones = jnp.ones((1,) + nat.spectral_shape, nat.cdtype)
        kept = np.asarray(jax.jit(nat.truncate)(jax.device_put(ones, nat.spectral_sharding(1))))[0]
    assert kept.sum() == 29 * 29 * 15  # |m| < 15 on every axis: the modes of a 30-point grid but its Nyquist
    plain = SpectralGrid(16, mesh)
    assert not plain.stored_on_more_points and plain.modes == plain.shape
    x = jnp.arange(3.0)
    assert plain.truncate(x) is x  # a grid with as many points as modes truncates nothing
    # An initial condition built on the points holds only the grid's modes (the API as the main job).
    eq = NavierStokes(SpectralGrid(30, mesh, dtype=jnp.float64, points=32), nu=0.01)
    with jax.set_mesh(mesh):
        u = np.asarray(jax.jit(eq.grid.to_natural)(eq.initial_state("random-isotropic", seed=1)))
    m0, m2 = np.abs(np.fft.fftfreq(32, 1 / 32)), np.arange(17)
    outside = (m0[:, None, None] >= 15) | (m0[None, :, None] >= 15) | (m2[None, None, :] >= 15)
    assert np.abs(u[:, outside]).max() == 0 and np.abs(u[:, ~outside]).max() > 0
    for bad, text in [(dict(points=28), "points must be even sizes >= the grid shape"),
                      (dict(points=33), "points must be even sizes"),
                      (dict(points=32, dealias="none"), "needs dealias '2/3' or '3/2'")]:
        with pytest.raises(ValueError, match=text):
            SpectralGrid(30, mesh, **bad)
    with pytest.raises(ValueError, match="kept_modes must be from 4 to n=32, got 40"):
        Fourier(32, kept_modes=40)
    with pytest.raises(TypeError, match="kept_modes must be an int, got 30.0"):
        Fourier(32, kept_modes=30.0)
    # Every grid, a wall grid included, refuses fewer modes than points without dealiasing.
    channel_grid = REGISTRY["channel"].grid  # the main job's grid of the channel (solvers.wall_grid)
    with pytest.raises(ValueError, match="needs dealias '2/3' or '3/2'"):
        channel_grid((17, 30), mesh, (2.0, 6.0), dtype=jnp.float64, dealias="none", backend=None, points=(17, 32))
    with pytest.raises(ValueError, match="the wall-normal axis keeps its 17 points"):
        channel_grid((17, 30), mesh, (2.0, 6.0), dtype=jnp.float64, dealias="2/3", backend=None, points=(18, 32))


def _pad_natural(c: np.ndarray, n: int, p: int) -> np.ndarray:
    """Natural half spectra of an n^3 grid as those of p^3 points (the same modes; the others zero)."""
    h = n // 2
    out = np.zeros(c.shape[:-3] + (p, p, p // 2 + 1), c.dtype)
    dst, src = np.r_[0:h, p - h:p], np.r_[0:h, n - h:n]
    out[..., dst[:, None, None], dst[None, :, None], np.arange(h)] = c[..., src[:, None, None], src[None, :, None],
                                                                       np.arange(h)]
    return out


# (dealias, mesh): each rule on a mesh that cannot split 14, against a run on a grid of 14 points: the 3/2 rule on the
# pencil mesh (2 x 4) here, the 2/3 rule on the slab mesh (8) in the main job's run below; the other two pairs on
# grids the mesh splits: test_solver_navier_stokes.py::test_sharded_equals_single_device
@pytest.mark.parametrize("dealias, kind", [("3/2", "pencil")])
def test_navier_stokes_of_14_modes_on_8_devices_is_the_14_point_run(meshes, dealias, kind):
    """Random isotropic turbulence on one device (14^3) and on 8 (14^3 modes on 16^3 points, which 8 devices
    split where 14 does not): the same diagnostics to round-off after 6 RK4 steps (every product dealiased, so
    exact on either; the 3/2 rule pads the 14 modes to an odd 21 points)."""
    def equation(mesh, points):
        g = SpectralGrid(14, mesh, dtype=jnp.float64, dealias=dealias, order="transposed", points=points)
        return NavierStokes(g, nu=0.01)

    ref = equation(None, None)
    with pytest.raises(ValueError, match="JAX shards arrays evenly"):
        equation(meshes[kind], None)  # (so the 8-device run is the one on more points)
    with jax.set_mesh(ref.grid.mesh):
        u0 = np.asarray(jax.jit(ref.grid.to_natural)(ref.initial_state("random-isotropic", seed=3)))
    rows = {}
    for name in ("single", kind):
        eq = ref if name == "single" else equation(meshes[kind], 16)
        g = eq.grid
        with jax.set_mesh(g.mesh):
            c = u0 if name == "single" else _pad_natural(u0, 14, 16)
            u = jax.jit(g.from_natural)(jax.device_put(c, g.natural_like(eq.abstract_state()).sharding))
            u = INTEGRATORS["rk4"](eq).advance(u, 0.0, 0.02, 6)
            rows[name] = {k: float(v) for k, v in jax.device_get(jax.jit(eq.diagnostics)(u, 0.0, 0.02)).items()}
    for name in ("energy", "enstrophy", "dissipation", "resolution"):
        a, b = rows["single"][name], rows[kind][name]
        assert a > 0 and abs(b - a) <= 1e-12 * abs(a), (kind, name, a, b)
    assert rows[kind]["max_div"] < 1e-13


def test_the_main_job_runs_14_cubed_on_8_devices_and_resumes_on_2(tmp_path, meshes, capsys):
    """``--n 14`` on 8 devices (as ``--n 30``: no layout splits it): held on points the mesh splits (run.json and
    checkpoints say which), the same diagnostics as the 14-point grid on 2 devices (fixed dt); its checkpoint
    continues on 2 devices; a checkpoint on other points is refused in one line."""
    two = xfft.make_mesh((2,), devices=jax.devices()[:2])
    base = RunConfig(n=14, dtype="float64", dt=0.02, max_steps=4, diag_every=1, checkpoint_every=2,
                     progress=False, plots=False)

    def run(name, mesh, **kw):
        cfg = RunConfig(**{**base.__dict__, "out": str(tmp_path / name), **kw})
        solvers.run(cfg, mesh=mesh)
        rows = read_csv(tmp_path / name / "diagnostics.csv")
        table = {k: np.array([float(r[k]) for r in rows])
                 for k in ("step", "energy", "enstrophy", "dissipation", "resolution", "max_div")}
        return table, json.loads((tmp_path / name / "run.json").read_text())

    eight, info = run("eight", meshes["slab"])
    assert "its 14^3 modes are held on 14x14x16 points" in capsys.readouterr().out
    assert info["points"] == [14, 14, 16] and info["mesh"] == {"x": 8}
    true14, info2 = run("two", two)
    assert info2["points"] == [14, 14, 14]
    assert list(eight["step"]) == list(range(5))
    for name in ("energy", "enstrophy", "dissipation", "resolution"):  # (the 2/3 rule on 8 devices: see above)
        # (atol: the resolution of the initial state, which holds no modes near the cutoff, is round-off: ~1e-32)
        np.testing.assert_allclose(eight[name], true14[name], rtol=1e-12, atol=1e-28)
    assert eight["energy"][-1] != eight["energy"][0] and eight["max_div"].max() < 1e-13
    # The 8-device run's checkpoint (on 14x14x16 points) resumes on 2 devices, on the same points.
    (tmp_path / "eight" / "checkpoints" / "4").rename(tmp_path / "four")  # keep step 2 only
    resumed, info3 = run("eight", two, resume=True)
    assert info3["points"] == [14, 14, 16] and info3["mesh"] == {"x": 2}
    assert list(resumed["step"]) == list(range(5))
    for name in ("energy", "enstrophy"):
        np.testing.assert_allclose(resumed[name], eight[name], rtol=1e-12, atol=0)
    # The 2-device checkpoint holds 14^3 points, which 8 devices cannot: refused, naming the points.
    with pytest.raises(ConfigError, match=r"holds its fields on 14\^3 points, but this mesh holds the 14\^3 grid "
                                          r"on 14x14x16"):
        run("two", meshes["slab"], resume=True, max_steps=6)


def test_a_wall_flow_of_14_modes_on_8_devices_is_the_one_device_run(tmp_path):
    """The periodic axis of a wall grid keeps its 14 modes on 16 points where 8 devices cannot split 14 (the
    wall-normal axis keeps its own): the job's parts (``solvers.build``, where ``solvers.run`` chooses the points)
    on 8 devices take 4 fixed-dt steps of a channel (its integrator's compiled loop, the steps a run takes) to the
    one-device run's diagnostics, to 1e-12. (The main job's run on more points, resumed: the Navier-Stokes test
    above. The wall equations share the wall grid's transforms, where the points are chosen: no-slip convection
    runs the same code on them.)"""
    equation, n, params, ic = "channel", (17, 14), {"Re": 2000.0, "amplitude": 0.05}, "tollmien-schlichting"
    rows = {}
    for name, mesh in (("one", xfft.make_mesh((1,), devices=jax.devices()[:1])), ("eight", xfft.make_mesh("slab"))):
        cfg = RunConfig(equation=equation, ic=ic, n=n, dtype="float64", dt=0.01, max_steps=4, params=params,
                        progress=False, plots=False, out=str(tmp_path / name))
        parts = solvers.build(cfg, mesh=mesh)
        assert parts.grid.shape == ((17, 14) if name == "one" else (17, 16))
        diagnostics = jax.jit(parts.equation.diagnostics)
        with jax.set_mesh(parts.grid.mesh):
            y0 = parts.initial_state()
            y4 = parts.integrator.advance(y0, 0.0, 0.01, 4)
            rows[name] = [{k: float(v) for k, v in jax.device_get(diagnostics(y, t, 0.01)).items()}
                          for y, t in ((y0, 0.0), (y4, 0.04))]
    assert rows["one"][1]["perturbation_energy"] != rows["one"][0]["perturbation_energy"]  # the wave evolves
    for a, b in zip(rows["one"], rows["eight"], strict=True):
        assert set(a) == set(b)
        for col in set(a) - {"cfl"}:  # the CFL number is a maximum over the points
            assert b[col] == pytest.approx(a[col], rel=1e-12, abs=1e-14), (col, a[col], b[col])


@pytest.mark.parametrize("normal,index", [(-1, 5), (-1, 31), (0, 7)])
def test_the_field_plot_takes_its_plane_along_a_sharded_axis(meshes, normal, index):
    """30^3 modes on 8 devices are held on 30x30x32 points, the last axis sharded, which the neighbouring axes
    cannot take: the plot's plane across it is numpy's slice of the gathered field, exactly (the main job's plots
    failed there), and across an unsharded axis too."""
    g = SpectralGrid(30, meshes["slab"], dtype=jnp.float64, points=32)
    values = np.random.default_rng(0).standard_normal((30, 30, 32))
    field = jax.device_put(values, jax.sharding.NamedSharding(g.mesh, jax.sharding.PartitionSpec(None, None, "x")))
    with jax.set_mesh(g.mesh):
        got = np.asarray(jax.jit(lambda f: plane(g, f, PlotSpec(field="u", normal=normal, index=index)))(field))
    np.testing.assert_array_equal(got, np.take(values, index, axis=normal))
