"""The compiled time loop (issue 18; :class:`solvers.simulation.loop.Loop`): the same steps as the host loop it
replaced, the CFL band rule of schemes with dt-dependent coefficients, no host callbacks in the step program,
``--mesh auto``."""

import json
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xfft
from solvers import (
    RK4,
    DiagnosticsCSV,
    FixedStep,
    NavierStokes,
    NavierStokes2D,
    Output,
    RunConfig,
    SpectralGrid,
    run,
)
from solvers.io import read_csv
from solvers.job.build import build, check_memory, validate
from solvers.simulation import RowFunction
from solvers.simulation.loop import Loop
from solvers.stepping import BAND, fixed_steps
from solvers.stepping.core import ROWS_PER_SEGMENT

T_END, CFL, DT_MAX = 0.3, 0.5, 0.1


# _cfg's random-isotropic state (k0 = 3 on 16^3) and RANDOM_2D's random vorticity (k0 = 3 on 16^2) are
# under-resolved on purpose: fast, far-from-smooth states for the step control; the resolution monitor's warning is
# tested in test_resolution.py
UNDER_RESOLVED = pytest.mark.filterwarnings("ignore::solvers.ResolutionWarning")
# the step control's runs in 2D (the 3D step program's CFL rate and transforms: test_cfl_rate_costs_no_transform,
# test_step_program_has_no_host_callbacks)
RANDOM_2D = dict(equation="navier-stokes-2d", ic="random", n=16, params={"nu": 0.01, "k0": 3.0, "energy": 2.0})


def _cfg(out, **kw):
    base = dict(ic="random-isotropic", n=16, t_end=T_END, dtype="float64", cfl=CFL, dt_max=DT_MAX,
                params={"nu": 0.01, "k0": 3.0, "energy": 2.0}, diag_every=1, out=str(out), progress=False,
                plots=False)
    return RunConfig(**{**base, **kw})


@UNDER_RESOLVED
def test_cfl_steps_are_those_of_the_host_loop(tmp_path, meshes):
    """RK4 (the 2D flow's default: the programs of the tests below) under CFL control: every dt and t of the
    compiled loop equal the host loop's (one jitted program per step: the rate of the state the step starts from,
    the step, its energy; dt = min(cfl / rate, dt_max) with the rate of the state the previous step
    started from, the first step's of the initial state: a lagged rate; landing exactly on t_end)."""
    run(_cfg(tmp_path, integrator="rk4", **RANDOM_2D), mesh=meshes["slab"])
    rows = read_csv(tmp_path / "diagnostics.csv")[1:]
    host = validate(_cfg(tmp_path / "host", integrator="rk4", **RANDOM_2D))  # the run's grid, equation, state
    parts = build(host, host, meshes["slab"])
    eq, integ = parts.equation, parts.integrator
    assert isinstance(eq, NavierStokes2D) and isinstance(integ, RK4) and eq.nu == 0.01
    state = eq.initial_state(host.ic, **host.ic_params)

    @jax.jit
    def rate_step_energy(s, t, dt):  # one program: the rate of the state a step starts from, the step, its energy
        new = integ.step(s, t, dt, ())
        return eq.max_rate(s), new, eq.energy(new)

    t, ref = 0.0, []
    with jax.set_mesh(eq.grid.mesh):
        lagged = float(rate_step_energy(state, 0.0, DT_MAX)[0])  # (the initial state's rate; its step unused)
        while T_END - t > 0:
            dt = min(CFL / lagged, DT_MAX)
            if T_END - t <= dt * (1 + 1e-6):
                dt = T_END - t
            rate, state, energy = rate_step_energy(state, t, dt)
            lagged = float(rate)
            t += dt
            ref.append((t, dt, float(energy)))
    assert len(rows) == len(ref) > 5
    for r, (t, dt, e) in zip(rows, ref):
        assert float(r["dt"]) == pytest.approx(dt, rel=1e-12) and float(r["t"]) == pytest.approx(t, rel=1e-12)
        assert float(r["energy"]) == pytest.approx(e, rel=1e-12)
    assert float(rows[-1]["t"]) == T_END


