"""Landau damping of a Langmuir wave, electrostatic particle-in-cell, against linear theory.

A Maxwellian plasma (plasma units: ``omega_p = 1``, ``lambda_D = 1``) in a periodic box of length ``4 pi`` with a
density perturbation ``1 + alpha cos(k x)`` at ``k lambda_D = 0.5``. The electric field's Fourier mode oscillates
at ``omega`` and decays at ``gamma``: the least-damped root of ``1 + (1 + zeta Z(zeta)) / k^2 = 0``,
``1.4157 - 0.1534i`` (:func:`solvers.particles.landau_root`). The particles (a weighted multi-beam quiet start,
sharded over every device) and the mesh (sharded too) advance with the kick-drift-kick leapfrog through
:func:`solvers.simulate`; a small output records the mode every step and the script fits
``A exp(gamma t) cos(omega t + phi)`` to it, printing measured against theory. ``--ndim 2`` or ``3``: the same
wave along axis 0 of a 2D or 3D box a few cells wide across it (the particles' transverse positions a Halton
sequence; the rates are the 1D ones). ``--plot FILE``: the field's mode against the theory's envelope, and the
phase space at the end. Run ``python examples/landau_damping.py --help``.
"""

import argparse
import math
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")  # 8 CPU devices unless set

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import solvers  # noqa: E402
import xfft  # noqa: E402
from solvers.particles import (  # noqa: E402
    Leapfrog,
    VlasovPoisson,
    fit_damped_oscillation,
    landau_root,
    periodic_grid,
    plot_phase_space,
)


class ModeRecorder(solvers.Output):
    """Keeps the time and the electric field's fundamental (``E_k``, complex) of every diagnostics row."""

    row_every = 1

    def __init__(self):
        self.t, self.mode = [], []

    def on_rows(self, rows):
        self.t += [r.t for r in rows]
        self.mode += [complex(r.values["mode_re"], r.values["mode_im"]) for r in rows]


def plot(path, t, mode, theory, state, box):
    """``|E_k|`` against ``|E_k(0)| exp(gamma t)`` of the theory, and the phase space along axis 0 at the end
    (coloured by the quiet start's weights); saved to ``path``, returned."""
    import matplotlib.pyplot as plt
    import numpy as np

    t, amplitude = np.asarray(t), np.abs(mode)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    a1.semilogy(t, amplitude, label=r"$|E_k|$ (run)")
    a1.semilogy(t, amplitude[0] * np.exp(theory.imag * t), "k--",
                label=rf"$\propto e^{{\gamma t}}$, theory $\gamma$ = {theory.imag:.4f}")
    a1.set(xlabel=r"$t\,\omega_p$", ylabel=r"$|E_k|$ of the fundamental", title="Landau damping")
    a1.legend(fontsize=8)
    x, v = np.asarray(state.positions)[:, 0], np.asarray(state.velocities)[:, 0]
    plot_phase_space(a2, x, v, np.asarray(state.weights), box=box, xlabel=r"$x / \lambda_D$",
                     ylabel=r"$v / v_{th}$", title=f"phase space at t = {t[-1]:g}")
    fig.savefig(path, dpi=110)
    return fig


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--particles", type=int, default=16384, help="number of particles (default 16384)")
    p.add_argument("--cells", type=int, default=64, help="mesh cells (default 64)")
    p.add_argument("--beams", type=int, default=256, help="velocity groups of the quiet start (default 256)")
    p.add_argument("--alpha", type=float, default=0.01, help="density perturbation (default 0.01)")
    p.add_argument("--kernel", default="tsc", choices=("ngp", "cic", "tsc"), help="paint/readout kernel")
    p.add_argument("--dt", type=float, default=0.2, help="time step in 1/omega_p (default 0.2)")
    p.add_argument("--t-end", type=float, default=24.0, help="end time (default 24)")
    p.add_argument("--ndim", type=int, default=1, choices=(1, 2, 3),
                   help="dimensions: the wave along axis 0, --cross-cells cells across it (default 1)")
    p.add_argument("--cross-cells", type=int, default=4,
                   help="mesh cells along the other axes of a 2D/3D run (default 4; the box as wide as a cell along "
                        "axis 0 times this); --particles is then per cross-section cell")
    p.add_argument("--fit-from", type=float, default=4.0, help="start of the fitted window (default 4)")
    p.add_argument("--plot", metavar="FILE", help="save a figure: the mode against theory, the phase space")
    args = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    k = 0.5
    mesh = xfft.make_mesh("slab")
    length = 2 * math.pi / k
    cross = args.cross_cells if args.ndim > 1 else 1
    shape = (args.cells,) + (cross,) * (args.ndim - 1)
    box = (length,) + (length * cross / args.cells,) * (args.ndim - 1)
    grid = periodic_grid(shape, box, mesh, dtype=jnp.float64)
    eq = VlasovPoisson(grid, particles=args.particles * cross ** (args.ndim - 1), kernel=args.kernel)
    y0 = eq.initial_state("landau", alpha=args.alpha, beams=args.beams)
    rec = ModeRecorder()
    sol = solvers.simulate(eq, Leapfrog, t_end=args.t_end, y0=y0, controller=solvers.FixedStep(args.dt),
                           outputs=[rec])
    try:
        omega, gamma = fit_damped_oscillation(rec.t, [m.imag for m in rec.mode], t_min=args.fit_from)
    except ValueError as e:  # a window too short to hold the oscillation
        p.error(f"--fit-from {args.fit_from:g} to --t-end {args.t_end:g}: {e}; set a later --t-end")
    theory = landau_root(k)
    print(f"{eq.particles} particles on {'x'.join(map(str, shape))} cells, {len(mesh.devices.flat)} devices, "
          f"{sol.steps_taken} steps in {sol.wall_s:.1f} s")
    print(f"omega: measured {omega:.4f}, theory {theory.real:.4f} ({omega / theory.real - 1:+.2%})")
    print(f"gamma: measured {gamma:.4f}, theory {theory.imag:.4f} ({gamma / theory.imag - 1:+.2%})")
    if args.plot:
        plot(args.plot, rec.t, rec.mode, theory, sol.state, length)
    return omega, gamma


if __name__ == "__main__":
    main()
