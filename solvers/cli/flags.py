"""Flags and fields: a :class:`~solvers.RunConfig` from the command line, and library messages with their flags.

The library's messages name :class:`~solvers.RunConfig` fields and declared parameters (``t_end``, ``parameter
Re``); this module prints them with the command line's flags (``--t-end``), from one table (:data:`FLAGS`).
"""

from __future__ import annotations

import argparse
import re

#: RunConfig field -> the flag that sets it: library messages name fields, the command line prints flags
FLAGS = {
    "ic": "--ic", "n": "--n", "box_length": "--box-length", "t_end": "--t-end",
    "out": "--out", "mesh": "--mesh", "dtype": "--dtype", "integrator": "--integrator", "dt": "--dt",
    "cfl": "--cfl", "dt_max": "--dt-max", "dealias": "--dealias", "backend": "--backend", "params": "--param",
    "diag_every": "--diag-every", "checkpoint_every": "--checkpoint-every", "keep": "--keep", "resume": "--resume",
    "overwrite": "--overwrite", "max_steps": "--max-steps", "snapshot_every": "--snapshot-every",
    "snapshot_times": "--snapshot-times", "snapshot_dtype": "--snapshot-dtype", "stats_every": "--stats-every",
    "stats_start": "--stats-start", "preset": "--preset", "controller": "--controller",
}
#: declared parameters that have a flag of their own (the others: --param NAME=...); ``--re`` and ``--nu`` set
#: ``Re`` and ``nu``, and an equation that declares one of the two as the other's reciprocal
#: (``Param(reciprocal=...)``) takes either flag
PARAM_FLAGS = {"nu": "--nu or --re", "Re": "--re or --nu", "seed": "--seed", "k0": "--k0", "energy": "--energy",
               "forcing_epsilon": "--forcing-epsilon"}
#: the flags that set a parameter of the same name (``--re`` sets ``Re``)
SHORTHANDS = {"re": "Re", "nu": "nu", "seed": "seed", "k0": "k0", "energy": "energy",
              "forcing_epsilon": "forcing_epsilon"}


def with_flags(e: BaseException) -> str:
    """The message of a library error with its fields and parameters named by their flags: the first use of each
    field in ``e.fields`` outside quotes (``t_end must be positive`` -> ``--t-end must be positive``; a parameter
    there by the flag that sets it, ``Re`` -> ``--re``), and
    ``parameter NAME`` for each name in ``e.params`` (-> ``parameter NAME (--param NAME=...)``)."""
    parts = re.split(r"('[^']*')", str(e))  # quoted values (paths, names) are never rewritten
    own = {key: f"--{flag.replace('_', '-')}" for flag, key in SHORTHANDS.items()}  # "Re" -> "--re"
    for name in getattr(e, "fields", ()):
        pattern = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])")
        for i in range(0, len(parts), 2):
            parts[i], hit = pattern.subn(FLAGS.get(name) or own.get(name, name), parts[i], count=1)
            if hit:
                break
    for name in getattr(e, "params", ()):
        flag = PARAM_FLAGS.get(name, f"--param {name}=...")
        for i in range(0, len(parts), 2):
            parts[i] = re.sub(rf"\bparameter {re.escape(name)}(?!\w)", f"parameter {name} ({flag})", parts[i])
    return "".join(parts)


def config(ns: argparse.Namespace):
    """The :class:`~solvers.RunConfig` of the command line: the flags given, nothing filled in (the preset and
    the defaults are the resolver's, :func:`~solvers.job.resolve`); flags that set parameters go into ``params``
    under their parameter's name (``--re`` -> ``Re``, ``--nu`` -> ``nu``: the equation's declaration says which
    one is the other's reciprocal).

    Raises:
      ValueError: a malformed ``--param`` or ``--snapshot-times``, a flag given with ``--param`` of the same
        parameter, or ``--stats-start`` with statistics off (the CLI exits with status 2).
    """
    from ..job import RunConfig

    params: dict[str, str | float] = {}
    for item in ns.param:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        params[key.strip()] = value.strip()
    for flag, key in SHORTHANDS.items():
        value = getattr(ns, flag)
        if value is not None:
            if key in params:
                raise ValueError(f"--{flag.replace('_', '-')} and --param {key} both given; give one")
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
             "snapshot_dtype": ns.snapshot_dtype, "stats_every": ns.stats_every, "stats_start": ns.stats_start,
             "controller": ns.controller}
    given = {k: v for k, v in given.items() if v is not None}
    if ns.stats_start is not None and not ns.stats_every and (ns.stats_every is not None or ns.preset is None):
        # (with a preset and no --stats-every, the preset's statistics decide: the resolver checks)
        raise ValueError("--stats-start given, but statistics are off: give --stats-every N too (a sample every N "
                         "steps)")
    return RunConfig(**given, preset=ns.preset, params=params)
