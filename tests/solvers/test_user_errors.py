"""A user's mistakes, made as a user makes them, each answered in one line that names what is wrong: the initial
state, what the equation's own methods return (checked once by tracing, before the first step), the outputs, a run
that grows without bound, and the command line's resume and preset errors."""

import json
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P
from ks_equation import KuramotoSivashinsky

import solvers
from solvers.cli import main
from solvers.io import read_csv

L = 32 * math.pi


@pytest.fixture(scope="module")
def ks():
    return KuramotoSivashinsky(solvers.SpectralGrid((16, 16), dtype=jnp.float64, box_length=L))


def _run(eq, integrator="etdrk4", **kw):
    return solvers.simulate(eq, integrator, t_end=0.2, controller=solvers.FixedStep(0.1), **kw)


def _one_line(e) -> str:
    text = str(e.value)
    assert "\n" not in text
    return text


# ----- the initial state ------------------------------------------------------------------------------------------
def test_y0_of_another_shape_dtype_or_structure_is_named(ks):
    y0 = ks.initial_state()
    with pytest.raises(ValueError) as e:
        _run(ks, y0=jnp.zeros((1, 8), jnp.complex128))
    assert _one_line(e) == ("y0 has shape (1, 8), expected (16, 8) complex128 (the spectral state of "
                            "KuramotoSivashinsky)")
    with pytest.raises(ValueError) as e:  # was a 500-character scan carry error
        _run(ks, y0=y0.astype(jnp.complex64))
    assert _one_line(e) == ("y0 has dtype complex64 (float32 precision on a float64 grid), expected (16, 8) "
                            "complex128 (the spectral state of KuramotoSivashinsky)")
    with pytest.raises(TypeError) as e:
        _run(ks, y0=(y0,))
    assert _one_line(e) == ("y0 is a tuple of 1 array, expected one array (16, 8) complex128 (the spectral state of "
                            "KuramotoSivashinsky)")


def test_y0_on_the_host_or_another_sharding_is_placed_on_the_grids(meshes):
    """A numpy ``y0`` or one on other devices is placed on the grid's sharding (they were raw JAX errors)."""
    eq = KuramotoSivashinsky(solvers.SpectralGrid((16, 16), meshes["slab"], dtype=jnp.float64, box_length=L))
    y0 = eq.initial_state()
    on_host = _run(eq, y0=np.asarray(y0)).state
    on_one = _run(eq, y0=jax.device_put(np.asarray(y0), jax.devices()[0])).state
    for state in (on_host, on_one):
        assert state.sharding.is_equivalent_to(y0.sharding, 2)
    np.testing.assert_array_equal(np.asarray(on_host), np.asarray(on_one))
    assert float(jax.jit(lambda a, b: jnp.abs(a - b).max())(on_host, y0)) > 0  # it stepped


# ----- what the equation's methods return -------------------------------------------------------------------------
class WrongShape(KuramotoSivashinsky):
    def nonlinear(self, u, t):  # a physical field, not its spectrum
        return self.grid.to_physical(super().nonlinear(u, t))


class Pair(KuramotoSivashinsky):
    def nonlinear(self, u, t):
        return u, u


class Single(KuramotoSivashinsky):
    def nonlinear(self, u, t):  # float32 arithmetic on a float64 grid: was accepted silently
        return super().nonlinear(u, t).astype(jnp.complex64)


class BadLinear(KuramotoSivashinsky):
    def linear(self):
        return jnp.ones((3, 5))


class SingleLinear(KuramotoSivashinsky):
    def linear(self):
        return super().linear().astype(jnp.float32)


class Implicit(KuramotoSivashinsky):
    """Its linear part as an implicit solve (what a wall equation gives), returning the wrong precision."""

    def implicit_factor(self, h):
        return 1 / (1 - h * KuramotoSivashinsky.linear(self))

    def implicit_solve(self, rhs, factor):
        return (factor * rhs).astype(jnp.complex64)


