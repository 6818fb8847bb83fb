"""Multi-process xfft check: slab and pencil ``xfft3d``/``xrfft3d`` against an exact spectrum and numpy.

Run it the same way everywhere; :func:`xfft.distributed.initialize` finds the launcher::

    python -m xfft.launch -n 4 --devices-per-process 2 slurm/xfft_check.py     # laptop / CI
    srun -n 4 python slurm/xfft_check.py                                       # Slurm
    python slurm/xfft_check.py                                                 # one process

The field ``u = 1/4 + cos(2x + y) + 1/2 sin(3z - x)`` on ``[0, 2 pi)^3`` is built block by block on each
process (no global array anywhere), then for both decompositions the script checks

* the spectrum against the exact one (five nonzero modes), with a sharded reduction;
* the spectrum against ``numpy.fft`` of the gathered field (small grids only);
* ``xmeshgrid`` (same field from coordinates) and ``wavenumbers`` (spectral ``du/dx`` against the exact one);

prints one line per check from process 0 and exits non-zero if any error exceeds the tolerance.
``--save FILE.npz`` writes the gathered spectra (process 0) so runs with different process counts can be
compared.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from xfft import distributed as xd

# Modes of u: (wavevector, coefficient) with u = sum Re-pairs; coefficient of exp(i k.x) in u.
MODES = [((0, 0, 0), 0.25), ((2, 1, 0), 0.5), ((-2, -1, 0), 0.5), ((-1, 0, 3), -0.25j), ((1, 0, -3), 0.25j)]


def exact_block(idx: tuple[slice, ...], shape: tuple[int, ...], real: bool, dtype) -> np.ndarray:
    """Block ``idx`` of the exact ``fftn`` (or ``rfftn``) of ``u`` on a grid of ``shape``."""
    n_total = float(np.prod(shape))
    out = np.zeros(tuple(s.stop - s.start for s in idx), dtype)
    for k, c in MODES:
        pos = [kk % n for kk, n in zip(k, shape)]
        if real and pos[2] > shape[2] // 2:
            continue  # not in the half spectrum
        if all(s.start <= p < s.stop for p, s in zip(pos, idx)):
            out[tuple(p - s.start for p, s in zip(pos, idx))] += c * n_total
    return out


def field_block(idx: tuple[slice, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Block ``idx`` of ``u`` on the grid ``x_j = 2 pi j / n`` (what each process computes for itself)."""
    x, y, z = (2 * np.pi * np.arange(s.start, s.stop) / n for s, n in zip(idx, shape))
    x, y, z = x[:, None, None], y[None, :, None], z[None, None, :]
    return 0.25 + np.cos(2 * x + y) + 0.5 * np.sin(3 * z - x)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs=3, default=(16, 16, 16), help="grid shape (default 16 16 16)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    p.add_argument("--decompositions", nargs="+", default=("slab", "pencil"), choices=("slab", "pencil"))
    p.add_argument("--save", help="write the gathered spectra to this .npz file (process 0)")
    p.add_argument("--no-gather", action="store_true", help="skip the numpy comparison (large grids)")
    ns = p.parse_args(argv)

    t0 = time.perf_counter()
    spec = xd.initialize()  # before any other JAX call: Slurm, Open MPI, xfft.launch or one process
    import jax

    if ns.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import xfft

    shape = tuple(ns.n)
    dtype = np.dtype(ns.dtype)
    cdtype = np.result_type(dtype, np.complex64)
    tol = (1e-9 if dtype == np.float64 else 2e-4) * float(np.prod(shape))
    print(f"process {jax.process_index()}/{jax.process_count()} ({spec.method}): "
          f"{jax.local_device_count()} local of {jax.device_count()} devices "
          f"({jax.devices()[0].platform}), local_device_ids={spec.local_device_ids}", flush=True)

    def maxerr(a, b) -> float:
        return float(jnp.max(jnp.abs(a - b)))  # sharded reduction; the scalar is replicated everywhere

    failures, saved = [], {}
    for decomp in ns.decompositions:
        mesh = xfft.make_mesh(decomp)
        rs = xfft.real_sharding(mesh, shape)
        u = xd.global_array(shape, rs, lambda idx: field_block(idx, shape), dtype)
        X, Y, Z = xfft.xmeshgrid(*(2 * np.pi * np.arange(n, dtype=dtype) / n for n in shape), sharding=rs)
        errs = {"xmeshgrid": maxerr(u, 0.25 + jnp.cos(2 * X + Y) + 0.5 * jnp.sin(3 * Z - X))}
        dudx = -2 * jnp.sin(2 * X + Y) - 0.5 * jnp.cos(3 * Z - X)
        ug = None if ns.no_gather else xd.gather(u)
        for name, real in (("xfft3d", False), ("xrfft3d", True)):
            k = xfft.xrfft3d(u) if real else xfft.xfft3d(u)
            ss = xfft.spectral_sharding(rs, shape, real=real)
            exact = xd.global_array(k.shape, ss, lambda idx, real=real: exact_block(idx, shape, real, cdtype), cdtype)
            errs[f"{name} exact"] = maxerr(k, exact)
            kx = xfft.wavenumbers(rs, shape, real=real, dtype=dtype)[0]
            d = xfft.ixrfft3d(1j * kx * k, s=shape) if real else xfft.ixfft3d(1j * kx * k).real
            errs[f"{name} d/dx"] = maxerr(d, dudx)
            if ug is not None:
                kg = xd.gather(k)
                ref = np.fft.rfftn(ug) if real else np.fft.fftn(ug)
                errs[f"{name} numpy"] = float(np.max(np.abs(kg - ref)))
                saved[f"{decomp}_{name}"] = kg
            xd.print0(f"xfft-check {decomp} {name}: mesh {dict(mesh.shape)}, spectrum sharding "
                      f"{k.sharding.spec}, shape {tuple(k.shape)}")
        for what, e in errs.items():
            ok = e <= tol
            xd.print0(f"xfft-check {decomp} {what}: max error {e:.3e} ({'ok' if ok else 'FAIL'}, tol {tol:.1e})")
            if not ok:
                failures.append(f"{decomp} {what}")
    if ns.save and jax.process_index() == 0:
        np.savez(ns.save, **saved)
    if failures:
        raise AssertionError(f"xfft-check failed: {failures}")
    xd.print0(f"xfft-check PASSED: {jax.process_count()} processes x {jax.local_device_count()} devices "
              f"({jax.devices()[0].platform}), grid {shape}, {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
