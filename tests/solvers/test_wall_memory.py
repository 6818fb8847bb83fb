"""Memory of the wall equations' step program (XLA's own buffer assignment, compile only): the channel and no-slip
convection steps as a run compiles them (:class:`~solvers.simulation.loop.Loop`: IMEX ARS(4,4,3) at a fixed dt,
diagnostics rows, the state donated), float64 on the 8-device slab.

Bytes per grid point are ``memory_analysis()``'s arguments + outputs + temporaries - aliased, summed over the
devices (``solvers.job.memory``'s figure). The grids are the memory check's probe sizes (32^3 points in 3D, a
2D grid of about 192^2): a run's estimate is the probe's figure times :data:`~solvers.job.memory.HEADROOM`, so
a step within ``bound / HEADROOM`` here is within ``bound`` at any size the check scales it to. The steps are
compiled with the nonlinear terms' fields transformed one at a time, as every run whose blocks exceed
``BATCH_BYTES`` (64 KiB, solvers.model.velocity_vorticity) has them (a smaller grid transforms them together: the
last tests).
"""

from __future__ import annotations

import math

import jax
import pytest

import xfft
from solvers import RunConfig
from solvers.job import memory as _memory
from solvers.job.build import build, controller_of, validate
from solvers.simulation.loop import Loop
from solvers.stepping import host_control_flow

#: the target of a wall step, bytes per grid point in float64 (the periodic Navier-Stokes step holds 63 in float32)
BOUND = 250.0


class _Rows:
    """The main job's outputs as the memory check sees them: rows every 10 steps (spectrum asked for)."""

    wants_spectrum = True
    name = "rows"
    row_every = 10

    def sampler(self, equation):
        return None


def step_program(equation: str, shape: tuple[int, ...], params: dict, ic: str, tmp_path):
    """The run's step program compiled on the slab mesh, its bytes per grid point, and the run's parts."""
    cfg = RunConfig(equation=equation, n=shape, dtype="float64", integrator="imex", dt=2e-3, out=str(tmp_path),
                    ic=ic, params=params, progress=False, plots=False)
    built = build(cfg, validate(cfg), xfft.make_mesh("slab"))
    built.equation.kmm.batched = False  # the fields one at a time, as every run above BATCH_BYTES a device has them
    mesh = built.grid.mesh
    loop = Loop(built.integrator, controller_of(cfg).resolve(built.integrator), [_Rows()], None, True,
                host_control_flow(mesh))
    compiled = loop.lower().compile()
    return _memory._bytes(compiled) * mesh.size / math.prod(built.grid.shape), compiled, built


# One probe size per equation (a compile of each step program is the test's cost): the channel's in 3D, the
# convection's in 2D, so that both dimensions' step programs are checked. (The 2D channel's figures: ``homogeneous``
# 0.5, 101 B/pt at 65x512.)
@pytest.mark.parametrize("shape,homogeneous", [((33, 32, 32), 0.25)], ids=["33x32x32"])
def test_channel_step_holds_at_most_the_bound(shape, homogeneous, tmp_path):
    """Measured (jax 0.10.2, XLA CPU): 213 B/pt at 33x32x32 and 179 at 65x64x64 with the IMEX stages in one loop
    (201 and 169 with the stages written out, which compiled 2-3x slower), 101 at 65x512 and 97 at 129x512 (a 2D
    grid holds the half spectrum of its periodic axis; 193 and 182 with the full one), where the step held 820 and
    742 (the IMEX stages kept every nonlinear and linear term, the tau factors ten grid-sized tables, each scan of a
    solve a zero-initialized output that XLA hoisted and copied, the nonlinear term transformed six fields at once,
    and the Chebyshev axis was a complex FFT of its real even extension)."""
    bpp, compiled, built = step_program("channel", shape, {"Re": 2000.0}, "laminar", tmp_path)
    assert bpp * _memory.HEADROOM <= BOUND, bpp
    m = compiled.memory_analysis()
    state = sum(math.prod(x.shape) * x.dtype.itemsize
                for x in jax.tree.leaves(jax.eval_shape(built.equation.abstract_state)))
    devices = built.grid.mesh.size
    # what the step carries besides the state: phi's homogeneous solution (real, one value per coefficient and
    # wavenumber: a quarter of the state's two complex fields in 3D, half of its one in 2D), a few values per
    # wavenumber and the mean flow's tables per wall-normal point, on every device (at most 0.15 of the state here:
    # 0.12 in 2D, where the half spectrum halved the state but not those tables); no per-row tables (they would
    # add 10 such solutions)
    extra = m.argument_size_in_bytes * devices - state
    assert homogeneous * state <= extra <= (homogeneous + 0.15) * state, (extra / state, homogeneous)
    assert m.alias_size_in_bytes * devices == pytest.approx(state, rel=0.01)  # the donated state is reused


