"""Tree arithmetic on states (pytrees of arrays): the one implementation integrators and equations use."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

State = Any  # a pytree of spectral arrays (one array for most equations)


def tree_add(*trees: State) -> State:
    """Leafwise sum of states of the same structure."""
    return jax.tree.map(lambda *xs: sum(xs[1:], xs[0]), *trees)


def tree_scale(a, x: State) -> State:
    """``a * x`` leaf by leaf (``a`` a scalar)."""
    return jax.tree.map(lambda u: a * u, x)


def tree_axpy(a, x: State, y: State) -> State:
    """``a * x + y`` leaf by leaf."""
    return jax.tree.map(lambda u, v: a * u + v, x, y)


def apply_linear(lin: State, state: State) -> State:
    """``L * state`` for a diagonal ``L`` given as one array (or scalar) or a pytree matching ``state``."""
    if isinstance(lin, (jax.Array, jnp.ndarray)) or jnp.isscalar(lin):
        return jax.tree.map(lambda u: lin * u, state)
    return jax.tree.map(lambda a, u: a * u, lin, state)
