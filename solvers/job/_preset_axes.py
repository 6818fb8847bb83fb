"""A preset's grid sizes and box of different dimensions: the message names the flag that was given."""

from __future__ import annotations

from typing import Any


def preset_axes(cfg: Any, spec: Any, shape: tuple[int, ...]) -> tuple[str, tuple[str, ...]] | None:
    """The message (and the fields it names) for sizes ``shape`` and a box of another number of dimensions where
    one of the two is the preset's: it names the one the user gave (``n`` or ``box_length``) and the preset, not
    the preset's own value. None: no such mismatch.

    Args:
      cfg: the :class:`~solvers.RunConfig` with its preset applied (``applied_preset``).
      spec: the equation's :class:`~solvers.RunSpec` (its ``presets``). shape: the grid's sizes from ``cfg.n``.
    """
    preset = spec.presets.get(cfg.applied_preset or "", {})
    if cfg.box_length is None or "n" not in preset or "box_length" not in preset:
        return None
    box = tuple(cfg.box_length) if isinstance(cfg.box_length, (tuple, list)) else (cfg.box_length,)
    if len(box) in (1, len(shape)):
        return None
    n = tuple(cfg.n) if isinstance(cfg.n, (tuple, list)) else (cfg.n,)
    sides = " ".join(f"{float(v):g}" for v in box)
    sizes = " ".join(map(str, shape))
    name = cfg.applied_preset
    if box == tuple(preset["box_length"]) and n != tuple(preset["n"]):  # sizes given, the preset's box
        return (f"n: {len(shape)} sizes ({sizes}) for preset {name}, whose box is {len(box)}D ({sides}): give "
                f"{len(box)} sizes, or a {len(shape)}D box with box_length", ("n", "preset", "box_length"))
    if n == tuple(preset["n"]) and box != tuple(preset["box_length"]):  # a box given, the preset's sizes
        return (f"box_length: {len(box)} sides ({sides}) for preset {name}, whose grid is {len(shape)}D ({sizes}): "
                f"give {len(shape)} sides, or {len(box)} sizes with n", ("box_length", "preset", "n"))
    return None
