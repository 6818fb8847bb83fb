"""Presets of known cases, applied in one place: :func:`apply_preset` fills the fields a configuration leaves at
None from the spec's preset (what the configuration gives wins, at any value), and :func:`preset_axes` names the
field given when the preset's grid and a given box (or the reverse) disagree."""

from __future__ import annotations

import dataclasses

from .config import DEFAULTS, ConfigError, RunConfig
from .spec import RunSpec

__all__ = ["PRESET_FIELDS", "apply_preset", "preset_axes", "preset_values", "preset_watch"]

#: the :class:`~solvers.RunConfig` fields a preset may set (with ``params`` and the job's own ``relaminarization``)
PRESET_FIELDS = ("ic", "n", "box_length", "t_end", "dtype", "integrator", "dt", "cfl", "dt_max", "max_steps",
                 "checkpoint_every", "stats_every", "stats_start", *DEFAULTS)
_JOB = ("params", "relaminarization")


def preset_values(spec: RunSpec, name: str, preset: str) -> dict:
    """The :class:`RunConfig` settings of ``spec``'s preset ``preset`` (fields, and ``params``).

    Raises:
      ConfigError: an unknown preset (naming the field ``preset`` and listing the known ones), or one that sets a
        field no preset may set (:data:`PRESET_FIELDS`).
    """
    if preset not in spec.presets:
        known = ", ".join(spec.presets) or "none"
        raise ConfigError(f"preset: {name} has no preset {preset!r}; its presets: {known}", fields=("preset",))
    values = dict(spec.presets[preset])
    bad = sorted(set(values) - set(PRESET_FIELDS) - set(_JOB))
    if bad:
        raise ConfigError(f"preset: {name}'s preset {preset!r} sets {', '.join(bad)}, which a preset cannot set; "
                          f"it may set {', '.join(dict.fromkeys(PRESET_FIELDS))} and params", fields=("preset",))
    values.pop("relaminarization", None)
    return values


def apply_preset(cfg: RunConfig, spec: RunSpec, name: str) -> tuple[RunConfig, frozenset[str]]:
    """``cfg`` with its preset filled in, and the names of the fields (and parameters) the preset set.

    Every field of ``cfg`` left at None takes the preset's value; the preset's parameters go under the ones
    ``cfg`` gives (a parameter given by its declared reciprocal, ``nu`` for ``Re``, replaces the preset's value of
    the other). Without a preset, ``cfg`` itself and no names.

    Raises:
      ConfigError: an unknown preset, or one that sets a field no preset may set.
    """
    if cfg.preset is None:
        return cfg, frozenset()
    values = preset_values(spec, name, cfg.preset)
    preset_params = dict(values.pop("params", {}) or {})
    changes = {k: v for k, v in values.items() if getattr(cfg, k) is None}
    given = dict(cfg.params or {})
    for p in spec.declared(None):  # a reciprocal given wins over the preset's value of the declared one
        if p.reciprocal is not None:
            for mine, other in ((p.name, p.reciprocal), (p.reciprocal, p.name)):
                if other in given:
                    preset_params.pop(mine, None)
    params = {**preset_params, **given}
    taken = frozenset(changes) | frozenset(k for k in preset_params if k not in given)
    return dataclasses.replace(cfg, **changes, params=params), taken


def preset_axes(cfg: RunConfig, spec: RunSpec, shape: tuple[int, ...],
                from_preset: frozenset[str]) -> tuple[str, tuple[str, ...]] | None:
    """The message (and the fields it names) for sizes ``shape`` and a box of another number of dimensions where
    one of the two is the preset's: it names the one the configuration gave (``n`` or ``box_length``) and the
    preset, not the preset's own value. None: no such mismatch.

    Args:
      cfg: the configuration with its preset applied. spec: the equation's :class:`~solvers.RunSpec`.
      shape: the grid's sizes from ``cfg.n``. from_preset: the fields the preset set (:func:`apply_preset`).
    """
    if cfg.preset is None or cfg.box_length is None or ("n" in from_preset) == ("box_length" in from_preset):
        return None
    box = tuple(cfg.box_length) if isinstance(cfg.box_length, (tuple, list)) else (cfg.box_length,)
    if len(box) in (1, len(shape)):
        return None
    sides = " ".join(f"{float(v):g}" for v in box)
    sizes = " ".join(map(str, shape))
    if "box_length" in from_preset:  # sizes given, the preset's box
        return (f"n: {len(shape)} sizes ({sizes}) for preset {cfg.preset}, whose box is {len(box)}D ({sides}): give "
                f"{len(box)} sizes, or a {len(shape)}D box with box_length", ("n", "preset", "box_length"))
    return (f"box_length: {len(box)} sides ({sides}) for preset {cfg.preset}, whose grid is {len(shape)}D ({sizes}): "
            f"give {len(shape)} sides, or {len(box)} sizes with n", ("box_length", "preset", "n"))


def preset_watch(spec: RunSpec, preset: str | None) -> dict | None:
    """The preset's relaminarization stop (``RelaminarizationStop`` settings), or None."""
    return spec.presets.get(preset, {}).get("relaminarization") if preset else None

