"""Double-diffusive convection (salt fingers) between no-slip plates, from solvers' public parts.

solvers does not ship this equation: it is written here as a user would write their own.

Heat and salt diffuse at different rates (``tau = kappa_S / kappa_T < 1``). In units of the depth, the thermal
diffusion time and the temperature and salinity differences across the layer (``T = 1 - z + theta``,
``S = 1 - z + s``):

    u_t + u.grad u = -grad p + Pr lap u + Pr (Ra theta - Rs s) z,   div u = 0,
    theta_t + u.grad theta = w + lap theta,        s_t + u.grad s = w + tau lap s,

with ``u = theta = s = 0`` at the rigid plates ``z = 0, 1``. ``Ra > 0`` is heating from below; ``Rs > 0`` puts the salt
at the bottom (stabilizing), ``Rs < 0`` on top: warm salty water over cold fresh water forms salt fingers even
where the density decreases upwards. Steady (finger) modes set in where ``Ra - Rs / tau`` reaches the onset of
ordinary convection between rigid plates, ``1707.762`` at ``k = 3.117`` (Chandrasekhar 1961; Baines & Gill 1969):
the tests check that the growth rate changes sign there.

By default the example runs the finger regime (``Ra = -1000``, temperature stably stratified; ``Rs = -1000``,
``tau = 1/3``: ``Ra - Rs / tau = 2000``, above onset) from small noise and prints the growth rate and the final
salt-flux Nusselt number. Run ``python examples/double_diffusive.py --help``.
"""

import argparse
import math

import jax
import jax.numpy as jnp

import solvers

jax.config.update("jax_enable_x64", True)

K_ONSET = 3.117  # the onset wavenumber of convection between rigid plates


def mode(eq, amplitude):
    """Fluid at rest, ``theta = s = amplitude cos(2 pi x / Lx) sin(pi z)``."""
    g = eq.grid
    z, x = g.coordinates()
    f = amplitude * jnp.cos(2 * math.pi * x / g.box_length[1]) * jnp.sin(math.pi * z)
    fields = g.dealias(g.forward(jnp.stack([0 * z, 0 * z, f])))  # (w, u, theta)
    return {"velocity": eq.kmm.from_velocity(fields[:2]), "theta": fields[2], "salt": fields[2]}


class DoubleDiffusive(solvers.WallEquation):
    """State: ``{"velocity": phi, "theta": theta, "salt": s}`` spectra on a wall grid (axis 0: z, Chebyshev),
    ``phi = lap w``. The implicit part is one block per field; this class writes the nonlinear term."""

    parameters = (solvers.Param("Ra", -1000.0, "thermal Rayleigh number (> 0: heated from below)"),
                  solvers.Param("Rs", -1000.0, "solutal Rayleigh number (> 0: salt at the bottom)"),
                  solvers.Param("Pr", 7.0, "Prandtl number", low=0, low_open=True),
                  solvers.Param("tau", 1 / 3, "diffusivity ratio kappa_S / kappa_T", low=0, low_open=True))
    initial_conditions = {"mode": solvers.InitialCondition(mode, (solvers.Param("amplitude", 1e-6),))}

    def __init__(self, grid, Ra=-1000.0, Rs=-1000.0, Pr=7.0, tau=1 / 3):
        super().__init__(grid, Ra=Ra, Rs=Rs, Pr=Pr, tau=tau)
        self.kmm = solvers.WallVelocity(grid)

    def implicit_parts(self):  # both scalars held at 0 on the plates (Diffusion's default condition)
        return {"velocity": solvers.NoSlipVelocity(self.Pr), "theta": solvers.Diffusion(1.0),
                "salt": solvers.Diffusion(self.tau)}

    def nonlinear(self, s, t):
        g, k = self.grid, self.kmm
        u, _ = k.velocity(s["velocity"])
        p = g.to_physical(jnp.concatenate([u, k.vorticity(u, s["velocity"])[None], s["theta"][None],
                                           s["salt"][None]]))
        up, vort, theta, salt = p[:2], p[2], p[3], p[4]
        lamb = k.lamb(up, vort).at[0].add(self.Pr * (self.Ra * theta - self.Rs * salt))
        c = g.from_physical(jnp.concatenate([lamb, up * theta, up * salt, up[:1]]))
        w = c[6]  # the base gradients: -w d(1 - z)/dz = +w in both equations
        return {"velocity": k.tendency(c[:2]), "theta": w - k.divergence(c[2:4]), "salt": w - k.divergence(c[4:6])}

    def energy(self, s):
        return 0.5 * self.grid.mean_square(self.kmm.velocity(s["velocity"])[0])

    def salt_nusselt(self, s):
        """The salt flux ``1 + <w s> / tau`` in units of the diffusive flux."""
        w = self.kmm.velocity(s["velocity"])[0][0]
        return 1 + self.grid.inner(w, s["salt"]) / self.tau

    def diagnostics(self, s, t, dt):
        return {"energy": self.energy(s), "salt_nusselt": self.salt_nusselt(s)}

    def physical_fields(self, s):
        """The temperature ``T = 1 - z + theta`` and the salinity ``S = 1 - z + s`` on the grid's points."""
        z, _ = self.grid.coordinates()
        return {"T": 1 - z + self.grid.backward(s["theta"]), "S": 1 - z + self.grid.backward(s["salt"])}


