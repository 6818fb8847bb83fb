"""The run plan: :func:`resolve` turns a :class:`~solvers.RunConfig` into a :class:`Plan` once, with every default
filled in (the preset's first), every value checked and the time-step controller chosen; building, the dry run,
the run and resuming read the plan and resolve nothing again."""

from __future__ import annotations

import dataclasses
import importlib
import math
import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

import xfft

from ..bases import DEALIAS
from ..integrators import INTEGRATORS
from ..model.params import as_initial_condition
from ..model.params import resolve as resolve_params
from ..stepping import CFL, Controller, FixedStep
from .config import DEFAULTS, ConfigError, RunConfig, lookup
from .presets import apply_preset, preset_axes
from .spec import RunSpec
from .stats import statistics_problem

__all__ = ["MESHES", "Plan", "declared", "legacy_physics", "resolve"]

#: ``--mesh``: a slab, a pencil, or ``auto`` (the fastest mesh measured by :func:`xfft.autotune`, cached)
MESHES = ("slab", "pencil", "auto")
#: legacy RunConfig fields of checkpoints written before the parameter declarations (now equation/IC parameters)
_LEGACY = ("nu", "forcing_epsilon", "seed", "k0", "energy")


@dataclass(frozen=True)
class Plan:
    """A run resolved once (:func:`resolve`): what :func:`~solvers.build`, :func:`~solvers.dry_run` and
    :func:`~solvers.run` take, and nothing they resolve again.

    Attributes:
      config: the configuration as the run uses it: the preset applied, every default filled in (``ic``,
        ``integrator``, ``n`` as the grid's sizes, ``box_length``, ``out``, ``params`` with every declared value).
      spec: the :class:`~solvers.RunSpec` the parameters pick (a variant); top: the spec the configuration named.
      equation: the registered name or ``"module:NAME"``. ic, integrator: their names.
      shape, box_length: the grid's sizes and box, one per axis.
      eq_params, ic_params, run_params: the checked values of the equation's, the initial condition's and the
        spec's own parameters (a reciprocal given, such as ``nu`` for ``Re``, already turned into the declared one).
      out: the output directory. controller: :class:`~solvers.FixedStep` where ``dt`` is given, the object
        ``config.controller`` names where it is set, else :class:`~solvers.CFL`. preset: the preset applied
        (None: none). from_preset: the fields and parameters
        the preset set. t0: the time the initial condition holds at, where a fresh run starts
        (:meth:`~solvers.Equation.initial_time`: 0, or a comoving run's scale factor ``a0``).
    """

    config: RunConfig
    spec: RunSpec
    equation: str
    ic: str
    integrator: str
    shape: tuple[int, ...]
    box_length: tuple[float, ...]
    eq_params: dict
    ic_params: dict
    run_params: dict
    out: Path
    controller: Controller
    top: RunSpec | None = None
    preset: str | None = None
    from_preset: frozenset[str] = frozenset()
    t0: float = 0.0

    @property
    def cls(self) -> type:
        """The equation's class."""
        return self.spec.equation

    @property
    def params(self) -> dict:
        """Every parameter's value: the spec's own, the equation's and the initial condition's."""
        return {**self.run_params, **self.eq_params, **self.ic_params}

    def physics(self) -> dict:
        """What a resumed run must share with its checkpoint (JSON-ready)."""
        cfg = self.config
        return {"format": 2, "equation": self.equation, "ic": self.ic, "shape": list(self.shape),
                "box_length": list(self.box_length), "dtype": cfg.dtype, "dealias": cfg.dealias,
                "integrator": self.integrator, "dt": cfg.dt, "cfl": cfg.cfl, "dt_max": cfg.dt_max,
                "controller": cfg.controller, "params": self.params}