@pytest.mark.parametrize(("cls", "integrator", "error", "message"), [
    (WrongShape, "etdrk4", ValueError, "WrongShape.nonlinear(state, t) returned shape (16, 16), expected (16, 8) "
     "complex128 (the spectral state's)"),
    (WrongShape, "rk4", ValueError, "WrongShape.nonlinear(state, t) returned shape (16, 16), expected (16, 8) "
     "complex128 (the spectral state's)"),
    (Pair, "rk4", TypeError, "Pair.nonlinear(state, t) returned a tuple of 2 arrays, expected one array (16, 8) "
     "complex128 (the spectral state's)"),
    (Single, "rk4", ValueError, "Single.nonlinear(state, t) returned dtype complex64 (float32 precision on a "
     "float64 grid), expected (16, 8) complex128 (the spectral state's)"),
    (BadLinear, "etdrk4", ValueError, "BadLinear.linear() returned shape (3, 5), which does not broadcast to the "
     "spectral state's (16, 8) complex128"),
    (SingleLinear, "ifrk4", ValueError, "SingleLinear.linear() returned dtype float32, expected the grid's precision "
     "(float64, or its complex) for the spectral state's (16, 8) complex128"),
    (Implicit, "imex", ValueError, "Implicit.implicit_solve(rhs, factor) returned dtype complex64 (float32 precision "
     "on a float64 grid), expected (16, 8) complex128 (the spectral state's)"),
])
def test_a_method_returning_the_wrong_thing_is_named(cls, integrator, error, message):
    eq = cls(solvers.SpectralGrid((16, 16), dtype=jnp.float64, box_length=L))
    with pytest.raises(error) as e:
        _run(eq, integrator)
    assert _one_line(e) == message
    with pytest.raises(error) as e:  # the differentiable rollout checks the same, when it is built
        solvers.rollout(eq, integrator, dt=0.1, steps=2)
    assert _one_line(e) == message


def test_a_method_returning_another_sharding_is_named(meshes):
    class Resharded(KuramotoSivashinsky):
        def nonlinear(self, u, t):
            return jax.sharding.reshard(super().nonlinear(u, t), P("x", None))

    eq = Resharded(solvers.SpectralGrid((16, 16), meshes["slab"], dtype=jnp.float64, box_length=L))
    with pytest.raises(ValueError) as e:
        _run(eq)
    assert _one_line(e) == ("Resharded.nonlinear(state, t) returned an array sharded P('x', None), expected "
                            "(16, 8) complex128 sharded P(None, 'x') (the spectral state's: grid.spectral_sharding)")


def test_rollout_names_a_state0_of_another_shape(ks):
    run = solvers.rollout(ks, "etdrk4", dt=0.1, steps=2)
    with pytest.raises(ValueError) as e:
        run(jnp.zeros((16, 16), jnp.complex128))
    assert _one_line(e) == ("state0 has shape (16, 16), expected (16, 8) complex128 (the spectral state of "
                            "KuramotoSivashinsky)")


# ----- outputs ----------------------------------------------------------------------------------------------------
def test_outputs_must_be_a_sequence(ks, tmp_path):
    with pytest.raises(TypeError) as e:  # was "'Checkpoint' object is not iterable"
        _run(ks, outputs=solvers.Checkpoint(tmp_path / "ck"))
    assert _one_line(e) == "outputs must be a sequence of outputs, got one Checkpoint: write outputs=[Checkpoint(...)]"


def test_an_output_for_another_grid_is_refused_and_unreached_times_warn(tmp_path):
    pytest.importorskip("h5py")
    eq = solvers.NavierStokes2D(solvers.SpectralGrid((16, 16), dtype=jnp.float64), kf=2)
    other = solvers.NavierStokes2D(solvers.SpectralGrid((12, 12), dtype=jnp.float64), kf=2)
    with pytest.raises(ValueError) as e:
        _run(eq, "rk4", outputs=[solvers.SnapshotWriter(tmp_path / "a", other, every=1)])
    assert _one_line(e) == ("outputs: the SnapshotWriter was built for NavierStokes2D on a 12x12 grid, but the run "
                            "advances NavierStokes2D on a 16x16 grid: build it with the run's equation")
    writer = solvers.SnapshotWriter(tmp_path / "b", eq, times=[0.1, 5.0, 7.0])
    with pytest.warns(UserWarning) as caught:
        _run(eq, "rk4", outputs=[writer])
    assert [str(w.message) for w in caught] == [
        "outputs: the SnapshotWriter asks for t = 5 7, after t_end = 0.2: this run writes nothing for those times"]
    index = json.loads((tmp_path / "b" / "snapshots.json").read_text())
    assert [s["t"] for s in index["snapshots"]] == [pytest.approx(0.1)]  # the time inside the run is written


# ----- blow-up ----------------------------------------------------------------------------------------------------
def _noise(eq, amplitude):
    g = eq.grid
    return g.dealias(g.rfft(amplitude * jax.random.normal(jax.random.key(0), g.shape, g.dtype)))


class Hyperdiffusion(solvers.Equation):
    """``u_t = -nu lap^2 u``: a stiff linear term, nothing else."""

    parameters = (solvers.Param("nu", 1.0, "hyperdiffusivity", low=0),)
    initial_conditions = {"noise": solvers.InitialCondition(_noise, (solvers.Param("amplitude", 1e-3),))}

    def __init__(self, grid, nu=1.0):
        super().__init__(grid, nu=nu)

    def linear(self):
        k2 = self.grid.k2()
        return (-self.nu * k2 * k2).astype(self.grid.dtype)

    def nonlinear(self, u, t):
        return jnp.zeros_like(u)


