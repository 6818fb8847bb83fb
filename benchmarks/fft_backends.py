"""Benchmark: native xfft3d vs jaxDecomp's pfft3d (its transposed output, and translated to natural order).

All cases run on the same Auto mesh and input in one process, timed in interleaved rounds (one call of every
case per round, median over rounds) so that load from other processes hits every case alike. Cases per
decomposition (pencil mesh (2, 4) with ``P('x', 'y')``, slab mesh (8, 1) with ``P('x')``, and optionally
``slab-1d``: mesh (8,), where ``pfft3d`` cannot run and the backend calls jaxDecomp's slab kernel itself):

- ``native xfft3d <dec>``: ``xfft.xfft3d(x, backend="native")``, natural order;
- ``jaxdecomp pfft3d <dec> (transposed)``: ``jaxdecomp.pfft3d(x)``, output axes ``(Y, Z, X)``;
- ``jaxdecomp xfft3d <dec> (natural, <engine>)``: ``xfft.xfft3d`` through the jaxdecomp backend with engine
  ``kernel`` (the default) or ``pfft3d``: the same transform with xfft's layouts (for ``pfft3d`` the difference
  to the transposed case is the cost of the translation).

Use from ``benchmarks/fft.py`` (``rows(n, repeats)``) or alone: ``python benchmarks/fft_backends.py --sizes 64
128``. Raises ImportError when jaxdecomp is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

ENGINES = ("kernel", "pfft3d")
DECOMPOSITIONS = {"pencil": ((2, 4), ("x", "y")), "slab": ((8, 1), ("x",)), "slab-1d": ((8,), ("x",))}


def _setup_devices(count: int = 8) -> None:
    """Ask for ``count`` virtual CPU devices (effective only before JAX initializes its backends)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    flag = f"--xla_force_host_platform_device_count={count}"
    if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


def cases(n: int, decomposition: str = "pencil") -> tuple[dict, object]:
    """The compiled functions to compare at ``n^3`` (complex64) and their common input array."""
    import jax
    import jaxdecomp
    from jax.sharding import NamedSharding, PartitionSpec

    import xfft
    from xfft.backends.jaxdecomp import JaxDecompBackend

    if "jaxdecomp" not in xfft.available_backends():
        raise ImportError('jaxdecomp is not installed: pip install "xfft[jaxdecomp]"')
    mesh_shape, spec = DECOMPOSITIONS[decomposition]
    mesh = xfft.make_mesh(mesh_shape, axis_types="auto")
    a = np.random.default_rng(0).standard_normal((n, n, n)).astype(np.complex64)
    x = jax.device_put(a, NamedSharding(mesh, PartitionSpec(*spec)))
    fns = {f"native xfft3d {decomposition}": lambda v: xfft.xfft3d(v, backend="native")}
    if len(mesh_shape) == 2:  # jaxdecomp.pfft3d needs a 2D mesh
        fns[f"jaxdecomp pfft3d {decomposition} (transposed)"] = jaxdecomp.pfft3d
    for engine in ENGINES if len(mesh_shape) == 2 else ENGINES[:1]:  # one-axis meshes always use the kernel
        backend = JaxDecompBackend(engine=engine)
        fns[f"jaxdecomp xfft3d {decomposition} (natural, {engine})"] = (
            lambda v, b=backend: xfft.xfft3d(v, backend=b))
    return {name: jax.jit(f).lower(x).compile() for name, f in fns.items()}, x


def median_times(compiled: dict, x, repeats: int) -> dict[str, float]:
    """Median wall time (s) per case over ``repeats`` interleaved rounds, after one warm-up call each."""
    for fn in compiled.values():
        fn(x).block_until_ready()
    times: dict[str, list[float]] = {name: [] for name in compiled}
    for _ in range(repeats):
        for name, fn in compiled.items():
            t0 = time.perf_counter()
            fn(x).block_until_ready()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def rows(n: int, repeats: int, decompositions: tuple[str, ...] = ("pencil", "slab")) -> list[dict]:
    """Benchmark rows at ``n^3`` in ``benchmarks/fft.py``'s format (``case``, ``median_s``, memory, ``devices``)
    plus, on the jaxdecomp rows, ``native_over_this`` (< 1: native is faster) and on the natural rows
    ``translation_s`` / ``translation_fraction`` (natural minus transposed time)."""
    out = []
    for dec in decompositions:
        compiled, x = cases(n, dec)
        med = median_times(compiled, x, repeats)
        n_dev = len(x.sharding.device_set)
        local = x.nbytes // n_dev
        native = med[f"native xfft3d {dec}"]
        transposed = med.get(f"jaxdecomp pfft3d {dec} (transposed)")
        for name, fn in compiled.items():
            temp = int(fn.memory_analysis().temp_size_in_bytes)
            row = {"case": name, "n": n, "median_s": med[name], "temp_bytes_per_device": temp,
                   "temp_over_local_block": temp / local, "devices": n_dev, "mesh": "auto",
                   "decomposition": dec}
            if name.startswith("jaxdecomp"):
                row["native_over_this"] = native / med[name]
            if "(natural" in name and transposed is not None:
                row["translation_s"] = med[name] - transposed
                row["translation_fraction"] = (med[name] - transposed) / transposed
            out.append(row)
    return out


def main(sizes: tuple[int, ...] = (64, 128, 256), repeats: int = 0,
         decompositions: tuple[str, ...] = ("pencil", "slab")) -> list[dict]:
    """Run :func:`rows` for every size (repeats by size unless given), print a table and return the rows."""
    _setup_devices()
    out = []
    for n in sizes:
        reps = repeats or {64: 20, 128: 10}.get(n, 5)
        for r in rows(n, reps, decompositions):
            out.append(r)
            extra = ""
            if "native_over_this" in r:
                extra += f"  native/this {r['native_over_this']:.2f}"
            if "translation_s" in r:
                extra += f"  translation {r['translation_s'] * 1e3:+.2f} ms ({r['translation_fraction']:+.1%})"
            print(f"{n:4d}^3  {r['case']:46s} {r['median_s'] * 1e3:9.2f} ms{extra}", flush=True)
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256])
    p.add_argument("--repeats", type=int, default=0)
    p.add_argument("--decompositions", nargs="+", default=["pencil", "slab"], choices=list(DECOMPOSITIONS))
    p.add_argument("--json", help="also write the rows to this file")
    args = p.parse_args()
    result = main(tuple(args.sizes), args.repeats, tuple(args.decompositions))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
