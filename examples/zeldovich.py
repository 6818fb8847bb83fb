"""The Zel'dovich pancake: a comoving particle-mesh N-body run against the exact solution before shell crossing.

A plane wave in an Einstein-de Sitter universe (``H_0 = 1``, growth ``D(a) = a``): the particle of Lagrangian
coordinate ``q`` moves to ``x = q - a (A / k) sin(k q)`` with canonical momentum ``p = a^(3/2) dx/da``, exactly, until
the first shell crossing at ``a = 1 / A`` (Zel'dovich 1970; the test of Efstathiou et al. 1985). The particles (one
per cell of a ``(n, 8, 8)`` mesh, on the 2 x 4 pencil mesh of 8 devices) start on it at ``a0`` and advance with the
kick-drift-kick leapfrog in the scale factor through :func:`solvers.simulate`; the script prints the largest
position and momentum errors against the exact solution, relative to the largest displacement and momentum. Run
``python examples/zeldovich.py --help``. ``--plot FILE``: the phase space against the exact solution.
"""

import argparse
import math
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")  # 8 CPU devices unless set

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import solvers  # noqa: E402
import xfft  # noqa: E402
from solvers.particles import ComovingNBody, Leapfrog, periodic_grid, zeldovich_plane_wave  # noqa: E402


def plot(path, x, p, a):
    """The particles' momenta against their positions along the wave, and the exact curve (particles of every
    Lagrangian coordinate), the pancake in the middle; saved to ``path``, returned."""
    import matplotlib.pyplot as plt

    qs = np.linspace(-0.5, 0.5, 801)
    xe, pe = zeldovich_plane_wave(qs, a, 1.0, 2 * math.pi)
    fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    ax.plot((x + 0.5) % 1.0 - 0.5, p, ".", ms=3, label="particles")
    ax.plot(xe, pe, "k-", lw=0.8, label="exact (Zel'dovich, until shell crossing at a = 1)")
    ax.set(xlim=(-0.5, 0.5), xlabel="comoving position along the wave (the pancake at 0)",
           ylabel=r"momentum $p = a^{3/2}\,dx/da$", title=f"the Zel'dovich pancake at a = {a:g}")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    return fig


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=64, help="cells (and particles) along the wave (default 64)")
    p.add_argument("--kernel", default="tsc", choices=("ngp", "cic", "tsc"), help="paint/readout kernel")
    p.add_argument("--a0", type=float, default=0.1, help="initial scale factor (default 0.1)")
    p.add_argument("--a-end", type=float, default=0.8, help="final scale factor (default 0.8; crossing at 1)")
    p.add_argument("--da", type=float, default=0.01, help="step in the scale factor (default 0.01)")
    p.add_argument("--plot", metavar="FILE", help="save a figure: the phase space against the exact solution")
    args = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    mesh = xfft.make_mesh("pencil")
    grid = periodic_grid((args.cells, 8, 8), (1.0, 0.25, 0.25), mesh, dtype=jnp.float64)
    eq = ComovingNBody(grid, kernel=args.kernel)
    y0 = eq.initial_state("plane-wave", a0=args.a0, amplitude=1.0)
    sol = solvers.simulate(eq, Leapfrog, t0=args.a0, t_end=args.a_end, y0=y0, controller=solvers.FixedStep(args.da))
    q = np.asarray(y0.positions)[:, 0] - np.asarray(y0.velocities)[:, 0] / math.sqrt(args.a0)
    xe, pe = zeldovich_plane_wave(q, args.a_end, 1.0, 2 * math.pi)
    x, v = np.asarray(sol.state.positions)[:, 0], np.asarray(sol.state.velocities)[:, 0]
    ex = np.max(np.abs((x - xe + 0.5) % 1.0 - 0.5)) / np.max(np.abs(xe - q))
    ep = np.max(np.abs(v - pe)) / np.max(np.abs(pe))
    print(f"{eq.particles} particles, {args.cells} cells along the wave, a = {args.a0:g} -> {args.a_end:g} in "
          f"{sol.steps_taken} steps ({sol.wall_s:.1f} s)")
    print(f"largest position error {ex:.2e} of the largest displacement; momentum error {ep:.2e}")
    if args.plot:
        plot(args.plot, x, v, args.a_end)
    return ex, ep


if __name__ == "__main__":
    main()
