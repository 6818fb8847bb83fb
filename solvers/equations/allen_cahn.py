"""Allen-Cahn ``c_t = eps^2 lap c - f'(c)`` (non-conserved phase field), stabilized split."""

from __future__ import annotations

import jax

from .cahn_hilliard import PhaseField


class AllenCahn(PhaseField):
    """Allen-Cahn ``c_t = eps^2 lap c - (c^3 - c)``: the free energy decreases, ``<c>`` is not conserved.

    Linear stability of a uniform ``c0``: ``sigma(k) = -(eps^2 k^2 + 3 c0^2 - 1)``. Same split, parameters
    and diagnostics as :class:`~solvers.equations.cahn_hilliard.PhaseField` with mobility ``M = 1``.
    """


    conserved = False

    def mobility(self) -> jax.Array:
        return self.grid.k2() * 0 + 1