def resolve(cfg: RunConfig | Plan, *, enable_x64: bool = False) -> Plan:
    """The :class:`Plan` of ``cfg``: its preset applied (:func:`~solvers.job.presets.apply_preset`), the defaults
    filled in (IC, integrator, parameters, grid), every value checked, the grid's sizes and box included (by
    building its bases on one device: nothing is computed), and the time-step controller chosen. A plan is
    returned as it is.

    Args:
      cfg: the run's configuration (or its plan).
      enable_x64: turn on JAX's 64-bit mode where the run's dtype is float64 (what the command line does) instead
        of refusing such a run while it is off; it happens before the first JAX array is made.

    Touches no file. Raises:
      ConfigError: a message that names the field or parameter and says what is allowed.
    """
    if isinstance(cfg, Plan):
        return cfg
    if not isinstance(cfg, RunConfig):
        raise TypeError(f"resolve: expected a solvers.RunConfig, got {type(cfg).__name__}")
    spec, name = lookup(cfg.equation)
    cfg, from_preset = apply_preset(cfg, spec, name)
    if spec.dt is not None and cfg.dt is None and cfg.cfl is None and cfg.controller is None:
        cfg = dataclasses.replace(cfg, dt=spec.dt)  # an equation without a CFL rate: its spec's fixed step
    cfg = dataclasses.replace(cfg, **{k: v for k, v in DEFAULTS.items() if getattr(cfg, k) is None})
    ics = spec.initial_conditions()
    ic = cfg.ic if cfg.ic is not None else next(iter(ics))
    if ic not in ics:
        raise ConfigError(f"ic: unknown initial condition {ic!r} for {name}; available: {', '.join(ics)}",
                          fields=("ic",))
    variant, run_params, eq_params, ic_params = split_params(spec, name, ic, dict(cfg.params or {}))
    params = {**run_params, **eq_params, **ic_params}
    integrator = cfg.integrator if cfg.integrator is not None else spec.default_integrator(params)
    if integrator not in INTEGRATORS:
        raise ConfigError(f"integrator: unknown integrator {integrator!r}; available: {', '.join(INTEGRATORS)}",
                          fields=("integrator",))
    shape = _per_axis(cfg.n, spec.ndims, "n", name)
    if not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in shape):
        raise ConfigError(f"n: grid sizes must be integers, got {' '.join(map(str, shape))}", fields=("n",))
    shape = tuple(int(n) for n in shape)
    if (bad := preset_axes(cfg, spec, shape, from_preset)) is not None:  # blame the field given, not the preset's
        raise ConfigError(bad[0], fields=bad[1])
    box_given = cfg.box_length if cfg.box_length is not None else spec.default_box(len(shape), params)
    box = _per_axis(box_given, (len(shape),), "box_length", name)
    if not all(isinstance(v, numbers.Real) and math.isfinite(v) and v > 0 for v in box):
        raise ConfigError(f"box_length: box sides must be positive numbers, got {' '.join(map(str, box))}",
                          fields=("box_length",))
    box = tuple(float(v) for v in box)
    t0 = float(variant.equation.initial_time(ic, **ic_params))
    _check_run(cfg, enable_x64, t0)
    controller = _controller(cfg, from_preset)
    _check_grid(variant, name, shape, box, cfg)
    if (bad := statistics_problem(cfg, variant, name, shape, box, from_preset)) is not None:
        raise ConfigError(bad[0], fields=bad[1])
    out = Path(cfg.out if cfg.out is not None else os.path.join("runs", f"{name.replace(':', '-')}-{ic}"))
    cfg = dataclasses.replace(cfg, ic=ic, integrator=integrator, n=shape, box_length=box, params=params,
                              out=str(out))
    return Plan(cfg, variant, name, ic, integrator, shape, box, eq_params, ic_params, run_params, out, controller,
                spec, cfg.preset, from_preset, t0)


def _per_axis(values: Any, ndims: tuple[int, ...], name: str, label: str) -> tuple:
    vals = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    if len(vals) == 1:
        return vals * ndims[0]
    if len(vals) not in ndims:
        want = " or ".join(str(d) for d in ndims)
        raise ConfigError(f"{name}: {label} runs on {want}D grids: give one value or {want}, got {len(vals)} "
                          f"({' '.join(map(str, vals))})", fields=(name,))
    return vals


def declared(spec: RunSpec, ic: str | None) -> tuple[str, ...]:
    """The names of every parameter a run of ``spec`` with initial condition ``ic`` takes."""
    return tuple(p.name for p in spec.declared(ic))


