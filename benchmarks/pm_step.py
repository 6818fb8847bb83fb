"""A particle-mesh step on xfft beside the same step written on jaxDecomp (its JAX backend), in one run.

The step (float32, one particle per cell on a Lagrangian grid, displaced by up to ``--displacement`` cells): a
kick-drift-kick with one force evaluation per step (the force of the drifted positions kicks the second half and,
carried, the first half of the next step), the force being paint (CIC) -> r2c -> ``i k / -k^2`` per axis -> c2r ->
readout at the particles. Two implementations:

- ``xfft``: :func:`xfft.paint` (particles sent to the device owning their cells, edge cells added into the
  neighbours by :func:`xfft.halo_reduce`), :func:`xfft.xrfftn` / :func:`xfft.ixrfftn` (half spectrum, natural
  order), one :func:`xfft.readout` of the three gradient components stacked on a trailing axis (one stencil and
  one exchange for all three); ``xfft-halo``: the same through halos (``halo=``: no particle moves);
- ``jaxdecomp``: what JaxPM's ``jaxpm/distributed.py`` does: every device paints its own (Lagrangian) particles
  into its block padded by ``halo`` cells, ``jaxdecomp.halo_exchange`` of half the halo and the received cells
  added into the interior, ``jaxdecomp.fft.pfft3d`` / ``pifft3d`` of the complex field (jaxDecomp has no r2c), and
  the readout from blocks padded and filled by ``halo_exchange``. Particles must stay within ``halo / 2`` cells of
  their block (JaxPM's limit); xfft's paint has no such limit.

Both steps are checked against each other (the forces at the particles, relative to their largest value) before
they are timed (round-robin medians); bytes per particle from ``memory_analysis()`` of each compiled step (one
particle per cell). Writes ``benchmarks/results/pm_step.json`` with the date, machine and load.

Run: ``python benchmarks/pm_step.py [--n 128] [--mesh 2 4] [--repeats 5] [--halo 4]``.
"""

from __future__ import annotations

import argparse
import json
import math
from functools import partial
from pathlib import Path

import _timing  # (8 CPU devices; imported before jax)
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import xfft

OUT = Path(__file__).resolve().parent / "results"
NYQUIST = math.pi * (1 - 1e-6)  # the Nyquist wavenumber of unit cells (less a margin for rounding)
DT = 0.1  # the step's dt in units where the force is grad(laplacian^-1 delta) on a mesh of unit cells


# ----- xfft ---------------------------------------------------------------------------------------------------
def xfft_force(x: jax.Array, n: int, halo: int | None = None) -> jax.Array:
    """``grad(laplacian^-1 (rho - 1))`` at the particles ``x`` (``(n, n, n, 3)`` in cell units), via xfft;
    ``halo``: paint and read through halos (no particle moves) instead of sending particles to their owners."""
    rho = xfft.paint(x, (n, n, n), halo=halo)
    rk = xfft.xrfftn(rho)
    spec = xfft.spectral_sharding(xfft.real_sharding(jax.typeof(x).sharding.mesh, (n, n, n)), (n, n, n), real=True)
    k = xfft.wavenumbers(spec, (n, n, n), real=True, box_length=float(n), dtype=jnp.float32)
    k2 = sum(ki * ki for ki in k)
    phi = rk * jnp.where(k2 > 0, -1 / jnp.where(k2 > 0, k2, 1), 0)
    g = []
    for ki in k:  # (the Nyquist planes' derivative taken as zero, so that each component is real)
        kd = jnp.where(jnp.abs(ki) >= NYQUIST, 0, ki)
        g.append(xfft.ixrfftn(jax.lax.complex(jnp.zeros_like(kd), kd) * phi, s=(n, n, n)))
    return xfft.readout(jnp.stack(g, -1), x, halo=halo)  # the three components at once: one stencil (and exchange)


