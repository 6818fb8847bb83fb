"""The Output protocol of a run: a user's output receives rows, states, stop times and device-side samples; the
built-in outputs write their files; an output that cannot write says so, naming its argument."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers import FixedStep, NavierStokes, Output, SpectralGrid, rollout, simulate
from solvers.stepping import Sampler

DT = 1 / 64


@pytest.fixture(scope="module")
def tg(meshes):
    eq = NavierStokes(SpectralGrid(16, meshes["slab"], dtype=jnp.float64, order="transposed"), nu=0.02)
    return eq, eq.initial_state("taylor-green")


class Recorder(Output):
    """Rows every 3 steps, the states every 4, a stop at t = 0.1, and a device-side sum of the energy every 2."""

    row_every = 3

    def __init__(self):
        self.rows, self.states, self.sums = [], {}, None

    def on_rows(self, rows):
        self.rows += rows

    def next_step(self, step):
        return (step // 4 + 1) * 4

    def stop_time(self, t):
        return 0.1 if t < 0.1 else None

    def on_event(self, event):
        if event.step % 4 == 0:
            self.states[event.step] = jax.device_get(event.state)
        if abs(event.t - 0.1) < 1e-15:
            self.states["t=0.1"] = event.step
        self.sums = jax.device_get(event.samples[self.name])

    def sampler(self, equation):
        return Sampler(lambda s: (jnp.zeros((), jnp.float64), jnp.zeros((), jnp.int32)),
                       lambda acc, s, t, dt, step: (acc[0] + equation.energy(s), acc[1] + 1), every=2)


def test_a_users_output_gets_rows_states_stops_and_samples(tg):
    eq, u0 = tg
    out = Recorder()
    n = 13
    sol = simulate(eq, "rk4", t_end=n * DT, y0=u0, controller=FixedStep(DT), outputs=[out])
    # its multiples and the last step; the stop time 0.1 (not a multiple of DT) took one shortened step: 14 in all
    assert [r.step for r in out.rows] == [0, 3, 6, 9, 12, 14] and sol.step == 14
    states = rollout(eq, "rk4", dt=DT, steps=6, save_every=1)(u0)
    energy = jax.jit(eq.energy)
    for r in out.rows[1:3]:  # before the stop, the steps are the rollout's
        assert r.t == pytest.approx(r.step * DT, abs=1e-15)
        assert r.values["energy"] == pytest.approx(float(energy(states[r.step - 1])), rel=1e-13)
        assert set(r.values) >= {"energy", "enstrophy", "cfl", "resolution"}
        assert r.spectrum is None  # nobody asked for spectra
    assert np.array_equal(out.states[4], np.asarray(jax.device_get(states[3])))
    assert set(out.states) == {4, 8, 12, "t=0.1"} and out.states["t=0.1"] == 7  # step 0 goes to start()
    assert out.rows[-1].t == n * DT
    total, count = out.sums
    assert count == 7  # steps 2, 4, ..., 14
    e = [float(energy(states[k - 1])) for k in (2, 4, 6)]  # decaying: the later ones are smaller still
    assert sum(e) + 4 * e[-1] > float(total) > sum(e)


def test_callback_on_states_and_the_built_in_files(tg, tmp_path):
    eq, u0 = tg
    seen = []
    outs = [solvers.Callback(lambda e: seen.append((e.step, e.t)), every=5, on="states"),
            solvers.DiagnosticsCSV(tmp_path, every=5),
            solvers.Plots(tmp_path, solvers.PlotSpec("vorticity_magnitude", "|vorticity|", "vorticity.png"), every=5),
            solvers.Checkpoint(tmp_path / "ck", every=5)]
    simulate(eq, "rk4", t_end=12 * DT, y0=u0, controller=FixedStep(DT), outputs=outs)
    assert [s for s, _ in seen] == [0, 5, 10]
    rows = solvers.outputs.read_csv(tmp_path / "diagnostics.csv")
    assert [int(r["step"]) for r in rows] == [0, 5, 10, 12]
    assert len(solvers.outputs.read_csv(tmp_path / "spectra.csv")) == 4
    assert {p.name for p in outs[2].written} == {"energy.png", "spectrum.png", "vorticity.png", "summary.png"}
    assert outs[3].last == 12 and outs[3].store.steps() == [10, 12]


def test_outputs_that_cannot_write_name_the_argument(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for make in (lambda d: solvers.DiagnosticsCSV(d), lambda d: solvers.Plots(d), lambda d: solvers.Checkpoint(d)):
        with pytest.raises(ValueError, match="directory"):
            make(blocker / "out")
    with pytest.raises(ValueError, match="every"):
        solvers.DiagnosticsCSV(tmp_path, every=0)
    with pytest.raises(TypeError, match="fn"):
        solvers.Callback(3, every=1)


def test_a_signal_stops_the_run_cleanly(tg, tmp_path):
    import os
    import signal

    eq, u0 = tg

    class Kill(Output):
        def next_step(self, step):
            return (step // 4 + 1) * 4

        def on_event(self, event):
            if event.step == 4:
                os.kill(os.getpid(), signal.SIGTERM)  # caught: the run ends at this host event (the stop follows)

    stop = solvers.outputs.StopOnSignal()
    ck = solvers.Checkpoint(tmp_path, every=0)
    sol = simulate(eq, "rk4", t_end=100 * DT, y0=u0, controller=FixedStep(DT), outputs=[Kill(), stop, ck])
    assert sol.step == 4 and "SIGTERM" in sol.stopped
    assert ck.last == 4  # the finished work is kept
    assert signal.getsignal(signal.SIGTERM) is not stop._catch  # the handler is restored


@pytest.mark.parametrize("n, t_end, warns", [(128, 100.0, True), (256, 100.0, False)])
def test_a_user_equation_is_watched_for_resolution_too(n, t_end, warns):
    """A user equation that reports no ``resolution`` gets the run's own (the outer band's share of the state's
    gradient norm). Kuramoto-Sivashinsky on a 32 pi box outgrows 128^2 (its answer at t = 100 is wrong there: the
    energy sits in large scales, the fourth-order dynamics in the small ones) and the run warns; 256^2 stays
    resolved (the measure stays below 1e-6) and it does not."""
    import math
    import sys
    import warnings
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from ks_equation import KuramotoSivashinsky

    eq = KuramotoSivashinsky(SpectralGrid((n, n), None, ndim=2, box_length=32 * math.pi, dtype=jnp.float64))
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        simulate(eq, "etdrk4", t_end=t_end, controller=FixedStep(0.25),
                 outputs=[solvers.Callback(rows.append, every=20), solvers.ResolutionCheck(every=20)])
    found = [w for w in caught if issubclass(w.category, solvers.ResolutionWarning)]
    peak = max(r.values["resolution"] for r in rows)
    assert rows[0].values["resolution"] < 1e-6
    if warns:
        assert found and "under-resolved" in str(found[0].message) and peak > 1e-3
    else:
        assert not found and peak < 1e-6