@pytest.mark.parametrize("shape,bound", [((65, 512), 174.0), ((33, 32, 32), 275.0)], ids=["65x512", "33x32x32"])
def test_convection_step_memory(shape, bound, tmp_path):
    """No-slip convection (velocity-vorticity plus the temperature: 3 complex fields in 3D): measured (jax 0.10.2,
    XLA CPU) 171 B/pt at 65x512 and 270 at 33x32x32 (245 at 65x64x64, within the wall steps' 250), where the IMEX
    stage loop first held 175 and 282 (261: it kept a second stack of right-hand sides beside the loop's), the
    stages written out 165 and 260 (212), and the step before that 1064 and 990 (and 2D grids 280 and 261 with the
    full spectrum of their periodic axis, before they took a half spectrum). What is left is one transform's
    buffers at a time (the Chebyshev axis a real FFT of the even extension: its input and output twice a real field
    each), the stage loop's stack of right-hand sides, the nonlinear term beside it, and the solve's work space."""
    bpp, _, _ = step_program("rayleigh-benard", shape, {"Ra": 5000.0, "walls": "no-slip"}, "random", tmp_path)
    assert bpp <= bound, bpp


def _compiled_nonlinear(eq, s, t):
    """The nonlinear term of ``eq`` compiled, and the all-to-alls in its HLO."""
    compiled = jax.jit(eq.nonlinear).lower(s, t).compile()
    return compiled, compiled.as_text().count(" all-to-all(")


def test_small_blocks_are_transformed_together_with_the_same_numbers():
    """A 17x16 no-slip convection cell on 8 devices (a few KB a device): the nonlinear term transforms its fields
    together, three transforms where one at a time takes nine (each with its all-to-all), to round-off the same
    tendency; a run of such blocks took 7.2 ms a step against 17.2 one at a time (25x32, 8 CPU devices)."""
    import jax.numpy as jnp

    from solvers import RayleighBenardNoSlip

    g = RayleighBenardNoSlip.make_grid((17, 16), mesh=xfft.make_mesh("slab"), dtype=jnp.float64)
    eq = RayleighBenardNoSlip(g, Ra=5000.0)
    s = eq.initial_state("random", seed=3)
    assert eq.kmm.batched
    t = jnp.float64(0.0)
    with jax.set_mesh(g.mesh):
        fn, n_together = _compiled_nonlinear(eq, s, t)
        together = fn(s, t)
        eq.kmm.batched = False
        fn, n_apart = _compiled_nonlinear(eq, s, t)
        apart = fn(s, t)
    scale = float(jnp.max(jnp.abs(apart)))
    assert float(jnp.max(jnp.abs(together - apart))) <= 1e-13 * scale
    with pytest.raises(TypeError, match="batched"):
        eq.kmm.batched = 1


def test_the_memory_probe_compiles_the_runs_transforms(tmp_path):
    """The memory check compiles a big run's programs on a small probe grid: the probe's velocity machinery is told
    the run's points (``planned_points``), so it transforms one field at a time as the run will, not together as
    its own small grid would."""
    import jax.numpy as jnp

    from solvers import Channel, wall_grid

    eq = Channel(wall_grid((33, 32, 32), xfft.make_mesh("slab"), lengths=(6.0, 3.0), dtype=jnp.float64))
    assert eq.kmm.batched  # 33 KB a device
    seen = []

    def make(probe):
        e = Channel(wall_grid(probe, xfft.make_mesh("slab"), lengths=(6.0, 3.0), dtype=jnp.float64))
        seen.append(e)
        return e, None

    class _Stepper:
        def __init__(self, eq, integ):
            seen.append(eq.kmm.batched)

        def lower(self):
            raise AssertionError("not compiled here")

    with pytest.raises(AssertionError, match="not compiled"):
        _memory.estimate((129, 256, 256), 8, make, "laminar", {}, _Stepper, run_points=(129, 256, 256))
    assert seen[0].kmm.planned_points == (129, 256, 256) and seen[1] is False
