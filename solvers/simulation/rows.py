"""The diagnostics row of a run: computed on the devices inside the compiled loop, packed into one vector.

A row holds the equation's ``diagnostics`` (scalars), ``cfl`` (``dt`` times the CFL rate, where the equation has
one), ``resolution`` (where the equation reports none and lives on the periodic box: the share of the state's mean
square in the outermost resolved wavenumbers, which the run watches) and, where asked for, its ``spectrum``; their
reductions over the devices take one collective together (:func:`~solvers.grids.fused`). Under CFL control the
row's ``cfl`` comes from the rate the next step computes anyway (the stepping core fills it in), so the row
transforms nothing for it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..diagnostics import outer_band
from ..grids import SpectralGrid, fused
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
        with _mesh(equation):  # one trace of what the row computes, for its shapes
            rate, spec, d = jax.eval_shape(lambda s: (equation.max_rate(s), equation.spectrum(s) if spectrum else None,
                                                      equation.diagnostics(s, 0.0, 1.0)), like)
        self.has_rate = rate is not None
        self.has_spectrum = spec is not None
        for k, v in d.items():
            if np.size(np.zeros(v.shape)) != 1:
                raise ValueError(f"{equation.label()}.diagnostics: {k!r} must be a scalar, got shape {v.shape}")
        #: the run adds a ``resolution`` of its own (the outer band's share of the state's mean square) where the
        #: equation reports none and lives on the periodic box: user equations are watched too
        self.own_resolution = "resolution" not in d and isinstance(equation.grid, SpectralGrid)
        names = set(d) | ({"cfl"} if self.has_rate else set()) | ({"resolution"} if self.own_resolution else set())
        self.columns = tuple(sorted(names, key=lambda c: (ORDER.index(c) if c in ORDER else len(ORDER), c)))
        self.cfl_position = self.columns.index("cfl") if self.has_rate else None
        self.size = len(self.columns) + (int(np.prod(spec.shape)) if self.has_spectrum else 0)
        #: the length of the spectrum in a row (0: none)
        self.shells = self.size - len(self.columns)

    def _values(self, state, t, dt, rate=None):
        eq = self.equation

        def values(s):
            d = dict(eq.diagnostics(s, t, dt))
            if self.has_rate:
                d["cfl"] = dt * (eq.max_rate(s) if rate is None else rate)
            if self.own_resolution:
                d["resolution"] = _resolution(eq.grid, s)
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


def _resolution(grid, state) -> jax.Array:
    """The share of the state's gradient norm (``sum k^2 |f_k|^2``, all leaves) in the outer band of the resolved
    wavenumbers (:func:`solvers.diagnostics.resolution` weighted by ``grid.k2()``): the small scales that carry a
    solution's dynamics are seen before its energy reaches them."""
    band, k2 = outer_band(grid), grid.k2()
    total = sum(grid.mean_square(leaf, k2) for leaf in jax.tree.leaves(state))
    outer = sum(grid.mean_square(leaf, k2 * band) for leaf in jax.tree.leaves(state))
    return jnp.where(total > 0, outer / jnp.where(total > 0, total, 1), 0)


def _mesh(equation):
    """The equation's mesh as context for tracing (nothing where one is set already)."""
    import contextlib

    if not jax.sharding.get_abstract_mesh().empty:
        return contextlib.nullcontext()
    return jax.set_mesh(equation.grid.mesh)
