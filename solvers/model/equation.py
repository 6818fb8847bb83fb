"""The base class of every equation: ``d state / dt = L state + N(state, t)`` in spectral space, physics only."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar

import jax
from jax.sharding import NamedSharding

from ..grids import Grid
from .params import InitialCondition, Param, as_initial_condition, resolve
from .tree import State as State


class Equation:
    """A PDE on a :class:`~solvers.Grid`: declared parameters, initial conditions, a state layout, a linear part,
    a nonlinear part and optional physical diagnostics. Nothing about command lines, plots or time steps.

    A subclass provides:

    - ``parameters``: the constructor's keyword arguments as :class:`Param` declarations (checked and stored as
      attributes by ``Equation.__init__``: ``self.nu``);
    - ``initial_conditions``: name -> ``build(equation, **params) -> state`` or an :class:`InitialCondition` with
      declared parameters (the first is the default);
    - :meth:`nonlinear` (required);
    - the linear part, in one of two forms: ``linear()`` returning a diagonal ``L(k)`` (explicit, exponential,
      integrating-factor and IMEX schemes all use it; :class:`~solvers.DiagonalLinear`), or the pair
      ``implicit_factor(h)`` / ``implicit_solve(rhs, factor)`` solving ``(I - h L) y = rhs`` where ``L`` couples
      coefficients, e.g. along a Chebyshev wall-normal axis with boundary conditions (IMEX schemes ask for it;
      :class:`~solvers.ImplicitLinear`). An equation defines one of the two;
    - optionally :meth:`abstract_state`, :meth:`diagnostics`, :meth:`energy`, :meth:`max_rate` (the CFL rate),
      :meth:`spectrum`, :meth:`physical_fields` (what snapshots and plots show), and
      ``nonlinear_and_rate(state, t, reduce)``: the nonlinear term together with the CFL rate taken from the
      physical fields it already holds (see :class:`~solvers.FusedRate`).

    The state is a pytree of spectral arrays on the grid's spectral sharding; integrators only use the linear
    part, ``nonlinear`` and tree arithmetic, so a new PDE is one subclass. How it runs (its CLI name, default
    box, grid and plots) is a :class:`~solvers.RunSpec` beside it.

    Attributes:
      grid: the grid the state lives on. params: every declared parameter's value.
    """

    #: the constructor's keyword arguments; checked by ``Equation.__init__``
    parameters: ClassVar[tuple[Param, ...]] = ()
    #: name -> ``build(equation, **params) -> state`` or :class:`InitialCondition`; the first is the default
    initial_conditions: ClassVar[dict[str, Callable[..., State] | InitialCondition]] = {}
    #: the grid dimensions the physics is written for (None: any), checked by ``Equation.__init__``
    grid_ndims: ClassVar[tuple[int, ...] | None] = None
    #: the state is spectral coefficients in the grid's layout (checkpoints store them in natural order); False:
    #: arrays of the equation's own layout (particles), which checkpoints store as they are
    spectral_state: ClassVar[bool] = True

    def __init__(self, grid: Grid, **params: Any):
        """Store ``grid`` and every declared parameter (given or default) as an attribute.

        Raises:
          TypeError: ``grid`` is not a :class:`~solvers.Grid`.
          ValueError: an unknown parameter, a value out of its declared range (naming it), or a grid of a
            dimension the equation is not written for (:attr:`grid_ndims`).
        """
        if not isinstance(grid, Grid):
            raise TypeError(f"{self.label()}: grid must be a solvers.Grid, got {type(grid).__name__}")
        if self.grid_ndims is not None and grid.ndim not in self.grid_ndims:
            raise ValueError(f"{self.label()} runs on {' or '.join(map(str, self.grid_ndims))}D grids, got a "
                             f"{grid.ndim}D grid")
        self.grid = grid
        self.params = resolve(self.parameters, params, self.label())
        for k, v in self.params.items():
            setattr(self, k, v)

    @classmethod
    def label(cls) -> str:
        """The name in messages: the class name."""
        return cls.__name__

    def with_params(self, **values: Any) -> Equation:
        """A shallow copy of this equation with some float parameters replaced, e.g. by traced values.

        Made for differentiating in a parameter (:func:`~solvers.rollout` calls it inside the traced function):
        a JAX tracer is checked by name, kind and shape only (its value is unknown when tracing), any other value
        as the constructor checks it. The grid and all other attributes are shared with this equation; nothing
        the constructor derives from a parameter is recomputed, which is why only float parameters stored as
        one scalar can be replaced (rebuild the equation to change the others).

        Args:
          **values: declared float parameter name -> a number or a 0-d float array (traced or not).

        Returns:
          A new equation of the same class; arrays keep their sharding (a scalar is replicated).

        Raises:
          ValueError: an unknown name, a non-scalar array, or a concrete value out of its declared range.
          TypeError: a parameter that is not a float one, or one the constructor stores per axis (a tuple).
        """
        declared = {p.name: p for p in self.parameters}
        unknown = sorted(set(values) - set(declared))
        if unknown:
            raise ValueError(f"unknown parameter {', '.join(unknown)} for {self.label()}; known: "
                             f"{', '.join(declared) or 'none'}")
        out = copy.copy(self)
        out.params = dict(self.params)
        for name, value in values.items():
            p = declared[name]
            if p.type is not float or jax.numpy.ndim(getattr(self, name)) != 0:
                kind = p.type.__name__ if p.type is not float else "stored per axis"
                raise TypeError(f"{p.where(self.label())} ({kind}) cannot be replaced by with_params: only "
                                "scalar float parameters can; build a new equation instead")
            value = p.check_value(value, self.label())
            setattr(out, name, value)
            out.params[name] = value
        return out

    # ----- initial conditions --------------------------------------------------------------------------
    @classmethod
    def initial_condition(cls, ic: str) -> InitialCondition:
        """The initial condition ``ic`` with its declared parameters.

        Raises:
          ValueError: unknown name (listing the known ones).
        """
        if ic not in cls.initial_conditions:
            raise ValueError(f"unknown initial condition {ic!r} for {cls.label()}; "
                             f"available: {', '.join(cls.initial_conditions) or 'none'}")
        return as_initial_condition(cls.initial_conditions[ic])

    @classmethod
    def initial_time(cls, ic: str, **params: Any) -> float:
        """The time at which the state ``initial_state(ic, **params)`` holds: where a run from it starts (its
        ``t0``). Default 0; an equation whose time is another variable overrides it (a comoving N-body code, whose
        time is the scale factor, starts at the initial condition's ``a0``). ``params``: the initial condition's
        checked parameters, defaults filled in."""
        return 0.0

    def resolve_ic_params(self, ic: str, **params: Any) -> dict[str, Any]:
        """The parameters ``initial_state(ic, **params)`` passes to the builder: checked, defaults filled.

        Raises:
          ValueError: unknown initial condition or parameter, or a value out of range.
        """
        spec = self.initial_condition(ic)
        base = {p.name: v for p in spec.params if (v := self.ic_defaults().get(p.name)) is not None}
        return resolve(spec.params, {**base, **params}, f"{self.label()} initial condition {ic}")

    def ic_defaults(self) -> dict[str, Any]:
        """Defaults of initial-condition parameters that this instance sets (none here)."""
        return {}

    def initial_state(self, ic: str | None = None, **params: Any) -> State:
        """Build the initial state ``ic`` (a key of ``initial_conditions``; None: the first) with its parameters.

        The builder runs as one compiled program on the grid's mesh (not element by element). On a grid that
        stores its modes on more points (``grid.stored_on_more_points``) the state is truncated to the grid's
        modes (:meth:`~solvers.Grid.truncate`): a builder works on the points.

        Raises:
          ValueError: unknown initial condition or parameter, a value out of range, or one the builder rejects.
        """
        ic = next(iter(self.initial_conditions)) if ic is None else ic
        build = self.initial_condition(ic).build
        values = self.resolve_ic_params(ic, **params)
        grid = self.grid

        def make():
            state = build(self, **values)
            return jax.tree.map(grid.truncate, state) if grid.stored_on_more_points else state

        return _on_mesh(grid, lambda: jax.jit(make)())

    def abstract_state(self) -> State:
        """Shapes, dtypes and shardings of the state (``jax.ShapeDtypeStruct`` pytree), without computing it.

        Used to restore checkpoints onto this equation's grid and mesh. Default: traced from the first initial
        condition with its default parameters; equations with a known layout override it.

        Raises:
          ValueError: the equation has no initial condition to trace and does not override this method.
        """
        if not self.initial_conditions:
            raise ValueError(f"{self.label()} has no initial condition to take the state's shapes from: give it one "
                             "(initial_conditions = {name: solvers.InitialCondition(...)}) or define "
                             "abstract_state()")
        first = next(iter(self.initial_conditions))
        mesh = self.grid.mesh

        def concrete(a: jax.ShapeDtypeStruct) -> jax.ShapeDtypeStruct:  # traced under set_mesh: abstract mesh
            spec = getattr(a.sharding, "spec", None)
            sharding = NamedSharding(mesh, spec) if spec is not None else a.sharding
            return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)

        return jax.tree.map(concrete, jax.eval_shape(lambda: self.initial_state(first)))

    # ----- the right-hand side -------------------------------------------------------------------------
    def nonlinear(self, state: State, t: jax.Array) -> State:
        """The nonlinear (explicit) part ``N(state, t)``, same structure, dtype and sharding as ``state``."""
        raise NotImplementedError(f"{self.label()} defines no nonlinear(state, t)")

    # ----- physical diagnostics (optional) -------------------------------------------------------------
    def max_rate(self, state: State) -> jax.Array | None:
        """Largest advective rate ``max(sum_i |u_i| / dx_i)`` for the CFL condition; None if not applicable."""
        return None

    def diagnostics(self, state: State, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        """Scalar diagnostics (replicated 0-d arrays, computed by sharded reductions); default: ``energy``.

        A run computes them inside its compiled time loop, after the step they belong to (``t`` and ``dt`` are the
        device's time and that step's dt). Anything but a scalar is refused with a ``ValueError`` naming it."""
        return {"energy": self.energy(state)}

    def energy(self, state: State) -> jax.Array:
        """The scalar shown in the progress bar and checked for blow-up (a sharded reduction)."""
        return sum(self.grid.mean_square(leaf) for leaf in jax.tree.leaves(state))

    def spectrum(self, state: State) -> jax.Array | None:
        """Radial spectrum for output (replicated, length ``grid.num_shells``), or None."""
        return None

    def physical_fields(self, state: State) -> dict[str, jax.Array]:
        """The real-space fields of the state worth looking at: name -> array of ``grid.shape`` on a real-space
        sharding (snapshots store them, plots draw one of them).

        Raises:
          NotImplementedError: the equation names no fields.
        """
        raise NotImplementedError(f"{self.label()} names no physical fields; define physical_fields(state) to "
                                  "write snapshots or plot a field")


def _on_mesh(grid: Grid, fn: Callable[[], Any]) -> Any:
    """``fn()`` under the grid's mesh (``jax.set_mesh``), or as it is where a mesh is set already (a caller's, or
    inside a trace)."""
    if not jax.sharding.get_abstract_mesh().empty:
        return fn()
    try:
        context = jax.set_mesh(grid.mesh)
    except ValueError:  # inside a trace (jit, eval_shape), where set_mesh is refused: the arrays carry the mesh
        return fn()
    with context:
        return fn()