def split_params(spec: RunSpec, name: str, ic: str, given: dict) -> tuple[RunSpec, dict, dict, dict]:
    """The variant ``given`` picks and the checked values of the spec's own, the equation's and the initial
    condition's parameters. A parameter given by its declared reciprocal (``Param(reciprocal=...)``: ``nu`` for
    ``Re``) is turned into the declared one here, by the declaration's rule, and checked once.

    Raises:
      ConfigError: an unknown parameter, both a parameter and its reciprocal, or a value out of range.
    """
    run_names = {p.name for p in spec.run_parameters()}
    try:
        run = resolve_params(spec.run_parameters(), {k: v for k, v in given.items() if k in run_names}, name)
    except ValueError as e:
        raise ConfigError(str(e), params=tuple(run_names)) from None
    variant = spec.variant(run)
    cls = variant.equation
    ic_spec = as_initial_condition(cls.initial_conditions[ic])
    eq_names = {p.name for p in cls.parameters}
    ic_names = {p.name for p in ic_spec.params}
    aliases = {p.reciprocal: p for p in cls.parameters if p.reciprocal is not None}
    unknown = sorted(set(given) - eq_names - ic_names - run_names - set(aliases))
    if unknown:
        known = ", ".join(sorted(eq_names | run_names)) or "none"
        extra = f"; initial condition {ic}: {', '.join(sorted(ic_names))}" if ic_names else ""
        raise ConfigError(f"{name} takes no parameter {unknown[0]!r}; its parameters: {known}{extra}",
                          params=(unknown[0],))
    eq_given = {k: v for k, v in given.items() if k in eq_names}
    for alias, p in aliases.items():
        if alias not in given:
            continue
        if p.name in eq_given:
            raise ConfigError(f"{name}: parameter {p.name} and its reciprocal {alias} both given; give one",
                              params=(p.name, alias))
        try:
            eq_given[p.name] = p.from_reciprocal(given[alias], name)
        except ValueError as e:  # names the reciprocal as given (the command line prints its flag)
            raise ConfigError(str(e), fields=(alias,)) from None
    try:
        eq = resolve_params(cls.parameters, eq_given, name)
        icp = resolve_params(ic_spec.params, {k: v for k, v in given.items() if k in ic_names},
                             f"{name} initial condition {ic}")
    except ValueError as e:
        raise ConfigError(str(e), params=declared(spec, ic)) from None
    return variant, run, eq, icp


def _controller(cfg: RunConfig, from_preset: frozenset = frozenset()) -> Controller:
    """The one time-step rule: the controller ``controller`` names where it is set, ``FixedStep(dt)`` where ``dt``
    is given, else ``CFL(cfl, dt_max)``; the controller's own check is the check of these fields (its message
    names the field; a preset's ``dt`` gives way to a controller given)."""
    if cfg.controller is not None:
        return _named_controller(cfg, "dt" in from_preset)
    try:
        return FixedStep(cfg.dt) if cfg.dt is not None else CFL(cfg.cfl, cfg.dt_max)
    except (TypeError, ValueError) as e:
        text = str(e).split(": ", 1)[-1]  # "dt must be positive and finite, got -1"
        field = text.split(" ", 1)[0]
        raise ConfigError(text, fields=(field,)) from None


