"""The base class of time integrators: ``(equation, dt) -> step``, with dt-dependent coefficients cached."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ..grids import GatedMax
from ..model import Equation
from ..model.linear import FusedRate, linear_form
from ..model.tree import State, tree_add
from ..stepping import fixed_steps

Coefficients = Any


class Integrator(abc.ABC):  # noqa: B024  (a scheme overrides finish, or step as before)
    """One time-stepping scheme for ``d state / dt = L state + N(state, t)``: the scheme and nothing else.

    ``coefficients(dt)`` computes everything that depends only on ``dt`` and ``L`` (exponentials, implicit
    factors); ``step(state, t, dt, coefficients)`` advances one step. Both are pure and jit-able. How dt is chosen
    is a controller's business (:class:`~solvers.FixedStep`, :class:`~solvers.CFL`), how steps are looped the
    stepping core's (:mod:`solvers.stepping`).

    Attributes:
      name: the name in :data:`~solvers.INTEGRATORS`. order: formal order of accuracy. treats_linear_exactly: True
        if the stiff linear part sets no stability limit (exponential, integrating-factor, implicit schemes).
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    order: ClassVar[int] = 0
    treats_linear_exactly: ClassVar[bool] = True
    #: True where ``coefficients(dt)`` is real work (exponentials, implicit factors): under CFL control a run then
    #: keeps dt while the CFL number stays in a band instead of changing it every step
    dt_coefficients: ClassVar[bool] = False
    #: True for schemes that need a diagonal ``L`` (``equation.linear()``): explicit, exponential and
    #: integrating-factor schemes; IMEX schemes also take an equation's implicit solves
    needs_diagonal: ClassVar[bool] = True

    def __init__(self, equation: Equation):
        """Bind the scheme to ``equation``.

        Raises:
          TypeError: ``equation`` is not an Equation, or its linear part has a form this scheme cannot advance
            (naming the schemes that can).
        """
        if not isinstance(equation, Equation):
            raise TypeError(f"{type(self).__name__}: equation must be a solvers.Equation, got "
                            f"{type(equation).__name__}")
        form = linear_form(equation)
        if form == "none":
            raise TypeError(f"{equation.label()} has no linear part: define linear() (a diagonal L) or "
                            "implicit_factor(h) and implicit_solve(rhs, factor)")
        if self.needs_diagonal and form != "diagonal":
            raise TypeError(f"{self.name or type(self).__name__} needs a diagonal linear operator (linear()), but "
                            f"{equation.label()} solves its linear part implicitly (it couples coefficients, e.g. "
                            "along a wall-normal axis with boundary conditions); use an IMEX scheme (imex)")
        self.equation = equation
        self._fused: bool | None = None

    def coefficients(self, dt: jax.Array) -> Coefficients:
        return ()

    def step(self, state: State, t: jax.Array, dt: jax.Array, coeffs: Coefficients) -> State:
        """Advance ``state`` from ``t`` to ``t + dt``: :meth:`first_evaluation` then :meth:`finish`."""
        first, _ = self.first_evaluation(state, t, rate=False)
        return self.finish(state, first, t, dt, coeffs)

    def first_evaluation(self, state: State, t: jax.Array, rate: bool) -> tuple[State | None, jax.Array | None]:
        """The part of a step that does not depend on ``dt``: the nonlinear term at ``state`` (None for schemes
        whose first evaluation needs ``dt``), and, if ``rate``, the equation's advective rate of ``state`` (from
        the same physical fields where the equation provides ``nonlinear_and_rate``, :class:`~solvers.FusedRate`).

        The driver chooses ``dt`` from that rate and then calls :meth:`finish`, so the CFL rate costs no transform
        of its own."""
        eq = self.equation
        n, r = eq.nonlinear(state, t), None
        if rate:
            n, r = eq.nonlinear_and_rate(state, t) if self.fuses_rate(state, t) else (n, eq.max_rate(state))
        if self.explicit_linear:
            n = tree_add(apply_linear_lean(eq.linear(), state), n)
        return n, r

    #: whether the first evaluation is the whole right-hand side ``L u + N(u, t)`` (schemes explicit in ``L``)
    explicit_linear: ClassVar[bool] = False

    def finish(self, state: State, first: State | None, t: jax.Array, dt: jax.Array, coeffs: Coefficients) -> State:
        """The rest of the step from ``t`` to ``t + dt`` given :meth:`first_evaluation`'s ``first``. A scheme
        written before this split may override :meth:`step` only (the driver then computes the rate separately).
        """
        raise NotImplementedError(f"{type(self).__name__} implements neither finish nor step")

    def controlled_step(self, state: State, t: jax.Array, coeffs: Coefficients, choose: Callable,
                        rate: bool = True, synced: bool = False) -> tuple[State, jax.Array, jax.Array, Any]:
        """One step whose ``dt`` is chosen on the device from the state's advective rate.

        ``choose(rate) -> (dt, go, aux)`` (``rate`` None when not ``rate``) runs after the first evaluation; where
        ``go`` is False the state is returned unchanged (the loop stops there: a time to land on, a new dt for the
        coefficients). ``synced`` (a GPU, :func:`~solvers.stepping.host_control_flow`): no branch; the step is taken
        anyway and selected. Returns ``(state, dt, go, aux)``. Pure and jit-able.
        """
        if type(self).finish is Integrator.finish:  # a scheme with its own step only
            first, r = None, self.equation.max_rate(state) if rate else None
            dt, go, aux = choose(r)
            return _where_go(synced, go, lambda s: self.step(s, t, dt, coeffs), state), dt, go, aux
        first, r = self.first_evaluation(state, t, rate)
        if rate and first is None:
            r = self.equation.max_rate(state)
        dt, go, aux = choose(r)
        return _where_go(synced, go, lambda s: self.finish(s, first, t, dt, coeffs), state), dt, go, aux

    def advance(self, state: State, t0: float, dt: float, steps: int) -> State:
        """Take ``steps`` fixed steps of ``dt`` from ``t0`` in one compiled loop (the stepping core's
        :func:`~solvers.stepping.fixed_steps`, which :func:`~solvers.rollout` and :func:`~solvers.simulate` take
        too: the same steps to the bit).

        A convenience for scripts, notebooks and tests. One compiled loop, not a Python loop of compiled steps:
        hundreds of queued programs with all-to-alls can starve one of the CPU devices' collective threads.

        Raises:
          TypeError, ValueError: ``steps`` not a positive int, ``dt`` not a positive number.
        """
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise (TypeError if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) else ValueError)(
                f"steps must be a positive int, got {steps!r}")
        if not (isinstance(dt, (int, float, np.floating)) and not isinstance(dt, bool) and dt > 0):
            raise ValueError(f"dt must be a positive number, got {dt!r}")
        if self._jitted is None:
            def loop(state, t0, dt, steps):
                return fixed_steps(self, state, t0, dt, steps, self.coefficients(dt))

            self._jitted = jax.jit(loop, static_argnums=3)
        mesh = self.equation.grid.mesh
        if jax.sharding.get_abstract_mesh() == mesh.abstract_mesh:
            return jax.block_until_ready(self._jitted(state, t0, dt, int(steps)))
        with jax.set_mesh(mesh):
            return jax.block_until_ready(self._jitted(state, t0, dt, int(steps)))

    _jitted = None

    def stage_rhs(self, lin: State, y: State, t: jax.Array) -> State:
        """``L y + N(y, t)`` for one stage of an explicit scheme (a real ``L`` scales without a complex copy)."""
        return tree_add(apply_linear_lean(lin, y), self.equation.nonlinear(y, t))

    def fuses_rate(self, state: State, t: jax.Array) -> bool:
        """Whether the equation computes its CFL rate from its nonlinear term's physical fields
        (:class:`~solvers.FusedRate` with a rate, not None, for this state; decided once, by shapes)."""
        if self._fused is None:
            eq = self.equation
            self._fused = isinstance(eq, FusedRate) and jax.eval_shape(
                lambda s, t: eq.nonlinear_and_rate(s, t, jnp.max)[1], state, t) is not None
        return self._fused

    def stage_rhs_and_rate(self, lin: State, y: State, t: jax.Array, rate: jax.Array | None,
                           reduce: Callable | None = None) -> tuple[State, jax.Array | None]:
        """:meth:`stage_rhs` and the advective rate of ``y``: from the nonlinear term's own physical fields where
        the equation fuses them (:meth:`fuses_rate`; ``reduce`` as in :class:`~solvers.FusedRate`), else
        ``rate`` (computed once before the stage loop)."""
        if rate is None or not self.fuses_rate(y, t):
            return self.stage_rhs(lin, y, t), rate
        n, r = self.equation.nonlinear_and_rate(y, t, reduce)
        return tree_add(apply_linear_lean(lin, y), n), r

    def first_stage_rate(self, state: State, t: jax.Array) -> jax.Array:
        """The advective rate of ``state`` as a step's first stage computes it for the CFL control: from the
        nonlinear term's physical fields where the equation fuses them (the nonlinear term itself is left unused,
        so XLA drops its forward transform), else ``max_rate``."""
        eq = self.equation
        return eq.nonlinear_and_rate(state, t, jnp.max)[1] if self.fuses_rate(state, t) else eq.max_rate(state)

    def fixed_step(self, state: State, t: jax.Array, dt: jax.Array, coeffs: Coefficients = ()) -> State:
        """:meth:`step` of a scheme whose :meth:`controlled_step` runs :meth:`stage_loop`: the same loop with
        ``dt`` given (a static trip count), so the bare step and the driver's step are one implementation.
        (On 8 CPU devices, float32: the same answers to the last bit and the same bytes per
        point as the separate ``fori_loop`` over the stages it replaces; 10.2 against 8.2 ms per RK4 step at
        256^2 in 2D, and the same time within 2% for LSRK4 at 32^3 in 3D.)"""
        return self.controlled_step(state, t, coeffs, lambda r: (dt, True, ()), rate=False, synced=False)[0]

    def stage_loop(self, state: State, t: jax.Array, choose: Callable, rate: bool, offsets: jax.Array,
                   update: Callable, init: tuple, synced: bool = False) -> tuple[tuple, jax.Array, jax.Array, Any]:
        """The stage loop of a Runge-Kutta scheme whose dt is chosen at stage 0 (``controlled_step``).

        ``update(i, regs, f, dt, go) -> regs`` folds stage ``i``'s right-hand side ``f`` into the registers (``init``);
        stage ``i`` evaluates at ``t + offsets[i] dt`` and ``offsets[0]`` is 0, so ``choose`` sees the rate of ``state``
        before any dt is needed. Where ``go`` is False only stage 0 runs (on a GPU every stage runs, see below) and
        ``update`` must leave the result unchanged, in every stage (``jnp.where(go, ...)``). One ``lax.while_loop`` over
        the stages, so the register updates stay in place (a first stage taken out of the loop kept one more state
        alive). Where the equation fuses the CFL rate into its nonlinear term, the rate's reduction (a maximum across
        devices) sits in a ``lax.cond`` taken in the first stage only, passed to the equation as ``reduce``
        (:class:`~solvers.grids.GatedMax`; a grid that carries the maximum in its forward all-to-all carries it in
        the first stage only): the nonlinear term itself is traced once, outside any branch. (With the whole nonlinear
        term inside the ``cond``, traced once in each branch, the CFL loop took 1.10x the fixed-dt loop at 256^2 in 2D
        and 1.02x with the reduction alone in it; see the README.) Where ``choose`` says ``go`` is True before anything
        is traced (a given dt: :meth:`fixed_step`), the loop has a static trip count, so the step is reverse-mode
        differentiable (``solvers.rollout``).

        On a GPU (:func:`host_control_flow`) each ``lax.cond`` and each turn of a ``lax.while_loop`` costs a round
        trip to the host, so there the loop has the static trip count always (every stage runs; where ``go`` is
        False ``update`` keeps the result) and every stage takes the maximum (only the first stage's is used): no
        branch at all. (On an H200 the main job's 2D step at 256^2 took 1.42x the bare step with
        the branches; the benchmarks page has the measurements.)
        """
        lin = self.equation.linear()
        stages = offsets.shape[0]
        r0 = self.equation.max_rate(state) if rate and not self.fuses_rate(state, t) else None
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        probe = jnp.zeros((), real) if rate else None
        _, _, aux0 = jax.eval_shape(choose, probe)
        aux0 = jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), aux0)

        always = _always(choose(probe)[1])

        def body(carry):
            i, n, regs, dt, go, aux = carry
            first = i == 0
            y, ti = regs[0], t + offsets[i] * dt
            if rate and r0 is None:  # the rate from the stage's own fields, reduced in the first stage only
                f, r = self.stage_rhs_and_rate(lin, y, ti, probe, GatedMax(True if synced else first, real))
            else:
                f, r = self.stage_rhs_and_rate(lin, y, ti, r0)
            dt_i, go_i, aux_i = choose(r)
            dt = jnp.where(first, jnp.asarray(dt_i, real), dt)
            go = jnp.where(first, go_i, go)
            aux = jax.tree.map(lambda a, b: jnp.where(first, b, a), aux, aux_i)
            n = jnp.where(first, jnp.where(go, stages, 1), n)
            return i + 1, n, update(i, regs, f, dt, go), dt, go, aux

        start = (jnp.int32(0), jnp.int32(stages), init, jnp.zeros((), real), jnp.array(False), aux0)
        if always or synced:  # every stage runs: a static trip count (reverse-mode differentiable where always)
            _, _, regs, dt, go, aux = jax.lax.fori_loop(0, stages, lambda i, c: body(c), start)
        else:
            _, _, regs, dt, go, aux = jax.lax.while_loop(lambda c: c[0] < c[1], body, start)
        return regs, dt, go, aux

    @staticmethod
    def stage_table(state: State, *rows) -> jax.Array:
        """Per-stage coefficients ``rows`` as one array of the state's real dtype (indexed inside a stage loop)."""
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        return jnp.asarray(np.array(rows), real)

    def stable_dt(self) -> float:
        """Largest dt the linear part allows (inf for schemes that treat it exactly)."""
        if self.treats_linear_exactly or linear_form(self.equation) != "diagonal":
            return float("inf")
        lam = float(jax.jit(lambda: jnp.max(jnp.stack([jnp.max(jnp.abs(a)) for a in jax.tree.leaves(
            self.equation.linear())])))())  # one program, not one per operation
        return float("inf") if lam == 0 else self.linear_stability_radius / lam

    #: |dt * lambda| limit of the explicit scheme on the negative real axis (RK4: 2.78).
    linear_stability_radius: ClassVar[float] = float("inf")


