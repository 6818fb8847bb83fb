"""Halo exchange speed: ``xfft.halo_pad`` and ``xfft.halo_reduce`` against one bare collective permute of the halo.

For each mesh (slab ``(8,)``, pencil ``(2, 4)``) and width, times (medians of round-robin rounds, all in one run):
``halo_pad`` alone, ``halo_reduce`` alone, ``halo_pad`` then ``halo_reduce``, and one ``jax.lax.ppermute`` of a
buffer of exactly the halo cells of one device's padded block (what a halo exchange must move at least), and a
local ``jnp.pad`` of each block with zeros (no exchange: the copy into a new padded block that any out-of-place pad
pays), and the in-place exchange of an already padded array (``xfft.compat.jaxdecomp.halo_exchange`` under a
``jit`` that donates it: the halos written over, no copy of the block; what a code that keeps its fields padded
from step to step pays), and that exchange taken apart: its collective permutes alone, on buffers of its strips'
shapes (as many collectives as it makes: one per direction of each sharded axis, one for both on an axis of two
devices), and its local work alone (each strip cut and written over a halo, nothing sent). The pad+reduce pair
moves the halo twice. Writes
``benchmarks/results/halo.json`` with the date, the machine and its load (``uptime`` before and after).

Run: ``python benchmarks/halo.py [--size 256] [--widths 2 3 4] [--repeats 41]``.
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
    strips_permute, strips = exchange_permutes(m, spec, padded, width)
    widths = [(width, width) if a is not None else (0, 0) for a in tuple(spec) + (None,) * (3 - len(tuple(spec)))]
    copy = jax.jit(jax.shard_map(lambda b: jnp.pad(b, widths), mesh=m, in_specs=spec, out_specs=spec,
                                 check_vma=False))
    exchange = jax.jit(lambda v: jaxdecomp.halo_exchange(v, (width, width), (True, True)), donate_argnums=0)
    local = jax.jit(jax.shard_map(lambda b: local_strips(b, spec, width), mesh=m, in_specs=spec, out_specs=spec,
                                  check_vma=False), donate_argnums=0)
    box = {"y": pad(x), "local": pad(x)}

    def in_place():
        box["y"] = exchange(box["y"]).block_until_ready()

    def local_only():
        box["local"] = local(box["local"]).block_until_ready()

    cases = {"pad": lambda: pad(x).block_until_ready(), "reduce": lambda: red(y).block_until_ready(),
             "exchange_in_place": in_place,
             "pad+reduce": lambda: both(x).block_until_ready(), "permute": lambda: permute(buf).block_until_ready(),
             "exchange_permutes_alone": lambda: jax.block_until_ready(strips_permute(strips)),
             "exchange_local_work_alone": local_only,
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
        "exchange_collectives": len(strips),
        "ratio_exchange_in_place_to_its_permutes_alone": _timing.paired_ratio(samples["exchange_in_place"],
                                                                              samples["exchange_permutes_alone"]),
        "ratio_exchange_in_place_to_its_permutes_plus_local_work": _timing.paired_ratio(
            samples["exchange_in_place"],
            [a + b for a, b in zip(samples["exchange_permutes_alone"], samples["exchange_local_work_alone"])]),
        "ratio_pad_to_local_pad": _timing.paired_ratio(samples["pad"], samples["local_pad_no_exchange"]),
    }


def local_strips(b: jax.Array, spec, width: int) -> jax.Array:
    """The in-place exchange's local work alone, on a padded block: each strip cut and written over a halo of the
    same block in turn (what the exchange does around its permutes, minus the sending)."""
    spec = tuple(spec) + (None,) * (b.ndim - len(tuple(spec)))
    for ax, a in enumerate(spec):
        if a is None:
            continue
        n = b.shape[ax] - 2 * width
        for src, dst in ((n, 0), (width, width + n)):
            strip = jax.lax.slice_in_dim(b, src, src + width, axis=ax)
            b = jax.lax.dynamic_update_slice_in_dim(b, strip, dst, axis=ax)
    return b


def exchange_permutes(m, spec, padded: list[int], width: int):
    """The collectives of the in-place exchange alone, on buffers of its strips' shapes: along each sharded axis in
    turn, a strip of ``width`` cells of the padded block to each neighbour (one collective per direction; one for
    both where the axis has two devices, which are each other's neighbour both ways). A device receives from two
    neighbours along an axis of more than two, and one collective permute gives each device one source, so no
    exchange needs fewer collectives; the ratio to these is what the exchange's local work (cutting and writing
    the strips) costs on top of its communication."""
    spec = tuple(spec) + (None,) * (len(padded) - len(tuple(spec)))
    send, bufs = [], []
    for ax, a in enumerate(spec):
        if a is None:
            continue
        p = m.shape[a]
        for by in ([+1] if p == 2 else [+1, -1]):
            local = [width * (2 if p == 2 else 1) if i == ax else v for i, v in enumerate(padded)]
            glob = [v * (m.shape[spec[i]] if spec[i] else 1) for i, v in enumerate(local)]
            bufs.append(jax.device_put(jnp.ones(glob, jnp.float32), NamedSharding(m, P(*spec))))
            send.append((a, [(i, (i + by) % p) for i in range(p)]))

    def body(*xs):
        return tuple(jax.lax.ppermute(x, a, pairs) for x, (a, pairs) in zip(xs, send))

    fn = jax.jit(jax.shard_map(body, mesh=m, in_specs=(P(*spec),) * len(bufs), out_specs=(P(*spec),) * len(bufs),
                               check_vma=False))
    return (lambda b: fn(*b)), bufs


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--widths", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--repeats", type=int, default=41)
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
        x = r["ratio_exchange_in_place_to_its_permutes_alone"]
        print(f"mesh {r['mesh']} width {r['width']}: {r['ms']}  pad+reduce / permute = {q['median']:.2f}, "
              f"in-place exchange / permute = {e['median']:.2f}, / its {r['exchange_collectives']} permutes alone "
              f"= {x['median']:.2f}")
    return result


if __name__ == "__main__":
    main()
