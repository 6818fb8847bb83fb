"""The diagnostics row of a run: computed on the devices inside the compiled loop, packed into one vector.

A row holds the equation's ``diagnostics`` (scalars), ``cfl`` (``dt`` times the CFL rate, where the equation has
one) and, where asked for, its ``spectrum``; their reductions over the devices take one collective together
(:func:`~solvers.grids.fused`). Under CFL control the row's ``cfl`` comes from the rate the next step computes
anyway (the stepping core fills it in), so the row transforms nothing for it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..grids import fused
from ..stepping import pack_dtype

#: the columns that come first, in this order; the others follow alphabetically
ORDER = ("energy", "enstrophy", "dissipation", "injection", "max_div", "cfl")


class RowFunction:
    """``row(state, t, dt, rate=None) -> vector``: an equation's diagnostics row, and the host's unpacking of it.

    Args:
      equation: the equation (``diagnostics``, ``max_rate``, ``spectrum``).
      spectrum: include the equation's spectrum (where it has one).

    Attributes:
      columns: the names of the row's values, in order. cfl_position: the index of ``cfl`` (None: the equation has
        no CFL rate). has_spectrum: rows carry a spectrum, of ``shells`` values. size: the row's length.

    Raises:
      ValueError: a diagnostic that is not a scalar (naming it).
    """

    def __init__(self, equation, spectrum: bool = True):
        self.equation = equation
        like = equation.abstract_state()
        with _mesh(equation):
            self.has_rate = jax.eval_shape(equation.max_rate, like) is not None
            self.has_spectrum = spectrum and jax.eval_shape(equation.spectrum, like) is not None
            d = jax.eval_shape(equation.diagnostics, like, 0.0, 1.0)
        for k, v in d.items():
            if np.size(np.zeros(v.shape)) != 1:
                raise ValueError(f"{equation.label()}.diagnostics: {k!r} must be a scalar, got shape {v.shape}")
        names = set(d) | ({"cfl"} if self.has_rate else set())
        self.columns = tuple(sorted(names, key=lambda c: (ORDER.index(c) if c in ORDER else len(ORDER), c)))
        self.cfl_position = self.columns.index("cfl") if self.has_rate else None
        with _mesh(equation):
            self.size = int(jax.eval_shape(self, like, 0.0, 1.0).size)
        #: the length of the spectrum in a row (0: none)
        self.shells = self.size - len(self.columns)

    def _values(self, state, t, dt, rate=None):
        eq = self.equation

        def values(s):
            d = dict(eq.diagnostics(s, t, dt))
            if self.has_rate:
                d["cfl"] = dt * (eq.max_rate(s) if rate is None else rate)
            return d, eq.spectrum(s) if self.has_spectrum else None

        return fused(values, eq.grid.mesh, state)

    def __call__(self, state, t, dt, rate=None) -> jax.Array:
        """The row of ``state`` as one vector (:func:`~solvers.stepping.pack_dtype`). ``rate``: the state's CFL
        rate where it is known already (the row then does not compute it). Pure and jit-able."""
        d, spec = self._values(state, t, dt, rate)
        pack = pack_dtype()
        parts = [jnp.stack([jnp.reshape(d[k], ()).astype(pack) for k in self.columns])]
        if self.has_spectrum:
            parts.append(jnp.ravel(spec).astype(pack))
        return jnp.concatenate(parts)

    def unpack(self, vector) -> tuple[dict[str, float], np.ndarray | None]:
        """The values (name -> float) and the spectrum (or None) of a row vector on the host."""
        v = np.asarray(vector)
        n = len(self.columns)
        return {k: float(x) for k, x in zip(self.columns, v[:n])}, (v[n:].copy() if self.has_spectrum else None)


def _mesh(equation):
    """The equation's mesh as context for tracing (nothing where one is set already)."""
    import contextlib

    if not jax.sharding.get_abstract_mesh().empty:
        return contextlib.nullcontext()
    return jax.set_mesh(equation.grid.mesh)
