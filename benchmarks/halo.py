"""Halo exchange speed: ``xfft.halo_pad`` and ``xfft.halo_reduce`` against one bare collective permute of the halo.

For each mesh (slab ``(8,)``, pencil ``(2, 4)``) and width, times (medians of round-robin rounds, all in one run):
``halo_pad`` alone, ``halo_reduce`` alone, ``halo_pad`` then ``halo_reduce``, and one ``jax.lax.ppermute`` of a
buffer of exactly the halo cells of one device's padded block (what a halo exchange must move at least), and a
local ``jnp.pad`` of each block with zeros (no exchange: the copy into a new padded block that any out-of-place pad
pays), and the in-place exchange of an already padded array (``xfft.compat.jaxdecomp.halo_exchange`` under a
``jit`` that donates it: the halos written over, no copy of the block; what a code that keeps its fields padded
from step to step pays). The pad+reduce pair moves the halo twice. Writes
``benchmarks/results/halo.json`` with the date, the machine and its load (``uptime`` before and after).

Run: ``python benchmarks/halo.py [--size 256] [--widths 2 3 4] [--repeats 7]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _timing  # (8 CPU devices; imported before jax)
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xfft
import xfft.compat.jaxdecomp as jaxdecomp

OUT = Path(__file__).resolve().parent / "results"


def case(mesh_shape: tuple[int, ...], n: int, width: int, repeats: int) -> dict:
    m = xfft.make_mesh(mesh_shape)
    s = xfft.real_sharding(m, (n, n, n))
    x = jax.device_put(jnp.ones((n, n, n), jnp.float32), s)
    pad = jax.jit(lambda v: xfft.halo_pad(v, width))
    red = jax.jit(lambda v: xfft.halo_reduce(v, width))
    both = jax.jit(lambda v: xfft.halo_reduce(xfft.halo_pad(v, width), width))
    y = pad(x).block_until_ready()
    block = [n // (m.shape[a] if a else 1) for a in tuple(s.spec) + (None,) * (3 - len(tuple(s.spec)))]
    padded = [b + 2 * width * (a is not None) for b, a in zip(block, tuple(s.spec) + (None,) * 3)]
    cells = int(np.prod(padded) - np.prod(block))
    names = tuple(m.axis_names)
    buf = jax.device_put(jnp.ones((cells * m.size,), jnp.float32), NamedSharding(m, P(names)))
    p = m.size
    permute = jax.jit(jax.shard_map(lambda b: jax.lax.ppermute(b, names, [(i, (i + 1) % p) for i in range(p)]),
                                    mesh=m, in_specs=P(names), out_specs=P(names), check_vma=False))
    spec = s.spec
    widths = [(width, width) if a is not None else (0, 0) for a in tuple(spec) + (None,) * (3 - len(tuple(spec)))]
    copy = jax.jit(jax.shard_map(lambda b: jnp.pad(b, widths), mesh=m, in_specs=spec, out_specs=spec,
                                 check_vma=False))
    exchange = jax.jit(lambda v: jaxdecomp.halo_exchange(v, (width, width), (True, True)), donate_argnums=0)
    box = {"y": pad(x)}

    def in_place():
        box["y"] = exchange(box["y"]).block_until_ready()

    cases = {"pad": lambda: pad(x).block_until_ready(), "reduce": lambda: red(y).block_until_ready(),
             "exchange_in_place": in_place,
             "pad+reduce": lambda: both(x).block_until_ready(), "permute": lambda: permute(buf).block_until_ready(),
             "local_pad_no_exchange": lambda: copy(x).block_until_ready()}
    samples = _timing.round_robin_samples(cases, repeats)
    med = {k: float(np.median(v)) for k, v in samples.items()}
    return {
        "mesh": list(mesh_shape), "n": n, "width": width, "dtype": "float32",
        "halo_cells_per_device": cells, "halo_bytes_per_device": 4 * cells,
        "ms": {k: round(1e3 * v, 3) for k, v in med.items()},
        "ratio_pad_reduce_to_one_permute": _timing.paired_ratio(samples["pad+reduce"], samples["permute"]),
        "ratio_pad_to_one_permute": _timing.paired_ratio(samples["pad"], samples["permute"]),
        "ratio_reduce_to_one_permute": _timing.paired_ratio(samples["reduce"], samples["permute"]),
        "ratio_exchange_in_place_to_one_permute": _timing.paired_ratio(samples["exchange_in_place"],
                                                                       samples["permute"]),
        "ratio_pad_to_local_pad": _timing.paired_ratio(samples["pad"], samples["local_pad_no_exchange"]),
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--widths", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=str(OUT / "halo.json"))
    args = ap.parse_args(argv)
    before = _timing.uptime()
    rows = [case(ms, args.size, w, args.repeats) for ms in [(8,), (2, 4)] for w in args.widths]
    result = {
        **_timing.run_info(before),
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for r in rows:
        q = r["ratio_pad_reduce_to_one_permute"]
        e = r["ratio_exchange_in_place_to_one_permute"]
        print(f"mesh {r['mesh']} width {r['width']}: {r['ms']}  pad+reduce / permute = {q['median']:.2f}, "
              f"in-place exchange / permute = {e['median']:.2f}")
    return result


if __name__ == "__main__":
    main()