def _named_controller(cfg: RunConfig, preset_dt: bool) -> Controller:
    """The controller ``cfg.controller`` (``"module:NAME"``) names: an object with ``init`` and ``choose``, or a
    class (or factory) that makes one without arguments."""
    name = cfg.controller
    if cfg.dt is not None and not preset_dt:
        raise ConfigError("controller and dt both given: a controller chooses every step's dt; give one",
                          fields=("controller", "dt"))
    module, sep, attr = name.partition(":") if isinstance(name, str) else ("", "", "")
    if not (sep and module and attr):
        raise ConfigError(f"controller must be MODULE:NAME (a solvers.Controller in an importable module), got "
                          f"{name!r}", fields=("controller",))
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"controller {name!r}: cannot import {attr!r} from module {module!r} (is {module}.py "
                          f"importable from here?): {e}", fields=("controller",)) from None
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "choose")):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001 (the user's constructor: its message, with the name)
            raise ConfigError(f"controller {name!r}: making one without arguments failed: {e}",
                              fields=("controller",)) from None
    if not (callable(getattr(obj, "init", None)) and callable(getattr(obj, "choose", None))):
        raise ConfigError(f"controller {name!r} is not a time-step controller: it needs init(y0) and "
                          "choose(aux, state, t, t_stop) (solvers.Controller)", fields=("controller",))
    return obj


def _check_grid(spec: RunSpec, name: str, shape: tuple[int, ...], box: tuple[float, ...], cfg: RunConfig) -> None:
    """The grid's bases take ``shape`` and ``box`` (built on one device: the mesh is checked later)."""
    try:
        spec.grid(shape, None, box, dtype=cfg.dtype, dealias=cfg.dealias, backend=None)
    except ValueError as e:
        text = str(e)
        if "box" in text or "depth" in text:
            raise ConfigError(f"box_length: {name}: {text}", fields=("box_length",)) from None
        raise ConfigError(f"n: {text}", fields=("n",)) from None


def _check_run(cfg: RunConfig, enable_x64: bool, t0: float = 0.0) -> None:
    """The fields that are not the equation's, the grid's or the time step's (``t0``: where a fresh run starts)."""
    if cfg.dealias not in DEALIAS:
        raise ConfigError(f"dealias: unknown dealiasing rule {cfg.dealias!r}; available: {', '.join(DEALIAS)}",
                          fields=("dealias",))
    if cfg.dtype not in ("float32", "float64"):
        raise ConfigError(f"dtype must be float32 or float64, got {cfg.dtype!r}", fields=("dtype",))
    if cfg.dtype == "float64" and enable_x64:
        jax.config.update("jax_enable_x64", True)
    if jax.dtypes.canonicalize_dtype(jnp.dtype(cfg.dtype)) != jnp.dtype(cfg.dtype):
        raise ConfigError("dtype float64 needs JAX's 64-bit mode, which is off: call "
                          "jax.config.update('jax_enable_x64', True) before any JAX work (or set JAX_ENABLE_X64=1)",
                          fields=("dtype",))

    def number(v) -> bool:
        return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)

    def integer(v, low: int) -> bool:
        return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= low

    checks = [  # (field, ok, what is allowed)
        ("t_end", number(cfg.t_end) and cfg.t_end > 0, "must be positive"),
        ("diag_every", integer(cfg.diag_every, 1), "must be an integer >= 1"),
        ("checkpoint_every", integer(cfg.checkpoint_every, 0), "must be an integer >= 0"),
        ("keep", integer(cfg.keep, 1), "must be an integer >= 1"),
        ("max_steps", cfg.max_steps is None or integer(cfg.max_steps, 0), "must be an integer >= 0"),
        ("mesh", cfg.mesh in MESHES, "must be slab, pencil or auto"),
        ("snapshot_every", integer(cfg.snapshot_every, 0), "must be an integer >= 0"),
        ("snapshot_dtype", cfg.snapshot_dtype in ("float32", "float64"), "must be float32 or float64"),
        ("stats_every", integer(cfg.stats_every, 0), "must be an integer >= 0"),
        ("stats_start", number(cfg.stats_start) and cfg.stats_start >= 0, "must be a time >= 0"),
    ]
    for name, ok, allowed in checks:
        if not ok:
            raise ConfigError(f"{name} {allowed}, got {getattr(cfg, name)!r}", fields=(name,))
    if cfg.t_end <= t0:
        raise ConfigError(f"t_end must be past the initial condition's time {t0:g} (where the run starts), got "
                          f"{cfg.t_end:g}", fields=("t_end",))
    if cfg.resume and cfg.overwrite:
        raise ConfigError("resume and overwrite exclude each other", fields=("resume", "overwrite"))
    for t in cfg.snapshot_times:
        if not (number(t) and t0 < t <= cfg.t_end):
            raise ConfigError(f"snapshot_times: every time must lie in ({t0:g}, t_end = {cfg.t_end:g}], got {t}",
                              fields=("snapshot_times",))
    if cfg.backend not in xfft.available_backends():
        raise ConfigError(f"backend: unknown or unavailable xfft backend {cfg.backend!r}; available: "
                          f"{', '.join(xfft.available_backends())}", fields=("backend",))


def legacy_physics(saved: dict, res: Plan) -> dict:
    """The settings of a checkpoint written before the parameter declarations, in today's form.

    The old metadata kept ``n`` and ``box_length`` as one number (a cube; Burgers' ``ny``/``nz`` and the phase
    fields' ``dim`` in ``params``) and ``nu``, ``forcing_epsilon``, ``seed``, ``k0``, ``energy`` as fields;
    those become parameters where the equation or initial condition declares them (the others had no effect).
    """
    params = dict(saved.get("params") or {})
    for k in _LEGACY:
        if k in saved:
            params.setdefault(k, saved[k])
    dim = int(float(params.pop("dim", res.spec.ndims[0])))
    n = int(saved["n"])
    shape = (n,) * dim
    box = (float(saved["box_length"]),) * dim
    if "ny" in params or "nz" in params:  # old Burgers: equal spacing box_length / n on every axis
        shape = (n, int(float(params.pop("ny", n))), int(float(params.pop("nz", n))))
        box = tuple(float(saved["box_length"]) * m / n for m in shape)
    cls, ic = res.cls, saved.get("ic")
    keep = {p.name for p in cls.parameters}
    if ic in cls.initial_conditions:
        keep |= {p.name for p in as_initial_condition(cls.initial_conditions[ic]).params}
    eq_p, ic_p = split_params(res.spec, res.equation, ic, {k: v for k, v in params.items() if k in keep})[2:] \
        if ic in cls.initial_conditions else ({}, {})
    return {"format": 2, "equation": saved.get("equation"), "ic": ic, "shape": list(shape), "box_length": list(box),
            **{k: saved.get(k) for k in ("dtype", "dealias", "integrator", "dt", "cfl", "dt_max")},
            "params": {**eq_p, **ic_p}}