@UNDER_RESOLVED
def test_band_rule_keeps_dt_while_the_cfl_number_stays_in_the_band(tmp_path, meshes):
    """ETDRK4 (coefficients depend on dt): dt changes only where the CFL number ``dt * rate`` left
    ``BAND * cfl``, and is then ``cfl / rate``. The rate is lagged: a row's ``cfl`` column (its dt times the rate
    of its state) is checked with the dt held then, for the step after the next."""
    run(_cfg(tmp_path, integrator="etdrk4", t_end=0.6, **RANDOM_2D), mesh=meshes["slab"])
    rows = read_csv(tmp_path / "diagnostics.csv")[1:]
    dts = [float(r["dt"]) for r in rows]
    assert len(set(dts)) < len(dts) / 2  # the coefficients were rebuilt far less often than every step
    lo, hi = BAND[0] * CFL, BAND[1] * CFL
    changes = 0
    for r, mid, nxt in zip(rows[:-3], rows[1:-2], rows[2:-1]):  # (the last step lands on t_end)
        held = float(mid["dt"])
        cfl = held * float(r["cfl"]) / float(r["dt"])  # the held dt times the rate the check sees
        if float(nxt["dt"]) == held:
            assert lo <= cfl <= hi or held == DT_MAX
        else:
            changes += 1
            assert not lo <= cfl <= hi
            assert float(nxt["dt"]) * cfl / held == pytest.approx(CFL, rel=1e-12)
    assert changes < len(rows) / 2


def _control(parts):
    """The run's controller resolved for its integrator, as :func:`solvers.simulate` resolves it."""
    return parts.controller.resolve(parts.integrator, parts.integrator.stable_dt())


@pytest.mark.parametrize("equation, mesh", [  # each mesh once: a slab and one device in 2D, a pencil in 3D
    ("navier-stokes", "pencil"), ("navier-stokes-2d", "single"), ("navier-stokes-2d", "slab")])
def test_cfl_rate_costs_no_transform(meshes, loops, rows_run, equation, mesh):
    """The CFL segment takes the rate that the first stage's nonlinear term already holds (the controller uses it
    for the step after), so the compiled CFL segment has exactly the FFTs and all-to-alls of the fixed-dt segment.
    The rate's maximum is one ``jnp.max`` in a ``lax.cond`` taken in the first stage only, whose branches hold
    no transform: on several devices one all-reduce (a maximum) in one branch; the step itself sits in no branch
    (the controller's checks decide the loop's next turn). (lsrk4; on the slab the main job's rk4, whose CFL
    segment without rows is the program ``rows_run`` ran.)"""
    if mesh == "slab":
        _, grid, eq, _, plain = loops("rk4")
        integ, texts = plain.integ, {"cfl": rows_run["plain_texts"][1]}
    else:
        cfg = _cfg("/tmp/unused", integrator="lsrk4", equation=equation, n=16, params={"nu": 0.01},
                   ic="taylor-green")
        one = xfft.make_mesh((1,), devices=jax.devices()[:1])
        parts = build(cfg, validate(cfg), one if mesh == "single" else meshes[mesh])
        grid, eq, integ = parts.grid, parts.equation, parts.integrator
        texts = {"cfl": Loop(integ, _control(parts), [], None, False, False).lower().compile().as_text()}
    with jax.set_mesh(grid.mesh):
        assert integ.fuses_rate(eq.abstract_state(), 0.0)
    texts["fixed"] = Loop(integ, FixedStep(1e-3), [], None, False, False).lower().compile().as_text()

    count = _count
    text = texts["cfl"]
    bodies, branches = _branches(text)
    assert len(branches) == 1 and len(branches[0]) == 2  # the first stage's maximum
    assert " conditional(" not in texts["fixed"]
    assert count("fft", text) == count("fft", texts["fixed"]) > 0
    assert count("all-to-all", text) == count("all-to-all", texts["fixed"])
    assert (count("all-to-all", text) > 0) == (mesh != "single")
    maxima = sorted(count("all-reduce", bodies[b]) for b in branches[0])
    assert maxima[0] == 0 and (maxima[1] > 0) == (mesh != "single"), maxima  # one maximum (per mesh axis)
    for b in branches[0]:
        assert count("fft", bodies[b]) == count("all-to-all", bodies[b]) == 0, b


