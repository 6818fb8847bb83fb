"""The main job: a :class:`~solvers.RunConfig` turned into the parts of a run (equation, integrator, controller,
outputs) and handed to :func:`~solvers.simulate`; ``run.json`` with what it did. :func:`dry_run` checks everything
and reports what a run would use, computing and writing nothing."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from collections.abc import Sequence

import jax

from ..outputs import (
    Checkpoint,
    DiagnosticsCSV,
    Output,
    Plots,
    Progress,
    RelaminarizationStop,
    ResolutionCheck,
    SnapshotWriter,
    Statistics,
    StopOnSignal,
    write_json,
)
from ..simulation import BlowUpError, simulate
from . import memory as _memory
from .build import Built, build, choose_mesh, first_mesh, validate
from .cache import enable_compilation_cache
from .config import ConfigError, RunConfig
from .plan import Plan
from .presets import preset_watch
from .resume import checkpoint_points, restore

__all__ = ["dry_run", "run"]


def run(cfg: RunConfig | Plan, mesh=None, outputs: Sequence[Output] = (), *, y0=None, controller=None,
        compile_cache: bool = True) -> dict:
    """Run ``cfg`` to ``t_end`` (or ``max_steps``); returns the summary that ``run.json`` holds.

    Writes into ``out``: ``diagnostics.csv`` (every ``diag_every`` steps and the last), ``spectra.csv``,
    ``checkpoints/`` (every ``checkpoint_every`` steps and at the end), ``run.json``, the plots, and ``snapshots/``
    where asked; ``outputs`` are added to the run's own.

    Args:
      cfg: the run's configuration, or its plan (:func:`~solvers.job.resolve`: what the command line passes).
      mesh: the device mesh (None: the configuration's, see :func:`~solvers.job.build`).
      outputs: more outputs besides the run's own.
      y0: the state to start from at ``t = 0`` instead of the initial condition: spectral arrays in the layout of
        the run's equation (e.g. ``solvers.build(cfg).equation``'s states, or a :class:`~solvers.Solution`'s); they
        are moved onto the run's mesh.
      controller: a :class:`~solvers.Controller` of your own (``init``, ``choose``) in place of the one the
        configuration gives (``dt``: :class:`~solvers.FixedStep`, else :class:`~solvers.CFL`); its state is saved in
        the checkpoints and a ``resume`` continues it bit for bit (give the same controller again).
      compile_cache: turn on JAX's persistent compilation cache, as ``python -m solvers run`` does
        (:func:`~solvers.job.enable_compilation_cache`: a cache the caller set up is kept).

    Raises:
      ConfigError: bad input (before any compute). ValueError: ``y0`` of another structure, shape or dtype than the
        equation's state (naming them), or with ``resume``. BlowUpError: NaN/inf or an energy past the equation's
        bound, naming the step, the time and the last good checkpoint.
    """
    if compile_cache:
        enable_compilation_cache()
    res = validate(cfg)
    cfg = res.config
    choice = None
    if mesh is None and cfg.mesh == "auto":
        mesh, choice = choose_mesh(res)
    prefer = checkpoint_points(res.out / "checkpoints") if cfg.resume else None
    parts = build(res, None, mesh, prefer=prefer)
    grid, eq = parts.grid, parts.equation
    lead = jax.process_index() == 0
    with jax.set_mesh(grid.mesh):
        _fresh_start(cfg, res, lead)
        if parts.mesh_note and lead:
            print(f"{res.equation}: mesh: {parts.mesh_note}", flush=True)
        if grid.stored_on_more_points and lead:
            n, p = _memory.shape_text(grid.modes), _memory.shape_text(grid.shape)
            print(f"{res.equation}: the mesh cannot split a {n} grid evenly, so its {n} modes are held on {p} points "
                  f"(dealiased products are exact on either: the run is the {n} run; the CFL number and snapshots "
                  f"read the {p} points)", flush=True)
        job = _outputs(cfg, res, parts, cfg.resume)
        replicated = jax.sharding.NamedSharding(grid.mesh, jax.sharding.PartitionSpec())
        samples_like = {o.name: jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=replicated),
                                             jax.eval_shape(s.init, eq.abstract_state()))
                        for o in job.values() if (s := o.sampler(eq)) is not None}
        start = restore(cfg, res, grid, eq, samples_like) if cfg.resume else None
        if cfg.resume and lead:
            if start is None:
                print(f"--resume: no checkpoint in {res.out / 'checkpoints'}; starting from the initial condition",
                      flush=True)
            elif start.resized_from is not None:
                print(f"--resume: the checkpoint of step {start.step} was written on "
                      f"{_memory.shape_text(start.resized_from)} points: its modes continue on "
                      f"{_memory.shape_text(res.shape)} (zero-padded or truncated)"
                      + ("; statistics restart" if samples_like else ""), flush=True)
        started = time.perf_counter()
        if y0 is not None:
            y0 = _starting_state(y0, eq, cfg)
        y0 = start.state if start else y0 if y0 is not None else eq.initial_state(res.ic, **res.ic_params)
        bound = res.spec.energy_bound
        try:
            sol = simulate(eq, parts.integrator, t_end=cfg.t_end, y0=y0, t0=start.t if start else res.t0,
                           step0=start.step if start else 0,
                           controller=parts.controller if controller is None else controller,
                           outputs=[*job.values(), *outputs], max_steps=cfg.max_steps,
                           controller_state=start.controller_state if start else None,
                           energy_bound=(lambda e: bound(eq, e)) if bound else None, donate=True,
                           samples=start.samples if start else None)
        except BlowUpError as e:
            ck = job["checkpoint"]
            raise BlowUpError(e.step, e.t, e.reason, ck.last, ck.directory) from None
    summary = {"steps": sol.step, "t": sol.t, "time": res.spec.plot.time_label, "steps_this_run": sol.steps_taken,
               "wall_s": time.perf_counter() - started, "devices": int(grid.mesh.size),
               "processes": jax.process_count(),
               "mesh": dict(zip(grid.mesh.axis_names, map(int, grid.mesh.axis_sizes))),
               "points": list(grid.shape), "final": sol.last_row,
               "config": _config_json(res), "physics": res.physics(), "resolution": job["resolution"].monitor.summary()}
    if choice is not None:
        summary["mesh_autotune"] = choice
    if parts.mesh_note:
        summary["mesh_note"] = parts.mesh_note
    if sol.stopped:
        summary["stopped"] = sol.stopped
    if start is not None and start.resized_from is not None:
        summary["resumed_from_shape"] = list(start.resized_from)
    if "statistics" in job:
        summary["statistics"] = {k: None if v != v else v for k, v in job["statistics"].scalars.items()}  # NaN: null
    if "plots" in job:
        summary["plots"] = [str(p) for p in job["plots"].written]
    if lead:
        write_json(res.out / "run.json", summary)
    return summary


def _starting_state(y0, eq, cfg: RunConfig):
    """``y0`` checked against the equation's state and placed on its shardings (ValueError naming what differs)."""
    if cfg.resume:
        raise ValueError("y0: a resumed run starts from its checkpoint; give y0 or resume, not both")
    want = eq.abstract_state()
    if jax.tree.structure(y0) != jax.tree.structure(want):
        raise ValueError(f"y0: expected a state of structure {jax.tree.structure(want)}, got "
                         f"{jax.tree.structure(y0)}")
    for a, w in zip(jax.tree.leaves(y0), jax.tree.leaves(want)):
        if tuple(a.shape) != tuple(w.shape) or a.dtype != w.dtype:
            raise ValueError(f"y0: expected arrays {[(tuple(v.shape), str(v.dtype)) for v in jax.tree.leaves(want)]} "
                             f"(the equation's state on its grid), got "
                             f"{[(tuple(v.shape), str(v.dtype)) for v in jax.tree.leaves(y0)]}")
    return jax.tree.map(lambda a, w: jax.device_put(a, w.sharding), y0, want)


def _config_json(plan: Plan) -> dict:
    """The plan's configuration as ``run.json`` and the dry run give it (every field with its default filled in)."""
    return {**dataclasses.asdict(plan.config), "equation": plan.equation, "n": list(plan.shape),
            "box_length": list(plan.box_length)}


def _fresh_start(cfg: RunConfig, res: Plan, lead: bool) -> None:
    """A new run in a directory that holds one (``overwrite``): the old checkpoints go first."""
    ckdir = res.out / "checkpoints"
    if not cfg.resume and ckdir.exists() and any(ckdir.iterdir()):  # (validate refused it unless overwrite)
        if lead:
            shutil.rmtree(ckdir)
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices("solvers-overwrite")


def _outputs(cfg: RunConfig, res: Plan, parts: Built, resumed: bool) -> dict[str, Output]:
    """The main job's outputs by name: CSV, resolution check, checkpoints, snapshots, plots, progress."""
    out = {"diagnostics": DiagnosticsCSV(res.out, every=cfg.diag_every),
           "resolution": ResolutionCheck(cfg.diag_every),
           "checkpoint": Checkpoint(res.out / "checkpoints", every=cfg.checkpoint_every, keep=cfg.keep,
                                    meta={"config": res.physics()})}
    if cfg.snapshot_every or cfg.snapshot_times:
        try:
            out["snapshots"] = SnapshotWriter(res.out / "snapshots", parts.equation, every=cfg.snapshot_every,
                                              times=cfg.snapshot_times, dtype=cfg.snapshot_dtype,
                                              resume_step=sys.maxsize if resumed else None,
                                              config=res.physics(), name=res.equation)
        except (ValueError, ImportError) as e:
            raise ConfigError(f"snapshot_every/snapshot_times: {e}",
                              fields=("snapshot_every", "snapshot_times")) from None
    if cfg.plots:
        shape = parts.grid.modes
        grid_txt = f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else "x".join(map(str, shape))
        extra = "".join(f", {k}={v:.4g}" for k, v in list(res.eq_params.items())[:2] if isinstance(v, float))
        out["plots"] = Plots(res.out, res.spec.plot, f"{res.equation}, {res.ic}, {grid_txt}{extra}",
                             every=cfg.diag_every)
    if cfg.stats_every:
        out["statistics"] = Statistics(res.out, every=cfg.stats_every, start=cfg.stats_start,
                                       derive=res.spec.statistics)
    watch = preset_watch(res.top or res.spec, res.preset)
    if watch:
        out["relaminarization"] = RelaminarizationStop(**watch, every=cfg.diag_every)
    out["signals"] = StopOnSignal()  # SIGTERM/SIGINT: stop at the next segment, outputs finished
    if cfg.progress:
        out["progress"] = Progress(time_label=res.spec.plot.time_label)
    return out


def dry_run(cfg: RunConfig | Plan, mesh=None) -> dict:
    """Everything :func:`run` checks before it computes, and what the run would use: the resolved configuration,
    the mesh and the memory per device. Nothing is computed, written or compiled: the memory is bounded from the
    state's size (below) and :data:`~solvers.job.memory.TRIVIAL_BYTES_PER_POINT` (above); the run itself compiles
    its programs on a probe grid where the upper bound does not fit, and refuses what the devices cannot hold.

    Returns:
      a JSON-ready dict: ``config`` (every field with its default filled in, parameters included), ``mesh``
      (axis sizes), ``devices``, ``processes``, ``points``, ``platform``, ``memory`` (one line) and
      ``memory_per_device`` (bytes, or None).

    Raises:
      ConfigError: as :func:`run` would, before any compute.
    """
    res = validate(cfg, create=False)
    if mesh is None and res.config.mesh == "auto":
        mesh = first_mesh(res)
    parts = build(res, None, mesh, compile_probe=False)
    grid, est = parts.grid, parts.estimate
    pool = _memory.memory_pool(grid.mesh)
    state_bytes = sum(a.size * a.dtype.itemsize for a in jax.tree.leaves(parts.equation.abstract_state()))
    low = _memory.state_estimate(res.shape, grid.mesh.size, state_bytes)
    if pool is not None and not _memory.fits(low, pool):  # the state alone does not fit: refused, as the run would
        raise ConfigError(_memory.refusal(low, pool, res.equation, None, " for its state alone", fit="the run "
                                          "itself names the largest grid that fits"), fields=("n",))
    return {"config": _config_json(res), "mesh": dict(zip(grid.mesh.axis_names, map(int, grid.mesh.axis_sizes))),
            "devices": int(grid.mesh.size), "processes": jax.process_count(), "points": list(grid.shape),
            "platform": grid.mesh.devices.flat[0].platform,
            "memory": _memory.describe_bounds(pool, grid.shape, grid.mesh.size, state_bytes),
            "memory_per_device": None if est is None else est.per_device,
            **({"mesh_note": parts.mesh_note} if parts.mesh_note else {})}


__all__ += ["BlowUpError", "ConfigError"]
