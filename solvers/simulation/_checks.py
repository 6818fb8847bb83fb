"""What a run checks before it steps: the outputs it is given, the initial state, and what the equation's own
methods return, each mistake as one line that names the argument or method, the expected and the received.

The methods are checked by their abstract values (:func:`jax.eval_shape`: traced, nothing computed), once per
equation object, so a run pays no cost per step and a second run of the same equation none at all.
"""

from __future__ import annotations

import numbers
import warnings
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..model import Equation
from ..model.linear import DiagonalLinear, ImplicitLinear, implicit_solve_at
from ..outputs.base import Output

#: the equations whose methods passed the checks (equation -> the names checked)
_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# ----- outputs --------------------------------------------------------------------------------------------------
def outputs_list(outputs: Any, equation: Equation) -> list[Output]:
    """``outputs`` as a list, each a :class:`~solvers.Output` meant for ``equation``'s grid.

    Raises:
      TypeError: ``outputs`` is not a sequence of outputs (one output given alone, naming it). ValueError: an
        output built for an equation on another grid or with another state.
    """
    if isinstance(outputs, Output):
        name = type(outputs).__name__
        raise TypeError(f"outputs must be a sequence of outputs, got one {name}: write outputs=[{name}(...)]")
    if isinstance(outputs, (str, bytes, Mapping)) or not isinstance(outputs, Iterable):
        raise TypeError(f"outputs must be a sequence of solvers.Output objects (a list), got "
                        f"{type(outputs).__name__}")
    out = list(outputs)
    for o in out:
        if not isinstance(o, Output):
            raise TypeError(f"outputs: every output must be a solvers.Output, got {type(o).__name__}")
        other = getattr(o, "equation", None)
        if isinstance(other, Equation) and other is not equation:
            why = _other_grid(other, equation)
            if why:
                raise ValueError(f"outputs: the {type(o).__name__} was built for {other.label()} {why[0]}, but the "
                                 f"run advances {equation.label()} {why[1]}: build it with the run's equation")
    return out


def _other_grid(other: Equation, equation: Equation) -> tuple[str, str] | None:
    """How ``other``'s grid or state and ``equation``'s differ, in words (None: they agree)."""
    a, b = other.grid, equation.grid
    if a is b:
        return None
    if tuple(a.shape) != tuple(b.shape) or tuple(a.modes) != tuple(b.modes):
        return f"on a {_shape(a.modes)} grid", f"on a {_shape(b.modes)} grid"
    if tuple(a.kinds) != tuple(b.kinds) or not np.allclose(a.box_length, b.box_length, rtol=1e-12, atol=0):
        return tuple(f"on a grid of bases {', '.join(g.kinds)} and box {_numbers(g.box_length)}" for g in (a, b))
    if a.mesh != b.mesh:
        return tuple(f"on a mesh of {_mesh(g.mesh)}" for g in (a, b))
    sa, sb = other.abstract_state(), equation.abstract_state()
    if jax.tree.structure(sa) != jax.tree.structure(sb) or any(
            (x.shape, x.dtype) != (y.shape, y.dtype) for x, y in zip(jax.tree.leaves(sa), jax.tree.leaves(sb))):
        return f"whose state is {_describe(sa)}", f"whose state is {_describe(sb)}"
    return None


def warn_unreached(outputs: list[Output], t_end: float) -> None:
    """Warn about outputs that ask for times after ``t_end`` (nothing is written for them in this run)."""
    for o in outputs:
        later, t = [], t_end
        while len(later) < 4 and (s := o.stop_time(t)) is not None and s > t:
            later.append(s)
            t = s
        if later:
            more = ", ..." if len(later) == 4 else ""
            warnings.warn(f"outputs: the {type(o).__name__} asks for t = {_numbers(later[:3])}{more}, after t_end = "
                          f"{t_end:g}: this run writes nothing for those times", UserWarning, stacklevel=3)


# ----- the state ------------------------------------------------------------------------------------------------
def placed_state(value: Any, equation: Equation, name: str) -> Any:
    """``value`` checked against ``equation``'s state (structure, shapes, dtypes) and placed on its sharding: a
    host array (numpy) or an array on other devices or another sharding is copied there (``jax.device_put``).

    Raises:
      TypeError: another structure than the state's, or a leaf that is no array. ValueError: a leaf of another
        shape or dtype (naming ``name``, the leaf, what it is and what the state's is).
    """
    like = abstract_state(equation)
    if like is None:  # an equation that cannot say what its state is: nothing to check against
        return value
    check_like(value, like, name, f"the spectral state of {equation.label()}")

    def place(a, want):
        sharding = getattr(want, "sharding", None)
        if sharding is None:
            return a
        if isinstance(a, jax.Array) and a.sharding.is_equivalent_to(sharding, a.ndim):
            return a
        try:
            return jax.device_put(a, sharding)
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"{name}: cannot place it on the grid's sharding {sharding.spec} "
                             f"({_mesh(sharding.mesh)}): {str(e).splitlines()[0]}") from None

    return jax.tree.map(place, value, like)


