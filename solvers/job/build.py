"""Build a run from a checked configuration: the mesh, the grid (on more points where the mesh cannot split it),
the equation, the integrator, the controller; and refuse a run that the devices cannot hold, before anything is
allocated."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import jax

import xfft

from ..grids import Grid
from ..grids.points import storage_points
from ..integrators import INTEGRATORS
from ..simulation.loop import Loop
from ..stepping import Controller, host_control_flow
from . import memory as _memory
from .config import ConfigError, RunConfig, check_output_dir
from .plan import Plan, declared, resolve

__all__ = ["MIN_POINTS_PER_DEVICE", "Built", "build", "choose_mesh", "controller_of", "default_mesh", "make_grid",
           "validate"]


@dataclass
class Built:
    """A run's parts, as :func:`solvers.run` builds them: the grid (on its mesh), the equation, the integrator, the
    controller, the initial condition and its parameters, the memory estimate (None where the grid trivially fits)
    and, where the default mesh uses fewer devices than there are, the reason (:func:`default_mesh`)."""

    grid: Grid
    equation: Any
    integrator: Any
    controller: Controller
    estimate: Any = None
    ic: str | None = None
    ic_params: dict = field(default_factory=dict)
    mesh_note: str | None = None

    def initial_state(self):
        """The run's initial state (its initial condition with its parameters), on the grid's mesh."""
        return self.equation.initial_state(self.ic, **self.ic_params)


def validate(cfg: RunConfig | Plan, create: bool = True) -> Plan:
    """The plan of ``cfg`` (:func:`~solvers.job.resolve`; a plan as it is) with its output directory checked,
    without touching a device array.

    ``create=False`` (a dry run) checks that the output directory could be made and written without making it.

    Raises:
      ConfigError: naming the field or parameter and what is allowed; also where the output directory already
        holds a run and neither ``resume`` nor ``overwrite`` is set.
    """
    plan = resolve(cfg)
    cfg = plan.config
    check_output_dir(plan.out, create)
    if cfg.snapshot_every or cfg.snapshot_times:
        check_output_dir(plan.out / "snapshots", create)
    ckdir = plan.out / "checkpoints"
    if not (cfg.resume or cfg.overwrite) and ckdir.is_dir() and any(ckdir.iterdir()):
        raise ConfigError(f"out: {str(plan.out)!r} already holds a run (checkpoints in {str(ckdir)!r}); set resume "
                          "to continue it or overwrite to start over", fields=("out", "resume", "overwrite"))
    return plan


def controller_of(cfg: RunConfig | Plan) -> Controller:
    """The plan's controller: the one ``controller`` names, ``FixedStep(dt)`` where the configuration gives
    ``dt``, else ``CFL(cfl, dt_max)``."""
    return resolve(cfg).controller


def make_grid(plan: Plan, shape: tuple[int, ...], mesh, prefer: tuple[int, ...] | None = None) -> Grid:
    """The run's grid of ``shape`` on ``mesh`` (ValueError: the sizes or the mesh do not suit it).

    Where the mesh cannot split ``shape`` and the spec's grid can hold its modes on more points, the grid on the
    fewest points the mesh can split; ``prefer`` (the points of the checkpoint a run resumes) first.
    """
    cfg = plan.config

    def grid(points=None):
        return plan.spec.grid(shape, mesh, plan.box_length, dtype=cfg.dtype, dealias=cfg.dealias,
                              backend=cfg.backend, points=points)

    if not plan.spec.points:
        return grid()
    if prefer is not None and tuple(prefer) != tuple(shape):
        try:
            return grid(tuple(prefer))
        except ValueError:
            pass
    try:
        return grid()
    except ValueError:
        if cfg.dealias == "none":
            raise
        out = storage_points(shape, grid)
        if out is None:
            raise
        return out


def _mesh_error(plan: Plan, mesh, e: Exception) -> ConfigError:
    cfg, shp = plan.config, plan.shape
    size = mesh.size if mesh is not None else jax.device_count()
    hint = ""
    if cfg.dealias == "none" and plan.spec.points:
        hint = ("; with dealias 2/3 or 3/2 the grid's modes would be held on more points that the mesh splits "
                "(without dealiasing, products alias differently there)")
    return ConfigError(f"n/mesh: a {cfg.mesh} mesh of {size} devices cannot hold a {_memory.shape_text(shp)} grid "
                       f"(dealias {cfg.dealias}): {e}{_nearest_sizes(plan, mesh)}{hint}", fields=("n", "mesh"))


def _nearest_sizes(plan: Plan, mesh, reach: int = 16) -> str:
    """For a grid of equal sizes that ``mesh`` cannot hold: the closest equal sizes below and above it does."""
    shape = plan.shape
    if mesh is None or len(set(shape)) != 1:
        return ""

    def holds(n: int) -> bool:
        try:
            make_grid(plan, (n,) * len(shape), mesh)
        except (TypeError, ValueError):
            return False
        return True

    n = shape[0]
    below = next((m for m in range(n - 1, max(n - reach, 1), -1) if holds(m)), None)
    above = next((m for m in range(n + 1, n + reach) if holds(m)), None)
    found = [str(m) for m in (below, above) if m is not None]
    return f"; nearest sizes this mesh holds: {' or '.join(found)}" if found else ""


def _equation(plan: Plan, grid: Grid):
    try:
        return plan.cls(grid, **plan.eq_params)
    except (TypeError, ValueError) as e:
        text = str(e).replace(f"{plan.cls.label()} parameter", f"{plan.equation} parameter")
        raise ConfigError(text if plan.equation in text else f"{plan.equation}: {text}",
                          params=declared(plan.spec, plan.ic)) from None


def build(cfg: RunConfig | Plan, res: Plan | None = None, mesh=None, *, estimate: bool = False, prefer=None,
          compile_probe: bool = True) -> Built:
    """The parts of the run of ``cfg`` (what :func:`solvers.run` runs: the grid, the equation, the integrator, the
    controller), once the run is known to fit in memory; the initial condition and the CFL rate are checked by
    their abstract shapes (``jax.eval_shape``: nothing is computed). Nothing is written.

    Memory: unless the grid trivially fits (or ``estimate``), the run's step program and initial condition are
    compiled on a small grid and scaled per point (:mod:`solvers.job.memory`); ``compile_probe=False`` (a dry run)
    compiles nothing and leaves the estimate None.

    Args:
      cfg: the run's configuration, or its :class:`~solvers.job.Plan` (resolved once: :func:`~solvers.job.resolve`).
      res: the plan of ``cfg`` where the caller has it already (None: ``cfg`` is resolved, or is the plan).
      mesh: the device mesh (None: :func:`default_mesh`).
      estimate: estimate the memory even where the grid trivially fits.
      prefer: the points of a checkpoint being resumed (tried first).
      compile_probe: False: no probe compiled for the memory estimate.

    Returns:
      :class:`Built`.

    Raises:
      ConfigError: bad input (as :func:`~solvers.job.resolve`), the mesh cannot hold the grid, the devices cannot
        hold the run, a parameter the equation rejects, an integrator that cannot advance it, an initial condition
        that fails or does not match the state, a CFL run of an equation without a CFL rate.
    """
    plan = res if res is not None else resolve(cfg)
    note = None
    try:
        if mesh is None:
            mesh, note = default_mesh(plan)
        grid = make_grid(plan, plan.shape, mesh, prefer)
    except ValueError as e:
        raise _mesh_error(plan, mesh, e) from None
    eq = _equation(plan, grid)
    try:
        integ = INTEGRATORS[plan.integrator](eq)
    except (TypeError, ValueError) as e:  # e.g. a split-step scheme on an equation without a potential
        raise ConfigError(f"integrator {plan.integrator} cannot advance {plan.equation}: {e}",
                          fields=("integrator",)) from None
    with jax.set_mesh(grid.mesh):
        wants = getattr(plan.controller, "wants_rate", False)
        if wants and jax.eval_shape(eq.max_rate, eq.abstract_state()) is None:
            field = "controller" if plan.config.controller is not None else "cfl"
            raise ConfigError(f"{field}: {plan.equation} has no CFL rate (max_rate) for an adaptive time step; give "
                              "a fixed time step dt", fields=(field, "dt"))
    est = check_memory(plan, None, grid.mesh, grid.shape, always=estimate) if compile_probe else None
    with jax.set_mesh(grid.mesh):
        _check_initial_condition(eq, plan)
    return Built(grid, eq, integ, plan.controller, est, plan.ic, dict(plan.ic_params), note)


#: the default mesh's rule for virtual CPU devices (which share the host's cores): a grid runs on the most devices
#: that each get at least this many grid points, and on one where none would. On a 2-core machine every grid below
#: 32^3 stepped and compiled faster on one device than on eight; at 32^3 the steps were even and one device started
#: in half the time (benchmarks/results/small_runs.md)
MIN_POINTS_PER_DEVICE = 32768


def default_mesh(plan: Plan) -> tuple[Any, str | None]:
    """The mesh of the plan's ``mesh`` (``slab`` or ``pencil``; ``auto`` checks on the slab) over all devices, or
    over fewer where the grid is too small to gain from them, and the reason then (None otherwise).

    Fewer devices only for virtual CPU devices that this process made itself (``jax_num_cpu_devices``: what
    ``python -m solvers run --cpu-devices N`` sets, an upper bound then), in a single process: those devices are
    threads sharing the host's cores, and a grid of fewer than :data:`MIN_POINTS_PER_DEVICE` points per device
    spends more time in their exchanges than it saves. Devices configured otherwise (accelerators, ``XLA_FLAGS``,
    ``JAX_NUM_CPU_DEVICES``, ``XFFT_CPU_DEVICES``, a launcher), or a mesh passed to :func:`solvers.run`, are used
    as they are.
    """
    kind = plan.config.mesh if plan.config.mesh != "auto" else "slab"
    devices = jax.devices()
    count = _fewer_devices(math.prod(plan.shape), devices)
    if count == len(devices):
        return xfft.make_mesh(kind), None
    try:
        mesh = xfft.make_mesh(kind, devices=devices[:count])
        make_grid(plan, plan.shape, mesh)
    except ValueError:
        return xfft.make_mesh(kind), None
    note = (f"{count} device{'s' if count > 1 else ''} (grid too small to gain from {len(devices)}: "
            f"{math.prod(plan.shape)} points, under {MIN_POINTS_PER_DEVICE} per device)")
    return mesh, note


def _fewer_devices(points: int, devices: list) -> int:
    """How many of ``devices`` :func:`default_mesh` uses for a grid of ``points`` points."""
    n = len(devices)
    if n == 1 or jax.process_count() > 1 or devices[0].platform != "cpu" or not _made_here(n):
        return n
    count = n
    while count > 1 and points < MIN_POINTS_PER_DEVICE * count:
        count //= 2
    return count if n % count == 0 else n


def check_memory(cfg: RunConfig | Plan, res: Plan | None, mesh, points: tuple[int, ...], always: bool = False):
    """Refuse a run whose devices cannot hold it (before anything is allocated); returns the estimate, or None
    where the grid trivially fits and ``always`` is False. ``cfg``, ``res``: as :func:`build` takes them;
    ``points``: the points the grid stores its fields on."""
    plan = res if res is not None else resolve(cfg)
    pool = _memory.memory_pool(mesh)
    if not always and _memory.trivially_fits(tuple(points), mesh.size, pool):
        return None

    def make(probe):
        eq = _equation(plan, make_grid(plan, probe, mesh))
        return eq, INTEGRATORS[plan.integrator](eq)

    def loop(eq, integ):  # the run's step program, with its dt control and diagnostics rows
        probe = _RowsProbe(plan.config.diag_every)
        bind = getattr(plan.controller, "resolve", None)
        control = bind(integ) if callable(bind) else plan.controller
        return Loop(integ, control, [probe], None, True, host_control_flow(mesh))

    def valid(shape) -> bool:
        try:
            make_grid(plan, shape, mesh)
        except (TypeError, ValueError):
            return False
        return True

    est = _memory.estimate(tuple(points), mesh.size, make, plan.ic, plan.ic_params, loop, run_points=tuple(points))
    if pool is not None and not _memory.fits(est, pool):
        largest = _memory.largest_fitting(est, pool, valid)
        raise ConfigError(_memory.refusal(est, pool, plan.equation, largest), fields=("n",))
    return est


class _RowsProbe:
    """Stands for the main job's outputs in the memory probe: rows every ``every`` steps, with the spectrum."""

    wants_spectrum = True

    def __init__(self, every: int):
        self.row_every = every
        self.name = "rows"

    def sampler(self, equation):
        return None


