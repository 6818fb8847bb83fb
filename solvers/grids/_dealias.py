"""The grid's dealiasing: the modes each rule keeps, truncation, zero padding to another grid."""

from __future__ import annotations

import functools

import jax

from ._helpers import _sharded, rmul


class Dealiasing:
    """Mixin of :class:`~solvers.Grid`: which modes the dealiasing rule keeps, and moving spectra between grids."""

    def resize(self, c: jax.Array, other: Dealiasing) -> jax.Array:
        """Coefficients ``c`` of this grid as coefficients of ``other`` (same bases, other sizes): zero-padded or
        truncated per axis, landing on ``other``'s spectral sharding."""
        batch = c.ndim - self.ndim

        def body(a):
            for d, (b, o) in enumerate(zip(self.bases, other.bases)):
                a = b.pad(a, o, batch + self.perm.index(d))
            return a

        return _sharded(body, other.spectral_sharding(batch), self.explicit)(c)

    # ----- dealiasing ------------------------------------------------------------------------------
    def keep_tables(self, rule: str | None = None) -> list[jax.Array]:
        """Per-axis 0/1 dealiasing factors (broadcastable): their product is :meth:`dealias_mask`."""
        rule = self.dealias_rule if rule is None else rule
        return [self.spectral_along(b.keep(rule).astype(float), d) for d, b in enumerate(self.bases)]

    @property
    def stored_on_more_points(self) -> bool:
        """True when an axis holds fewer modes than it has points (:attr:`modes` differs from :attr:`shape`)."""
        return self.modes != self.shape

    def truncate(self, f_hat: jax.Array) -> jax.Array:
        """``f_hat`` without the coefficients that a grid of :attr:`modes` points does not have (``f_hat`` itself
        when every axis has as many modes as points). An initial condition built on the points goes through it,
        so the state holds exactly the modes of the grid."""
        if not self.stored_on_more_points:
            return f_hat
        return rmul(functools.reduce(lambda a, b: a * b, self.keep_tables("none")), f_hat)

    def dealias_mask(self) -> jax.Array:
        """1 for kept coefficients, 0 for removed ones (the grid's rule on every axis)."""
        return functools.reduce(lambda a, b: a * b, self.keep_tables())

    def dealias(self, c: jax.Array) -> jax.Array:
        """``c`` times the dealiasing mask, one 1D factor per axis (no grid-sized table is formed)."""
        for m in self.keep_tables():
            c = rmul(m, c)
        return c

    # ----- derivatives -----------------------------------------------------------------------------
