"""Run configuration: :class:`RunConfig` (what every run has), and the one place that resolves its defaults and
checks every input before any compute (:func:`resolve`)."""

from __future__ import annotations

import dataclasses
import importlib
import math
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

import xfft

from ..bases import DEALIAS
from ..integrators import INTEGRATORS
from ..model import Equation
from ..model.params import as_initial_condition
from ..model.params import resolve as resolve_params
from ._preset_axes import preset_axes
from .registry import REGISTRY
from .spec import RunSpec
from .stats import statistics_problem

#: ``--mesh``: a slab, a pencil, or ``auto`` (the fastest mesh measured by :func:`xfft.autotune`, cached)
MESHES = ("slab", "pencil", "auto")
#: legacy RunConfig fields of checkpoints written before the parameter declarations (now equation/IC parameters)
_LEGACY = ("nu", "forcing_epsilon", "seed", "k0", "energy")


class ConfigError(ValueError):
    """Bad input found before any compute (the CLI exits with status 2).

    The message names :class:`RunConfig` fields and declared parameters as the Python API spells them
    (``t_end must be positive``, ``navier-stokes parameter nu must be ...``). ``fields`` lists the fields it
    names (each named once before any other use of the word, outside quotes) and ``params`` the declared
    parameters it may name, so that the command line can print its flags instead (``--t-end``).
    """

    def __init__(self, message: str, *, fields: tuple[str, ...] = (), params: tuple[str, ...] = ()):
        super().__init__(message)
        self.fields = tuple(fields)
        self.params = tuple(params)


@dataclass
class RunConfig:
    """What every run has; the CLI flags map onto these fields (``--t-end`` -> ``t_end``), and error messages
    name the fields.

    ``equation`` is a registered name (:data:`~solvers.REGISTRY`), a :class:`~solvers.RunSpec`, ``"module:NAME"``
    (a spec or an :class:`~solvers.Equation` subclass) or an Equation subclass. ``ic`` and ``integrator`` default to
    the equation's first initial condition and its spec's integrator; ``n`` and ``box_length`` are one value (a
    cube) or one per axis, wall-normal axis first for wall-bounded equations (``box_length=None``: the spec's
    default box, 2 pi per axis for most); ``params`` holds the declared parameters of the equation, of its initial
    condition and of the spec (``walls`` of convection), strings or numbers.
    """

    equation: Any = "navier-stokes"
    ic: str | None = None
    n: int | tuple[int, ...] = 64
    t_end: float = 1.0
    out: str | None = None
    mesh: str = "slab"
    dtype: str = "float32"
    integrator: str | None = None
    dt: float | None = None
    cfl: float = 0.5
    dt_max: float = 0.1
    dealias: str = "2/3"
    backend: str = "native"
    box_length: float | tuple[float, ...] | None = None
    diag_every: int = 10
    checkpoint_every: int = 0
    keep: int = 2
    resume: bool = False
    overwrite: bool = False
    max_steps: int | None = None
    progress: bool = True
    plots: bool = True
    params: dict = field(default_factory=dict)
    snapshot_every: int = 0
    snapshot_times: tuple[float, ...] = ()
    snapshot_dtype: str = "float32"
    stats_every: int = 0
    stats_start: float = 0.0
    preset: str | None = None
    applied_preset: str | None = None


@dataclass(frozen=True)
class Resolved:
    """A :class:`RunConfig` with every default filled in and every value checked."""

    spec: RunSpec  # the variant the parameters pick
    equation: str  # registered name or "module:Class"
    ic: str
    integrator: str
    shape: tuple[int, ...]
    box_length: tuple[float, ...]
    eq_params: dict
    ic_params: dict
    run_params: dict
    out: Path
    top: RunSpec | None = None  # the spec the run named (with its run parameters, e.g. convection's walls)

    @property
    def cls(self) -> type:
        return self.spec.equation

    def physics(self, cfg: RunConfig) -> dict:
        """What a resumed run must share with its checkpoint (JSON-ready)."""
        return {"format": 2, "equation": self.equation, "ic": self.ic, "shape": list(self.shape),
                "box_length": list(self.box_length), "dtype": cfg.dtype, "dealias": cfg.dealias,
                "integrator": self.integrator, "dt": cfg.dt, "cfl": cfg.cfl, "dt_max": cfg.dt_max,
                "params": {**self.run_params, **self.eq_params, **self.ic_params}}