def grid(nz, nx, k=K_ONSET):
    """A wall grid of one wavelength ``2 pi / k``, z first."""
    return solvers.wall_grid((nz, nx), walls=(0.0, 1.0), lengths=(2 * math.pi / k,), dtype=jnp.float64,
                             axis_names=("z", "x"))


def growth_rates(eq, params=(None,), dt=2e-3, steps=250):
    """The growth rate ``sigma`` (``E ~ exp(2 sigma t)``) of a small mode between ``steps`` and ``2 steps`` steps of
    ``dt`` (the faster-decaying modes have died out by then), for each of ``params``: float parameters to use instead
    of the equation's (None: its own). One compiled rollout serves every value."""
    run = solvers.rollout(eq, "imex", dt=dt, steps=steps)
    energy = jax.jit(eq.energy)
    out = []
    for p in params:
        s1 = run(eq.initial_state(), p)
        s2 = run(s1, p)
        out.append(math.log(float(energy(s2)) / float(energy(s1))) / (2 * steps * dt))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nz", type=int, default=17, help="Chebyshev points between the plates")
    p.add_argument("--nx", type=int, default=16, help="Fourier points along x (even)")
    p.add_argument("--ra", type=float, default=-1000.0, help="thermal Rayleigh number")
    p.add_argument("--rs", type=float, default=-1000.0, help="solutal Rayleigh number")
    p.add_argument("--tau", type=float, default=1 / 3, help="diffusivity ratio")
    p.add_argument("--pr", type=float, default=7.0, help="Prandtl number")
    p.add_argument("--t-end", type=float, default=3.0, help="final time of the nonlinear run")
    args = p.parse_args(argv)
    eq = DoubleDiffusive(grid(args.nz, args.nx), Ra=args.ra, Rs=args.rs, Pr=args.pr, tau=args.tau)
    print(f"Ra - Rs / tau = {args.ra - args.rs / args.tau:.6g} (onset of finger modes: 1707.762)")
    print(f"growth rate of the finger mode: {growth_rates(eq)[0]:+.6f}")
    sol = solvers.simulate(eq, "imex", t_end=args.t_end, controller=solvers.FixedStep(2e-3),
                           y0=eq.initial_state(amplitude=0.1))
    nu = float(jax.jit(eq.salt_nusselt)(sol.state))
    print(f"Nu_S = {nu:.10f}")
    return nu


if __name__ == "__main__":
    main()