def _run_of(tmp_path, meshes, synced=False, **kw):
    """The main job's 2D run: its configuration, grid and equation, the loop of its step programs with the rows of
    its diagnostics CSV (every ``diag_every`` steps, with the spectrum), and the same loop without rows. ``synced``:
    the programs of a machine where a branch costs a host round trip (a GPU)."""
    cfg = _cfg(tmp_path, equation="navier-stokes-2d", n=16, ic="taylor-green", params={"nu": 0.01}, **kw)
    res = validate(cfg)
    parts = build(cfg, res, meshes["slab"])
    control = _control(parts)
    rows = DiagnosticsCSV(tmp_path, every=cfg.diag_every)
    loop = Loop(parts.integrator, control, [rows], None, True, synced)
    plain = Loop(parts.integrator, control, [], None, False, synced)
    return cfg, parts.grid, parts.equation, loop, plain


def _clock(loop, state, step=0, t=0.0):
    """The host's clock of ``loop`` at ``step`` and time ``t`` from ``state`` (its controller fresh)."""
    return loop.clock(state, step, t)[0]


def _abstract(a):
    return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding, weak_type=a.weak_type) \
        if isinstance(a, jax.Array) else a


def _segment_and_texts(loop, state, clock, n, remaining, **kw):
    """``loop.run_segment`` and the texts (lowered, compiled) of the very program it ran, lowered on the same
    arguments: the same program, loaded from the compilation cache rather than compiled a second time (where
    :meth:`Loop.lower`'s abstract arguments would make another)."""
    program, seen = loop._segment, []

    def spy(*args):
        seen.append(jax.tree.map(_abstract, args))
        return program(*args)

    loop._segment = spy
    try:
        out = loop.run_segment(state, clock, n, remaining, **kw)
    finally:
        loop._segment = program
    lowered = program.lower(*seen[0])
    return out, (lowered.as_text(), lowered.compile().as_text())


def _count(op, block):
    return len(re.findall(rf" {op}(?:-start)?\(", block))


def _branches(text):
    """The computations of a compiled text by name, and the branch computations of each of its conditionals."""
    bodies = {block.strip().split(" ", 1)[0]: block for block in text.split("\n\n")}
    branches = [re.findall(r"%[\w.\-]+", line.split("branch_computations=")[1].split("}")[0])
                for line in text.splitlines() if " conditional(" in line]
    return bodies, branches


@pytest.fixture(scope="module")
def loops(tmp_path_factory, meshes):
    """``loops(integrator, synced)``: :func:`_run_of` with rows every 2 steps, built once per module (its programs
    compiled once: the rk4 loops of ``rows_run`` are those of ``test_gpu_step_program_branches_nowhere``)."""
    cache = {}

    def get(integrator, synced=False):
        if (integrator, synced) not in cache:
            cache[integrator, synced] = _run_of(tmp_path_factory.mktemp(f"{integrator}{int(synced)}"), meshes,
                                                synced=synced, integrator=integrator, diag_every=2)
        return cache[integrator, synced]

    return get


@pytest.fixture(scope="module")
def rows_run(loops):
    """The main job's 2D loop (rk4, CFL) with rows every 2 steps from step 3 and without rows: a segment of 4
    steps of each from the same state, the same steps one at a time with each row computed on its own, and the
    texts of the two programs that ran."""
    cfg, grid, eq, loop, st = loops("rk4")
    with jax.set_mesh(grid.mesh):
        state = eq.initial_state("taylor-green")
        copies = [jax.tree.map(jnp.copy, state) for _ in range(3)]
        (plain_state, plain), plain_texts = _segment_and_texts(st, copies[0], _clock(st, state), 4, math.inf)
        (rows_state, rows), texts = _segment_and_texts(loop, copies[1], _clock(loop, state, step=3), 4, math.inf,
                                                        last=True)
        alone, s, t = [], copies[2], 0.0
        row = jax.jit(loop.row)
        one = _clock(st, state)
        for dt in plain.dts:  # the same steps one at a time, each row computed on its own
            one.t = t
            s = st.run_segment(s, one, 1, math.inf)[0]
            t = np.float64(np.float64(t) + dt)
            alone.append(np.asarray(row(s, jnp.asarray(t, s.real.dtype), jnp.asarray(dt, s.real.dtype))))
    return dict(grid=grid, loop=loop, plain=plain, plain_state=np.asarray(plain_state), plain_texts=plain_texts,
                rows=rows, rows_state=rows_state, texts=texts, alone=alone)