def lookup(equation: Any) -> tuple[RunSpec, str]:
    """The :class:`~solvers.RunSpec` of ``equation`` and its name: a registered name, a spec, ``"module:attr"``
    (a spec or an Equation subclass in an importable module) or an Equation subclass (its registered spec, or a
    default one: :meth:`RunSpec.of`).

    Raises:
      ConfigError: an unknown name, a module or attribute that cannot be imported, or something else.
    """
    if isinstance(equation, RunSpec):
        return equation, equation.name
    if isinstance(equation, str) and equation in REGISTRY:
        return REGISTRY[equation], equation
    if isinstance(equation, str) and ":" in equation:
        module, _, attr = equation.partition(":")
        try:
            obj = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise ConfigError(f"equation {equation!r}: cannot import {attr!r} from module {module!r} (is "
                              f"{module}.py importable from here?): {e}", fields=("equation",)) from None
        if isinstance(obj, RunSpec):
            return obj, equation
        if isinstance(obj, type) and issubclass(obj, Equation):
            return _spec_of(obj, equation), equation
        raise ConfigError(f"equation {equation!r} is neither a solvers.RunSpec nor a solvers.Equation subclass",
                          fields=("equation",))
    if isinstance(equation, type) and issubclass(equation, Equation):
        spec = _spec_of(equation, None)
        return spec, spec.name
    if isinstance(equation, type):
        raise ConfigError(f"equation {equation!r} is not a subclass of solvers.Equation (nor a solvers.RunSpec)",
                          fields=("equation",))
    raise ConfigError(f"unknown equation {equation!r}; available: {', '.join(REGISTRY)}, or MODULE:NAME for your "
                      "own Equation subclass or RunSpec", fields=("equation",))


def _spec_of(cls: type, name: str | None) -> RunSpec:
    for spec in REGISTRY.values():
        if spec.equation is cls:
            return spec
        for variant in spec.variants.values():
            if variant.equation is cls:
                return variant
    if not cls.initial_conditions:
        raise ConfigError(f"equation {name or cls.__name__} declares no initial_conditions", fields=("equation",))
    return RunSpec.of(cls, name)


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


def _split_params(spec: RunSpec, name: str, ic: str, given: dict) -> tuple[RunSpec, dict, dict, dict]:
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
    unknown = sorted(set(given) - eq_names - ic_names - run_names)
    if unknown:
        known = ", ".join(sorted(eq_names | run_names)) or "none"
        extra = f"; initial condition {ic}: {', '.join(sorted(ic_names))}" if ic_names else ""
        raise ConfigError(f"{name} takes no parameter {unknown[0]!r}; its parameters: {known}{extra}",
                          params=(unknown[0],))
    try:
        eq = resolve_params(cls.parameters, {k: v for k, v in given.items() if k in eq_names}, name)
        icp = resolve_params(ic_spec.params, {k: v for k, v in given.items() if k in ic_names},
                             f"{name} initial condition {ic}")
    except ValueError as e:
        raise ConfigError(str(e), params=declared(spec, ic)) from None
    return variant, run, eq, icp


def with_preset(cfg: RunConfig) -> RunConfig:
    """``cfg`` with the preset it names filled in (itself without one): what the main job runs."""
    return cfg if cfg.preset is None else apply_preset(cfg, *lookup(cfg.equation))


def preset_values(spec: RunSpec, name: str, preset: str) -> dict:
    """The :class:`RunConfig` settings of ``spec``'s preset ``preset`` (fields and ``params``).

    Raises:
      ConfigError: an unknown preset (naming the field ``preset`` and listing the known ones).
    """
    if preset not in spec.presets:
        known = ", ".join(spec.presets) or "none"
        raise ConfigError(f"preset: {name} has no preset {preset!r}; its presets: {known}", fields=("preset",))
    return {k: v for k, v in spec.presets[preset].items() if k != "relaminarization"}


def apply_preset(cfg: RunConfig, spec: RunSpec, name: str) -> RunConfig:
    """``cfg`` with its preset filled in: every field still at its default takes the preset's value, the preset's
    parameters go under the ones ``cfg`` gives, and ``preset`` becomes ``applied_preset`` (applied once). To keep a
    field at its default value against a preset, build the configuration from :func:`preset_values` instead, as the
    command line does.

    Raises:
      ConfigError: an unknown preset.
    """
    values = preset_values(spec, name, cfg.preset)
    params = {**values.pop("params", {}), **(cfg.params or {})}
    defaults = RunConfig()
    changes = {k: v for k, v in values.items() if getattr(cfg, k) == getattr(defaults, k)}
    return dataclasses.replace(cfg, **changes, params=params, preset=None, applied_preset=cfg.preset)


