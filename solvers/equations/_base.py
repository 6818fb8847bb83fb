"""The base class of every equation: ``d state / dt = L state + N(state, t)`` in spectral space."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from .._grid import SpectralGrid

State = Any  # a pytree of spectral arrays (one array for most equations)


class Equation(abc.ABC):
    """A PDE on a :class:`~solvers.SpectralGrid`, split into a diagonal linear part and a nonlinear part.

    Subclasses set ``name`` (the CLI name), ``initial_conditions`` (CLI name -> builder) and implement
    :meth:`linear` and :meth:`nonlinear`. The state is a pytree of spectral arrays (sharded like
    ``grid.spectral_sharding(batch)``); integrators only use ``linear``, ``nonlinear`` and tree arithmetic, so a
    new PDE is one new file with one subclass.

    Attributes:
      grid: the grid the state lives on.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: file name of the mid-plane slice that the CLI driver plots (:meth:`plot_field`)
    plot_file: ClassVar[str] = "field.png"
    #: integrator the CLI uses when ``--integrator`` is not given
    default_integrator: ClassVar[str] = "rk4"
    #: name -> function ``(equation, **params) -> state``
    initial_conditions: ClassVar[dict[str, Callable[..., State]]] = {}

    def __init__(self, grid: SpectralGrid):
        self.grid = grid

    @classmethod
    def from_config(cls, grid: SpectralGrid, cfg: Any) -> Equation:
        """Build from a :class:`~solvers.RunConfig` (the CLI); equations with parameters override this.

        Equation-specific parameters arrive in ``cfg.params`` (``--param KEY=VALUE``, values parsed as float
        when possible); raise ``ValueError`` naming the parameter for unknown keys or bad values.
        """
        cls.check_params(cfg)
        return cls(grid)

    @classmethod
    def check_params(cls, cfg: Any, known: tuple[str, ...] = ()) -> None:
        """Raise ``ValueError`` for ``--param`` keys this equation does not know."""
        unknown = sorted(set(getattr(cfg, "params", None) or {}) - set(known))
        if unknown and not known:
            raise ValueError(f"{cls.name} takes no --param options, got {unknown}")
        if unknown:
            raise ValueError(f"unknown --param {unknown} for {cls.name}; known: {sorted(known)}")

    @classmethod
    def grid_geometry(cls, cfg: Any) -> dict:
        """Grid for a CLI run: ``{"shape": (n, n, n), "box_length": L}``; 2D or anisotropic equations override."""
        return {"shape": (cfg.n,) * 3, "box_length": cfg.box_length}

    @abc.abstractmethod
    def linear(self) -> State:
        """The diagonal linear operator ``L(k)``: an array broadcastable against every state leaf (or a pytree
        matching the state). Integrating-factor, exponential and IMEX schemes treat it exactly or implicitly."""

    @abc.abstractmethod
    def nonlinear(self, state: State, t: jax.Array) -> State:
        """The nonlinear (explicit) part ``N(state, t)``, same structure and sharding as ``state``."""

    def rhs(self, state: State, t: jax.Array) -> State:
        """Full right-hand side ``L state + N(state, t)``."""
        return tree_add(apply_linear(self.linear(), state), self.nonlinear(state, t))

    def initial_state(self, ic: str, **params) -> State:
        """Build the initial state ``ic`` (a key of ``initial_conditions``).

        Raises:
          ValueError: unknown initial condition.
        """
        if ic not in self.initial_conditions:
            raise ValueError(f"unknown initial condition {ic!r} for {self.name}; "
                             f"choose one of {', '.join(self.initial_conditions)}")
        return self.initial_conditions[ic](self, **params)

    def abstract_state(self) -> State:
        """Shapes, dtypes and shardings of the state (``jax.ShapeDtypeStruct`` pytree), without computing it.

        Used to restore checkpoints onto this equation's grid and mesh. Default: traced from the first initial
        condition; equations with a known layout override it.
        """
        first = next(iter(self.initial_conditions))
        return jax.eval_shape(lambda: self.initial_state(first))

    def max_rate(self, state: State) -> jax.Array | None:
        """Largest advective rate ``max(sum_i |u_i| / dx_i)`` for the CFL condition; None if not applicable."""
        return None

    def diagnostics(self, state: State, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        """Scalar diagnostics (replicated 0-d arrays, computed by sharded reductions)."""
        return {}

    def energy(self, state: State) -> jax.Array:
        """The scalar shown in the progress bar and checked for blow-up (a sharded reduction)."""
        return sum(self.grid.mean_square(leaf) for leaf in jax.tree.leaves(state))

    def spectrum(self, state: State) -> jax.Array | None:
        """Radial spectrum for output (replicated, length ``grid.num_shells``), or None."""
        return None

    def plot_field(self, state: State) -> tuple[str, jax.Array] | None:
        """A 2D real slice to plot (label, array replicated on every device), or None."""
        return None

    def snapshot_fields(self, state: State) -> dict[str, jax.Array]:
        """The real-space fields a snapshot stores: name -> array of ``grid.shape`` on a real-space sharding.

        Each equation names its own (there is no generic default: a state leaf's meaning decides what is worth
        storing, e.g. velocity and vorticity rather than a spectrum). Used by :class:`solvers.io.SnapshotWriter`.

        Raises:
          NotImplementedError: the equation does not define snapshot fields.
        """
        raise NotImplementedError(f"equation {self.name or type(self).__name__!r} names no snapshot fields; "
                                  "override Equation.snapshot_fields to write snapshots")


def apply_linear(lin: State, state: State) -> State:
    """``L * state`` for a diagonal ``L`` given as one array or a pytree matching ``state``."""
    if isinstance(lin, (jax.Array, jnp.ndarray)) or jnp.isscalar(lin):
        return jax.tree.map(lambda u: lin * u, state)
    return jax.tree.map(lambda a, u: a * u, lin, state)


def tree_add(*trees: State) -> State:
    return jax.tree.map(lambda *xs: sum(xs[1:], xs[0]), *trees)


def tree_axpy(a, x: State, y: State) -> State:
    """``a * x + y`` leaf by leaf."""
    return jax.tree.map(lambda u, v: a * u + v, x, y)