def test_step_program_has_no_host_callbacks(rows_run):
    """The compiled step program (a diagnostics row, the steps, dt choice, blow-up checks) never calls back into
    Python (the main job's 2D program on the slab mesh)."""
    texts = rows_run["texts"]
    assert "stablehlo.while" in texts[0] and " while(" in texts[1] and "all-to-all" in texts[1]
    assert " conditional(" in texts[1]  # the rows, computed in the loop after their steps
    for text in texts:  # no Python callback custom call, no host transfer instruction
        assert not re.search(r'custom_call(_target="|\s*@)[^"(\s]*callback', text, flags=re.IGNORECASE)
        assert not re.search(r"\b(outfeed|infeed|send|recv|send-done|recv-done)\(", text)


def test_rows_take_their_cfl_number_from_the_next_steps_rate(rows_run):
    """Under CFL control the diagnostics row transforms nothing for its CFL number: the next step's first stage
    has the state's rate already, and the segment's last row gets it after the loop. In 2D (whose other
    diagnostics are spectral) the row's branch holds no FFT and no all-to-all; the program holds one rate
    computation more than the program without rows, outside the loop (its nonlinear term's inverse transform)."""
    loop = rows_run["loop"]
    assert loop.core.rate and loop.core.rows.cfl_position == loop.row.columns.index("cfl")
    text, plain = rows_run["texts"][1], rows_run["plain_texts"][1]
    bodies, branches = _branches(text)
    with_fft = [b for pair in branches for b in pair if _count("fft", bodies[b])]
    assert len(branches) == 3 and len(with_fft) == 1  # the stage-0 reduction, the row, the last row's rate
    # the rate's inverse transform: two local FFTs and one all-to-all (the 2D grid leaves out the Nyquist
    # coefficient, so the half axis splits over the devices: no move back)
    assert _count("fft", bodies[with_fft[0]]) == 2 and _count("all-to-all", bodies[with_fft[0]]) == 1
    for op in ("fft", "all-to-all"):
        assert _count(op, text) == _count(op, plain) + _count(op, bodies[with_fft[0]]), op


def test_rows_computed_inside_the_step_loop(rows_run):
    """The diagnostics rows of a segment are computed inside its loop, after their steps: the steps are those of
    the program without rows (to the last bit), and each row's values are those of the row computed alone from
    the state of its step, at the device's time and the step's dt (rows every 2 steps from step 3: after the
    segment's steps 1 and 3; with ``last``, also after its 4th)."""
    loop, rows, plain, alone = rows_run["loop"], rows_run["rows"], rows_run["plain"], rows_run["alone"]
    assert plain.rows == [] and rows.steps == plain.steps == 4
    assert rows.dts == plain.dts and rows.energy == plain.energy
    rows_state = rows_run["rows_state"]
    np.testing.assert_array_equal(np.asarray(rows_state), rows_run["plain_state"])
    assert [i for i, _ in rows.rows] == [1, 3, 4]
    names = loop.row.columns
    cfl = names.index("cfl")
    for i, values in rows.rows:
        np.testing.assert_allclose(values, alone[i - 1], rtol=1e-12, atol=1e-300)
        # the CFL number, from the next step's first-stage rate (rows 1, 3) or after the loop (row 4): the same
        # number as the equation's own max_rate, to the last bit
        assert values[cfl] == alone[i - 1][cfl] > 0
    assert rows.rows[0][1].shape == (len(names) + rows_run["grid"].num_shells,)
    with jax.set_mesh(rows_run["grid"].mesh), pytest.raises(ValueError, match="overflows its row buffer"):
        loop.run_segment(rows_state, _clock(loop, rows_state), ROWS_PER_SEGMENT * 2 + 1, math.inf)


