"""Benchmark: distributed FFTs in natural and transposed spectral order vs mpi4py-fft and one device.

Writes ``benchmarks/results/fft.json`` and ``benchmarks/results/fft.png`` (``fft_<platform>.*`` for
``--platform auto`` on an accelerator) with the date, the machine and its load (``uptime`` before and after).
Times are medians of repeated runs of compiled functions (``block_until_ready``), timed round-robin across cases;
ratios compare numbers measured in the same run. Each case also records its page faults per call
(``page_faults_per_call``, Linux), and every xfft case its HLO facts: the transposes that change the minor-most
axis in the lowered program (``transposes``), FFT ops, matrix products and all-to-alls in the compiled one.
Cases per decomposition (slab ``P('x')`` on 8 devices, pencil ``P('x', 'y')`` on 2 x 4) and kind
(``xfft3d`` c2c complex64, ``xrfft3d`` r2c float32):

- ``<f> <dec>``: natural order (the default), as users call it;
- ``<f> <dec> transposed``: ``order="transposed"``;
- ``<f> <dec> natural, transposes``: natural order lowered as on accelerators (the last stage by the FFT op and a
  transpose back; ``xfft.LoweringOptions(matrix_dft=False)`` given to the native backend): what natural order
  cost before its last stage ran in place;
- ``mpi4py-fft <dec> <kind>``: FFTW + MPI, ranks = devices, under ``mpirun`` (Debian's ``python3-mpi4py-fft`` for
  ``/usr/bin/python3``; skipped with a message when it is missing);
- one device: ``jnp.fft.fftn``/``rfftn`` and ``xfft3d``/``xrfft3d`` on one device of the same machine.

Memory comes from ``compiled.memory_analysis()``: temporaries per device, and bytes per grid point (arguments +
outputs + temporaries - aliased, summed over devices), from which the largest grid that fits the devices' memory
is estimated (accelerator: ``memory_stats()["bytes_limit"]``; CPU: the host's RAM).

Platforms: ``--platform cpu`` (default) forces 8 virtual CPU devices; ``--platform auto`` runs on whatever JAX
finds (a GPU: its devices, e.g. one H100).

Host allocator (CPU): every call of a compiled transform takes fresh output and temporary buffers from the process's
``malloc``. glibc's gives blocks of 32 MB and more back to the system when they are freed, so at 256^3 each call
faults its buffers in again page by page; the JSON records the allocator the run had (``host_allocator``:
``LD_PRELOAD``, ``MALLOC_*`` and ``GLIBC_TUNABLES``), ``fft_tcmalloc.json`` is the same benchmark with tcmalloc
preloaded and ``fft_keep.json`` with ``--keep-host-memory`` (the script starts again with glibc's own tunables
:data:`KEEP_TUNABLES` in ``GLIBC_TUNABLES``: glibc itself keeps them), both of which keep freed blocks for the
next call.

Run: ``python benchmarks/fft.py [--sizes 64 128 256] [--platform cpu|auto] [--no-peer] [--no-backends]
[--keep-host-memory] [--tag T]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _platform_arg(argv: list[str]) -> str:
    """``--platform`` read before JAX is imported (device flags must be set first)."""
    for i, a in enumerate(argv):
        if a == "--platform" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--platform="):
            return a.split("=", 1)[1]
    return "cpu"


#: ``GLIBC_TUNABLES`` that make glibc's ``malloc`` keep freed blocks for the next call (the guide's "On CPU devices:
#: the host's allocator"): one arena, no ``mmap`` for large blocks, the heap's top kept when freed (up to 2 GiB) and
#: grown by 64 MiB at a time
KEEP_TUNABLES = ("glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647:"
                 "glibc.malloc.top_pad=67108864")

_RESTART = "--keep-host-memory" in sys.argv[1:] and os.environ.get("GLIBC_TUNABLES") != KEEP_TUNABLES
if __name__ == "__main__" and _RESTART:
    # glibc reads its tunables when the process starts: start again with them
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "GLIBC_TUNABLES": KEEP_TUNABLES})

PLATFORM = _platform_arg(sys.argv[1:])
if PLATFORM == "cpu":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
                                   ).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

import xfft  # noqa: E402

HERE = Path(__file__).resolve().parent


def bytes_per_point(compiled, n_dev: int, points: int) -> float:
    """Arguments + outputs + temporaries - aliased bytes, summed over devices, per grid point."""
    m = compiled.memory_analysis()
    per_dev = (m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
               - m.alias_size_in_bytes)
    return per_dev * n_dev / points


def memory_budget() -> tuple[int, str]:
    """Total memory of the devices in use (bytes) and where the figure comes from."""
    devs = jax.devices()
    stats = devs[0].memory_stats() if hasattr(devs[0], "memory_stats") else None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]) * len(devs), f"{len(devs)} x {devs[0].device_kind} bytes_limit"
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "host RAM (CPU devices share it)"


def largest_cube(bpp: float, budget: int, multiple: int) -> int:
    """Largest ``n`` (a multiple of ``multiple``) with ``n^3 * bpp <= budget``."""
    n = int((budget / bpp) ** (1 / 3))
    return max(multiple, n - n % multiple)


def hlo_facts(lowered, compiled) -> dict:
    """Transposes that change the minor-most axis (lowered StableHLO), FFT ops, matrix products and all-to-alls
    (compiled HLO)."""
    dims = re.findall(r"stablehlo.transpose %\S+, dims = \[([\d, ]+)\]", lowered.as_text())
    text = compiled.as_text()
    return {"transposes": sum(int(d.split(",")[-1]) != len(d.split(",")) - 1 for d in dims),
            "fft_ops": len(re.findall(r"[\s=]fft\(", text)), "dots": len(re.findall(r"[\s=]dot\(", text)),
            "all_to_alls": len(re.findall(r"[\s=]all-to-all(?:-start)?\(", text))}


def with_transposes(f):
    """``f`` lowered as on accelerators: natural order restored by a transpose after the last FFT op (the
    platform's other lowering choices kept)."""
    from xfft.backends.native import NativeBackend

    options = xfft.LoweringOptions.for_platform(jax.devices()[0].platform)
    backend = NativeBackend(lowering=xfft.LoweringOptions(matrix_dft=False, send_transposed=options.send_transposed))
    return lambda x: f(x, backend=backend)


def page_faults_per_call(c, x, calls: int = 3) -> float | None:
    """Minor page faults of this process per call of ``c`` (after the timed calls; None where the system does not
    count them): memory the host allocator handed back to the system and the call faults in again."""
    try:
        import resource
    except ImportError:
        return None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        c(x).block_until_ready()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def measure_interleaved(cases: list[tuple[str, object, jax.Array]], repeats: int) -> list[dict]:
    """Median wall time of each case, timed round-robin so machine load hits every case alike."""
    compiled, facts = [], {}
    for name, f, x in cases:
        lowered = jax.jit(f).lower(x)
        c = lowered.compile()
        facts[name] = hlo_facts(lowered, c)
        c(x).block_until_ready()  # warm-up
        compiled.append((name, c, x))
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(repeats):
        for name, c, x in compiled:
            t0 = time.perf_counter()
            c(x).block_until_ready()
            times[name].append(time.perf_counter() - t0)
    faults = {name: page_faults_per_call(c, x) for name, c, x in compiled}
    rows = []
    for name, c, x in compiled:
        mem = c.memory_analysis()
        n_dev = len(x.sharding.device_set)
        rows.append({
            "case": name,
            "median_s": statistics.median(times[name]),
            "min_s": min(times[name]),
            "page_faults_per_call": faults[name],
            "temp_bytes_per_device": int(mem.temp_size_in_bytes),
            "temp_over_local_block": mem.temp_size_in_bytes / (x.nbytes // n_dev),
            "bytes_per_point": bytes_per_point(c, n_dev, x.size),
            "devices": n_dev,
            **facts[name],
        })
    return rows


_PEER = r"""
import json, statistics, sys, time
import numpy as np
from mpi4py import MPI
from mpi4py_fft import PFFT, newDistArray
n, decomp, repeats, grid, kind = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
comm = MPI.COMM_WORLD
kw = dict(slab=True) if decomp == "slab" else dict(grid=tuple(int(v) for v in grid.split("x")) + (1,))
dtype = np.float32 if kind == "r2c" else np.complex64
fft = PFFT(comm, (n, n, n), axes=(0, 1, 2), dtype=dtype, backend="fftw", **kw)
u = newDistArray(fft, False)
u[:] = np.random.default_rng(comm.Get_rank()).standard_normal(u.shape)
uh = newDistArray(fft, True)
fft.forward(u, uh)
ts = []
for _ in range(repeats):
    comm.Barrier()
    t0 = time.perf_counter()
    fft.forward(u, uh)
    ts.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
if comm.Get_rank() == 0:
    print("PEER " + json.dumps({"median_s": statistics.median(ts), "min_s": min(ts), "in": list(u.shape),
                                "out": list(uh.shape)}))
"""


def mpi4py_fft_available() -> str | None:
    """Why the mpi4py-fft peer cannot run, or None when it can (Debian's python3-mpi4py-fft + mpirun)."""
    if not shutil.which("mpirun"):
        return "mpirun not found (apt-get install python3-mpi4py-fft)"
    ok = subprocess.run(["/usr/bin/python3", "-c", "import mpi4py_fft"], capture_output=True)
    return None if ok.returncode == 0 else "python3-mpi4py-fft is not installed for /usr/bin/python3"


def peer_rows(n: int, repeats: int, ranks: int, pencil: tuple[int, int]) -> list[dict]:
    """mpi4py-fft (FFTW + MPI) forward at ``n^3`` with ``ranks`` processes: slab and pencil, c2c (complex64) and
    r2c (float32)."""
    out = []
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(_PEER)
    try:
        for dec in ("slab", "pencil"):
            for kind in ("c2c", "r2c"):
                cmd = ["mpirun", "--oversubscribe", "-np", str(ranks)]
                if os.geteuid() == 0:
                    cmd.insert(1, "--allow-run-as-root")
                cmd += ["/usr/bin/python3", f.name, str(n), dec, str(repeats), f"{pencil[0]}x{pencil[1]}", kind]
                env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_"))}
                env["OMP_NUM_THREADS"] = "1"
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
                line = next((ln for ln in res.stdout.splitlines() if ln.startswith("PEER ")), None)
                if line is None:
                    print(f"[fft] mpi4py-fft {dec} {kind} failed: {res.stderr.strip()[-400:]}", file=sys.stderr)
                    continue
                r = json.loads(line[5:])
                out.append({"case": f"mpi4py-fft {dec} {kind}", "median_s": r["median_s"], "min_s": r["min_s"],
                            "devices": ranks, "local_in": r["in"], "local_out": r["out"]})
    finally:
        os.unlink(f.name)
    return out


def run_size(n: int, repeats: int, peer: bool, backends: bool) -> list[dict]:
    shape = (n, n, n)
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    c = a.astype(np.complex64)
    slab = xfft.make_mesh("slab")
    pencil = xfft.make_mesh("pencil")
    one = jax.device_put(c, jax.devices()[0])
    rone = jax.device_put(a, jax.devices()[0])
    if jax.device_count() == 1:  # one accelerator: every mesh is that device; keep one copy (1024^3 on a GPU)
        inputs = {("xfft3d", "slab"): one, ("xfft3d", "pencil"): one, ("xrfft3d", "slab"): rone,
                  ("xrfft3d", "pencil"): rone}
    else:
        inputs = {(f, dec): jax.device_put(arr, NamedSharding(m, spec))
                  for f, arr in (("xfft3d", c), ("xrfft3d", a))
                  for dec, m, spec in (("slab", slab, PartitionSpec("x")), ("pencil", pencil, PartitionSpec("x", "y")))}
    del a, c

    def tr(f):
        return lambda x: f(x, order="transposed")

    cases = []
    for (name, dec), x in inputs.items():
        f = getattr(xfft, name)
        cases += [(f"{name} {dec}", f, x), (f"{name} {dec} transposed", tr(f), x)]
        if jax.device_count() > 1:
            cases.append((f"{name} {dec} natural, transposes", with_transposes(f), x))
    cases += [("jnp.fft.fftn 1 device", jnp.fft.fftn, one), ("xfft3d 1 device", xfft.xfft3d, one),
              ("jnp.fft.rfftn 1 device", jnp.fft.rfftn, rone), ("xrfft3d 1 device", xfft.xrfft3d, rone)]
    rows = measure_interleaved(cases, repeats)
    if len(jax.devices()) > 1:
        # XLA's own sharded fftn is 10-20x slower: timed separately with fewer repeats.
        rows += measure_interleaved([("jnp.fft.fftn sharded (XLA)", jnp.fft.fftn, inputs["xfft3d", "slab"])],
                                    max(2, repeats // 4))
    if backends and len(jax.devices()) == 8:
        try:  # optional backend rows (jaxdecomp), when the extra is installed
            sys.path.insert(0, str(HERE))
            import fft_backends

            rows += fft_backends.rows(n, repeats)
        except ImportError as e:
            print(f"[fft] skipping backend comparison: {e}", file=sys.stderr)
    if peer:
        rows += peer_rows(n, repeats, len(jax.devices()), tuple(pencil.axis_sizes))
    for r in rows:
        r["n"] = n
    return rows


def orders_table(by: dict, n: int) -> dict:
    """Per kind and decomposition: natural, transposed, natural with transposes, mpi4py-fft and one device (ms),
    the ratios of natural order to the others, and each xfft case's HLO facts."""
    def ms(case):
        return by[(n, case)]["median_s"] * 1e3 if (n, case) in by else float("nan")

    out = {}
    for f, kind, single in (("xfft3d", "c2c", "jnp.fft.fftn 1 device"), ("xrfft3d", "r2c", "jnp.fft.rfftn 1 device")):
        for dec in ("slab", "pencil"):
            base = f"{f} {dec}"
            t = {"natural": ms(base), "transposed": ms(f"{base} transposed"),
                 "natural_with_transposes": ms(f"{base} natural, transposes"),
                 "mpi4py_fft": ms(f"mpi4py-fft {dec} {kind}"), "one_device": ms(single)}
            out[f"{dec} {kind}"] = {
                "ms": t,
                "natural_over": {k: t["natural"] / v for k, v in t.items() if k != "natural"},
                "hlo": {o: {k: by[(n, c)][k] for k in ("transposes", "fft_ops", "dots", "all_to_alls")}
                        for o, c in (("natural", base), ("transposed", f"{base} transposed"),
                                     ("natural_with_transposes", f"{base} natural, transposes")) if (n, c) in by},
            }
    return out


def uptime() -> str:
    """``uptime``'s line (the load averages), or the load averages alone where the command is missing."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def summarize(rows: list[dict], budget: int) -> dict:
    by = {(r["n"], r["case"]): r for r in rows}
    out = {}
    for n in sorted({r["n"] for r in rows}):
        single = by[(n, "jnp.fft.fftn 1 device")]["median_s"]
        slab = by[(n, "xfft3d slab")]["median_s"]

        def t(case, n=n):
            return by[(n, case)]["median_s"] if (n, case) in by else float("nan")

        s = {
            "xfft3d_slab_over_single_device": slab / single,
            "xfft3d_pencil_over_single_device": t("xfft3d pencil") / single,
            "xrfft3d_over_xfft3d": t("xrfft3d slab") / slab,
            "xla_sharded_over_single_device": t("jnp.fft.fftn sharded (XLA)") / single,
            "xfft3d_slab_temp_over_local_block": by[(n, "xfft3d slab")]["temp_over_local_block"],
            "transposed_over_natural": {f"{f} {dec}": t(f"{f} {dec} transposed") / t(f"{f} {dec}")
                                        for f in ("xfft3d", "xrfft3d") for dec in ("slab", "pencil")},
            "one_device_xfft_over_jnp": {"xfft3d": t("xfft3d 1 device") / single,
                                         "xrfft3d": t("xrfft3d 1 device") / t("jnp.fft.rfftn 1 device")},
            "bytes_per_point": {c: by[(n, c)]["bytes_per_point"] for (m, c) in by
                                if m == n and "bytes_per_point" in by[(n, c)]},
        }
        s["orders"] = orders_table(by, n)
        ndev = len(jax.devices())
        s["largest_cube_that_fits"] = {c: largest_cube(b, budget, 2 * ndev)
                                       for c, b in s["bytes_per_point"].items()}
        out[n] = s
    return out


def plot(rows: list[dict], path: Path, load: str = "") -> None:
    """Left: every case against the grid size. Right: at the largest grid, natural order beside transposed order,
    natural order with transposes, mpi4py-fft and one device, per decomposition and kind (the HLO's transposes that
    change the minor-most axis written over the xfft bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = ["xfft3d slab", "xfft3d slab transposed", "xfft3d slab natural, transposes", "xfft3d pencil",
            "xfft3d pencil transposed", "xfft3d pencil natural, transposes", "xrfft3d slab", "xrfft3d slab transposed",
            "xrfft3d pencil", "xrfft3d pencil transposed", "jnp.fft.fftn 1 device", "jnp.fft.rfftn 1 device",
            "jnp.fft.fftn sharded (XLA)"]
    extra = ["jaxdecomp pfft3d slab (transposed)", "jaxdecomp xfft3d slab (natural, kernel)"]
    extra += sorted({r["case"] for r in rows if r["case"].startswith("mpi4py-fft")})
    present = {r["case"] for r in rows}
    sizes = sorted({r["n"] for r in rows})
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(15, 5.8), gridspec_kw={"width_ratios": [1, 1.1]})
    for i, case in enumerate(c for c in main + extra if c in present):
        pts = [(r["n"], r["median_s"] * 1e3) for r in rows if r["case"] == case]
        style = "o-" if case in main else "s--"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=plt.cm.tab20(i % 20), label=case)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [f"{n}^3" for n in sizes])
    ax.set_xlabel("grid")
    ax.set_ylabel("median time per transform [ms]")
    dev = jax.devices()[0]
    kind = "CPU devices" if dev.platform == "cpu" else dev.device_kind
    ax.set_title(f"3D FFT (r2c: float32 in), complex64, {jax.device_count()} {kind} ({os.cpu_count()} cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    n = sizes[-1]
    by = {(r["n"], r["case"]): r for r in rows}
    table = orders_table(by, n)
    columns = [("natural", "xfft natural"), ("transposed", "xfft transposed"),
               ("natural_with_transposes", "xfft natural, transposes"), ("mpi4py_fft", "mpi4py-fft"),
               ("one_device", "one device (jnp.fft)")]
    width = 0.8 / len(columns)
    for j, (key, label) in enumerate(columns):
        xs = [i + (j - (len(columns) - 1) / 2) * width for i in range(len(table))]
        ys = [v["ms"][key] for v in table.values()]
        bars = bx.bar(xs, ys, width, label=label, color=plt.cm.tab10(j))
        for bar, v in zip(bars, table.values()):
            if key in v["hlo"]:
                bx.annotate(f"T{v['hlo'][key]['transposes']}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            ha="center", va="bottom", fontsize=7)
    bx.set_xticks(range(len(table)), list(table))
    bx.set_ylabel("median time per transform [ms]")
    bx.set_title(f"{n}^3: natural vs transposed order (T: minor-axis transposes in the HLO)" + (
        f"\n{load}" if load else ""), fontsize=9)
    bx.grid(True, axis="y", alpha=0.3)
    bx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux; ``platform.processor()`` elsewhere): times of
    the same code differ between processors of one architecture by up to 2x."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def host_allocator() -> dict:
    """What decides how the host's ``malloc`` hands out and takes back the buffers of each call: a preloaded
    allocator (``LD_PRELOAD``, file names only), glibc's ``MALLOC_*`` settings and ``GLIBC_TUNABLES``
    (``--keep-host-memory``: :data:`KEEP_TUNABLES`), and the C library's version."""
    preload = [Path(p).name for p in re.split(r"[:\s]+", os.environ.get("LD_PRELOAD", "")) if p]
    settings = {k: v for k, v in sorted(os.environ.items()) if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES"}
    libc = " ".join(platform.libc_ver()).strip()
    return {"ld_preload": " ".join(preload) or "none", "settings": settings, "libc": libc or "unknown"}


def _title_line(result: dict) -> str:
    """The date-free part of ``uptime`` before and after the run, and the host allocator, for the plot's title."""
    load, alloc = result.get("load"), result.get("host_allocator")
    def avg(line):
        return line[line.find("load average"):]
    parts = [f"{avg(load['before'])} (before), {avg(load['after'])} (after)"] if load else []
    if alloc:
        parts.append(f"malloc: {alloc['ld_preload'] if alloc['ld_preload'] != 'none' else alloc['libc']}"
                     + "".join(f", {k}={v}" for k, v in alloc["settings"].items()))
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256])
    p.add_argument("--repeats", type=int, default=0, help="repetitions per case (default: by size)")
    p.add_argument("--keep-host-memory", action="store_true",
                   help="run with GLIBC_TUNABLES set so that glibc keeps freed buffers (the script starts again)")
    p.add_argument("--platform", choices=["cpu", "auto"], default="cpu",
                   help="cpu: 8 virtual CPU devices (default); auto: whatever accelerator JAX finds")
    p.add_argument("--no-peer", action="store_true", help="skip the mpi4py-fft peer column")
    p.add_argument("--no-backends", action="store_true", help="skip the jaxdecomp backend rows")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--tag", default="", help="suffix of the output files, e.g. _tcmalloc")
    p.add_argument("--replot", action="store_true", help="only redraw the PNG from an existing JSON")
    args = p.parse_args(argv)
    if args.keep_host_memory and os.environ.get("GLIBC_TUNABLES") != KEEP_TUNABLES:
        p.error("--keep-host-memory takes effect when the script is started (python benchmarks/fft.py ...); "
                f"from Python, start the process with GLIBC_TUNABLES={KEEP_TUNABLES}")
    dev = jax.devices()[0]
    stem = ("fft" if dev.platform == "cpu" else f"fft_{dev.platform}") + args.tag
    if args.replot:
        saved = json.loads((args.out / f"{stem}.json").read_text())
        plot(saved["rows"], args.out / f"{stem}.png", _title_line(saved))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    peer = not args.no_peer and dev.platform == "cpu"
    if peer and (why := mpi4py_fft_available()):
        print(f"[fft] no mpi4py-fft peer column: {why}", file=sys.stderr)
        peer = False
    budget, budget_from = memory_budget()
    load_before = uptime()
    rows = []
    for n in args.sizes:
        reps = args.repeats or {64: 30, 128: 15}.get(n, 9)
        new = run_size(n, reps, peer, not args.no_backends)
        rows += new
        for r in new:
            ms, bpp = r["median_s"] * 1e3, r.get("bytes_per_point", float("nan"))
            hlo = f"  T{r['transposes']} fft{r['fft_ops']} dot{r['dots']}" if "transposes" in r else ""
            print(f"{n:4d}^3  {r['case']:44s} {ms:9.2f} ms  {bpp:6.1f} B/point{hlo}", flush=True)
    result = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} ({cpu_model()}), {os.cpu_count()} cores, {jax.device_count()} "
                   f"{dev.platform} devices ({dev.device_kind})",
        "load": {"before": load_before, "after": uptime()},
        "host_allocator": host_allocator(),
        "jax": jax.__version__,
        "memory_budget_bytes": budget,
        "memory_budget_from": budget_from,
        "rows": rows,
        "summary": summarize(rows, budget),
    }
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2))
    plot(rows, args.out / f"{stem}.png", _title_line(result))
    print(json.dumps(result["summary"], indent=2))


if __name__ == "__main__":
    main()
