"""The main job's driver: validate, build, time-step, write diagnostics, checkpoints and plots, resume."""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import xfft

from . import io
from ._grid import DEALIAS, SpectralGrid
from .equations import EQUATIONS
from .integrators import INTEGRATORS, CFLStep, FixedStep

#: config fields a resumed run must share with the checkpoint (the physics and the discretization)
_PHYSICS = ("equation", "ic", "n", "nu", "dtype", "dealias", "integrator", "dt", "cfl", "dt_max", "box_length",
            "seed", "k0", "energy", "forcing_epsilon", "params")


_ORDER = ("energy", "enstrophy", "dissipation", "injection", "max_div", "cfl")


class ConfigError(ValueError):
    """Bad input found before any compute (the CLI exits with status 2)."""


class BlowUpError(RuntimeError):
    """The state became non-finite; ``step``/``t`` name the first bad step, ``checkpoint`` the last good one."""

    def __init__(self, step: int, t: float, checkpoint: int | None, directory: Path):
        self.step, self.t, self.checkpoint = step, t, checkpoint
        where = f"last good checkpoint: step {checkpoint} in {directory}" if checkpoint is not None else \
            "no checkpoint was written before it"
        super().__init__(f"blow-up: the solution became NaN/inf at step {step} (t = {t:.6g}); {where}. "
                         "Reduce --dt/--cfl or raise the resolution.")


@dataclass
class RunConfig:
    """Everything a run needs; the CLI flags map one-to-one onto these fields (``--t-end`` -> ``t_end``)."""

    equation: str = "navier-stokes"
    ic: str = "taylor-green"
    n: int = 64
    nu: float = 1 / 1600
    t_end: float = 1.0
    out: str = "runs/out"
    mesh: str = "slab"
    dtype: str = "float32"
    integrator: str = "rk4"
    dt: float | None = None
    cfl: float = 0.5
    dt_max: float = 0.1
    dealias: str = "2/3"
    backend: str = "native"
    box_length: float = 2 * math.pi
    seed: int = 0
    k0: float = 4.0
    energy: float = 0.5
    forcing_epsilon: float = 0.0
    diag_every: int = 10
    checkpoint_every: int = 0
    keep: int = 2
    resume: bool = False
    overwrite: bool = False
    max_steps: int | None = None
    progress: bool = True
    plots: bool = True
    # [snapshots wiring] field snapshots (HDF5 + XDMF in OUT/snapshots), see solvers.io.SnapshotWriter
    snapshot_every: int = 0
    snapshot_times: tuple[float, ...] = ()
    snapshot_dtype: str = "float32"
    #: equation-specific parameters (``--param KEY=VALUE``), read by ``Equation.from_config``
    params: dict = dataclasses.field(default_factory=dict)

    def physics(self) -> dict:
        return {k: getattr(self, k) for k in _PHYSICS}