def test_a_run_that_grows_without_bound_stops_by_default():
    """rk4 past its stability limit (``dt nu k^4 = 3.2`` at the largest kept wavenumber: the mode grows 1.83 times a
    step) stays finite for 50 steps (the energy grows 1e13-fold): the default bound stops it, naming the step and
    time; ``energy_bound=None`` turns the bound off (the run returned a finite 1e26 silently before)."""
    grid = solvers.SpectralGrid((16, 16), dtype=jnp.float64)

    def k4_and_kept():  # one program, not one per operation
        k4 = grid.k2() ** 2
        return k4, grid.dealias(jnp.ones(k4.shape, grid.cdtype)) != 0

    k4, kept = jax.jit(k4_and_kept)()
    eq = Hyperdiffusion(grid, nu=3.2 / (0.1 * float(np.max(np.asarray(k4)[np.asarray(kept)]))))
    energy_of = jax.jit(eq.energy)
    e0 = float(energy_of(eq.initial_state()))
    free = solvers.simulate(eq, "rk4", t_end=5.0, controller=solvers.FixedStep(0.1), energy_bound=None)
    energy = float(energy_of(free.state))
    assert free.step == 50 and math.isfinite(energy) and energy > 1e12 * max(e0, 1.0)
    with pytest.raises(solvers.BlowUpError) as e:
        solvers.simulate(eq, "rk4", t_end=5.0, controller=solvers.FixedStep(0.1))
    err = e.value
    assert 0 < err.step < 50 and err.t == pytest.approx(0.1 * err.step)
    assert _one_line(e).startswith("blow-up: the energy ")
    assert (f"passed the bound {1e12 * max(e0, 1.0):.6g} (simulate's default energy_bound; None turns it off) at "
            f"step {err.step} (t = {err.t:.6g})") in str(err)


# ----- the command line -------------------------------------------------------------------------------------------
def test_preset_error_names_the_flag_typed(capsys):
    args = ["run", "channel", "--preset", "re-tau-180-minimal", "--dry-run"]
    assert main(args + ["--n", "65", "48"]) == 2  # blamed --box-length, which was not typed
    assert capsys.readouterr().err == (
        "python -m solvers: error: --n: 2 sizes (65 48) for --preset re-tau-180-minimal, whose box is 3D (2 3.14159 "
        "0.942478): give 3 sizes, or a 2D box with --box-length\n")
    assert main(args + ["--box-length", "2", "3"]) == 2
    assert capsys.readouterr().err == (
        "python -m solvers: error: --box-length: 2 sides (2 3) for --preset re-tau-180-minimal, whose grid is 3D (65 "
        "48 32): give 3 sides, or 2 sizes with --n\n")


def test_resume_with_t_end_not_after_the_checkpoint_exits_2(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["run", "navier-stokes-2d", "--n", "16", "16", "--dtype", "float64", "--dt", "0.05", "--out", str(out),
            "--no-progress", "--no-plots", "--no-compile-cache"]
    with warnings.catch_warnings():
        assert main(args + ["--t-end", "0.1"]) == 0
    capsys.readouterr()
    for t_end in ("0.1", "0.05"):  # a raw traceback, exit 1
        assert main(args + ["--t-end", t_end, "--resume"]) == 2
        assert capsys.readouterr().err == (
            f"python -m solvers: error: --t-end {float(t_end):g} is not after the time of the latest checkpoint in "
            f"'{out / 'checkpoints'}' (t = 0.1, step 2), which a resumed run continues from: give a later end time\n")
    assert [float(r["t"]) for r in read_csv(out / "diagnostics.csv")][-1] == pytest.approx(0.1)


def test_an_equation_without_an_initial_condition_says_what_to_give():
    """The state's shapes come from the first initial condition: an equation with none, run from a given ``y0``,
    is told to give one or define ``abstract_state`` (not a ``StopIteration`` from inside the library)."""

    class Decay(solvers.Equation):
        ndims = (2,)

        def linear(self):
            return -self.grid.k2()

        def nonlinear(self, u, t):
            return jnp.zeros_like(u)

    eq = Decay(solvers.SpectralGrid(16, None, ndim=2))
    with pytest.raises(ValueError, match="has no initial condition to take the state's shapes from"):
        solvers.simulate(eq, "rk4", t_end=0.1, y0=jnp.zeros(eq.grid.spectral_shape, jnp.complex64),
                         controller=solvers.FixedStep(0.01))
