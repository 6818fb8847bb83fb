"""ETDRK4 (Cox & Matthews 2002): exponential time differencing, linear part integrated exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..model.tree import State, tree_add
from ._base import Integrator, apply_linear_lean, lin_map, phi_functions


class ETDRK4(Integrator):
    """Fourth-order exponential Runge-Kutta of Cox & Matthews (J. Comput. Phys. 176, 430, 2002).

    The phi-functions are evaluated by a Taylor series near ``z = 0`` (the cancellation-free alternative to the
    contour integrals of Kassam & Trefethen 2005), so viscosity or dispersion of any size is exact.
    """

    name = "etdrk4"
    description = "exponential time differencing RK4 (Cox-Matthews), linear part exact"
    order = 4
    dt_coefficients = True

    def coefficients(self, dt: jax.Array):
        def coef(lam):
            z = lam * dt
            (h1,) = phi_functions(z / 2, count=1)
            p1, p2, p3 = phi_functions(z, count=3)
            return {"E": jnp.exp(z), "E2": jnp.exp(z / 2), "Q": dt / 2 * h1,
                    "f1": dt * (p1 - 3 * p2 + 4 * p3), "f2": dt * (p2 - 2 * p3), "f3": dt * (4 * p3 - p2)}

        lin = self.equation.linear()
        return lin_map(coef, lin) if not _is_array(lin) else coef(jnp.asarray(lin))

    def finish(self, state: State, nu: State, t: jax.Array, dt: jax.Array, c) -> State:
        eq = self.equation

        def mul(name, u):  # a real coefficient scales real and imaginary parts (no complex multiply)
            return apply_linear_lean(_pick(c, name), u)

        a = tree_add(mul("E2", state), mul("Q", nu))
        na = eq.nonlinear(a, t + dt / 2)
        b = tree_add(mul("E2", state), mul("Q", na))
        nb = eq.nonlinear(b, t + dt / 2)
        c_ = tree_add(mul("E2", a), mul("Q", jax.tree.map(lambda x, y: 2 * x - y, nb, nu)))
        nc = eq.nonlinear(c_, t + dt)
        return tree_add(mul("E", state), mul("f1", nu), mul("f2", jax.tree.map(lambda x, y: 2 * (x + y), na, nb)),
                    mul("f3", nc))


def _is_array(x) -> bool:
    return isinstance(x, jax.Array) or jnp.isscalar(x)


def _pick(coeffs, name: str):
    """Coefficient ``name`` as one array or a pytree matching the linear operator."""
    if isinstance(coeffs, dict) and name in coeffs:
        return coeffs[name]
    return jax.tree.map(lambda d: d[name], coeffs, is_leaf=lambda d: isinstance(d, dict) and name in d)
