"""The base class of every equation: ``d state / dt = L state + N(state, t)`` in spectral space."""

from __future__ import annotations

import abc
import copy
import math
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding

from .._grid import Grid
from .._params import InitialCondition, Param, as_initial_condition, resolve
from .._spectral_grid import SpectralGrid
from .._tree import State as State
from .._tree import apply_linear as apply_linear
from .._tree import tree_add as tree_add
from .._tree import tree_axpy as tree_axpy

#: how an equation gives its linear part: a diagonal ``L`` (``linear()``), or solves of ``(I - h L) y = rhs``
LINEAR_FORMS = ("diagonal", "implicit")


class Equation(abc.ABC):
    """A PDE on a :class:`~solvers.Grid`, split into a linear part (diagonal, or implicit solves) and a nonlinear
    part.

    The contract (see the README, "Your own equation"):

    - class attributes: ``name`` (CLI name), ``description``, ``parameters`` (the constructor's keyword
      arguments as :class:`Param` declarations), ``initial_conditions`` (name -> ``build(eq, **params)`` or
      :class:`InitialCondition` with declared parameters; the first is the default), ``ndims`` (grid
      dimensions it runs on, the first is the default), ``default_integrator``, ``spectrum_slope`` (power-law
      guide of the spectrum plot, or None), ``plot_file``, ``energy_label`` (what :meth:`energy` is),
      ``cfl_diagnostic`` (the diagnostic that is ``dt * max_rate``, if any);
    - ``__init__(grid, **params)`` calls ``super().__init__(grid, **params)``, which checks every value
      against its declaration and stores it as an attribute (``self.nu``);
    - :meth:`linear` and :meth:`nonlinear` (required); :meth:`max_rate`, :meth:`diagnostics`, :meth:`energy`,
      :meth:`spectrum`, :meth:`plot_field`, :meth:`abstract_state` (optional);
    - the linear part comes in one of two forms (:attr:`linear_form`): ``"diagonal"`` (the default: ``linear()``
      is ``L(k)``, which exponential, integrating-factor, explicit and IMEX schemes all use), or ``"implicit"``
      (``L`` couples coefficients, e.g. along a Chebyshev wall-normal axis with boundary conditions: the equation
      provides :meth:`implicit_factor` and :meth:`implicit_solve` of ``(I - h L) y = rhs``, and only IMEX
      schemes advance it). Integrators declare the forms they accept (``Integrator.linear_forms``);
    - :meth:`grid_for` builds the grid the equation runs on from the run's shape and box (default: the periodic
      :class:`~solvers.SpectralGrid`; wall-bounded equations put their wall basis on axis 0).

    The state is a pytree of spectral arrays (sharded like ``grid.spectral_sharding(batch)``); integrators only
    use the linear part, ``nonlinear`` and tree arithmetic, so a new PDE is one subclass.

    Attributes:
      grid: the grid the state lives on.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: the constructor's keyword arguments (``--param``); checked by ``Equation.__init__``
    parameters: ClassVar[tuple[Param, ...]] = ()
    #: name -> ``build(equation, **params) -> state`` or :class:`InitialCondition`; the first is the default
    initial_conditions: ClassVar[dict[str, Callable[..., State] | InitialCondition]] = {}
    #: grid dimensions this equation runs on (the first is the default of ``--n N``)
    ndims: ClassVar[tuple[int, ...]] = (3,)
    #: integrator used when none is named
    default_integrator: ClassVar[str] = "rk4"
    #: exponent of the power-law guide drawn on the spectrum plot (None: no guide)
    spectrum_slope: ClassVar[float | None] = None
    #: file name of the slice that the driver plots (:meth:`plot_field`)
    plot_file: ClassVar[str] = "field.png"
    #: what the ``energy`` diagnostic is, as the energy plot labels it
    energy_label: ClassVar[str] = "energy E (mean square)"
    #: ``"diagonal"`` (:meth:`linear` is a diagonal ``L``) or ``"implicit"`` (:meth:`implicit_solve`)
    linear_form: ClassVar[str] = "diagonal"
    #: the diagnostic that is the CFL number ``dt * max_rate(state)``, or None. A CFL run's rows take it from the
    #: rate that the next step's first stage computes anyway, so the row transforms nothing for it.
    cfl_diagnostic: ClassVar[str | None] = None

    def __init__(self, grid: Grid, **params: Any):
        """Store ``grid`` and every declared parameter (given or default) as an attribute.

        Raises:
          ValueError: unknown parameter, value out of its declared range, or a grid of the wrong dimension.
        """
        self.grid = grid
        if grid.ndim not in self.ndims:
            raise ValueError(f"{self.label()} runs on {' or '.join(map(str, self.ndims))}D grids, "
                             f"got shape {grid.shape}")
        self.params = resolve(self.parameters, params, self.label())
        for k, v in self.params.items():
            setattr(self, k, v)

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
            if p.type is not float or jnp.ndim(getattr(self, name)) != 0:
                kind = p.type.__name__ if p.type is not float else "stored per axis"
                raise TypeError(f"{p.where(self.label())} ({kind}) cannot be replaced by with_params: only "
                                "scalar float parameters can; build a new equation instead")
            if isinstance(value, jax.core.Tracer):
                if jnp.shape(value) != () or not jnp.issubdtype(value.dtype, jnp.floating):
                    raise ValueError(f"{p.where(self.label())} must be a 0-d float array, got "
                                     f"{value.dtype}{list(jnp.shape(value))}")
            else:
                value = p.check(value, self.label())
            setattr(out, name, value)
            out.params[name] = value
        return out

    @classmethod
    def default_box_length(cls, ndim: int, params: dict[str, Any] | None = None) -> tuple[float, ...]:
        """Box sides used when a run gives no box length (default ``2 pi`` per axis); ``params`` are the run's
        resolved equation and initial-condition parameters (a box may follow a wavelength)."""
        return (2 * math.pi,) * ndim

    @classmethod
    def default_integrator_for(cls, params: dict[str, Any]) -> str:
        """The integrator of a run that names none (``default_integrator``; a parameter may change it)."""
        return cls.default_integrator

    @classmethod
    def check_shape(cls, shape: tuple[int, ...], params: dict[str, Any]) -> None:
        """Check the grid sizes a run asks for, before anything is built (default: the periodic box's even sizes).

        Raises:
          ValueError: saying what sizes are allowed (the driver prefixes the field name ``n``).
        """
        if any(n < 4 or n % 2 for n in shape):
            raise ValueError(f"grid sizes must be even integers >= 4, got {' '.join(map(str, shape))}")

    @classmethod
    def check_box(cls, box_length: tuple[float, ...], params: dict[str, Any]) -> None:
        """Check the box a run asks for, before anything is built (default: any positive sides).

        Raises:
          ValueError: saying what is allowed (the driver prefixes ``--box-length``).
        """
        return None

    @classmethod
    def grid_for(cls, shape: tuple[int, ...], mesh, *, box_length: tuple[float, ...], dtype, dealias: str,
                 backend: str | None, params: dict[str, Any], points: tuple[int, ...] | None = None) -> Grid:
        """The grid a run of ``shape`` and ``box_length`` uses (default: the periodic box, its spectra in the
        transposed order, the faster one; checkpoints and outputs stay in natural order).

        ``points``: store the ``shape`` modes on more points (see :class:`~solvers.SpectralGrid`); the main job
        asks for it where the mesh cannot split ``shape``. An equation whose ``grid_for`` has no ``points``
        argument is never asked.

        Raises:
          ValueError: a shape the bases cannot use or the mesh cannot hold (the message names ``shape``).
        """
        return SpectralGrid(shape, mesh, ndim=len(shape), box_length=box_length, dtype=dtype, dealias=dealias,
                            backend=backend, order="transposed", points=points)

    @classmethod
    def label(cls) -> str:
        """The name in messages: ``name`` or the class name of a user equation without one."""
        return cls.name or cls.__name__

    @classmethod
    def initial_condition(cls, ic: str) -> InitialCondition:
        """The initial condition ``ic`` with its declared parameters.

        Raises:
          ValueError: unknown name (listing the known ones).
        """
        if ic not in cls.initial_conditions:
            raise ValueError(f"unknown initial condition {ic!r} for {cls.label()}; "
                             f"available: {', '.join(cls.initial_conditions)}")
        return as_initial_condition(cls.initial_conditions[ic])

    @abc.abstractmethod
    def linear(self) -> State:
        """The diagonal linear operator ``L(k)``: an array broadcastable against every state leaf (or a pytree
        matching the state), spectral sharding. Integrating-factor, exponential and IMEX schemes treat it exactly
        or implicitly."""

    @abc.abstractmethod
    def nonlinear(self, state: State, t: jax.Array) -> State:
        """The nonlinear (explicit) part ``N(state, t)``, same structure, dtype and sharding as ``state``."""

    def rhs(self, state: State, t: jax.Array) -> State:
        """Full right-hand side ``L state + N(state, t)`` (diagonal linear form only)."""
        return tree_add(apply_linear(self.linear(), state), self.nonlinear(state, t))

    def implicit_factor(self, h: jax.Array) -> Any:
        """What :meth:`implicit_solve` needs to solve ``(I - h L) y = rhs`` for this ``h`` (computed once per
        step size by the integrator's coefficients). Default (diagonal form): ``1 / (1 - h L)``."""
        return jax.tree.map(lambda a: 1 / (1 - h * a), self.linear())

    def implicit_solve(self, rhs: State, factor: Any) -> State:
        """``y`` with ``(I - h L) y = rhs`` (``factor`` from :meth:`implicit_factor`), boundary conditions
        included; same structure, dtypes and shardings as the state. Default (diagonal form): ``factor * rhs``."""
        return apply_linear(factor, rhs)

    def resolve_ic_params(self, ic: str, **params: Any) -> dict[str, Any]:
        """The parameters ``initial_state(ic, **params)`` passes to the builder: checked, defaults filled.

        Raises:
          ValueError: unknown initial condition or parameter, or a value out of range.
        """
        spec = self.initial_condition(ic)
        base = {p.name: v for p in spec.params if (v := self._ic_defaults().get(p.name)) is not None}
        return resolve(spec.params, {**base, **params}, f"{self.label()} initial condition {ic}")

    def _ic_defaults(self) -> dict[str, Any]:
        """Instance defaults of initial-condition parameters (none here; see Schrodinger's ``ic_params``)."""
        return {}

    def initial_state(self, ic: str, **params: Any) -> State:
        """Build the initial state ``ic`` (a key of ``initial_conditions``) with its parameters.

        On a grid that stores its modes on more points (``grid.stored_on_more_points``) the state is truncated to
        the grid's modes (:meth:`~solvers.Grid.truncate`): a builder works on the points.

        Raises:
          ValueError: unknown initial condition or parameter, a value out of range, or one the builder rejects.
        """
        state = self.initial_condition(ic).build(self, **self.resolve_ic_params(ic, **params))
        if not self.grid.stored_on_more_points:
            return state
        truncate = jax.jit(lambda s: jax.tree.map(self.grid.truncate, s))
        if not jax.sharding.get_abstract_mesh().empty:  # already under a mesh (the driver's, or traced)
            return truncate(state)
        with jax.set_mesh(self.grid.mesh):
            return truncate(state)

    def abstract_state(self) -> State:
        """Shapes, dtypes and shardings of the state (``jax.ShapeDtypeStruct`` pytree), without computing it.

        Used to restore checkpoints onto this equation's grid and mesh. Default: traced from the first initial
        condition with its default parameters; equations with a known layout override it.
        """
        first = next(iter(self.initial_conditions))
        mesh = self.grid.mesh

        def concrete(a: jax.ShapeDtypeStruct) -> jax.ShapeDtypeStruct:  # traced under set_mesh: abstract mesh
            spec = getattr(a.sharding, "spec", None)
            sharding = NamedSharding(mesh, spec) if spec is not None else a.sharding
            return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)

        return jax.tree.map(concrete, jax.eval_shape(lambda: self.initial_state(first)))

    def max_rate(self, state: State) -> jax.Array | None:
        """Largest advective rate ``max(sum_i |u_i| / dx_i)`` for the CFL condition; None if not applicable."""
        return None

    def nonlinear_with_rate(self, state: State, t: jax.Array, reduce: Callable | None = None
                            ) -> tuple[State, jax.Array]:
        """``nonlinear(state, t)`` and ``max_rate(state)`` together, for the driver's CFL control. Equations whose
        nonlinear term already holds the physical velocity on the grid points override it (and
        :meth:`fuses_rate`) so that the rate costs no transform; the default computes the two separately.

        ``reduce`` (fused equations): maps the per-point rate field ``sum_i |u_i| / dx_i`` to the rate; None is
        the maximum. The driver's stage loop passes a :class:`~solvers._gated_max.GatedMax`, which reduces
        (across devices) in a step's first stage only and returns 0 in the others, so the nonlinear term is
        traced once, outside any branch. Equations that form their products on the grid points pass it to
        :meth:`solvers.Grid.from_physical_and_max`, which carries the maximum in the forward all-to-all where
        it can."""
        return self.nonlinear(state, t), self.max_rate(state)

    def fuses_rate(self) -> bool:
        """True where :meth:`nonlinear_with_rate` takes the rate from the nonlinear term's own physical fields
        (the driver's step computes it in the first stage only)."""
        return False

    _run_points: tuple[int, ...] | None = None

    def probe_for(self, points: tuple[int, ...]) -> None:
        """Build the programs of a run on ``points`` rather than those of this equation's own grid.

        The memory check compiles the run's programs on a small probe grid and scales their bytes per point to
        the run's grid; an equation whose programs depend on the grid's size (the batched transforms of
        :meth:`~solvers.equations._velocity.VelocityEquation.lamb_hat`) chooses them by :attr:`run_points`."""
        self._run_points = tuple(int(n) for n in points)

    @property
    def run_points(self) -> tuple[int, ...]:
        """The points of the run whose programs this equation builds: its grid's, or those given to
        :meth:`probe_for`."""
        return self._run_points if self._run_points is not None else tuple(self.grid.shape)

    def diagnostics(self, state: State, t: jax.Array, dt: jax.Array) -> dict[str, jax.Array]:
        """Scalar diagnostics (replicated 0-d arrays, computed by sharded reductions); default: ``energy``.

        The main job computes them inside its compiled time loop, after the step they belong to (``t`` and ``dt``
        are then the device's time and that step's dt, arrays in the state's real precision; the CSV gets the
        host's float64 time). Anything but a scalar is refused with a ``ValueError`` naming it."""
        return {"energy": self.energy(state)}

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