def resolve(cfg: RunConfig) -> Resolved:
    """Fill in the defaults of ``cfg`` (IC, integrator, parameters, grid) and check every value, the grid's sizes
    and box included (by building its bases on one device: nothing is computed).

    Touches no file. Raises:
      ConfigError: a message that names the field or parameter and says what is allowed.
    """
    spec, name = lookup(cfg.equation)
    if cfg.preset is not None:
        cfg = apply_preset(cfg, spec, name)
    ics = spec.initial_conditions()
    ic = cfg.ic if cfg.ic is not None else next(iter(ics))
    if ic not in ics:
        raise ConfigError(f"ic: unknown initial condition {ic!r} for {name}; available: {', '.join(ics)}",
                          fields=("ic",))
    variant, run_params, eq_params, ic_params = _split_params(spec, name, ic, dict(cfg.params or {}))
    params = {**run_params, **eq_params, **ic_params}
    integrator = cfg.integrator if cfg.integrator is not None else spec.default_integrator(params)
    if integrator not in INTEGRATORS:
        raise ConfigError(f"integrator: unknown integrator {integrator!r}; available: {', '.join(INTEGRATORS)}",
                          fields=("integrator",))
    shape = _per_axis(cfg.n, spec.ndims, "n", name)
    if not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in shape):
        raise ConfigError(f"n: grid sizes must be integers, got {' '.join(map(str, shape))}", fields=("n",))
    shape = tuple(int(n) for n in shape)
    if (bad := preset_axes(cfg, spec, shape)) is not None:  # blame the flag given, not the preset's
        raise ConfigError(bad[0], fields=bad[1])
    box_given = cfg.box_length if cfg.box_length is not None else spec.default_box(len(shape), params)
    box = _per_axis(box_given, (len(shape),), "box_length", name)
    if not all(isinstance(v, numbers.Real) and math.isfinite(v) and v > 0 for v in box):
        raise ConfigError(f"box_length: box sides must be positive numbers, got {' '.join(map(str, box))}",
                          fields=("box_length",))
    box = tuple(float(v) for v in box)
    _check_run(cfg)
    _check_grid(variant, name, shape, box, cfg)
    if (bad := statistics_problem(cfg, variant, name, shape, box)) is not None:
        raise ConfigError(bad[0], fields=bad[1])
    out = Path(cfg.out if cfg.out is not None else os.path.join("runs", f"{name.replace(':', '-')}-{ic}"))
    return Resolved(variant, name, ic, integrator, shape, box, eq_params, ic_params, run_params, out, spec)


def _check_grid(spec: RunSpec, name: str, shape: tuple[int, ...], box: tuple[float, ...], cfg: RunConfig) -> None:
    """The grid's bases take ``shape`` and ``box`` (built on one device: the mesh is checked later)."""
    try:
        spec.grid(shape, None, box, dtype=cfg.dtype if cfg.dtype in ("float32", "float64") else "float32",
                  dealias=cfg.dealias if cfg.dealias in DEALIAS else "2/3", backend=None)
    except ValueError as e:
        text = str(e)
        if "box" in text or "depth" in text:
            raise ConfigError(f"box_length: {name}: {text}", fields=("box_length",)) from None
        raise ConfigError(f"n: {text}", fields=("n",)) from None


def _check_run(cfg: RunConfig) -> None:
    if cfg.dealias not in DEALIAS:
        raise ConfigError(f"dealias: unknown dealiasing rule {cfg.dealias!r}; available: {', '.join(DEALIAS)}",
                          fields=("dealias",))
    if cfg.dtype not in ("float32", "float64"):
        raise ConfigError(f"dtype must be float32 or float64, got {cfg.dtype!r}", fields=("dtype",))
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
        ("dt", cfg.dt is None or (number(cfg.dt) and cfg.dt > 0), "must be positive"),
        ("cfl", number(cfg.cfl) and cfg.cfl > 0, "must be positive"),
        ("dt_max", number(cfg.dt_max) and cfg.dt_max > 0, "must be positive"),
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
    if cfg.resume and cfg.overwrite:
        raise ConfigError("resume and overwrite exclude each other", fields=("resume", "overwrite"))
    for t in cfg.snapshot_times:
        if not (number(t) and 0 < t <= cfg.t_end):
            raise ConfigError(f"snapshot_times: every time must lie in (0, t_end = {cfg.t_end:g}], got {t}",
                              fields=("snapshot_times",))
    if cfg.backend not in xfft.available_backends():
        raise ConfigError(f"backend: unknown or unavailable xfft backend {cfg.backend!r}; available: "
                          f"{', '.join(xfft.available_backends())}", fields=("backend",))


def check_output_dir(out: Path, create: bool = True) -> None:
    """Create ``out`` and check that it is writable; ``create=False`` checks without creating or writing
    anything (the nearest existing directory must be writable, and nothing on the way may be a file).

    Raises:
      ConfigError: naming the field ``out``.
    """
    def bad(why: str) -> ConfigError:
        return ConfigError(f"out: output directory {str(out)!r} is not writable: {why}", fields=("out",))

    if not create:
        here = out.absolute()
        while not here.exists() and here != here.parent:
            here = here.parent
        if not here.is_dir():
            raise bad(f"{str(here)!r} is not a directory")
        if not os.access(here, os.W_OK | os.X_OK):
            raise bad("Permission denied")
        return
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise bad(e.strerror or str(e)) from None


def legacy_physics(saved: dict, res: Resolved) -> dict:
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
    eq_p, ic_p = _split_params(res.spec, res.equation, ic, {k: v for k, v in params.items() if k in keep})[2:] \
        if ic in cls.initial_conditions else ({}, {})
    return {"format": 2, "equation": saved.get("equation"), "ic": ic, "shape": list(shape), "box_length": list(box),
            **{k: saved.get(k) for k in ("dtype", "dealias", "integrator", "dt", "cfl", "dt_max")},
            "params": {**eq_p, **ic_p}}