# ----- jaxDecomp, as JaxPM writes it ----------------------------------------------------------------------------
def _cic_weights(rel: jax.Array):
    """The 8 CIC corners of ``rel`` (``(m, 3)``, cell units): their integer offsets and weights."""
    i0 = jnp.floor(rel)
    f = rel - i0
    i0 = i0.astype(jnp.int32)
    for c in np.ndindex(2, 2, 2):
        w = jnp.prod(jnp.where(np.array(c, bool), f, 1 - f), axis=-1)
        yield i0 + jnp.asarray(c, jnp.int32), w


def _local(xl: jax.Array, bx: int, by: int, h: int, n: int) -> jax.Array:
    """Positions ``(m, 3)`` relative to this device's padded block (its corner at ``-h`` cells), taken modulo the
    box to the image nearest the block (JaxPM keeps displacements unwrapped instead)."""
    ix, iy = jax.lax.axis_index("x"), jax.lax.axis_index("y")
    rel = xl.reshape(-1, 3) - jnp.stack([ix * bx, iy * by, jnp.zeros_like(ix)]).astype(xl.dtype)
    rel = (rel + n / 2) % n - n / 2
    return rel + jnp.asarray([h, h, 0], xl.dtype)


def jd_paint(x: jax.Array, mesh, n: int, h: int) -> jax.Array:
    import jaxdecomp as jd

    px, py = mesh.shape["x"], mesh.shape["y"]
    bx, by = n // px, n // py

    def local(xl):
        rel = _local(xl, bx, by, h, n)
        field = jnp.zeros((bx + 2 * h, by + 2 * h, n), jnp.float32)
        for idx, w in _cic_weights(rel):
            field = field.at[idx[:, 0], idx[:, 1], idx[:, 2] % n].add(w, mode="drop")
        return field

    padded = jax.shard_map(local, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))(x)
    padded = jd.halo_exchange(padded, halo_extents=(h // 2, h // 2), halo_periods=(True, True))

    def unpad(f):  # the cells received in the outer half-halo belong to the interior's first/last h/2 cells
        e = h // 2
        f = f.at[h:h + e].add(f[:e]).at[-(h + e):-h].add(f[-e:])
        f = f.at[:, h:h + e].add(f[:, :e]).at[:, -(h + e):-h].add(f[:, -e:])
        return f[h:-h, h:-h]

    return jax.shard_map(unpad, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))(padded)


def jd_readout(field: jax.Array, x: jax.Array, mesh, n: int, h: int) -> jax.Array:
    import jaxdecomp as jd

    px, py = mesh.shape["x"], mesh.shape["y"]
    bx, by = n // px, n // py
    pad = jax.shard_map(lambda f: jnp.pad(f, ((h, h), (h, h), (0, 0))), mesh=mesh, in_specs=P("x", "y"),
                        out_specs=P("x", "y"))(field)
    pad = jd.halo_exchange(pad, halo_extents=(h, h), halo_periods=(True, True))

    def local(f, xl):
        rel = _local(xl, bx, by, h, n)
        v = sum(w * f[idx[:, 0], idx[:, 1], idx[:, 2] % n] for idx, w in _cic_weights(rel))
        return v.reshape(xl.shape[:-1])

    return jax.shard_map(local, mesh=mesh, in_specs=(P("x", "y"), P("x", "y")), out_specs=P("x", "y"))(pad, x)


def jd_force(x: jax.Array, mesh, n: int, h: int) -> jax.Array:
    import jaxdecomp as jd

    rho = jd_paint(x, mesh, n, h)
    rk = jd.fft.pfft3d(rho.astype(jnp.complex64))
    k = [ki.astype(jnp.float32) for ki in jd.fftfreq3d(rk)]
    k2 = sum(ki * ki for ki in k)
    phi = rk * jnp.where(k2 > 0, -1 / jnp.where(k2 > 0, k2, 1), 0)
    out = []
    for ki in k:  # (the Nyquist plane's derivative taken as zero, as the r2c step does)
        kd = jnp.where(jnp.abs(ki) >= NYQUIST, 0, ki)
        g = jd.fft.pifft3d(1j * kd * phi).real.astype(jnp.float32)
        out.append(jd_readout(g, x, mesh, n, h))
    return jnp.stack(out, -1)


# ----- the step -------------------------------------------------------------------------------------------------
def kdk(force, x, v, f):
    """Kick (half, with the carried force) - drift - force - kick (half); returns the new ``(x, v, f)``."""
    v = v + 0.5 * DT * f
    x = x + DT * v
    f = force(x)
    return x, v + 0.5 * DT * f, f


def bytes_per_particle(fn, args, particles: int) -> float | None:
    try:
        m = fn.lower(*args).compile().memory_analysis()
    except Exception:  # noqa: BLE001 (a backend without it)
        return None
    if m is None:
        return None
    total = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
    return total * jax.device_count() / particles


def run(n: int, mesh_shape: tuple[int, int], repeats: int, halo: int, displacement: float) -> dict:
    mesh = jax.make_mesh(mesh_shape, ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    s = NamedSharding(mesh, P("x", "y"))
    rng = np.random.default_rng(0)
    q = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float32)] * 3, indexing="ij"), -1)
    x0 = jax.device_put((q + displacement * (2 * rng.random(q.shape, np.float32) - 1)) % n, s)
    v0 = jax.device_put(np.zeros_like(q), s)
    forces = {"xfft": partial(xfft_force, n=n), "xfft-halo": partial(xfft_force, n=n, halo=halo),
              "jaxdecomp": partial(jd_force, mesh=mesh, n=n, h=halo)}
    with jax.set_mesh(mesh):
        f0 = {k: jax.jit(f)(x0) for k, f in forces.items()}
        scale = float(jnp.max(jnp.abs(f0["jaxdecomp"])))
        err = {k: float(jnp.max(jnp.abs(f0[k] - f0["jaxdecomp"]))) / scale for k in ("xfft", "xfft-halo")}
        steps = {k: jax.jit(partial(kdk, f), donate_argnums=(0, 1, 2)) for k, f in forces.items()}
        bpp = {k: bytes_per_particle(steps[k], (x0, v0, f0[k]), n ** 3) for k in forces}
        state = {k: (x0 + 0, v0 + 0, f0[k]) for k in forces}

        def go(name):
            def call():
                state[name] = steps[name](*state[name])
                jax.block_until_ready(state[name])
            return call

        samples = _timing.round_robin_samples({k: go(k) for k in forces}, repeats)
    med = {k: float(np.median(v)) for k, v in samples.items()}
    return {"n": n, "particles": n ** 3, "mesh": list(mesh_shape), "dtype": "float32", "halo": halo,
            "displacement_cells": displacement, "force_relative_difference_to_jaxdecomp": err,
            "ms_per_step": {k: round(1e3 * v, 2) for k, v in med.items()},
            "ratio_to_jaxdecomp": {k: _timing.paired_ratio(samples[k], samples["jaxdecomp"])
                                   for k in ("xfft", "xfft-halo")},
            "bytes_per_particle": bpp}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128, help="particles per side and mesh cells per side")
    ap.add_argument("--mesh", type=int, nargs=2, default=[2, 4], help="the device mesh (px, py)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--halo", type=int, default=4, help="jaxDecomp's padding per block edge (even)")
    ap.add_argument("--displacement", type=float, default=0.5, help="largest initial displacement (cells)")
    ap.add_argument("--out", default=str(OUT / "pm_step.json"))
    args = ap.parse_args(argv)
    if args.halo < 2 or args.halo % 2:
        ap.error("--halo must be an even number >= 2")
    before = _timing.uptime()
    row = run(args.n, tuple(args.mesh), args.repeats, args.halo, args.displacement)
    result = {
        **_timing.run_info(before),
        "jaxdecomp": __import__("jaxdecomp").__version__,
        "rows": [row],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    ratios = ", ".join(f"{k} {r['median']:.2f} [{r['q1']:.2f}, {r['q3']:.2f}]"
                       for k, r in row["ratio_to_jaxdecomp"].items())
    print(f"{args.n}^3 on {args.mesh}: {row['ms_per_step']} ms/step; / jaxdecomp: {ratios}; bytes/particle "
          f"{row['bytes_per_particle']}; forces differ by {row['force_relative_difference_to_jaxdecomp']}")
    return result


if __name__ == "__main__":
    main()
