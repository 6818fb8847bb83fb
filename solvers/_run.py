"""The main job's driver: build from a checked config, start or resume, time-step, write outputs and plots.

``simulate`` = :func:`~solvers._config.resolve` (defaults, every check) -> :func:`build` (grid, equation,
integrator; the memory the run needs against what the devices have; the initial condition and CFL rate checked
abstractly) -> :func:`_setup` (output files, compiled functions) -> :func:`_start` (initial condition or
checkpoint) -> :func:`_loop` -> :func:`_finish` (last checkpoint, plots, ``run.json``). :func:`dry_run` does the
checks and reports what a run would use, without computing or writing anything.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jax
import numpy as np

import xfft

from . import _memory, _points, io
from ._config import ConfigError, Resolved, RunConfig, check_output_dir, declared, legacy_physics, resolve
from ._grid import Grid
from ._params import as_initial_condition
from ._record import Recorder
from ._stepper import AT_REST, BOUND, MAX_SEGMENT, NEAR_STOP, NEW_DT, NONFINITE, Segment, Stepper, control_for
from .integrators import INTEGRATORS, CFLStep, FixedStep

__all__ = ["BlowUpError", "ConfigError", "Output", "RunConfig", "build", "dry_run", "simulate", "validate"]

_ORDER = ("energy", "enstrophy", "dissipation", "injection", "max_div", "cfl")


class BlowUpError(RuntimeError):
    """The state became non-finite, or its energy passed the equation's physical bound; ``step``/``t`` name the
    first bad step, ``checkpoint`` the last good one."""

    def __init__(self, step: int, t: float, checkpoint: int | None, directory: Path, reason: str | None = None):
        self.step, self.t, self.checkpoint = step, t, checkpoint
        where = f"last good checkpoint: step {checkpoint} in {directory}" if checkpoint is not None else \
            "no checkpoint was written before it"
        what = reason or "the solution became NaN/inf"
        super().__init__(f"blow-up: {what} at step {step} (t = {t:.6g}); {where}. "
                         "Reduce the time step (dt or cfl) or raise the resolution.")


class Output(Protocol):
    """Something the loop feeds (snapshots): it may ask the loop to land exactly on a time."""

    def stop_time(self, t: float) -> float | None:
        """The next time > ``t`` the loop must land on exactly (the step is shortened), or None."""

    def after_step(self, state: Any, step: int, t: float, last: bool) -> None:
        """Called after every step (or, where the output has ``next_step(step) -> int | None``, after the steps it
        names, its stop times and the last step: the loop then runs the steps between them without the host),
        at step 0 with the initial state and after a resume with the restored one. ``state`` is in the grid's
        spectral order (``equation.grid.to_natural`` gives natural order) and is donated to the next step: copy
        what you keep (e.g. ``jax.device_get``) before returning."""

    def close(self) -> None: ...


def validate(cfg: RunConfig, create: bool = True) -> Resolved:
    """Resolve the defaults, check every value and the output directory, without touching a device array.

    ``create=False`` (a dry run) checks that the output directory could be made and written without making it.

    Raises:
      ConfigError: with a message that names the field or parameter and says what is allowed; also where the
        output directory already holds a run and neither ``resume`` nor ``overwrite`` is set.
    """
    res = resolve(cfg)
    check_output_dir(res.out, create)
    if cfg.snapshot_every or cfg.snapshot_times:
        check_output_dir(res.out / "snapshots", create)
    ckdir = res.out / "checkpoints"
    if not (cfg.resume or cfg.overwrite) and ckdir.is_dir() and any(ckdir.iterdir()):
        raise ConfigError(f"out: {str(res.out)!r} already holds a run (checkpoints in {str(ckdir)!r}); set resume "
                          "to continue it or overwrite to start over", fields=("out", "resume", "overwrite"))
    return res


def build(cfg: RunConfig, res: Resolved, mesh=None):
    """Mesh, grid, equation, integrator and step controller, once the run is known to fit in memory; the initial
    condition and the CFL rate are checked by their abstract shapes (``jax.eval_shape``), so nothing is computed
    yet.

    Memory: unless the grid trivially fits (:func:`~solvers._memory.trivially_fits`), the step program (with its
    dt control and diagnostics rows) and the initial condition are compiled on a small grid and scaled per point
    (:mod:`solvers._memory`), and a run that the devices (on CPU: the host's available memory) cannot hold is
    refused before anything is allocated.

    Raises:
      ConfigError: the mesh cannot hold the grid, the devices cannot hold the run, a parameter the equation
        rejects, an integrator that cannot advance it, an initial condition that fails or does not match the
        state, a CFL run without a rate.
    """
    return _build(cfg, res, mesh)[0]


def _build(cfg: RunConfig, res: Resolved, mesh=None, always_estimate: bool = False, tune: bool = True):
    """:func:`build`, and the memory estimate (None where the check was skipped and not asked for). ``tune=False``
    (a dry run): ``mesh="auto"`` is checked on the first mesh that holds the grid instead of being timed."""
    shp, label, names = res.shape, res.cls.label(), declared(res.cls, res.ic)
    if mesh is None and cfg.mesh == "auto":
        mesh = choose_mesh(cfg, res)[0] if tune else _first_mesh(cfg, res)
    try:
        mesh = mesh if mesh is not None else xfft.make_mesh(cfg.mesh)
        prefer = _points.checkpoint_points(res.out / "checkpoints") if cfg.resume else None
        grid = _grid(cfg, res, shp, mesh, prefer)
    except ValueError as e:
        raise ConfigError(f"n/mesh: a {cfg.mesh} mesh of {mesh.size if mesh is not None else jax.device_count()} "
                          f"devices cannot hold a {_memory.shape_text(shp)} grid (dealias {cfg.dealias}): {e}"
                          f"{_nearest_sizes(cfg, res, shp, mesh)}{_points_hint(cfg, res)}", fields=("n", "mesh")) \
            from None
    try:
        eq = res.cls(grid, **res.eq_params)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{label}: {e}" if label not in str(e) else str(e), params=names) from None
    try:
        integ = INTEGRATORS[res.integrator](eq)
    except (TypeError, ValueError) as e:  # e.g. a split-step scheme on an equation without a potential
        raise ConfigError(f"integrator {res.integrator} cannot advance {label}: {e}", fields=("integrator",)) \
            from None
    with jax.set_mesh(grid.mesh):
        if cfg.dt is None and jax.eval_shape(eq.max_rate, eq.abstract_state()) is None:
            raise ConfigError(f"cfl: {label} has no advective rate (max_rate) for an adaptive time step; give a "
                              "fixed time step dt", fields=("cfl", "dt"))
    est = _check_memory(cfg, res, grid.mesh, always_estimate, grid.shape)
    with jax.set_mesh(grid.mesh):
        _check_initial_condition(eq, res)
    return (grid, eq, integ, _controller(cfg)), est


def _controller(cfg: RunConfig):
    return FixedStep(cfg.dt) if cfg.dt is not None else CFLStep(cfg.cfl, cfg.dt_max)


def _stepper(eq, integ, controller, record: Recorder, stable_dt: float) -> Stepper:
    """The run's step programs (:class:`~solvers._stepper.Stepper`) with ``record``'s rows; ``stable_dt`` caps dt
    (its value does not change the program's buffers: the memory check passes ``inf`` rather than compute it)."""
    return Stepper(integ, control_for(integ, controller, stable_dt, getattr(eq, "energy_bound", None) is not None),
                   row=record.row, cfl_position=record.cfl_position)


def _nearest_sizes(cfg: RunConfig, res: Resolved, shape: tuple[int, ...], mesh, reach: int = 16) -> str:
    """For a grid of equal sizes that ``mesh`` cannot hold: "; nearest sizes this mesh holds: A or B" (the closest
    equal sizes below and above within ``reach``), else ""."""
    if mesh is None or len(set(shape)) != 1:
        return ""

    def holds(n: int) -> bool:
        try:
            _grid(cfg, res, (n,) * len(shape), mesh)
        except (TypeError, ValueError):
            return False
        return True

    n = shape[0]
    below = next((m for m in range(n - 1, max(n - reach, 1), -1) if holds(m)), None)
    above = next((m for m in range(n + 1, n + reach) if holds(m)), None)
    found = [str(m) for m in (below, above) if m is not None]
    return f"; nearest sizes this mesh holds: {' or '.join(found)}" if found else ""


def _points_hint(cfg: RunConfig, res: Resolved) -> str:
    if cfg.dealias == "none" and _points.takes_points(res.cls.grid_for):
        return ("; with dealias 2/3 or 3/2 the grid's modes would be held on more points that the mesh splits "
                "(without dealiasing, products alias differently there)")
    return ""


def _grid(cfg: RunConfig, res: Resolved, shape: tuple[int, ...], mesh, prefer: tuple[int, ...] | None = None
          ) -> Grid:
    """The equation's grid of ``shape`` on ``mesh`` (ValueError: the sizes or the mesh do not suit it).

    Where the mesh cannot split ``shape`` and the equation's grid can hold its modes on more points
    (:mod:`solvers._points`), the grid on the fewest points the mesh can split; ``prefer`` (the points of the
    checkpoint a run resumes) first, where the mesh holds it.
    """
    res.cls.check_shape(shape, res.eq_params)
    kw = dict(box_length=res.box_length, dtype=cfg.dtype, dealias=cfg.dealias, backend=cfg.backend,
              params=res.eq_params)
    if not _points.takes_points(res.cls.grid_for):
        return res.cls.grid_for(shape, mesh, **kw)
    if prefer is not None and tuple(prefer) != tuple(shape):
        try:
            return res.cls.grid_for(shape, mesh, points=tuple(prefer), **kw)
        except ValueError:
            pass
    try:
        return res.cls.grid_for(shape, mesh, **kw)
    except ValueError:
        if cfg.dealias == "none":
            raise
        grid = _points.storage_points(shape, lambda p: res.cls.grid_for(shape, mesh, points=p, **kw))
        if grid is None:
            raise
        return grid


def _check_memory(cfg: RunConfig, res: Resolved, mesh, always: bool = False,
                  points: tuple[int, ...] | None = None) -> _memory.Estimate | None:
    """Refuse a run whose devices cannot hold it (before anything is allocated); returns the estimate, or None
    where the grid trivially fits and ``always`` is False. ``points``: the points the grid stores its fields on
    (default: the run's sizes)."""
    shape = res.shape if points is None else tuple(points)
    pool = _memory.memory_pool(mesh)
    if not always and _memory.trivially_fits(shape, mesh.size, pool):
        return None

    def make(probe):
        eq = res.cls(_grid(cfg, res, probe, mesh), **res.eq_params)
        eq.probe_for(shape)  # the run's programs, not the probe grid's own
        return eq, INTEGRATORS[res.integrator](eq)

    def stepper(eq, integ):  # the run's step program, with its dt control and diagnostics rows
        return _stepper(eq, integ, _controller(cfg), Recorder.detached(eq), math.inf)

    def valid(shape) -> bool:
        try:
            _grid(cfg, res, shape, mesh)
        except (TypeError, ValueError):
            return False
        return True

    est = _memory.estimate(shape, mesh.size, make, res.ic, res.ic_params, stepper)
    if pool is not None and not _memory.fits(est, pool):
        largest = _memory.largest_fitting(est, pool, valid)
        raise ConfigError(_memory.refusal(est, pool, res.cls.label(), largest), fields=("n",))
    return est


def dry_run(cfg: RunConfig, mesh=None) -> dict:
    """Everything :func:`simulate` checks before it computes (the memory check included), and what the run would
    use: the resolved configuration, the mesh and the memory per device. Nothing is computed, and no file or
    directory is written; only the small programs of the memory estimate are compiled.

    Returns:
      a JSON-ready dict: ``config`` (every field with its default filled in, parameters included), ``mesh``
      (axis sizes), ``devices``, ``processes``, ``memory`` (one line) and ``memory_per_device`` (bytes, or None).

    Raises:
      ConfigError: as :func:`simulate` would, before any compute.
    """
    res = validate(cfg, create=False)
    (grid, eq, integ, controller), est = _build(cfg, res, mesh, always_estimate=True, tune=False)
    pool = _memory.memory_pool(grid.mesh)
    config = {**dataclasses.asdict(cfg), "equation": res.equation, "ic": res.ic, "integrator": res.integrator,
              "n": list(res.shape), "box_length": list(res.box_length), "out": str(res.out),
              "params": {**res.eq_params, **res.ic_params}}
    return {"config": config, "mesh": dict(zip(grid.mesh.axis_names, map(int, grid.mesh.axis_sizes))),
            "devices": int(grid.mesh.size), "processes": jax.process_count(),
            "points": list(grid.shape), "platform": grid.mesh.devices.flat[0].platform,
            "memory": _memory.describe(est, pool),
            "memory_per_device": None if est is None else est.per_device}


def choose_mesh(cfg: RunConfig, res: Resolved) -> tuple[Any, dict]:
    """``--mesh auto``: the mesh on which the grid's own transforms (forward and inverse of one field, in the
    order the grid keeps its spectra) run fastest, timed by :func:`xfft.autotune` on every mesh the devices allow
    and the grid fits (cached per machine kind, device count, grid and dtype). Returns the mesh and what to record.

    A grid the devices cannot hold is refused first (the memory check on the first mesh that holds it: the bytes
    per point barely depend on the decomposition), so the timings never allocate more than the machine has.

    Raises:
      ConfigError: no mesh can hold the grid, or the devices cannot hold the run.
    """
    first = _first_mesh(cfg, res)
    if first is not None:
        _check_memory(cfg, res, first, points=_grid(cfg, res, res.shape, first).shape)

    def grid_transform(mesh, candidate):
        grid = _grid(cfg, res, res.shape, mesh)  # ValueError: this mesh cannot hold it
        with jax.set_mesh(mesh):
            x = jax.jit(lambda: jax.numpy.zeros(grid.shape, grid.dtype), out_shardings=grid.real_sharding())()
            return jax.jit(lambda f: grid.backward(grid.forward(f))), (x,)

    try:
        tuning = xfft.autotune(res.shape, cfg.dtype, step=grid_transform, name=f"solvers:{res.equation}",
                               orders=("natural",), backends=(cfg.backend,))
    except ValueError as e:
        raise ConfigError(f"mesh auto: {e}", fields=("mesh",)) from None
    return tuning.mesh, tuning.summary()


def _first_mesh(cfg: RunConfig, res: Resolved):
    """The first of the slab and pencil meshes of all devices that holds the grid (None if neither does)."""
    for kind in ("slab", "pencil"):
        try:
            mesh = xfft.make_mesh(kind)
            _grid(cfg, res, res.shape, mesh)
        except ValueError:
            continue
        return mesh
    return None


def _check_initial_condition(eq, res: Resolved) -> None:
    try:
        got = jax.eval_shape(lambda: eq.initial_state(res.ic, **res.ic_params))
    except ValueError as e:
        raise ConfigError(str(e), params=declared(res.cls, res.ic)) from None
    want = eq.abstract_state()
    shapes = [(a.shape, a.dtype) for a in jax.tree.leaves(got)]
    expect = [(a.shape, a.dtype) for a in jax.tree.leaves(want)]
    if jax.tree.structure(got) != jax.tree.structure(want) or shapes != expect:
        raise ConfigError(f"{res.cls.label()} ic {res.ic} builds {shapes}, but abstract_state() says {expect}",
                          fields=("ic",))


def simulate(cfg: RunConfig, mesh=None, outputs: list[Output] | None = None) -> dict:
    """Run ``cfg`` to ``t_end`` (or ``max_steps``); returns a summary dict.

    Outputs in ``out``: ``diagnostics.csv`` (every ``diag_every`` steps and the last), ``spectra.csv``,
    ``checkpoints/`` (every ``checkpoint_every`` steps and at the end), ``run.json``, PNG plots; plus whatever
    the extra ``outputs`` (objects with ``stop_time``, ``after_step``, ``close``) write.

    Raises:
      ConfigError: bad input (before any compute). BlowUpError: NaN/inf, naming step and time.
    """
    res = validate(cfg)
    choice = None
    if mesh is None and cfg.mesh == "auto":
        mesh, choice = choose_mesh(cfg, res)
    grid, eq, integ, controller = build(cfg, res, mesh)
    with jax.set_mesh(grid.mesh):  # jitted functions without array arguments need the mesh
        run = _setup(cfg, res, grid, eq, integ, controller, list(outputs or []))
        run.mesh_choice = choice
        try:
            state, clock = _start(run)
            state, clock = _loop(run, state, clock)
            return _finish(run, state, clock)
        finally:
            for o in run.outputs:
                o.close()
            run.ckpt.close()


@dataclass
class _Clock:
    step: int
    t: float
    dt: float  # the last step's
    checkpoint: int | None  # the last written
    start_step: int
    final: dict | None = None
    dt_band: float = 0.0  # the dt a CFL band rule holds (0: choose at the next step)


@dataclass
class _Run:
    cfg: RunConfig
    res: Resolved
    grid: Grid
    eq: Any
    integ: Any
    controller: Callable
    out: Path
    lead: bool
    ckpt: io.Checkpoints
    record: Recorder
    outputs: list
    stepper: Stepper
    f_energy: Callable
    started: float = dataclasses.field(default_factory=time.perf_counter)
    mesh_choice: dict | None = None  # --mesh auto: the choice and the timings

    def save(self, state, clock: _Clock) -> None:
        """A checkpoint of ``state`` in natural spectral order with the half axis's Nyquist coefficient (as every
        version wrote them)."""
        if self.grid.order != "natural" or not self.grid.nyquist:
            state = jax.jit(lambda s: jax.tree.map(self.grid.to_natural, s))(state)
        self.ckpt.save(clock.step, state, {"step": clock.step, "t": clock.t, "dt": clock.dt, "dt_band": clock.dt_band,
                                           "points": list(self.grid.shape), "config": self.res.physics(self.cfg)})
        clock.checkpoint = clock.step


def _setup(cfg: RunConfig, res: Resolved, grid, eq, integ, controller, outputs: list) -> _Run:
    """Output files (overwrite/resume rules), the diagnostics recorder, the compiled step functions."""
    out, lead = res.out, jax.process_index() == 0
    ckdir = out / "checkpoints"
    if not cfg.resume and ckdir.exists() and any(ckdir.iterdir()):  # (validate refused it unless overwrite)
        if lead:
            shutil.rmtree(ckdir)
        _barrier("solvers-overwrite")
    if grid.stored_on_more_points and lead:
        n, p = _memory.shape_text(grid.modes), _memory.shape_text(grid.shape)
        print(f"{res.cls.label()}: the mesh cannot split a {n} grid evenly, so its {n} modes are held on {p} points "
              f"(dealiased products are exact on either: the run is the {n} run; the CFL number and snapshots "
              f"read the {p} points)", flush=True)
    if (cfg.overwrite or not cfg.resume) and lead:
        for name in ("diagnostics.csv", "spectra.csv"):
            (out / name).unlink(missing_ok=True)
    like = eq.abstract_state()
    names = sorted(jax.eval_shape(eq.diagnostics, like, 0.0, 1.0),
                   key=lambda c: (_ORDER.index(c) if c in _ORDER else len(_ORDER), c))
    spec_shape = jax.eval_shape(eq.spectrum, like)
    has_spec = spec_shape is not None
    diag_log = io.CsvLog(out / "diagnostics.csv", ["step", "t", "dt"] + names)
    shells = spec_shape.shape[0] if has_spec else 0  # no spectra.csv where the equation has no spectrum
    spec_log = io.CsvLog(out / "spectra.csv", ["step", "t"] + [f"E_{j}" for j in range(shells)])
    record = Recorder(eq, diag_log, spec_log, lead, has_spec)
    outputs = _snapshot_outputs(cfg, res, eq) + outputs
    return _Run(cfg, res, grid, eq, integ, controller, out, lead, io.Checkpoints(ckdir, keep=cfg.keep), record,
                outputs, _stepper(eq, integ, controller, record, integ.stable_dt()), jax.jit(eq.energy))


def _snapshot_outputs(cfg: RunConfig, res: Resolved, eq) -> list:
    """The snapshot writer (issue 11) when snapshots are asked for (h5py is imported only then).

    A resumed run keeps the series; the writer drops snapshots later than the restored step when ``_start`` hands
    it the restored state.
    """
    if not (cfg.snapshot_every or cfg.snapshot_times):
        return []
    try:
        return [io.SnapshotWriter(res.out / "snapshots", eq, every=cfg.snapshot_every, times=cfg.snapshot_times,
                                  dtype=cfg.snapshot_dtype, resume_step=sys.maxsize if cfg.resume else None,
                                  config=res.physics(cfg))]
    except (ValueError, ImportError) as e:
        raise ConfigError(f"snapshot_every/snapshot_times: {e}", fields=("snapshot_every", "snapshot_times")) \
            from None


def _start(run: _Run) -> tuple[Any, _Clock]:
    """The initial state (step 0, recorded) or the latest checkpoint's (``--resume``, settings checked)."""
    cfg, ckdir = run.cfg, run.ckpt.directory
    latest = run.ckpt.latest_step() if cfg.resume else None
    if latest is not None:
        meta = run.ckpt.read_meta(latest)
        _check_resume(run.res.physics(cfg), meta, run.res, ckdir)
        _check_points(meta, run.grid, run.res, ckdir)
        state, meta = run.ckpt.restore(latest, run.grid.natural_like(run.eq.abstract_state()))
        if run.grid.order != "natural" or not run.grid.nyquist:  # checkpoints hold natural order and the
            # Nyquist coefficient (also those of earlier versions); a state without it cannot reuse the buffer
            state = jax.jit(lambda s: jax.tree.map(run.grid.from_natural, s),
                            donate_argnums=0 if run.grid.nyquist else ())(state)
        clock = _Clock(int(meta["step"]), float(meta["t"]), float(meta["dt"]), latest, int(meta["step"]),
                       dt_band=float(meta.get("dt_band", 0.0)))
        if run.lead:
            for log in run.record.logs:
                log.truncate_after(clock.step)
    else:
        if cfg.resume and run.lead:
            print(f"--resume: no checkpoint in {ckdir}; starting from the initial condition", flush=True)
        state = run.eq.initial_state(run.res.ic, **run.res.ic_params)
        clock = _Clock(0, 0.0, 0.0, None, 0)
        if not io.finite(run.f_energy(state)):
            raise BlowUpError(0, 0.0, None, ckdir)
        run.record.first(state)
    for o in run.outputs:
        o.after_step(state, clock.step, clock.t, False)
    return state, clock


def _next_stop(run: _Run, t: float, t_end: float) -> float:
    stops = [s for o in run.outputs if (s := o.stop_time(t)) is not None and t < s < t_end]
    return min(stops, default=t_end)


def _steps_to_event(run: _Run, step: int) -> int:
    """Steps from ``step`` to the next step that the host must see: a checkpoint, an output's step (outputs
    without ``next_step`` see every step), ``max_steps``, or a full row buffer (the rows themselves are computed
    inside the loop)."""
    cfg = run.cfg
    events = [step + run.stepper.row_limit(cfg.diag_every)]
    if cfg.checkpoint_every:
        events.append((step // cfg.checkpoint_every + 1) * cfg.checkpoint_every)
    if cfg.max_steps is not None:
        events.append(cfg.max_steps)
    for o in run.outputs:
        nxt = getattr(o, "next_step", None)
        s = step + 1 if nxt is None else nxt(step)
        if s is not None:
            events.append(s)
    return max(1, min(events) - step)


def _loop(run: _Run, state, clock: _Clock) -> tuple[Any, _Clock]:
    """Step to ``t_end`` (or ``max_steps``), landing exactly on ``t_end`` and on every output's stop time.

    The steps between two events the host must see run as one compiled segment (:mod:`solvers._stepper`), which
    also computes the diagnostics rows of its steps; the host keeps the clock in float64, takes the landing steps
    itself, and writes the rows after each segment.
    """
    cfg = run.cfg
    t_end = float(cfg.t_end)
    bound = _energy_bound(run, state)
    bar = _progress(cfg, clock.t, t_end, run.lead)
    stepper, fixed = run.stepper, run.stepper.control.dt
    written = run.record.written
    try:
        while t_end - clock.t > 0 and (cfg.max_steps is None or clock.step < cfg.max_steps):
            target = _next_stop(run, clock.t, t_end)
            budget = _steps_to_event(run, clock.step)
            t0 = clock.t
            landed, energy = False, None
            if fixed is not None:
                k = stepper.fixed_steps_before(clock.t, target, min(budget, MAX_SEGMENT))
                if k:
                    seg = _segment(run, state, clock, 0.0, k, math.inf, _inf(bound))
                    state, energy = seg.state, seg.energy
                    _take(run, seg, clock, [fixed] * seg.steps)  # the host's dt, not the device's rounding of it
                    _check(run, seg, clock, bound)
                else:
                    state, energy = _land(run, state, clock, target, bound, target == t_end)
                    landed = True
            else:
                state, energy, landed = _cfl_steps(run, state, clock, budget, target, bound, target == t_end)
            last = landed and target == t_end
            run.record.write()  # the segment's rows, before any checkpoint that follows them
            if cfg.checkpoint_every and clock.step % cfg.checkpoint_every == 0:
                run.save(state, clock)
            for o in run.outputs:
                o.after_step(state, clock.step, clock.t, last)
            if bar is not None:
                bar.update(clock.t - t0)
                bar.set_postfix_str(f"step {clock.step}, E={energy:.6g}, dt={clock.dt:.3g}", refresh=False)
    except BlowUpError as e:
        run.record.write(before=e.step)  # the rows of the steps before a blow-up are finished work
        raise
    finally:
        if bar is not None:
            bar.close()
    if run.record.written > written:
        clock.final = run.record.last
    return state, clock


def _inf(bound: float | None) -> float:
    return math.inf if bound is None else bound


def _segment(run: _Run, state, clock: _Clock, dt_band: float, n: int, remaining: float, bound: float,
             dt_force: float = 0.0, last: bool = False) -> Segment:
    """One step program (:meth:`~solvers._stepper.Stepper.run_segment`) from ``clock``, with the diagnostics rows
    of its steps (every ``diag_every``, and after its ``n``-th step where ``last``)."""
    return run.stepper.run_segment(state, clock.t, dt_band, n, remaining, bound, dt_force,
                                   rows=(clock.step, run.cfg.diag_every, last))


def _take(run: _Run, seg: Segment, clock: _Clock, dts: list[float], t_last: float | None = None) -> None:
    """Advance ``clock`` by the segment's steps ``dts`` (float64 on the host, step by step, as the host loop
    summed them; the last one lands on ``t_last`` where given) and hand its rows to the recorder with their
    step, time and dt."""
    rows = dict(seg.rows)
    for i, dt in enumerate(dts, start=1):
        clock.step, clock.dt = clock.step + 1, dt
        clock.t = t_last if t_last is not None and i == len(dts) else clock.t + dt
        if i in rows:
            run.record.receive(clock.step, clock.t, dt, rows[i])


def _land(run: _Run, state, clock: _Clock, target: float, bound: float | None, last: bool):
    """The step that lands exactly on ``target`` (with a row where ``last``)."""
    dt = target - clock.t
    seg = _segment(run, state, clock, 0.0, 1, math.inf, _inf(bound), dt_force=dt, last=last)
    _take(run, seg, clock, [dt] * seg.steps, t_last=target)
    _check(run, seg, clock, bound)
    return seg.state, seg.energy


def _cfl_steps(run: _Run, state, clock: _Clock, budget: int, target: float, bound: float | None, last: bool):
    """Up to ``budget`` CFL steps, stopping after one that lands on ``target`` (with a row where ``last``);
    returns (state, energy, landed)."""
    energy, start = None, clock.step
    remaining = target - clock.t
    while clock.step - start < budget:
        seg = _segment(run, state, clock, clock.dt_band, budget - (clock.step - start), remaining, _inf(bound))
        state, energy = seg.state, seg.energy
        _take(run, seg, clock, seg.dts)
        if seg.status in (NONFINITE, BOUND, AT_REST):
            _check(run, seg, clock, bound)
        if seg.status == NEW_DT:
            clock.dt_band = seg.dt_next
        elif seg.status == NEAR_STOP:
            if target - clock.t <= seg.dt_next * (1 + 1e-6):  # the host loop's landing rule, in float64
                state, energy = _land(run, state, clock, target, bound, last)
                return state, energy, True
            # not yet: one ordinary step (the same program, no stop in sight), then look again
            seg = _segment(run, state, clock, clock.dt_band, 1, math.inf, _inf(bound))
            state, energy = seg.state, seg.energy
            _take(run, seg, clock, seg.dts)
            _check(run, seg, clock, bound)
            if seg.status == NEW_DT:
                clock.dt_band = seg.dt_next
        remaining = target - clock.t
    _check(run, seg, clock, bound)
    return state, energy, False


def _check(run: _Run, seg: Segment, clock: _Clock, bound: float | None) -> None:
    """Raise :class:`BlowUpError` for a segment that stopped on a non-finite state or an energy over the bound."""
    ckdir = run.ckpt.directory
    if seg.status == AT_REST:
        raise ValueError("CFL step: the flow is at rest and no dt_max is set; pass a fixed dt or dt_max")
    if seg.status == NONFINITE or not math.isfinite(seg.energy):
        if math.isfinite(seg.energy):  # the state is finite, its rate is not: the next step has no dt
            raise BlowUpError(clock.step + 1, clock.t, clock.checkpoint, ckdir)
        raise BlowUpError(clock.step, clock.t, clock.checkpoint, ckdir)
    _check_energy(run, seg.energy, clock, bound)


def _check_energy(run: _Run, energy: float, clock: _Clock, bound: float | None) -> None:
    ckdir = run.ckpt.directory
    if not math.isfinite(energy):
        raise BlowUpError(clock.step, clock.t, clock.checkpoint, ckdir)
    if bound is not None and energy > bound:
        raise BlowUpError(clock.step, clock.t, clock.checkpoint, ckdir,
                          f"the energy {energy:.6g} passed the physical bound {bound:.6g} of "
                          f"{run.res.cls.label()} (see its energy_bound)")


def _energy_bound(run: _Run, state) -> float | None:
    """The equation's physical bound of its energy given the energy now (None: it declares none)."""
    fn = getattr(run.eq, "energy_bound", None)
    return None if fn is None else float(fn(float(run.f_energy(state))))


def _finish(run: _Run, state, clock: _Clock) -> dict:
    """The last checkpoint, the plots and ``run.json``; returns the summary."""
    if clock.checkpoint != clock.step:
        run.save(state, clock)
    grid, cfg, res = run.grid, run.cfg, run.res
    summary = {"steps": clock.step, "t": clock.t, "steps_this_run": clock.step - clock.start_step,
               "wall_s": time.perf_counter() - run.started, "devices": jax.device_count(),
               "processes": jax.process_count(),
               "mesh": dict(zip(grid.mesh.axis_names, map(int, grid.mesh.axis_sizes))),
               "points": list(grid.shape), "final": clock.final,
               "config": {**dataclasses.asdict(cfg), "equation": res.equation, "ic": res.ic,
                          "integrator": res.integrator, "out": str(res.out)},
               "physics": res.physics(cfg), "resolution": run.record.resolution.summary()}
    if run.mesh_choice is not None:
        summary["mesh_autotune"] = run.mesh_choice
    if cfg.plots:
        field = run.eq.plot_field(state)  # every process takes part (a collective), process 0 draws
        field = (field[0], np.asarray(field[1]), *field[2:]) if field is not None else None  # (label, plane[, axes])
        if run.lead:
            shape = grid.shape
            grid_txt = f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else "x".join(map(str, shape))
            extra = "".join(f", {k}={v:.4g}" for k, v in list(res.eq_params.items())[:2] if isinstance(v, float))
            title = f"{res.cls.label()}, {res.ic}, {grid_txt}{extra}, t={clock.t:.3g}"
            out = run.out
            spectra = io.read_csv(out / "spectra.csv") if (out / "spectra.csv").exists() else []
            summary["plots"] = [str(p) for p in io.write_plots(
                out, io.read_csv(out / "diagnostics.csv"), spectra, field, dk=getattr(grid, "dk", 1.0), title=title,
                field_file=run.eq.plot_file, slope=run.eq.spectrum_slope, energy_label=run.eq.energy_label)]
    if run.lead:
        io.write_json(run.out / "run.json", summary)
    return summary


def _barrier(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def _check_resume(now: dict, meta: dict, res: Resolved, ckdir: Path) -> None:
    saved = meta.get("config", {})
    if "format" not in saved:  # written before the parameter declarations
        try:
            saved = legacy_physics(saved, res)
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"resume: cannot read the settings of the checkpoint in {str(ckdir)!r}: {e}",
                              fields=("resume",)) from None
    saved, now = json.loads(json.dumps(saved)), json.loads(json.dumps(now))
    sp, np_ = saved.pop("params", {}) or {}, now.pop("params")
    for p in _declared(res):  # parameters added after the checkpoint was written: the value they stood for
        if p.legacy is not None and p.name not in sp:
            sp[p.name] = p.legacy
    diff = [f"{k}: checkpoint {saved.get(k)!r} vs now {now[k]!r}" for k in now if saved.get(k) != now[k]]
    diff += [f"{k}: checkpoint {sp.get(k)!r} vs now {np_.get(k)!r}" for k in sorted(set(sp) | set(np_))
             if sp.get(k) != np_.get(k)]
    if diff:
        raise ConfigError(f"resume: the checkpoint in {str(ckdir)!r} was written with other settings ("
                          + "; ".join(diff) + "); resume with the same physics and discretization", fields=("resume",))


def _check_points(meta: dict, grid: Grid, res: Resolved, ckdir: Path) -> None:
    """The checkpoint's fields lie on the points of this run's grid (checkpoints written before points were
    recorded lie on the grid's own sizes)."""
    saved = tuple(meta.get("points", res.shape))
    if saved != tuple(grid.shape):
        raise ConfigError(f"resume: the checkpoint in {str(ckdir)!r} holds its fields on "
                          f"{_memory.shape_text(saved)} points, but this mesh holds the "
                          f"{_memory.shape_text(res.shape)} grid on {_memory.shape_text(grid.shape)}; resume on a "
                          f"mesh that splits {_memory.shape_text(saved)} (--mesh, or fewer devices)",
                          fields=("resume", "mesh"))


def _declared(res: Resolved) -> list:
    ic = res.cls.initial_conditions.get(res.ic)
    return list(res.cls.parameters) + (list(as_initial_condition(ic).params) if ic is not None else [])


def _progress(cfg: RunConfig, t: float, t_end: float, lead: bool):
    if not (cfg.progress and lead):
        return None
    from tqdm import tqdm

    return tqdm(total=t_end, initial=t, unit="t", mininterval=0.5, dynamic_ncols=True,
                bar_format="{l_bar}{bar}| t={n:.3f}/{total:.3g} [{elapsed}<{remaining}] {postfix}")
