"""The cold two-stream instability, electrostatic particle-in-cell, against its dispersion relation.

Two cold electron beams at ``+-v0``, each of half the density (plasma units, ``omega_p = 1`` for the whole
plasma), on a neutralizing background: ``1 = (1/2) / (omega - k v0)^2 + (1/2) / (omega + k v0)^2``, so
``gamma^2 = (sqrt(1 + 8 a^2) - 1 - 2 a^2) / 2`` with ``a = k v0``: unstable for ``a < 1``, fastest at
``a = sqrt(3/8)`` with ``gamma = 1 / (2 sqrt 2) = 0.35355`` (:func:`solvers.particles.two_stream_growth`). The box
holds one wavelength of that mode (its harmonics are stable); a tiny displacement seeds it, and the script fits
the exponential growth of the field's fundamental between two amplitudes, printing measured against theory.
``--ndim 2`` or ``3``: the same beams along axis 0 of a 2D or 3D box a few cells wide across them. Run
``python examples/two_stream.py --help``.
"""

import argparse
import math
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")  # 8 CPU devices unless set

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import solvers  # noqa: E402
import xfft  # noqa: E402
from solvers.particles import Leapfrog, VlasovPoisson, fit_growth_rate, periodic_grid, two_stream_growth  # noqa: E402


class AmplitudeRecorder(solvers.Output):
    """Keeps the time and ``|E_k|`` of the fundamental of every diagnostics row."""

    row_every = 1

    def __init__(self):
        self.t, self.amplitude = [], []

    def on_rows(self, rows):
        self.t += [r.t for r in rows]
        self.amplitude += [r.values["mode_amplitude"] for r in rows]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--particles", type=int, default=8192, help="number of particles, both beams (default 8192)")
    p.add_argument("--cells", type=int, default=64, help="mesh cells (default 64)")
    p.add_argument("--v0", type=float, default=1.0, help="beam speed (default 1)")
    p.add_argument("--ka", type=float, default=math.sqrt(3 / 8), help="k v0 of the box's mode (default sqrt(3/8))")
    p.add_argument("--alpha", type=float, default=1e-6, help="seed density perturbation (default 1e-6)")
    p.add_argument("--dt", type=float, default=0.1, help="time step in 1/omega_p (default 0.1)")
    p.add_argument("--t-end", type=float, default=40.0, help="end time (default 40)")
    p.add_argument("--ndim", type=int, default=1, choices=(1, 2, 3),
                   help="dimensions: the beams along axis 0, --cross-cells cells across (default 1)")
    p.add_argument("--cross-cells", type=int, default=4,
                   help="mesh cells along the other axes of a 2D/3D run (default 4; cells as wide as along axis 0); "
                        "--particles is then per cross-section cell")
    args = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    k = args.ka / args.v0
    mesh = xfft.make_mesh("slab")
    length = 2 * math.pi / k
    cross = args.cross_cells if args.ndim > 1 else 1
    shape = (args.cells,) + (cross,) * (args.ndim - 1)
    box = (length,) + (length * cross / args.cells,) * (args.ndim - 1)
    grid = periodic_grid(shape, box, mesh, dtype=jnp.float64)
    eq = VlasovPoisson(grid, particles=args.particles * cross ** (args.ndim - 1))
    y0 = eq.initial_state("two-stream", alpha=args.alpha, v0=args.v0)
    rec = AmplitudeRecorder()
    sol = solvers.simulate(eq, Leapfrog, t_end=args.t_end, y0=y0, controller=solvers.FixedStep(args.dt),
                           outputs=[rec])
    gamma = fit_growth_rate(rec.t, rec.amplitude, low=1e-4, high=1e-2)
    theory = two_stream_growth(k, args.v0)
    print(f"{eq.particles} particles on {'x'.join(map(str, shape))} cells, {len(mesh.devices.flat)} devices, "
          f"{sol.steps_taken} steps in {sol.wall_s:.1f} s; saturated at |E_k| = {max(rec.amplitude):.3f}")
    print(f"gamma: measured {gamma:.5f}, theory {theory:.5f} ({gamma / theory - 1:+.2%})")
    return gamma


if __name__ == "__main__":
    main()