def check_like(value: Any, like: Any, name: str, whose: str) -> None:
    """``value`` (arrays, tracers or abstract values) has ``like``'s structure, shapes and dtypes.

    Raises:
      TypeError: another structure, or a leaf that is no array. ValueError: another shape or dtype.
    """
    if jax.tree.structure(value) != jax.tree.structure(like):
        raise TypeError(f"{name} is {_describe(value)}, expected {_describe(like)} ({whose})")
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(like)[0]]
    for path, got, want in zip(paths, jax.tree.leaves(value), jax.tree.leaves(like)):
        if not hasattr(got, "shape") or not hasattr(got, "dtype"):
            raise TypeError(f"{name}{path} is a {type(got).__name__}, expected an array {_array(want)} ({whose})")
        if tuple(got.shape) != tuple(want.shape):
            raise ValueError(f"{name}{path} has shape {tuple(got.shape)}, expected {_array(want)} ({whose})")
        if np.dtype(got.dtype) != np.dtype(want.dtype):
            raise ValueError(f"{name}{path} has dtype {np.dtype(got.dtype).name}{_precision(got, want)}, expected "
                             f"{_array(want)} ({whose})")


# ----- the equation's methods -----------------------------------------------------------------------------------
def check_methods(equation: Equation) -> None:
    """What ``equation``'s ``nonlinear``, ``linear`` and ``implicit_solve`` return, traced on its abstract state
    (once per equation object): the state's structure, shapes, dtypes and sharding (``linear``: broadcastable to
    every leaf, real or complex of the grid's precision).

    Raises:
      TypeError: a result of another structure. ValueError: another shape, dtype, precision or sharding (naming the
        method, what it returned and what the state is).
    """
    try:
        done = _CHECKED.setdefault(equation, set())
    except TypeError:  # an equation that takes no weak reference: checked every time
        done = set()
    todo = [m for m in ("nonlinear", "linear", "implicit_solve") if m not in done and _defines(equation, m)]
    like = abstract_state(equation) if todo else None
    if like is None:
        return
    leaves = jax.tree.leaves(like)
    real = jnp.finfo(leaves[0].dtype).dtype
    label = equation.label()
    with _on_mesh(equation):
        for method in todo:
            if method == "nonlinear":
                out = jax.eval_shape(equation.nonlinear, like, jax.ShapeDtypeStruct((), real))
                _check_result(out, like, f"{label}.nonlinear(state, t) returned")
            elif method == "linear":
                _check_linear(jax.eval_shape(equation.linear), like, label)
            else:
                out = jax.eval_shape(lambda s, h: implicit_solve_at(equation, s, equation.implicit_factor(h), h),
                                     like, jax.ShapeDtypeStruct((), real))
                _check_result(out, like, f"{label}.implicit_solve(rhs, factor) returned")
            done.add(method)


def abstract_state(equation: Equation) -> Any:
    """``equation.abstract_state()``, or None for an equation that has neither initial conditions nor its own
    ``abstract_state`` (its state is known only from the one a caller gives)."""
    if not equation.initial_conditions and type(equation).abstract_state is Equation.abstract_state:
        return None
    return equation.abstract_state()


def _defines(equation: Equation, method: str) -> bool:
    if method == "nonlinear":
        return type(equation).nonlinear is not Equation.nonlinear
    if method == "linear":
        return isinstance(equation, DiagonalLinear) and not isinstance(equation, ImplicitLinear)
    return isinstance(equation, ImplicitLinear)


def _check_result(out: Any, like: Any, what: str) -> None:
    """A method's result has the state's structure, shapes, dtypes and sharding."""
    whose = "the spectral state's"
    if jax.tree.structure(out) != jax.tree.structure(like):
        raise TypeError(f"{what} {_describe(out)}, expected {_describe(like)} ({whose})")
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(like)[0]]
    for path, got, want in zip(paths, jax.tree.leaves(out), jax.tree.leaves(like)):
        at = f" (leaf {path})" if path else ""
        if tuple(got.shape) != tuple(want.shape):
            raise ValueError(f"{what} shape {tuple(got.shape)}{at}, expected {_array(want)} ({whose})")
        if np.dtype(got.dtype) != np.dtype(want.dtype):
            raise ValueError(f"{what} dtype {np.dtype(got.dtype).name}{at}{_precision(got, want)}, expected "
                             f"{_array(want)} ({whose})")
        a, b = _spec(got), _spec(want)
        if a is not None and b is not None and a != b:
            raise ValueError(f"{what} an array sharded {_spec_text(a)}{at}, expected {_array(want)} sharded "
                             f"{_spec_text(b)} ({whose}: grid.spectral_sharding)")


