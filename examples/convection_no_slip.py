"""Rayleigh-Benard convection between no-slip plates, written from solvers' public parts.

Boussinesq convection in ``0 < z < 1`` (units: depth, thermal diffusion time, temperature difference), periodic
in x, with rigid plates held at fixed temperature (``u = 0``, ``theta = 0`` at ``z = 0, 1``):

    u_t + u.grad u = -grad p + Pr lap u + Ra Pr theta z,   div u = 0,   theta_t + u.grad theta = w + lap theta,

with ``T = 1 - z + theta``. The state is named: ``{"velocity": phi, "theta": theta}``. The implicit part is two
blocks of solvers: ``solvers.NoSlipVelocity`` (the velocity-vorticity form between no-slip walls: Kim, Moin & Moser,
Chebyshev tau with an influence matrix) and ``solvers.Diffusion`` with ``theta = 0`` on both plates (a Chebyshev tau
Helmholtz solve); the equation writes only its nonlinear term (advection and buoyancy, explicit; IMEX). The run
starts from one pair of rolls at the onset wavelength ``Lx = 2 pi / 3.1163`` and prints the steady Nusselt number
``Nu = 1 + <w theta>``. Run ``python examples/convection_no_slip.py --help``.

At the defaults (21 x 24 points, dt 0.01, t = 5) ``Nu`` is converged to 2e-7 in the resolution (33 x 48 points
agree to that) and to round-off in time; it equals the built-in ``solvers.RayleighBenardNoSlip`` to 1e-10.
"""

import argparse
import math

import jax
import jax.numpy as jnp

import solvers

jax.config.update("jax_enable_x64", True)


def rolls(eq, amplitude):
    """Fluid at rest, ``theta = amplitude cos(2 pi x / Lx) sin(pi z)``."""
    g = eq.grid
    z, x = g.coordinates()
    theta = amplitude * jnp.cos(2 * math.pi * x / g.box_length[1]) * jnp.sin(math.pi * z)
    fields = g.dealias(g.forward(jnp.stack([0 * z, 0 * z, theta])))  # (w, u, theta): w first, as axis 0 is z
    return {"velocity": eq.kmm.from_velocity(fields[:2]), "theta": fields[2]}


class Convection(solvers.WallEquation):
    """State: ``{"velocity": phi, "theta": theta}`` spectra, ``phi = lap w`` (stacked on a leading axis of 1)."""

    parameters = (solvers.Param("Ra", 5000.0, "Rayleigh number", low=0, low_open=True),
                  solvers.Param("Pr", 1.0, "Prandtl number", low=0, low_open=True))
    initial_conditions = {"rolls": solvers.InitialCondition(rolls, (solvers.Param("amplitude", 0.2),))}

    def __init__(self, grid, Ra=5000.0, Pr=1.0):
        super().__init__(grid, Ra=Ra, Pr=Pr)
        self.kmm = solvers.WallVelocity(grid)  # the velocity's fields between no-slip walls at both ends of axis 0

    def implicit_parts(self):  # (I - h L) y = rhs, one block per field: viscosity Pr, diffusivity 1 (theta = 0)
        return {"velocity": solvers.NoSlipVelocity(self.Pr),
                "theta": solvers.Diffusion(1.0, bc=(solvers.Dirichlet(0.0), solvers.Dirichlet(0.0)))}

    def nonlinear(self, s, t):
        g, kmm = self.grid, self.kmm
        u, _ = kmm.velocity(s["velocity"])  # spectral (w, u)
        p = g.to_physical(jnp.concatenate([u, kmm.vorticity(u, s["velocity"])[None], s["theta"][None]]))
        up, vort, theta = p[:2], p[2], p[3]
        lamb = kmm.lamb(up, vort).at[0].add(self.Ra * self.Pr * theta)  # u x omega + buoyancy along z
        c = g.from_physical(jnp.concatenate([lamb, up * theta, up[:1]]))  # and the flux u theta, and w
        return {"velocity": kmm.tendency(c[:2]), "theta": c[4] - kmm.divergence(c[2:4])}

    def nusselt(self, s):
        w = self.kmm.velocity(s["velocity"])[0][0]
        return 1 + self.grid.inner(w, s["theta"])

    def diagnostics(self, s, t, dt):
        return {"energy": 0.5 * self.grid.mean_square(self.kmm.velocity(s["velocity"])[0]),
                "nusselt": self.nusselt(s)}

    def physical_fields(self, s):
        """The temperature ``T = 1 - z + theta`` on the grid's points (what snapshots and the gallery draw)."""
        z, _ = self.grid.coordinates()
        return {"T": 1 - z + self.grid.backward(s["theta"])}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nz", type=int, default=21, help="Chebyshev points between the plates")
    p.add_argument("--nx", type=int, default=24, help="Fourier points along x (even)")
    p.add_argument("--dt", type=float, default=0.01, help="time step")
    p.add_argument("--t-end", type=float, default=5.0, help="final time (thermal diffusion times)")
    p.add_argument("--ra", type=float, default=5000.0, help="Rayleigh number")
    args = p.parse_args(argv)
    grid = solvers.wall_grid((args.nz, args.nx), walls=(0.0, 1.0), lengths=(2 * math.pi / 3.1163,),
                             dtype=jnp.float64, axis_names=("z", "x"))
    eq = Convection(grid, Ra=args.ra, Pr=1.0)
    sol = solvers.simulate(eq, "imex", t_end=args.t_end, controller=solvers.FixedStep(args.dt))
    nu = float(jax.jit(eq.nusselt)(sol.state))
    print(f"Nu = {nu:.12f}")
    return nu


if __name__ == "__main__":
    main()
