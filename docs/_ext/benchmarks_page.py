"""The benchmarks page's tables and plots, generated from ``benchmarks/results/**/*.json`` (and the PNG beside each).

Every result file becomes a section with the date, the machine and the command that wrote it, its records as a
table (nested fields flattened to ``a.b``; fields equal in every row shown once above the table) and its plot.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

#: the command that writes each result file (run from the repository root); GPU files come from benchmarks/gpu.sh
COMMANDS = {
    "fft.json": "python benchmarks/fft.py",
    "fft_gpu.json": "python benchmarks/fft.py --platform auto --sizes 256 512 1024 --no-peer",
    "fft_tcmalloc.json": "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 python benchmarks/fft.py "
                         "--tag _tcmalloc",
    "fft_keep.json": "python benchmarks/fft.py --keep-host-memory --tag _keep",
    "fft_256/fft.json": "python benchmarks/fft.py --sizes 256 --no-backends --repeats 7 "
                        "--out benchmarks/results/fft_256",
    "gradients.json": "python benchmarks/gradients.py",
    "gradients_gpu.json": "python benchmarks/gradients.py --platform auto --n 256 --steps 20 "
                          "--policies none 1 10 10,2 --tag _gpu",
    "navier_stokes.json": "python benchmarks/navier_stokes.py",
    "navier_stokes_gpu.json": "python benchmarks/navier_stokes.py --platform auto --sizes 256 512 --tag _gpu",
    "navier_stokes_gpu_1024.json": "XLA_PYTHON_CLIENT_MEM_FRACTION=.53 python benchmarks/navier_stokes.py "
                                   "--platform auto --sizes 1024 --integrators lsrk4 --tag _gpu_1024",
    "ns1024_gpu_run.json": "python -m solvers run navier-stokes --n 1024 --dtype float32 --t-end 1 --max-steps 5 "
                           "(its run.json)",
    "snapshots.json": "python benchmarks/snapshots.py",
    "solver_step.json": "python benchmarks/solver_step.py --peer --driver",
    "solver_step_gpu.json": "python benchmarks/solver_step.py --peer --driver --platform auto --n2d 1024 --n3d 256 "
                            "--tag _gpu",
    "solver_step_gpu_ab.json": "python benchmarks/solver_step.py --driver --platform auto (six runs, collected)",
    "solver_step_gpu_final.json": "python benchmarks/solver_step.py --driver --platform auto --tag _gpu_final",
    "walls.json": "python benchmarks/walls.py --cases CASE --rounds 1 --repeats 5",
    "halo.json": "python benchmarks/halo.py",
    "dedalus_walls.json": "python benchmarks/dedalus_walls.py --rounds 2 --steps 20 (Dedalus 3.0.5 in "
                          "/tmp/dedalus-venv: the script's docstring says how)",
    "small_runs.json": "python benchmarks/small_runs.py",
    "pm_step.json": "python benchmarks/pm_step.py",
    "startup.json": "python benchmarks/startup.py --before CHECKOUT_BEFORE --only demo 'tgv 64^3 to t=2' 'ns 30^3' "
                    "'channel TS' 'no-slip convection' 'couette OS'",
    "channel/re_tau_180_gpu.json": "bash benchmarks/gpu_channel.sh OUT 150 250; python benchmarks/channel_reference.py "
                                   "OUT --out benchmarks/results/channel/re_tau_180_gpu",
    "channel/minimal_cpu.json": "python -m solvers run channel --preset re-tau-180-minimal --out RUN; python "
                                "benchmarks/channel_reference.py RUN --out benchmarks/results/channel/minimal_cpu",
    "solver_step_gpu_decompose.json": "python benchmarks/solver_step.py --driver --decompose --driver-steps 400 "
                                      "--repeats 5 --tag _gpu",
    "solver_step_gpu_decompose_rows.json": "python benchmarks/solver_step.py --driver --decompose --driver-steps 400 "
                                           "--repeats 5 --n3d 32 --tag _gpu_decompose_rows",
    "profile_step_2d/profile_step.json": "python benchmarks/profile_step.py --equation navier-stokes-2d --n 256 "
                                         "--out benchmarks/results/profile_step_2d",
    "profile_step_3d/profile_step.json": "python benchmarks/profile_step.py --equation navier-stokes --n 64 "
                                         "--out benchmarks/results/profile_step_3d",
    "profile_step_3d_scalar/profile_step.json": "python benchmarks/profile_step.py --equation navier-stokes --n 64 "
                                                "--out benchmarks/results/profile_step_3d_scalar",
}
#: what a result file does not record itself (a run's run.json has no date or machine), from the notes of the
#: measurement that wrote it
NOT_IN_FILE = {"ns1024_gpu_run.json": {"date": "2026-11-26 (not in the file)",
                                       "machine": "one NVIDIA H200 (not in the file)"}}
MAX_COLUMNS = 12


def _flat(record, prefix="") -> dict:
    out = {}
    if isinstance(record, dict):
        for k, v in record.items():
            out.update(_flat(v, f"{prefix}{k}."))
    elif isinstance(record, list) and all(not isinstance(v, (dict, list)) for v in record) and len(record) <= 6:
        out[prefix[:-1]] = ", ".join(_fmt(v) for v in record)
    elif isinstance(record, list):
        out[prefix[:-1]] = f"({len(record)} entries)"
    else:
        out[prefix[:-1]] = record
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def _meta(data: dict) -> dict:
    for key in ("meta", "machine"):
        if isinstance(data.get(key), dict):
            return data[key]
    return data


def _records(data: dict) -> list[dict]:
    """The rows of a result: its list of records, or one row per entry of its dicts of records."""
    for key in ("rows", "results", "runs"):
        if isinstance(data.get(key), list):
            return [_flat(r) for r in data[key]]
    rows = []
    for key, value in data.items():
        if key in ("meta", "machine", "summary") or not isinstance(value, dict):
            continue
        if all(isinstance(v, dict) for v in value.values()):
            rows += [{"part": f"{key} {sub}", **_flat(v)} for sub, v in value.items()]
        else:
            rows.append({"part": key, **_flat(value)})
    return rows


def _machine(meta: dict) -> str:
    parts = []
    for key in ("machine", "device_kind", "device", "platform"):
        if isinstance(meta.get(key), str) and meta[key] not in parts:
            parts.append(meta[key])
    for key, label in (("cpu_count", "core"), ("cpus", "core"), ("devices", "device")):
        if isinstance(meta.get(key), int):
            parts.append(f"{meta[key]} {label}{'' if meta[key] == 1 else 's'}")
    if meta.get("jax"):
        parts.append(f"jax {meta['jax']}")
    alloc = meta.get("host_allocator")
    if isinstance(alloc, dict):  # benchmarks/fft.py: what served the buffers of each call
        preload = alloc.get("ld_preload", "none")
        served = f"{preload} preloaded" if preload != "none" else "malloc of the C library"
        settings = "".join(f", {k}={v}" for k, v in alloc.get("settings", {}).items())
        parts.append(f"host allocator: {served} ({alloc.get('libc', 'unknown')}{settings})")
    for key in ("load_average_1min", "load_average_1min_start_end", "load_avg", "load_average_1min_during_timing"):
        if key in meta:
            value = meta[key]
            if isinstance(value, list) and len(value) > 3:  # sampled through the run
                shown = f"{_fmt(min(value))} to {_fmt(max(value))}"
            else:
                shown = ", ".join(_fmt(x) for x in value[:3]) if isinstance(value, list) else _fmt(value)
            parts.append(f"load average {shown}")
    before, after = _one_minute(meta, "before"), _one_minute(meta, "after")
    if before is not None or after is not None:
        parts.append(f"load average (1 min) {_fmt(before)} before, {_fmt(after)} after")
    if isinstance(meta.get("load_average_1min_range"), list):
        low, high = meta["load_average_1min_range"][:2]
        parts.append(f"load average (1 min) {_fmt(low)} to {_fmt(high)} over the run")
    return "; ".join(parts) or "not recorded"


def _one_minute(meta: dict, when: str) -> float | None:
    """The 1-minute load average a result recorded ``when`` ("before" or "after") its measurements: ``uptime``'s
    line under ``load`` (``benchmarks/_timing.run_info``), or the three averages as ``load_before``/``load_after``."""
    value = (meta.get("load") or {}).get(when) if isinstance(meta.get("load"), dict) else meta.get(f"load_{when}")
    if isinstance(value, list) and value:
        return float(value[0])
    if isinstance(value, str) and "load average" in value:
        try:
            return float(value.split("load average")[1].lstrip(":s ").split(",")[0])
        except ValueError:
            return None
    return None


def _table(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    columns = list(dict.fromkeys(k for r in rows for k in r))
    same = [c for c in columns if len(rows) > 1 and len({_fmt(r.get(c)) for r in rows}) == 1]
    varying = [c for c in columns if c not in same] or columns
    shown, rest = varying[:MAX_COLUMNS], varying[MAX_COLUMNS:]
    lines = []
    if same:
        lines += ["Every row: " + "; ".join(f"`{c}` = {_fmt(rows[0].get(c))}" for c in same[:12]) +
                  (" (more in the file)" if len(same) > 12 else ""), ""]
    lines += ["| " + " | ".join(f"`{c}`" for c in shown) + " |", "|" + "---|" * len(shown)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c)).replace("|", "/") for c in shown) + " |")
    if rest:
        lines += ["", f"Further fields in the file: {', '.join(f'`{c}`' for c in rest[:20])}"
                  + (" ..." if len(rest) > 20 else "") + "."]
    return lines + [""]


def write(out: Path, results: Path) -> None:
    """``out/benchmarks.md`` (included by ``docs/benchmarks.md``) and the plots beside it."""
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for path in sorted(results.rglob("*.json")):
        rel = path.relative_to(results).as_posix()
        data = json.loads(path.read_text())
        meta = {**_meta(data), **NOT_IN_FILE.get(rel, {})}
        date = meta.get("date") or meta.get("started_utc") or (data.get("runs") or [{}])[0].get("started_utc") \
            or "not recorded"
        lines += [f"## `{rel}`", "", f"- **Date**: {date}", f"- **Machine**: {_machine(meta)}",
                  f"- **Command**: `{COMMANDS.get(rel, 'not recorded')}`", ""]
        for key in ("what", "note", "memory_note"):
            if isinstance(meta.get(key), str):
                lines += [f"*{meta[key]}*", ""]
        lines += _table(_records(data))
        png = path.with_suffix(".png")
        if png.exists():
            name = rel.replace("/", "_")[:-5] + ".png"
            target = out / name
            if not target.exists() or target.read_bytes() != png.read_bytes():
                shutil.copyfile(png, target)
            lines += [f"![{rel}](_generated/{name})", ""]
    text = "\n".join(lines) + "\n"
    page = out / "benchmarks.md"
    if not page.exists() or page.read_text() != text:
        page.write_text(text)
