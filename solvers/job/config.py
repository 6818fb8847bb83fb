"""What a run is given: :class:`RunConfig` (the fields the command line sets), the defaults of the fields it leaves
out (:data:`DEFAULTS`), the equation a name stands for (:func:`lookup`) and the errors of bad input
(:class:`ConfigError`). :func:`~solvers.job.resolve` turns a configuration into a :class:`~solvers.job.Plan`."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import Equation
from .registry import REGISTRY
from .spec import RunSpec

__all__ = ["DEFAULTS", "ConfigError", "RunConfig", "check_output_dir", "lookup"]

#: the values of the :class:`RunConfig` fields that are None until a preset or these defaults fill them in
DEFAULTS: dict[str, Any] = {"n": 64, "t_end": 1.0, "dtype": "float32", "cfl": 0.5, "dt_max": 0.1,
                            "checkpoint_every": 0, "stats_every": 0, "stats_start": 0.0}


class ConfigError(ValueError):
    """Bad input found before any compute (the CLI exits with status 2).

    The message names :class:`RunConfig` fields and declared parameters as the Python API spells them
    (``t_end must be positive``, ``navier-stokes parameter nu must be ...``). ``fields`` lists the fields it
    names (each named once before any other use of the word, outside quotes; a parameter given under a name of its
    own, such as the reciprocal ``Re`` of ``nu``, counts as one) and ``params`` the declared parameters it may name
    (``parameter NAME``), so that the command line can print its flags instead (``--t-end``).
    """

    def __init__(self, message: str, *, fields: tuple[str, ...] = (), params: tuple[str, ...] = ()):
        super().__init__(message)
        self.fields = tuple(fields)
        self.params = tuple(params)


@dataclass(frozen=True)
class RunConfig:
    """What a run is given; the CLI flags map onto these fields (``--t-end`` -> ``t_end``), and error messages
    name the fields. :func:`~solvers.job.resolve` turns it into the run's :class:`~solvers.job.Plan`. Frozen:
    ``dataclasses.replace(cfg, t_end=2.0)`` makes another.

    ``equation`` is a registered name (:data:`~solvers.REGISTRY`), a :class:`~solvers.RunSpec`, ``"module:NAME"``
    (a spec or an :class:`~solvers.Equation` subclass) or an Equation subclass. ``ic`` and ``integrator`` default to
    the equation's first initial condition and its spec's integrator; ``n`` and ``box_length`` are one value (a
    cube) or one per axis, wall-normal axis first for wall-bounded equations (``box_length=None``: the spec's
    default box, 2 pi per axis for most); ``params`` holds the declared parameters of the equation, of its initial
    condition and of the spec (``walls`` of convection), strings or numbers; a parameter with a declared
    reciprocal may be given by that name instead (``nu`` for ``Re = 1 / nu``, or ``Re`` for ``nu``).

    ``preset`` names one of the spec's presets (``RunSpec(presets=...)``): it fills every field left at None and
    goes under the ``params`` given; a field given wins at any value. The fields still None then take
    :data:`DEFAULTS` (``n`` 64, ``t_end`` 1, ``dtype`` float32, ``cfl`` 0.5, ``dt_max`` 0.1, ``checkpoint_every``,
    ``stats_every`` and ``stats_start`` 0); ``dt`` None means a CFL-adaptive step. ``controller``
    (``"module:NAME"``): a time-step controller of your own (:class:`~solvers.Controller`, or a class that makes
    one without arguments) in place of ``dt``/``cfl``; a checkpoint records its name and a resumed run must name
    the same one.
    """

    equation: Any = "navier-stokes"
    ic: str | None = None
    n: int | tuple[int, ...] | None = None
    t_end: float | None = None
    out: str | None = None
    mesh: str = "slab"
    dtype: str | None = None
    integrator: str | None = None
    dt: float | None = None
    cfl: float | None = None
    dt_max: float | None = None
    dealias: str = "2/3"
    backend: str = "native"
    box_length: float | tuple[float, ...] | None = None
    diag_every: int = 10
    checkpoint_every: int | None = None
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
    stats_every: int | None = None
    stats_start: float | None = None
    preset: str | None = None
    controller: str | None = None


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