def _check_initial_condition(eq, plan: Plan) -> None:
    try:
        got = jax.eval_shape(lambda: eq.initial_state(plan.ic, **plan.ic_params))
    except ValueError as e:
        raise ConfigError(str(e), params=declared(plan.spec, plan.ic)) from None
    want = eq.abstract_state()
    shapes = [(a.shape, a.dtype) for a in jax.tree.leaves(got)]
    expect = [(a.shape, a.dtype) for a in jax.tree.leaves(want)]
    if jax.tree.structure(got) != jax.tree.structure(want) or shapes != expect:
        raise ConfigError(f"{plan.equation} ic {plan.ic} builds {shapes}, but abstract_state() says {expect}",
                          fields=("ic",))


def first_mesh(plan: Plan):
    """The first of the slab and pencil meshes of all devices that holds the grid (None if neither does)."""
    for kind in ("slab", "pencil"):
        try:
            mesh = xfft.make_mesh(kind)
            make_grid(plan, plan.shape, mesh)
        except ValueError:
            continue
        return mesh
    return None


def choose_mesh(plan: Plan) -> tuple[Any, dict]:
    """``mesh="auto"``: the mesh on which the grid's own transforms (forward and inverse of one field) run fastest,
    timed by :func:`xfft.autotune` on every mesh the devices allow (cached per machine kind, device count, grid and
    dtype). A grid the devices cannot hold is refused first. Returns the mesh and what to record.

    Raises:
      ConfigError: no mesh can hold the grid, or the devices cannot hold the run.
    """
    cfg = plan.config
    first = first_mesh(plan)
    if first is not None:
        check_memory(plan, None, first, make_grid(plan, plan.shape, first).shape)

    def grid_transform(mesh, candidate):
        grid = make_grid(plan, plan.shape, mesh)  # ValueError: this mesh cannot hold it
        with jax.set_mesh(mesh):
            x = jax.jit(lambda: jax.numpy.zeros(grid.shape, grid.dtype), out_shardings=grid.real_sharding())()
            return jax.jit(lambda f: grid.backward(grid.forward(f))), (x,)

    try:
        tuning = xfft.autotune(plan.shape, cfg.dtype, step=grid_transform, name=f"solvers:{plan.equation}",
                               orders=("natural",), backends=(cfg.backend,))
    except ValueError as e:
        raise ConfigError(f"mesh auto: {e}", fields=("mesh",)) from None
    return tuning.mesh, tuning.summary()


def _made_here(n: int) -> bool:
    """Whether this process made its ``n`` virtual CPU devices itself (``jax_num_cpu_devices``), nothing outside
    configuring them."""
    configured = ("xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
                  or os.environ.get("JAX_NUM_CPU_DEVICES") or os.environ.get("XFFT_CPU_DEVICES"))
    return not configured and int(jax.config.values.get("jax_num_cpu_devices", -1) or -1) == n
