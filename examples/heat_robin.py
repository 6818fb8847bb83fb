"""Heat between two walls: a fixed temperature below, Newton cooling (a Robin condition) above; from public parts.

``T_t = kappa lap T`` in ``0 < z < 1``, periodic in x, with

    T = T_bottom at z = 0,        a T + b dT/dn = g at z = 1   (dT/dn = +dT/dz there: the outward normal),

e.g. ``a = h``, ``b = k``, ``g = h T_out``: the heat flux ``-k dT/dn`` leaving through the top is ``h (T - T_out)``.
The whole implicit part is one block, ``solvers.Diffusion(kappa, bc=(solvers.Dirichlet(T_bottom), solvers.Robin(a, b,
g)))``; there is no nonlinear term. The solution is known exactly: the steady profile ``T_s = T_bottom + c z`` with
``c = (g - a T_bottom) / (a + b)``, plus modes ``sin(mu z) cos(m x)`` decaying at the rate ``kappa (mu^2 + m^2)``,
where ``mu`` solves ``a sin(mu) + b mu cos(mu) = 0`` (the top condition; ``mu`` in ``(pi/2, pi)`` for the first
mode when ``a, b > 0``). The run starts from ``T_s`` plus one such mode, prints the largest difference from the exact
solution at ``t_end`` and returns it. Run ``python examples/heat_robin.py --help``; as a job:
``python -m solvers run examples/heat_robin.py:SPEC --n 17 8`` (the module's ``SPEC`` and ``solvers.WallBuilder``).
"""

import argparse
import math

import jax
import jax.numpy as jnp

import solvers

jax.config.update("jax_enable_x64", True)


def first_root(a, b):
    """The smallest ``mu > 0`` with ``a sin(mu) + b mu cos(mu) = 0`` (bisection on ``(pi/2, pi)``, ``a, b > 0``)."""
    lo, hi = math.pi / 2, math.pi
    for _ in range(200):
        mid = (lo + hi) / 2
        if (a * math.sin(mid) + b * mid * math.cos(mid)) > 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def steady_plus_mode(eq, amplitude):
    """The steady profile plus ``amplitude sin(mu z) cos(x)``."""
    z, x = eq.grid.coordinates()
    return {"T": eq.grid.forward(eq.exact(z, x, 0.0, amplitude))}


class Heat(solvers.WallEquation):
    """State: ``{"T": T}`` spectra on a wall grid (axis 0: z, Chebyshev between the walls)."""

    parameters = (solvers.Param("kappa", 0.5, "diffusivity", low=0, low_open=True),
                  solvers.Param("bottom", 1.0, "the temperature held at z = 0"),
                  solvers.Param("a", 2.0, "a of a T + b dT/dn = g at z = 1", low=0, low_open=True),
                  solvers.Param("b", 1.0, "b of a T + b dT/dn = g at z = 1", low=0, low_open=True),
                  solvers.Param("g", 0.5, "g of a T + b dT/dn = g at z = 1"))
    initial_conditions = {"mode": solvers.InitialCondition(steady_plus_mode, (solvers.Param("amplitude", 0.3),))}

    def implicit_parts(self):
        bc = (solvers.Dirichlet(self.bottom), solvers.Robin(self.a, self.b, self.g))  # (z = 0, z = 1)
        return {"T": solvers.Diffusion(self.kappa, bc=bc)}

    def nonlinear(self, s, t):
        return jax.tree.map(jnp.zeros_like, s)

    def exact(self, z, x, t, amplitude):
        """The exact temperature at ``(z, x, t)`` from the initial ``steady + amplitude sin(mu z) cos(x)``."""
        mu = first_root(self.a, self.b)
        slope = (self.g - self.a * self.bottom) / (self.a + self.b)
        decay = math.exp(-self.kappa * (mu * mu + 1) * t)
        return self.bottom + slope * z + amplitude * decay * jnp.sin(mu * z) * jnp.cos(x)

    def physical_fields(self, s):
        return {"T": self.grid.backward(s["T"])}


#: the grid between the walls z = 0 and z = 1 (periodic length 2 pi), and the job: ``python -m solvers run ...:SPEC``
WALLS = solvers.WallBuilder(walls=(0.0, 1.0), axis_names=("z", "x"))
SPEC = solvers.RunSpec("heat-robin", Heat, "heat: fixed temperature below, Newton cooling above", ndims=(2,),
                       grid=WALLS, box=WALLS.box)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nz", type=int, default=17, help="Chebyshev points between the walls")
    p.add_argument("--nx", type=int, default=8, help="Fourier points along x (even)")
    p.add_argument("--dt", type=float, default=2e-3, help="time step")
    p.add_argument("--t-end", type=float, default=0.2, help="final time")
    args = p.parse_args(argv)
    grid = WALLS.grid((args.nz, args.nx), dtype=jnp.float64)
    eq = Heat(grid)
    sol = solvers.simulate(eq, "imex", t_end=args.t_end, controller=solvers.FixedStep(args.dt))
    z, x = grid.coordinates()
    got = jax.jit(eq.physical_fields)(sol.state)["T"]
    error = float(jnp.max(jnp.abs(got - eq.exact(z, x, args.t_end, 0.3))))
    print(f"max |T - T_exact| at t = {args.t_end:g}: {error:.3e}")
    return error


if __name__ == "__main__":
    main()