def _check_linear(out: Any, like: Any, label: str) -> None:
    """``linear()``: one array broadcastable to every state leaf, or a pytree like the state; real or complex of the
    grid's precision, complex only for a complex state."""
    what = f"{label}.linear() returned"
    leaves = jax.tree.leaves(like)
    if jax.tree.structure(out) == jax.tree.structure(like):
        pairs = list(zip(jax.tree.leaves(out), leaves))
    elif len(jax.tree.leaves(out)) == 1 and jax.tree.structure(out).num_nodes == 1:
        pairs = [(out, leaf) for leaf in leaves]
    else:
        raise TypeError(f"{what} {_describe(out)}, expected one array that broadcasts to the state's "
                        f"{_describe(like)}, or a pytree of that structure")
    for got, want in pairs:
        shape = tuple(np.shape(got))
        try:
            fits = np.broadcast_shapes(shape, tuple(want.shape)) == tuple(want.shape)
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{what} shape {shape}, which does not broadcast to the spectral state's "
                             f"{_array(want)}")
        dtype = np.dtype(getattr(got, "dtype", np.float64))
        if not (jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.complexfloating)):
            raise ValueError(f"{what} dtype {dtype.name}, expected a real or complex L of the grid's precision "
                             f"({jnp.finfo(want.dtype).dtype.name})")
        weak = getattr(got, "weak_type", False) or isinstance(got, numbers.Number)
        if not weak and jnp.finfo(dtype).dtype != jnp.finfo(want.dtype).dtype:
            raise ValueError(f"{what} dtype {dtype.name}, expected the grid's precision "
                             f"({jnp.finfo(want.dtype).dtype.name}, or its complex) for the spectral state's "
                             f"{_array(want)}")
        if jnp.issubdtype(dtype, jnp.complexfloating) and not jnp.issubdtype(want.dtype, jnp.complexfloating):
            raise ValueError(f"{what} a complex L ({dtype.name}) for a real state ({_array(want)}): L times the "
                             "state would be complex")


# ----- texts ------------------------------------------------------------------------------------------------------
def _array(a: Any) -> str:
    return f"{tuple(a.shape)} {np.dtype(a.dtype).name}"


def _precision(got: Any, want: Any) -> str:
    """`` (float32 precision on a float64 grid)`` where the precisions differ, else nothing."""
    try:
        a, b = jnp.finfo(got.dtype).dtype, jnp.finfo(want.dtype).dtype
    except ValueError:  # an integer or boolean dtype
        return ""
    return f" ({a.name} precision on a {b.name} grid)" if a != b else ""


def _describe(tree: Any) -> str:
    """A tree in words: ``one array (16, 8) complex128``, ``a tuple of 2 arrays``, ``a dict with keys 'u', 'v'``."""
    leaves = jax.tree.leaves(tree)
    if tree is None:
        return "None"
    if len(leaves) == 1 and jax.tree.structure(tree).num_nodes == 1:
        leaf = leaves[0]
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            return f"one array {_array(leaf)}"
        return f"a {type(leaf).__name__}"
    n = f"{len(leaves)} array{'s' if len(leaves) != 1 else ''}"
    if isinstance(tree, dict):
        return f"a dict with keys {', '.join(map(repr, tree))} ({n})"
    return f"a {type(tree).__name__} of {n}"


def _numbers(values) -> str:
    return " ".join(f"{float(v):g}" for v in values)


def _shape(shape) -> str:
    return "x".join(map(str, shape))


def _mesh(mesh) -> str:
    return ", ".join(f"{k}: {v}" for k, v in zip(mesh.axis_names, mesh.axis_sizes))


def _spec(a: Any) -> tuple | None:
    """The partition of ``a`` along each axis (mesh axes of size 1 count as none); None: not known."""
    sharding = getattr(a, "sharding", None)
    spec, mesh = getattr(sharding, "spec", None), getattr(sharding, "mesh", None)
    if spec is None or mesh is None:
        return None
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))

    def used(entry):
        names = entry if isinstance(entry, tuple) else (entry,)
        kept = tuple(n for n in names if n is not None and sizes.get(n, 1) > 1)
        return kept or None

    entries = tuple(spec) + (None,) * (len(a.shape) - len(tuple(spec)))
    return tuple(used(e) for e in entries)


def _spec_text(spec: tuple) -> str:
    parts = ["None" if e is None else repr(e[0]) if len(e) == 1 else repr(e) for e in spec]
    return f"P({', '.join(parts)})"


def _on_mesh(equation: Equation):
    """The equation's mesh as context for tracing (nothing where one is set already)."""
    import contextlib

    if not jax.sharding.get_abstract_mesh().empty:
        return contextlib.nullcontext()
    try:
        return jax.set_mesh(equation.grid.mesh)
    except ValueError:  # inside a trace (jit, grad), where set_mesh is refused: the arrays carry the mesh
        return contextlib.nullcontext()
