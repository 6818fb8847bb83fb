"""What the command line prints besides a run: ``list`` (equations, initial conditions, integrators) and the
resolved configuration of ``--dry-run``."""

from __future__ import annotations


def _describe(p) -> str:
    from .flags import PARAM_FLAGS

    flag = f", {PARAM_FLAGS[p.name]}" if p.name in PARAM_FLAGS else ""
    alias = f", or {p.reciprocal} = 1 / {p.name}" if p.reciprocal else ""
    return f"{p.name}={p.default!r} ({p.allowed()}{flag}{alias}){': ' + p.help if p.help else ''}"


def _needs_dt(spec) -> bool:
    """True where runs of ``spec`` must give a fixed ``--dt``: its equation defines no CFL rate (``max_rate``)."""
    from ..model import Equation

    classes = [v.equation for v in spec.variants.values()] or [spec.equation]
    return all(c.max_rate is Equation.max_rate for c in classes)


def listing() -> str:
    """The text of ``python -m solvers list``."""
    from ..bases import DEALIAS
    from ..integrators import INTEGRATORS
    from ..job import REGISTRY
    from ..model.params import as_initial_condition
    from ..steady import SOLVERS

    lines = ["equations (python -m solvers run NAME, or MODULE:NAME for your own Equation or RunSpec):"]
    for name, spec in REGISTRY.items():
        step = ("--cfl C (adaptive, the default) or --dt DT" if not _needs_dt(spec) else
                "--dt DT (required: no CFL rate)" if spec.dt is None else f"--dt DT (default {spec.dt:g}: no CFL rate)")
        integ = spec.integrator + (" (" + ", ".join(f"{k}: {v.integrator}" for k, v in spec.variants.items()) + ")"
                                   if spec.variants else "")
        lines.append(f"  {name:<20} {spec.description}")
        lines.append(f"  {'':<20} grids: {'/'.join(map(str, spec.ndims))}D; default integrator: {integ}; "
                     f"time step: {step}")
        params = list(spec.run_parameters()) + list(spec.equation.parameters)
        for v in spec.variants.values():
            params += [p for p in v.equation.parameters if p.name not in {q.name for q in params}]
        for p in params:
            lines.append(f"  {'':<22}--param {_describe(p)}")
        for name_, preset in spec.presets.items():
            shape = "x".join(map(str, preset.get("n", ())))
            lines.append(f"  {'':<20} --preset {name_}: {shape} points, Re = {preset['params'].get('Re', 0):.6g}"
                         if "Re" in preset.get("params", {}) else f"  {'':<20} --preset {name_}")
        for i, (ic, ics) in enumerate(spec.initial_conditions().items()):
            ics = as_initial_condition(ics)
            lines.append(f"  {'':<20} --ic {ic}{' (default)' if i == 0 else ''}{': ' + ics.help if ics.help else ''}")
            for p in ics.params:
                lines.append(f"  {'':<24}--param {_describe(p)}")
    lines.append("steady solvers (Python API):")
    for name, cls in SOLVERS.items():
        lines.append(f"  {name:<20} {cls.description}")
    lines.append("integrators (--integrator):")
    for name, cls in INTEGRATORS.items():
        lines.append(f"  {name:<20} order {cls.order}: {cls.description}")
    lines.append("time step: --dt DT (fixed) or --cfl C (adaptive, default 0.5; equations with a CFL rate, max_rate)")
    lines.append(f"dealiasing (--dealias): {', '.join(DEALIAS)}")
    lines.append("meshes (--mesh): slab, pencil, auto (measured)")
    return "\n".join(lines)


def print_dry_run(info: dict) -> None:
    """The resolved configuration, the mesh and the memory estimate, one ``key: value`` line each."""
    cfg = info["config"]
    params = ", ".join(f"{k}={v!r}" for k, v in cfg["params"].items()) or "none"
    step = f"dt {cfg['dt']:g}" if cfg["dt"] is not None else f"cfl {cfg['cfl']:g} (dt_max {cfg['dt_max']:g})"
    lines = {
        "equation": cfg["equation"], "ic": cfg["ic"], "integrator": cfg["integrator"], "parameters": params,
        "grid": "x".join(map(str, cfg["n"])) + f", box {' x '.join(f'{v:.6g}' for v in cfg['box_length'])}"
                + (f" (modes; held on {'x'.join(map(str, info['points']))} points, which the mesh splits)"
                   if info["points"] != cfg["n"] else ""),
        "dtype": cfg["dtype"], "dealias": cfg["dealias"], "time": f"t_end {cfg['t_end']:g}, {step}"
                                                                  + (f", max_steps {cfg['max_steps']}"
                                                                     if cfg["max_steps"] is not None else ""),
        "mesh": ("auto: timed when the run starts; checked here on " if cfg["mesh"] == "auto" else "")
                + f"{info['mesh']} ({info['devices']} {info['platform']} devices, {info['processes']} "
                f"process{'es' if info['processes'] > 1 else ''})"
                + (f"; {info['mesh_note']}" if info.get("mesh_note") else ""),
        "memory": info["memory"], "backend": cfg["backend"],
        "outputs": f"{cfg['out']} (diagnostics every {cfg['diag_every']} steps, checkpoints "
                   + (f"every {cfg['checkpoint_every']} steps" if cfg["checkpoint_every"] else "at the end")
                   + f", keep {cfg['keep']}"
                   + (", resume" if cfg["resume"] else ", overwrite" if cfg["overwrite"] else "") + ")",
    }
    width = max(map(len, lines))
    print("dry run: nothing computed or written")
    for key, value in lines.items():
        print(f"  {key + ':':<{width + 1}} {value}")