@pytest.mark.parametrize("integrator", ["rk4", "etdrk4"])
def test_gpu_step_program_branches_nowhere(loops, integrator):
    """Where a branch costs a round trip to the host (GPUs: ``host_control_flow``), the step program selects
    instead: the stage loop takes the maximum in every stage (no branch in its first), and the loop turns once per
    row (an inner loop over the steps up
    to it, the row computed after it); the one ``conditional`` left is the last row's CFL rate, once per segment
    after the loop. Its steps, rows and states are those of the program with branches, also in a
    segment that stops before a step it would not take (``NEAR_STOP``: the state of its last step kept). The GPU's
    programs are built on these CPU devices with ``synced=True`` (what ``host_control_flow`` says on a GPU)."""
    from solvers.stepping.controllers import NEAR_STOP

    results = {}
    for synced in (False, True):
        cfg, grid, eq, st, plain = loops(integrator, synced)
        with jax.set_mesh(grid.mesh):
            state = eq.initial_state("taylor-green")
            dt0 = _clock(plain, state).dt_next
            (seg_state, seg), texts = _segment_and_texts(st, jax.tree.map(jnp.copy, state), _clock(st, state), 6,
                                                         math.inf, last=True)
            (stop_state, stop), plain_texts = _segment_and_texts(plain, state, _clock(plain, state),
                                                                 6, 2.2 * dt0)  # a step, NEAR_STOP
        conditionals = texts[1].count(" conditional("), plain_texts[1].count(" conditional(")
        if synced:
            assert conditionals == (1, 0)
        else:  # the stage-0 maximum (rk4; etdrk4 takes the rate before its stages), the row, the last row's rate
            stage0 = integrator == "rk4"
            assert conditionals == (2 + stage0, stage0)
        seg.state, stop.state = seg_state, stop_state
        results[synced] = seg, stop
    (seg, stop), (seg_g, stop_g) = results[False], results[True]
    assert seg_g.steps == seg.steps == 6 and stop_g.status == stop.status == NEAR_STOP and stop_g.steps == 1
    np.testing.assert_allclose(seg_g.dts, seg.dts, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(seg_g.state), np.asarray(seg.state), rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.asarray(stop_g.state), np.asarray(stop.state), rtol=0, atol=1e-13)
    assert [i for i, _ in seg_g.rows] == [i for i, _ in seg.rows] == [2, 4, 6]
    for (_, a), (_, b) in zip(seg_g.rows, seg.rows):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)


def test_one_dispatch_and_one_transfer_per_segment_of_rows(tmp_path, meshes, monkeypatch):
    """Rows are no reason to end a segment: with rows every 3 steps and no checkpoint, the main job's loop runs
    ``ROWS_PER_SEGMENT`` rows per program and reads back one array per program; the CSV has every row. (Counted
    from the outputs' ``start``, after the row of the initial state, which has a program of its own.)"""
    steps = 3 * ROWS_PER_SEGMENT + 6
    cfg = _cfg(tmp_path, equation="navier-stokes-2d", n=16, ic="taylor-green", params={"nu": 0.01}, diag_every=3,
               max_steps=steps, t_end=10.0)
    calls = {"program": 0, "get": 0}
    loops = []
    init, get = Loop.__init__, jax.device_get

    def made(self, *a, **kw):
        init(self, *a, **kw)
        loops.append(self)

    def counted_get(x):
        calls["get"] += 1
        return get(x)

    class Count(Output):
        def start(self, run, event):  # the loop is about to take its first step
            (loop,) = loops
            program = loop._segment

            def counted_program(*a):
                calls["program"] += 1
                return program(*a)

            monkeypatch.setattr(loop, "_segment", counted_program)
            monkeypatch.setattr(jax, "device_get", counted_get)

    monkeypatch.setattr(Loop, "__init__", made)
    summary = run(cfg, mesh=meshes["slab"], outputs=[Count()])
    monkeypatch.undo()
    assert summary["steps"] == steps and summary["final"] is not None
    assert calls["get"] == calls["program"] == 2
    rows = read_csv(tmp_path / "diagnostics.csv")
    assert [int(r["step"]) for r in rows] == list(range(0, steps + 1, 3))
    assert summary["final"]["energy"] == float(rows[-1]["energy"])


def test_a_diagnostic_that_is_not_a_scalar_is_refused(tmp_path, meshes, monkeypatch):
    cfg, grid, eq, loop, plain = _run_of(tmp_path, meshes)
    monkeypatch.setattr(eq, "diagnostics", lambda s, t, dt: {"energy": eq.energy(s), "modes": jnp.abs(s)})
    with pytest.raises(ValueError, match="'modes' must be a scalar"):
        RowFunction(eq, spectrum=True)
    # the memory check of a grid too big to skip it compiles the run's rows: the same error, not a probe's
    monkeypatch.setattr(type(eq), "diagnostics", lambda self, s, t, dt: {"modes": jnp.abs(s)})
    with pytest.raises(ValueError, match="'modes' must be a scalar"):
        check_memory(cfg, validate(cfg), grid.mesh, grid.shape, always=True)