def _where_go(synced: bool, go: jax.Array, step: Callable[[State], State], state: State) -> State:
    """``step(state)`` where ``go``, else ``state``: a ``lax.cond``, or where ``synced`` (a GPU) the step taken
    anyway and selected with ``jnp.where`` (a step is wasted only where ``go`` is False: the last step tried of a
    segment). Where ``go`` is a concrete True (a given dt), just ``step(state)``: a ``lax.cond`` on a constant is
    still staged, and under reverse mode its partial evaluation traces the whole step again (a channel's gradient
    traced in 48 s with it, 16 s without, on a loaded 2-core machine)."""
    if go is True or _always(go):
        return step(state)
    if not synced:
        return jax.lax.cond(go, step, lambda s: s, state)
    return jax.tree.map(lambda a, b: jnp.where(go, a, b), step(state), state)


def _always(go) -> bool:
    """Whether ``go`` is a concrete True at trace time (not a traced value)."""
    try:
        return bool(go)
    except jax.errors.ConcretizationTypeError:
        return False


def apply_linear_lean(lin: State, state: State) -> State:
    """:func:`~solvers.equations._base.apply_linear`, with a real ``L`` scaling the real and imaginary parts of a
    complex state separately: no complex copy of ``L`` is formed, so the grid-sized table XLA hoists out of a
    stage loop stays real (half the bytes)."""
    def scale(a, u):
        if jnp.iscomplexobj(u) and not jnp.iscomplexobj(a):
            return jax.lax.complex(a * u.real, a * u.imag)
        return a * u

    if isinstance(lin, (jax.Array, jnp.ndarray)) or jnp.isscalar(lin):
        return jax.tree.map(lambda u: scale(lin, u), state)
    return jax.tree.map(scale, lin, state)