def validate(cfg: RunConfig) -> None:
    """Check names, numbers and the output directory without touching any device array.

    Raises:
      ConfigError: with a message that says what is wrong and what is allowed.
    """
    if cfg.equation not in EQUATIONS:
        raise ConfigError(f"unknown equation {cfg.equation!r}; available: {', '.join(EQUATIONS)}")
    ics = EQUATIONS[cfg.equation].initial_conditions
    if cfg.ic not in ics:
        raise ConfigError(f"unknown initial condition {cfg.ic!r} for {cfg.equation}; available: {', '.join(ics)}")
    if cfg.integrator not in INTEGRATORS:
        raise ConfigError(f"unknown integrator {cfg.integrator!r}; available: {', '.join(INTEGRATORS)}")
    if cfg.dealias not in DEALIAS:
        raise ConfigError(f"unknown dealiasing rule {cfg.dealias!r}; available: {', '.join(DEALIAS)}")
    if cfg.dtype not in ("float32", "float64"):
        raise ConfigError(f"--dtype must be float32 or float64, got {cfg.dtype!r}")
    checks = [
        (math.isfinite(cfg.nu) and cfg.nu >= 0, f"viscosity must be >= 0 (got nu = {cfg.nu}; --re must be > 0)"),
        (math.isfinite(cfg.t_end) and cfg.t_end > 0, f"--t-end must be positive, got {cfg.t_end}"),
        (cfg.dt is None or (math.isfinite(cfg.dt) and cfg.dt > 0), f"--dt must be positive, got {cfg.dt}"),
        (math.isfinite(cfg.cfl) and cfg.cfl > 0, f"--cfl must be positive, got {cfg.cfl}"),
        (cfg.dt_max > 0, f"--dt-max must be positive, got {cfg.dt_max}"),
        (cfg.n >= 4 and cfg.n % 2 == 0, f"--n must be an even number >= 4, got {cfg.n}"),
        (cfg.box_length > 0, f"--box-length must be positive, got {cfg.box_length}"),
        (cfg.diag_every >= 1, f"--diag-every must be >= 1, got {cfg.diag_every}"),
        (cfg.checkpoint_every >= 0, f"--checkpoint-every must be >= 0, got {cfg.checkpoint_every}"),
        (cfg.keep >= 1, f"--keep must be >= 1, got {cfg.keep}"),
        (cfg.forcing_epsilon >= 0, f"--forcing-epsilon must be >= 0, got {cfg.forcing_epsilon}"),
        (cfg.max_steps is None or cfg.max_steps >= 0, f"--max-steps must be >= 0, got {cfg.max_steps}"),
        (not (cfg.resume and cfg.overwrite), "--resume and --overwrite exclude each other"),
    ]
    for ok, msg in checks:
        if not ok:
            raise ConfigError(msg)
    if cfg.mesh not in ("slab", "pencil"):
        raise ConfigError(f"--mesh must be slab or pencil, got {cfg.mesh!r}")
    if cfg.backend not in xfft.available_backends():
        raise ConfigError(f"unknown or unavailable xfft backend {cfg.backend!r}; available: "
                          f"{', '.join(xfft.available_backends())}")
    _check_output_dir(Path(cfg.out))
    _check_snapshots(cfg)  # [snapshots wiring]


def _check_snapshots(cfg: RunConfig) -> None:  # [snapshots wiring]
    """Snapshot flags: step count, times inside (0, t_end], dtype, a writable OUT/snapshots directory."""
    if isinstance(cfg.snapshot_every, bool) or not isinstance(cfg.snapshot_every, int) or cfg.snapshot_every < 0:
        raise ConfigError(f"--snapshot-every must be an integer >= 0, got {cfg.snapshot_every!r}")
    bad = [t for t in cfg.snapshot_times if not (math.isfinite(t) and 0 < t <= cfg.t_end)]
    if bad:
        raise ConfigError(f"--snapshot-times must lie in (0, t_end = {cfg.t_end:g}], got {', '.join(map(str, bad))}")
    if cfg.snapshot_dtype not in ("float32", "float64"):
        raise ConfigError(f"--snapshot-dtype must be float32 or float64, got {cfg.snapshot_dtype!r}")
    if cfg.snapshot_every or cfg.snapshot_times:
        _check_output_dir(Path(cfg.out) / "snapshots")


def _check_output_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"output directory {str(out)!r} is not writable: {e.strerror or e}") from None


def build(cfg: RunConfig, mesh=None):
    """Mesh, grid, equation, integrator and step controller for ``cfg``.

    Raises:
      ConfigError: the mesh cannot hold the grid (too many devices for the resolution), or bad parameters.
    """
    geometry = EQUATIONS[cfg.equation].grid_geometry(cfg)
    shp = geometry["shape"]
    shape_txt = f"{shp[0]}^{len(shp)}" if len(set(shp)) == 1 else "x".join(map(str, shp))
    try:
        mesh = mesh if mesh is not None else xfft.make_mesh(cfg.mesh)
        grid = SpectralGrid(geometry["shape"], mesh, ndim=len(geometry["shape"]), box_length=geometry["box_length"],
                            dtype=jnp.dtype(cfg.dtype), dealias=cfg.dealias, backend=cfg.backend)
    except ValueError as e:
        raise ConfigError(f"a {cfg.mesh} mesh of {jax.device_count()} devices cannot hold a "
                          f"{shape_txt} grid (dealias {cfg.dealias}): {e}") from None
    try:
        eq = EQUATIONS[cfg.equation].from_config(grid, cfg)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    try:
        integ = INTEGRATORS[cfg.integrator](eq)
    except (TypeError, ValueError) as e:  # e.g. a split-step scheme on an equation without a potential
        raise ConfigError(f"--integrator {cfg.integrator} cannot advance {cfg.equation}: {e}") from None
    controller = FixedStep(cfg.dt) if cfg.dt is not None else CFLStep(cfg.cfl, cfg.dt_max)
    return grid, eq, integ, controller


