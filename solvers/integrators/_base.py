"""The base class of time integrators: ``(equation, dt) -> step``, with dt-dependent coefficients cached."""

from __future__ import annotations

import abc
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ..model import Equation
from ..model.linear import FusedRate, linear_form
from ..model.tree import State, tree_add
from ..stepping import StepAux, fixed_steps

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
        """Bind the scheme to ``equation`` (after :meth:`check_equation`).

        Raises:
          TypeError: ``equation`` is not an Equation, or its linear part has a form this scheme cannot advance
            (naming the schemes that can).
        """
        self.check_equation(equation)
        self.equation = equation
        self._fused: bool | None = None

    def check_equation(self, equation: Equation) -> None:
        """Raise ``TypeError`` where this scheme cannot advance ``equation``. The default asks for an
        :class:`~solvers.Equation` with a linear part (diagonal where :attr:`needs_diagonal`); a scheme for other
        systems (particles: no linear part) overrides it. Binding and rebinding (:func:`make_integrator`) call it."""
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

    def coefficients(self, dt: jax.Array) -> Coefficients:
        """Everything a step needs that depends only on ``dt`` and ``L`` (none by default)."""
        return ()

    def step(self, state: State, t: jax.Array, dt: jax.Array, coeffs: Coefficients) -> State:
        """Advance ``state`` from ``t`` to ``t + dt`` (:meth:`step_aux` without its aux)."""
        if type(self).finish is Integrator.finish and type(self).step_aux is Integrator.step_aux:
            raise NotImplementedError(f"{type(self).__name__} implements none of step, step_aux, finish")
        return self.step_aux(state, t, dt, coeffs, rate=False)[0]

    def step_aux(self, state: State, t: jax.Array, dt: jax.Array, coeffs: Coefficients, rate: bool = False, *,
                 synced: bool = False) -> tuple[State, StepAux]:
        """One step and what it computed that a controller may use: ``(state at t + dt, StepAux)``, the aux's
        ``rate`` the advective rate of ``state`` (from its first stage's physical fields where the equation fuses
        them, :class:`~solvers.FusedRate`, else ``max_rate``) where ``rate`` (static), else None.

        By default :meth:`first_evaluation` then :meth:`finish`; a scheme that overrides only :meth:`step` gets the
        rate from ``max_rate``. ``synced`` (a GPU, where a branch costs a round trip to the host; the run passes it
        only where True): branch nowhere. Pure and jit-able."""
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        if type(self).finish is Integrator.finish:  # a scheme with its own step only
            if type(self).step is Integrator.step:
                raise NotImplementedError(f"{type(self).__name__} implements none of step, step_aux, finish")
            r = self.equation.max_rate(state) if rate else None
            return self.step(state, t, dt, coeffs), StepAux(None if r is None else jnp.asarray(r).astype(real))
        first, r = self.first_evaluation(state, t, rate)
        if rate and r is None:
            r = self.equation.max_rate(state)
        return self.finish(state, first, t, dt, coeffs), StepAux(jnp.asarray(r).astype(real) if rate else None)

    def first_evaluation(self, state: State, t: jax.Array, rate: bool) -> tuple[State | None, jax.Array | None]:
        """The part of a step that does not depend on ``dt``: the nonlinear term at ``state`` (None for schemes
        whose first evaluation needs ``dt``), and, if ``rate``, the equation's advective rate of ``state`` (from
        the same physical fields where the equation provides ``nonlinear_and_rate``, :class:`~solvers.FusedRate`),
        so the CFL rate costs no transform of its own."""
        eq = self.equation
        n, r = eq.nonlinear(state, t), None
        if rate:
            n, r = eq.nonlinear_and_rate(state, t, jnp.max) if self.fuses_rate(state, t) else (n, eq.max_rate(state))
        if self.explicit_linear:
            n = tree_add(apply_linear_lean(eq.linear(), state), n)
        return n, r

    #: whether the first evaluation is the whole right-hand side ``L u + N(u, t)`` (schemes explicit in ``L``)
    explicit_linear: ClassVar[bool] = False

    def finish(self, state: State, first: State | None, t: jax.Array, dt: jax.Array, coeffs: Coefficients) -> State:
        """The rest of the step from ``t`` to ``t + dt`` given :meth:`first_evaluation`'s ``first``. A scheme may
        override :meth:`step` (or :meth:`step_aux`) instead."""
        raise NotImplementedError(f"{type(self).__name__} implements neither finish nor step")

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

    def first_stage_rate(self, state: State, t: jax.Array) -> jax.Array:
        """The advective rate of ``state`` as a step's first stage computes it for the CFL control: from the
        nonlinear term's physical fields where the equation fuses them (the nonlinear term itself is left unused,
        so XLA drops its forward transform), else ``max_rate``."""
        eq = self.equation
        return eq.nonlinear_and_rate(state, t, jnp.max)[1] if self.fuses_rate(state, t) else eq.max_rate(state)

    def stage_loop(self, state: State, t: jax.Array, dt: jax.Array, rate: bool, offsets: jax.Array,
                   update: Callable, init: Any, synced: bool = False,
                   linear: bool = True, current: Callable | None = None) -> tuple[Any, StepAux]:
        """The stage loop of an explicit Runge-Kutta scheme: ``update(i, regs, f, dt) -> regs`` folds stage ``i``'s
        right-hand side ``L y + N(y, t + offsets[i] dt)`` (``y = regs[0]``) into the registers (``init``).

        One ``lax.fori_loop`` over the stages (a static trip count: reverse-mode differentiable), so the register
        updates stay in place (a first stage taken out of the loop kept one more state alive). Where ``rate``, the
        first stage also gives the rate of ``state``: from the nonlinear term's own physical fields where the
        equation fuses them, its maximum in a ``lax.cond`` taken in the first stage only (``synced``, on a GPU, where
        a branch costs a round trip to the host: every stage takes it and the first is kept), else ``max_rate``
        once before the loop. ``linear=False`` (an IMEX scheme, whose linear part ``update`` treats): ``f`` is the
        nonlinear term alone. ``current(i, regs)``: stage ``i``'s ``y`` where it is not ``regs[0]`` (a scheme that keeps
        it in a register of its own stack). Returns ``(regs, StepAux)``."""
        lin = self.equation.linear() if linear else None
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        fused = rate and self.fuses_rate(state, t)
        gpu = fused and (synced or _on_gpu(self.equation))

        def body(i, carry):
            regs, r = carry
            y, ti = (regs[0] if current is None else current(i, regs)), t + offsets[i] * dt
            if not fused:
                f = self.stage_rhs(lin, y, ti) if linear else self.equation.nonlinear(y, ti)
                return update(i, regs, f, dt), r
            first = i == 0
            reduce = jnp.max if gpu else (lambda f: jax.lax.cond(
                first, lambda a: jnp.max(a).astype(real), lambda a: jnp.zeros((), real), f))
            n, ri = self.equation.nonlinear_and_rate(y, ti, reduce)
            f = tree_add(apply_linear_lean(lin, y), n) if linear else n
            return update(i, regs, f, dt), jnp.where(first, jnp.asarray(ri).astype(real), r)

        r0 = jnp.zeros((), real) if fused else None
        regs, r = jax.lax.fori_loop(0, offsets.shape[0], body, (init, r0))
        if rate and not fused:
            r = jnp.asarray(self.equation.max_rate(state)).astype(real)
        return regs, StepAux(r if rate else None)

    @staticmethod
    def stage_table(state: State, *rows) -> jax.Array:
        """Per-stage coefficients ``rows`` as one array of the state's real dtype (indexed inside a stage loop)."""
        real = jnp.finfo(jax.tree.leaves(state)[0].dtype).dtype
        return jnp.asarray(np.array(rows), real)

    def stable_dt(self) -> float:
        """Largest dt the linear part allows (inf for schemes that treat it exactly)."""
        if self.treats_linear_exactly or linear_form(self.equation) != "diagonal":
            return float("inf")
        lam = _largest_eigenvalue(self.equation)
        return float("inf") if lam == 0 else self.linear_stability_radius / lam

    #: |dt * lambda| limit of the explicit scheme on the negative real axis (RK4: 2.78).
    linear_stability_radius: ClassVar[float] = float("inf")


_LAMBDA: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _largest_eigenvalue(equation) -> float:
    """``max |L|`` of a diagonal linear part: one program, and once per equation (a later run asks again)."""
    try:
        return _LAMBDA[equation]
    except (KeyError, TypeError):
        pass
    lam = float(jax.jit(lambda: jnp.max(jnp.stack([jnp.max(jnp.abs(a)) for a in jax.tree.leaves(
        equation.linear())])))())
    try:
        _LAMBDA[equation] = lam
    except TypeError:  # an equation that cannot be a weak key: computed every time
        pass
    return lam


def _on_gpu(equation) -> bool:
    """Whether the equation's devices are GPUs (a branch there costs a round trip to the host)."""
    return next(iter(equation.grid.mesh.devices.flat)).platform == "gpu"


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