def lin_map(fn, lin: State) -> State:
    """Apply an elementwise function to the linear operator (one array or a pytree)."""
    return jax.tree.map(fn, lin)


def phi_functions(z: jax.Array, count: int = 3, terms: int = 20) -> list[jax.Array]:
    """``phi_1 .. phi_count`` of ``z`` elementwise: ``phi_0 = e^z``, ``phi_{j+1} = (phi_j - 1/j!) / z``.

    Uses the Taylor series ``phi_j(z) = sum_m z^m / (m + j)!`` for ``|z| < 1`` (no cancellation) and the
    recurrence elsewhere; exact in floating point for real (diffusive) and imaginary (dispersive) ``z``.
    """
    small = jnp.abs(z) < 1
    zs = jnp.where(small, z, 0)
    zb = jnp.where(small, 1, z)
    out = []
    big = jnp.expm1(zb)  # z phi_1 = phi_0 - 1
    for j in range(1, count + 1):
        # Taylor: sum_{m < terms} z^m / (m + j)!  (Horner)
        acc = jnp.zeros_like(zs)
        for m in range(terms - 1, -1, -1):
            acc = acc * zs + 1.0 / _factorial(m + j)
        big = big / zb  # phi_j, since big held z phi_j = phi_{j-1} - 1/(j-1)!
        out.append(jnp.where(small, acc, big))
        big = big - 1.0 / _factorial(j)
    return out


def _factorial(n: int) -> float:
    out = 1.0
    for i in range(2, n + 1):
        out *= i
    return out
