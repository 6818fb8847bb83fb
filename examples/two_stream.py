"""The cold two-stream instability, electrostatic particle-in-cell, against its dispersion relation.

Two cold electron beams at ``+-v0``, each of half the density (plasma units, ``omega_p = 1`` for the whole
plasma), on a neutralizing background: ``1 = (1/2) / (omega - k v0)^2 + (1/2) / (omega + k v0)^2``, so
``gamma^2 = (sqrt(1 + 8 a^2) - 1 - 2 a^2) / 2`` with ``a = k v0``: unstable for ``a < 1``, fastest at
``a = sqrt(3/8)`` with ``gamma = 1 / (2 sqrt 2) = 0.35355`` (:func:`solvers.particles.two_stream_growth`). The box
holds one wavelength of that mode (its harmonics are stable); a tiny displacement seeds it, and the script fits
the exponential growth of the field's fundamental between two amplitudes, printing measured against theory.
``--ndim 2`` or ``3``: the same beams along axis 0 of a 2D or 3D box a few cells wide across them. ``--plot
FILE``: the growth against theory and the phase space at the end. Run ``python examples/two_stream.py --help``.
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
    fit_growth_rate,
    periodic_grid,
    plot_phase_space,
    two_stream_growth,
)


class AmplitudeRecorder(solvers.Output):
    """Keeps the time and ``|E_k|`` of the fundamental of every diagnostics row."""

    row_every = 1

    def __init__(self):
        self.t, self.amplitude = [], []

    def on_rows(self, rows):
        self.t += [r.t for r in rows]
        self.amplitude += [r.values["mode_amplitude"] for r in rows]


def saturation(t, amplitude) -> str:
    """Where ``|E_k|`` stops growing (its first local maximum), or that it grows to the end of the run."""
    for i in range(1, len(amplitude) - 1):
        if amplitude[i] > 1e-2 and amplitude[i - 1] <= amplitude[i] >= amplitude[i + 1]:
            return f"|E_k| stops growing at {amplitude[i]:.3f} (t = {t[i]:.1f})"
    return f"|E_k| still growing at the end ({amplitude[-1]:.3g}; run longer to see it saturate)"


def plot(path, t, amplitude, gamma, theory, state, box):
    """``|E_k|`` against ``exp(gamma t)`` of the theory through the fitted window, and the phase space along axis 0
    at the end; saved to ``path``, returned."""
    import matplotlib.pyplot as plt
    import numpy as np

    t, amplitude = np.asarray(t), np.asarray(amplitude)
    i = int(np.argmax(amplitude >= 1e-3))  # the theory's line through the run at |E_k| = 1e-3
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    a1.semilogy(t, amplitude, label=r"$|E_k|$ (run)")
    a1.semilogy(t, amplitude[i] * np.exp(theory * (t - t[i])), "k--",
                label=rf"$\propto e^{{\gamma t}}$, theory $\gamma$ = {theory:.5f} (fit {gamma:.5f})")
    a1.set_ylim(amplitude.min() / 2, 10 * amplitude.max())
    a1.set(xlabel=r"$t\,\omega_p$", ylabel=r"$|E_k|$ of the fundamental", title="two-stream instability")
    a1.legend(fontsize=8)
    x, v = np.asarray(state.positions)[:, 0], np.asarray(state.velocities)[:, 0]
    plot_phase_space(a2, x, v, box=box, xlabel="position $x$ (the box: one wavelength)", ylabel="velocity $v$",
                     title=f"phase space at t = {t[-1]:g}")
    fig.savefig(path, dpi=110)
    return fig


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--particles", type=int, default=8192, help="number of particles, both beams (default 8192)")
    p.add_argument("--cells", type=int, default=64, help="mesh cells (default 64)")
    p.add_argument("--v0", type=float, default=1.0, help="beam speed (default 1)")
    p.add_argument("--ka", type=float, default=math.sqrt(3 / 8), help="k v0 of the box's mode (default sqrt(3/8))")
    p.add_argument("--alpha", type=float, default=1e-6, help="seed density perturbation (default 1e-6)")
    p.add_argument("--dt", type=float, default=0.1, help="time step in 1/omega_p (default 0.1)")
    p.add_argument("--t-end", type=float, default=48.0,
                   help="end time (default 48: past the saturation near t = 43, the phase-space vortex formed)")
    p.add_argument("--ndim", type=int, default=1, choices=(1, 2, 3),
                   help="dimensions: the beams along axis 0, --cross-cells cells across (default 1)")
    p.add_argument("--cross-cells", type=int, default=4,
                   help="mesh cells along the other axes of a 2D/3D run (default 4; cells as wide as along axis 0); "
                        "--particles is then per cross-section cell")
    p.add_argument("--plot", metavar="FILE", help="save a figure: the growth against theory, the phase space")
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
    try:
        gamma = fit_growth_rate(rec.t, rec.amplitude, low=1e-4, high=1e-2)
    except ValueError as e:  # a run too short (or a seed too large) for the fitted window
        p.error(f"--t-end {args.t_end:g}: |E_k| reached {max(rec.amplitude):.3g}, and the fit needs it to grow "
                f"from 1e-4 to 1e-2 ({e}); set a later --t-end (and an --alpha that starts |E_k| below 1e-4)")
    theory = two_stream_growth(k, args.v0)
    print(f"{eq.particles} particles on {'x'.join(map(str, shape))} cells, {len(mesh.devices.flat)} devices, "
          f"{sol.steps_taken} steps in {sol.wall_s:.1f} s; {saturation(rec.t, rec.amplitude)}")
    print(f"gamma: measured {gamma:.5f}, theory {theory:.5f} ({gamma / theory - 1:+.2%})")
    if args.plot:
        plot(args.plot, rec.t, rec.amplitude, gamma, theory, sol.state, length)
    return gamma


if __name__ == "__main__":
    main()