def simulate(cfg: RunConfig, mesh=None) -> dict:
    """Run ``cfg`` to ``t_end`` (or ``max_steps``); returns a summary dict.

    Outputs in ``cfg.out``: ``diagnostics.csv`` (every ``diag_every`` steps and the last), ``spectra.csv``,
    ``checkpoints/`` (every ``checkpoint_every`` steps and at the end), ``run.json``, PNG plots.

    Raises:
      ConfigError: bad input (before any compute). BlowUpError: NaN/inf, naming step and time.
    """
    validate(cfg)
    grid, eq, integ, controller = build(cfg, mesh)
    with jax.set_mesh(grid.mesh):  # jitted functions without array arguments need the mesh
        return _simulate(cfg, grid, eq, integ, controller)


def _simulate(cfg: RunConfig, grid: SpectralGrid, eq, integ, controller) -> dict:
    out = Path(cfg.out)
    lead = jax.process_index() == 0
    ckdir = out / "checkpoints"
    if not cfg.resume and ckdir.exists() and any(ckdir.iterdir()):
        if not cfg.overwrite:
            raise ConfigError(f"{str(out)!r} already holds a run (checkpoints in {ckdir}); pass --resume to "
                              "continue it or --overwrite to start over")
        if lead:
            shutil.rmtree(ckdir)
        _barrier("solvers-overwrite")
    if (cfg.overwrite or not cfg.resume) and lead:
        for name in ("diagnostics.csv", "spectra.csv"):
            (out / name).unlink(missing_ok=True)
    ckpt = io.Checkpoints(ckdir, keep=cfg.keep)
    like = eq.abstract_state()
    names = list(jax.eval_shape(eq.diagnostics, like, 0.0, 1.0))
    names.sort(key=lambda c: (_ORDER.index(c) if c in _ORDER else len(_ORDER), c))
    diag_cols = ["step", "t", "dt"] + names
    has_spec = jax.eval_shape(eq.spectrum, like) is not None
    diag_log = io.CsvLog(out / "diagnostics.csv", diag_cols)
    spec_log = io.CsvLog(out / "spectra.csv", ["step", "t"] + [f"E_{j}" for j in range(grid.num_shells)])

    f_diag = jax.jit(eq.diagnostics)
    f_spec = jax.jit(eq.spectrum)
    f_energy = jax.jit(eq.energy)
    f_step = jax.jit(integ.step)
    f_coef = jax.jit(integ.coefficients)

    def record(state, step, t, dt):
        d = {k: float(v) for k, v in f_diag(state, t, dt).items()}
        spec = np.asarray(f_spec(state)) if has_spec else None
        if lead:
            diag_log.write({"step": step, "t": t, "dt": dt, **d})
            if spec is not None:
                spec_log.write({"step": step, "t": t, **{f"E_{j}": float(v) for j, v in enumerate(spec)}})
        return d

    latest = ckpt.latest_step() if cfg.resume else None
    if latest is not None:
        meta = ckpt.read_meta(latest)
        _check_resume(cfg, meta, ckdir)
        state, meta = ckpt.restore(latest, like)
        step, t, last_dt = int(meta["step"]), float(meta["t"]), float(meta["dt"])
        if lead:
            diag_log.truncate_after(step)
            spec_log.truncate_after(step)
        last_ckpt = latest
        snaps = _snapshot_writer(cfg, eq, step)  # [snapshots wiring]
        if snaps is not None:  # [snapshots wiring] drops snapshots after the resume point
            snaps.after_step(state, step, t, False)
    else:
        if cfg.resume and lead:
            print(f"--resume: no checkpoint in {ckdir}; starting from the initial condition", flush=True)
        state = eq.initial_state(cfg.ic, seed=cfg.seed, k0=cfg.k0, energy=cfg.energy)
        step, t, last_dt, last_ckpt = 0, 0.0, 0.0, None
        if not io.finite(f_energy(state)):
            raise BlowUpError(0, 0.0, None, ckdir)
        record(state, step, t, 0.0)
        snaps = _snapshot_writer(cfg, eq, None)  # [snapshots wiring]
        if snaps is not None:  # [snapshots wiring]
            snaps.after_step(state, 0, 0.0, False)

    def save(state, step, t, dt):
        ckpt.save(step, state, {"step": step, "t": t, "dt": dt, "config": cfg.physics()})

    stable = integ.stable_dt()
    t_end = float(cfg.t_end)
    coeffs, coef_dt = None, None
    start, start_step, d = time.perf_counter(), step, None
    bar = _progress(cfg, t, t_end, lead)
    try:
        while True:
            remaining = t_end - t
            if remaining <= 0 or (cfg.max_steps is not None and step >= cfg.max_steps):
                break
            dt = controller(eq, state, stable)
            if not math.isfinite(dt):
                raise BlowUpError(step + 1, t, last_ckpt, ckdir)
            last = remaining <= dt * (1 + 1e-6)  # land exactly on t_end (no sliver of a last step)
            if last:
                dt = remaining
            t_snap = snaps.stop_time(t) if snaps is not None else None  # [snapshots wiring] land on it exactly
            if not last and t_snap is not None and t_snap - t <= dt * (1 + 1e-6):
                dt = t_snap - t
            else:
                t_snap = None
            if dt != coef_dt:
                coeffs, coef_dt = f_coef(dt), dt
            new = f_step(state, t, dt, coeffs)
            energy = float(f_energy(new))
            if not math.isfinite(energy):
                raise BlowUpError(step + 1, t + dt, last_ckpt, ckdir)
            state, step, t, last_dt = new, step + 1, (t_end if last else t_snap or t + dt), dt
            if step % cfg.diag_every == 0 or last:  # (a max_steps stop adds no row: resume stays identical)
                d = record(state, step, t, dt)
            if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
                save(state, step, t, dt)
                last_ckpt = step
            if snaps is not None:  # [snapshots wiring]
                snaps.after_step(state, step, t, last)
            if bar is not None:
                bar.update(dt)
                bar.set_postfix_str(f"step {step}, E={energy:.6g}, dt={dt:.3g}", refresh=False)
    finally:
        if bar is not None:
            bar.close()
    if last_ckpt != step:
        save(state, step, t, last_dt)
    ckpt.close()
    if snaps is not None:  # [snapshots wiring]
        snaps.close()
    wall = time.perf_counter() - start
    summary = {"steps": step, "t": t, "steps_this_run": step - start_step, "wall_s": wall,
               "devices": jax.device_count(), "processes": jax.process_count(), "mesh": dict(
                   zip(grid.mesh.axis_names, map(int, grid.mesh.axis_sizes))), "final": d,
               "config": dataclasses.asdict(cfg)}
    if cfg.plots:
        field = eq.plot_field(state)  # every process takes part (a collective), process 0 draws
        field = (field[0], np.asarray(field[1])) if field is not None else None
        if lead:
            shape = grid.shape
            grid_txt = f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else "x".join(map(str, shape))
            title = f"{cfg.equation}, {cfg.ic}, {grid_txt}, nu={cfg.nu:.4g}, t={t:.3g}"
            spectra = io.read_csv(out / "spectra.csv") if (out / "spectra.csv").exists() else []
            summary["plots"] = [str(p) for p in io.write_plots(
                out, io.read_csv(out / "diagnostics.csv"), spectra, field, dk=2 * math.pi / cfg.box_length,
                title=title, field_file=eq.plot_file)]
    if lead:
        io.write_json(out / "run.json", summary)
    return summary