def test_mesh_auto_takes_the_faster_decomposition(tmp_path, meshes, monkeypatch):
    """``--mesh auto`` with timings injected through the cache file: the faster of slab and pencil is used, and
    run.json records the choice and the timings. (Runs of no step: the mesh is chosen, the run's grid built on it
    and its first diagnostics row computed there before the loop; the loop on a mesh is the other tests'.)"""
    cache = tmp_path / "autotune.json"
    monkeypatch.setenv("XFFT_AUTOTUNE_CACHE", str(cache))
    key = xfft._autotune.cache_key((16, 16), "float64", "solvers:navier-stokes-2d")
    timings = [{"mesh": [8], "order": "natural", "backend": "native", "seconds": 2.0},
               {"mesh": [2, 4], "order": "natural", "backend": "native", "seconds": 0.5}]
    for fast in ((2, 4), (8,)):
        best = next(t for t in timings if tuple(t["mesh"]) == fast)
        cache.write_text(json.dumps({key: {"choice": {k: best[k] for k in ("mesh", "order", "backend")},
                                           "timings": timings}}))
        out = tmp_path / f"run{len(fast)}"
        s = run(_cfg(out, equation="navier-stokes-2d", n=16, integrator="rk4", max_steps=0, mesh="auto",
                     ic="taylor-green", params={"nu": 0.01}))
        assert tuple(s["mesh"].values()) == fast and s["steps"] == 0
        recorded = json.loads((out / "run.json").read_text())["mesh_autotune"]
        assert recorded["choice"]["mesh"] == list(fast) and recorded["cached"] and recorded["timings"] == timings
        timings[0]["seconds"], timings[1]["seconds"] = 0.5, 2.0


def _flow_of(mesh, order):
    """RK4's 3 steps (dt 0.01, float64) on a 16^3 grid of ``order`` from the spectrum of one random velocity field:
    the state in natural order, the energy spectrum, the state's shape and the grid (one program)."""
    velocity = np.random.default_rng(1).standard_normal((3, 16, 16, 16))
    g = SpectralGrid(16, mesh, dtype=jnp.float64, order=order)
    eq = NavierStokes(g, nu=0.01)
    integ = RK4(eq)

    @jax.jit
    def steps(f):  # the spectrum, RK4.advance's 3 steps (its loop), the views
        u = fixed_steps(integ, g.dealias(g.rfft(f)), 0.0, 0.01, 3, integ.coefficients(0.01))
        return g.to_natural(u), eq.spectrum(u), u

    with jax.set_mesh(g.mesh):
        natural, spectrum, u = steps(jax.device_put(velocity, g.real_sharding(1)))
    return np.asarray(natural), np.asarray(spectrum), u.shape, g


@pytest.fixture(scope="module")
def natural_flow():
    """:func:`_flow_of` on a natural-order grid of one device: the reference of both meshes' transposed grids."""
    return _flow_of(None, "natural")


@pytest.mark.parametrize("kind", ["slab", "pencil"])
def test_transposed_order_natural_views_equal_the_natural_grid(meshes, natural_flow, kind):
    """The main job's grids keep spectra in the transposed order; converted to natural order the state, and the
    diagnostics, equal those of a natural-order grid (RK4, 3 steps, float64, from the spectrum of the same random
    velocity field on each; the natural-order grid on one device, whose sums differ from the mesh's in their order:
    at round-off)."""
    nat, tr = natural_flow, _flow_of(meshes[kind], "transposed")
    g = tr[3]
    assert g.perm == xfft.spectral_axes(g.real_sharding(), g.shape, real=True, order="transposed") != (0, 1, 2)
    assert tr[2] == (3,) + tuple(nat[2][1 + p] for p in g.perm) and g.natural_spectral_shape == nat[2][1:]
    np.testing.assert_allclose(tr[0], nat[0], rtol=0, atol=1e-14 * np.abs(nat[0]).max())
    np.testing.assert_allclose(tr[1], nat[1], rtol=1e-13, atol=1e-30)
