"""Flags and fields: a :class:`~solvers.RunConfig` from the command line, and library messages with their flags.

The library's messages name :class:`~solvers.RunConfig` fields and declared parameters (``t_end``, ``parameter
Re``); this module prints them with the command line's flags (``--t-end``), from one table (:data:`FLAGS`).
"""

from __future__ import annotations

import argparse
import math
import re

#: RunConfig field -> the flag that sets it: library messages name fields, the command line prints flags
FLAGS = {
    "ic": "--ic", "n": "--n", "box_length": "--box-length", "t_end": "--t-end",
    "out": "--out", "mesh": "--mesh", "dtype": "--dtype", "integrator": "--integrator", "dt": "--dt",
    "cfl": "--cfl", "dt_max": "--dt-max", "dealias": "--dealias", "backend": "--backend", "params": "--param",
    "diag_every": "--diag-every", "checkpoint_every": "--checkpoint-every", "keep": "--keep", "resume": "--resume",
    "overwrite": "--overwrite", "max_steps": "--max-steps", "snapshot_every": "--snapshot-every",
    "snapshot_times": "--snapshot-times", "snapshot_dtype": "--snapshot-dtype", "stats_every": "--stats-every",
    "stats_start": "--stats-start", "preset": "--preset",
}
#: declared parameters that have a flag of their own (the others: --param NAME=...)
PARAM_FLAGS = {"nu": "--nu or --re", "Re": "--re or --nu", "seed": "--seed", "k0": "--k0", "energy": "--energy",
               "forcing_epsilon": "--forcing-epsilon"}
#: the shorthand flags of parameters
SHORTHANDS = ("seed", "k0", "energy", "forcing_epsilon")


def with_flags(e: BaseException) -> str:
    """The message of a library error with its fields and parameters named by their flags: the first use of each
    field in ``e.fields`` outside quotes (``t_end must be positive`` -> ``--t-end must be positive``), and
    ``parameter NAME`` for each name in ``e.params`` (-> ``parameter NAME (--param NAME=...)``)."""
    parts = re.split(r"('[^']*')", str(e))  # quoted values (paths, names) are never rewritten
    for name in getattr(e, "fields", ()):
        pattern = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])")
        for i in range(0, len(parts), 2):
            parts[i], hit = pattern.subn(FLAGS.get(name, name), parts[i], count=1)
            if hit:
                break
    for name in getattr(e, "params", ()):
        flag = PARAM_FLAGS.get(name, f"--param {name}=...")
        for i in range(0, len(parts), 2):
            parts[i] = re.sub(rf"\bparameter {re.escape(name)}(?!\w)", f"parameter {name} ({flag})", parts[i])
    return "".join(parts)


def _viscosity(ns: argparse.Namespace, params: dict) -> None:
    """``--re``/``--nu`` as the equation's own parameter: ``Re`` where it declares one, else ``nu`` (and the
    reciprocal of the other flag). One message for an equation that declares neither."""
    given = [(f, v) for f, v in (("--re", ns.re), ("--nu", ns.nu)) if v is not None]
    if not given:
        return
    flag, value = given[0]
    from ..job import lookup

    spec, name = lookup(ns.equation)
    declared = {p.name for p in spec.declared(ns.ic)}
    want = ("Re", "nu") if flag == "--re" else ("nu", "Re")
    key = next((k for k in want if k in declared), None)
    if key is None:
        raise ValueError(f"{flag}: {name} has no Reynolds number (Re) or viscosity (nu) parameter; its parameters: "
                         f"{', '.join(sorted(declared)) or 'none'}")
    if key in params:
        raise ValueError(f"{flag} and --param {key} both given; give one")
    if key != want[0] and not (math.isfinite(value) and value > 0):  # the reciprocal sets the other parameter
        raise ValueError(f"{flag} must be a positive number (it sets {key} = 1 / {flag[2:]}), got {value}")
    params[key] = value if key == want[0] else 1.0 / value


def config(ns: argparse.Namespace):
    """The :class:`~solvers.RunConfig` of the command line; flags that set parameters go into ``params``.

    Raises:
      ValueError: a malformed ``--param``, ``--re``/``--nu``, ``--snapshot-times`` (the CLI exits with status 2).
    """
    from ..job import RunConfig

    params: dict[str, str | float] = {}
    for item in ns.param:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        params[key.strip()] = value.strip()
    _viscosity(ns, params)
    for key in SHORTHANDS:
        value = getattr(ns, key)
        if value is not None:
            if key in params:
                raise ValueError(f"--{key.replace('_', '-')} and --param {key} both given; give one")
            params[key] = value
    times: tuple[float, ...] = ()
    if ns.snapshot_times is not None:
        try:
            times = tuple(float(v) for v in ns.snapshot_times.split(",") if v.strip())
        except ValueError:
            raise ValueError(f"--snapshot-times expects comma-separated times (T1,T2,...), got "
                             f"{ns.snapshot_times!r}") from None
        if not times:
            raise ValueError("--snapshot-times expects at least one time (T1,T2,...)")
    given = {"equation": ns.equation, "ic": ns.ic, "n": tuple(ns.n) if ns.n else None, "t_end": ns.t_end,
             "out": ns.out, "mesh": ns.mesh, "dtype": ns.dtype, "integrator": ns.integrator, "dt": ns.dt,
             "cfl": ns.cfl, "dt_max": ns.dt_max, "dealias": ns.dealias, "backend": ns.backend,
             "box_length": None if ns.box_length is None else tuple(ns.box_length), "diag_every": ns.diag_every,
             "checkpoint_every": ns.checkpoint_every, "keep": ns.keep, "resume": ns.resume,
             "overwrite": ns.overwrite, "max_steps": ns.max_steps, "progress": not ns.no_progress,
             "plots": not ns.no_plots, "snapshot_every": ns.snapshot_every, "snapshot_times": times,
             "snapshot_dtype": ns.snapshot_dtype, "stats_every": ns.stats_every, "stats_start": ns.stats_start}
    given = {k: v for k, v in given.items() if v is not None}
    if ns.preset is not None:  # the preset fills what the command line leaves out (a flag given wins, any value)
        from ..job import lookup
        from ..job.config import preset_values

        spec, name = lookup(ns.equation)
        values = preset_values(spec, name, ns.preset)
        params = {**values.pop("params", {}), **params}
        given = {**values, **given, "applied_preset": ns.preset}
    if ns.stats_start is not None and not given.get("stats_every"):
        raise ValueError("--stats-start given, but statistics are off: give --stats-every N too (a sample every N "
                         "steps)")
    return RunConfig(**given, params=params)