def _snapshot_writer(cfg: RunConfig, eq, resume_step: int | None):  # [snapshots wiring]
    if not (cfg.snapshot_every or cfg.snapshot_times):
        return None
    try:
        return io.SnapshotWriter(Path(cfg.out) / "snapshots", eq, every=cfg.snapshot_every,
                                 times=cfg.snapshot_times, dtype=cfg.snapshot_dtype, resume_step=resume_step,
                                 config=cfg.physics())
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _barrier(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def _check_resume(cfg: RunConfig, meta: dict, ckdir: Path) -> None:
    saved = meta.get("config", {})
    now = cfg.physics()
    diff = [f"{k}: checkpoint {saved.get(k)!r} vs now {now[k]!r}" for k in _PHYSICS if saved.get(k) != now[k]]
    if diff:
        raise ConfigError(f"--resume: the checkpoint in {ckdir} was written with other settings ("
                          + "; ".join(diff) + "); resume with the same physics and discretization")


def _progress(cfg: RunConfig, t: float, t_end: float, lead: bool):
    if not (cfg.progress and lead):
        return None
    from tqdm import tqdm

    return tqdm(total=t_end, initial=t, unit="t", mininterval=0.5, dynamic_ncols=True,
                bar_format="{l_bar}{bar}| t={n:.3f}/{total:.3g} [{elapsed}<{remaining}] {postfix}")
