"""``max_of``: a forward transform that also returns the maximum of a second field, carried in its all-to-alls.

The solvers' CFL control needs ``max |u|`` across devices once per step; a separate all-reduce cost 4-6% of a
32^3 Navier-Stokes step on 8 CPU devices (2026-11-24). These tests check that the carried maximum is exact,
that the spectrum is unchanged to the bit, and that the compiled program holds no collective beyond the
transform's own all-to-alls; with ``max_if`` (the first stage of a Runge-Kutta step only), that it is carried
only where the flag is set, each carrying exchange in a ``lax.cond``.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import DelegatingBackend, count_op, mesh, put, random
from jax.sharding import NamedSharding, PartitionSpec

import xfft

# (mesh shape, global shape, sharding of the global array, transformed trailing axes, the dtype of x)
CASES = [
    ((8,), (3, 32, 32, 32), (None, "x"), 3, np.float32),  # slab r2c, batched: pads a third axis
    ((2, 4), (3, 16, 16, 16), (None, "x", "y"), 3, np.float32),  # pencil: two moves, each carries it
    ((8,), (64, 64), ("x",), 2, np.float32),  # 2D r2c: a padded move, then a move back (carried once)
    ((8,), (16, 24), ("x",), 2, np.complex64),  # 2D c2c, no third axis: one entry per block
    ((8,), (2, 256, 256), (None, "x"), 2, np.float64),  # batched 2D r2c, float64
    ((2, 4), (16, 24, 8), ("x", "y"), 3, np.complex128),  # pencil c2c, float64
]
IDS = ["slab-r2c-3d", "pencil-r2c-3d", "slab-r2c-2d", "slab-c2c-2d", "slab-r2c-2d-batched-f64",
       "pencil-c2c-f64"]


def _transform(dtype):
    return xfft.xfftn if np.dtype(dtype).kind == "c" else xfft.xrfftn


@pytest.mark.parametrize("axis_types,order", [("explicit", "natural"), ("explicit", "transposed"),
                                              ("auto", "natural")])
@pytest.mark.parametrize("mesh_shape,shape,spec,ndim,dtype", CASES, ids=IDS)
def test_carried_maximum_is_exact_and_costs_no_collective(mesh_shape, shape, spec, ndim, dtype, axis_types, order):
    """Spectrum bit for bit that of the plain call; maximum equal to numpy's; the same all-to-alls and no
    all-reduce in the compiled program (the maximum travels in the exchanges), on Auto and Explicit meshes."""
    m = mesh(mesh_shape, axis_types)
    x = random(shape, dtype, seed=1)
    real = np.finfo(np.dtype(dtype)).dtype
    field = random(shape[len(shape) - ndim:], real, seed=2)
    field.flat[137] = 7.5  # the maximum sits on one device
    xs = put(x, NamedSharding(m, PartitionSpec(*spec)))
    full = tuple(spec) + (None,) * (len(shape) - len(spec))
    fs = put(field, NamedSharding(m, PartitionSpec(*full[len(shape) - ndim:])))  # laid out as x's trailing axes
    fn = _transform(dtype)
    both = jax.jit(lambda a, b: fn(a, ndim=ndim, order=order, max_of=b))
    plain = jax.jit(lambda a: fn(a, ndim=ndim, order=order))
    k, top = both(xs, fs)
    ref = plain(xs)
    assert top.dtype == field.dtype and top.shape == ()
    assert float(top) == 7.5 == field.max()
    assert k.shape == ref.shape and k.sharding.spec == ref.sharding.spec
    np.testing.assert_array_equal(np.asarray(k), np.asarray(ref))
    text, plain_text = both.lower(xs, fs).compile().as_text(), plain.lower(xs).compile().as_text()
    assert count_op(text, "all-to-all") == count_op(plain_text, "all-to-all") > 0
    assert count_op(text, "all-reduce") == count_op(text, "all-gather") == 0


def test_eager_call_and_a_non_finite_maximum():
    """Outside jit too; a NaN anywhere makes the maximum NaN (the solvers' blow-up check relies on it), and -inf
    entries lose to finite ones."""
    m = mesh((8,), "explicit")
    s = NamedSharding(m, PartitionSpec("x"))
    x = put(random((32, 32), np.float32), s)
    field = np.full((32, 32), -np.inf, np.float32)
    field[31, 5] = -3.0
    k, top = xfft.xrfftn(x, ndim=2, max_of=put(field, s))
    assert float(top) == -3.0
    np.testing.assert_array_equal(np.asarray(k), np.asarray(xfft.xrfftn(x, ndim=2)))
    field[2, 2] = np.nan
    assert np.isnan(float(xfft.xrfftn(x, ndim=2, max_of=put(field, s))[1]))


def test_mesh_axes_no_move_crosses_take_one_pmax():
    """A transform whose axes are all local (only a batch axis sharded) has no exchange to carry the maximum:
    one all-reduce takes it, and the value is still exact."""
    m = mesh((8,), "explicit")
    x = put(random((8, 16, 16), np.float32), NamedSharding(m, PartitionSpec("x")))
    field = random((8, 16, 16), np.float32, seed=3)
    fs = put(field, NamedSharding(m, PartitionSpec("x")))
    f = jax.jit(lambda a, b: xfft.xrfftn(a, ndim=2, max_of=b))
    k, top = f(x, fs)
    assert float(top) == field.max()
    text = f.lower(x, fs).compile().as_text()
    assert count_op(text, "all-to-all") == 0 and count_op(text, "all-reduce") == 1


def test_one_device_other_backends_and_a_wider_field():
    """One device, a backend other than native, and a field wider than the transform's dtype (the exchange
    would round it) all take a plain maximum: the same number."""
    field = random((16, 16), np.float32, seed=4)
    x = random((16, 16), np.float32)
    k, top = xfft.xrfftn(x, ndim=2, max_of=field)
    assert float(top) == field.max()
    np.testing.assert_allclose(np.asarray(k), np.fft.rfft2(x), rtol=1e-5, atol=1e-4)
    m = mesh((8,), "explicit")
    s = NamedSharding(m, PartitionSpec("x"))
    other = DelegatingBackend("counting")
    k, top = xfft.xrfftn(put(x, s), ndim=2, backend=other, max_of=put(field, s))
    assert other.calls == 1 and float(top) == field.max()
    with jax.enable_x64(True):
        wide = random((16, 16), np.float64, seed=5)
        wide[3, 3] = 1 + 2 ** -40  # not a float32
        k, top = xfft.xrfftn(put(x, s), ndim=2, max_of=put(wide, s))
        assert top.dtype == np.float64 and float(top) == wide.max()


def test_bad_max_of_is_refused_naming_it():
    m = mesh((8,), "explicit")
    x = put(np.zeros((16, 16), np.float32), NamedSharding(m, PartitionSpec("x")))
    with pytest.raises(TypeError, match="max_of"):
        xfft.xrfftn(x, ndim=2, max_of=np.zeros((16, 16), np.int32))
    with pytest.raises(TypeError, match="max_of"):
        xfft.xfftn(x, ndim=2, max_of=np.zeros((16, 16), np.complex64))
    with pytest.raises(ValueError, match="max_of"):
        xfft.xrfftn(x, ndim=2, max_of=np.zeros((16, 8), np.float32))
    with pytest.raises(ValueError, match="max_of"):
        xfft.xrfftn(x, ndim=2, max_of=np.zeros((2, 16, 16), np.float32))
    with pytest.raises(ValueError, match="max_of"):
        xfft.xrfftn(np.zeros((0, 4), np.float32), ndim=2, max_of=np.zeros((0, 4), np.float32))
    with pytest.raises(TypeError, match="max_of"):
        xfft.xrfftn(x, ndim=2, max_of="big")


class _Carrying(DelegatingBackend):
    """A backend object that declares the ``carries_max`` capability: the dispatcher hands it ``max_of``."""

    carries_max = True

    def forward(self, x, axes, norm, real, max_of=None):
        self.calls += 1
        self.got = max_of
        return self._native.forward(x, axes, norm, real, max_of=max_of)


def test_a_backend_declaring_carries_max_receives_max_of():
    """Whether the maximum rides is the backend's declared capability (``xfft.backends.capability``), not its
    class: a backend object with ``carries_max = True`` gets ``max_of`` and returns the pair itself."""
    m = mesh((8,), "explicit")
    s = NamedSharding(m, PartitionSpec("x"))
    field = random((16, 16), np.float32, seed=6)
    b = _Carrying("carrying")
    k, top = xfft.xrfftn(put(random((16, 16), np.float32), s), ndim=2, backend=b, max_of=put(field, s))
    assert b.calls == 1 and b.got is not None and b.got.shape == (16, 16)
    assert float(top) == field.max()


def _branches(text: str) -> list[list[str]]:
    """The bodies of each ``conditional``'s branch computations in compiled HLO ``text``."""
    bodies = {block.strip().split(" ", 1)[0]: block for block in text.split("\n\n")}
    return [[bodies[b] for b in re.findall(r"%[\w.\-]+", line.split("branch_computations=")[1].split("}")[0])]
            for line in text.splitlines() if " conditional(" in line]


@pytest.mark.parametrize("axis_types,order", [("explicit", "natural"), ("explicit", "transposed"),
                                              ("auto", "natural")])
@pytest.mark.parametrize("mesh_shape,shape,spec,ndim,dtype", CASES[:4], ids=IDS[:4])
def test_max_if_carries_the_maximum_only_where_set(mesh_shape, shape, spec, ndim, dtype, axis_types, order):
    """``max_if`` (a traced boolean): the maximum where it is true, 0 where it is false, the spectrum bit for bit
    the plain one either way. Compiled: each exchange that carries the maximum sits in a ``lax.cond`` beside
    its plain twin (one all-to-all in each branch, nothing else collective), and no all-reduce."""
    m = mesh(mesh_shape, axis_types)
    x = random(shape, dtype, seed=1)
    real = np.finfo(np.dtype(dtype)).dtype
    field = random(shape[len(shape) - ndim:], real, seed=2)
    field.flat[137] = 7.5
    xs = put(x, NamedSharding(m, PartitionSpec(*spec)))
    full = tuple(spec) + (None,) * (len(shape) - len(spec))
    fs = put(field, NamedSharding(m, PartitionSpec(*full[len(shape) - ndim:])))
    fn = _transform(dtype)
    gated = jax.jit(lambda a, b, w: fn(a, ndim=ndim, order=order, max_of=b, max_if=w))
    plain = jax.jit(lambda a: fn(a, ndim=ndim, order=order))
    ref = np.asarray(plain(xs))
    for when in (True, False):
        k, top = gated(xs, fs, jnp.asarray(when))
        assert top.dtype == field.dtype and top.shape == ()
        assert float(top) == (7.5 if when else 0.0)
        np.testing.assert_array_equal(np.asarray(k), ref)
    text = gated.lower(xs, fs, jnp.asarray(True)).compile().as_text()
    branches = _branches(text)
    assert branches and all(len(pair) == 2 for pair in branches)
    for body in (b for pair in branches for b in pair):
        assert count_op(body, "all-to-all") == 1 and count_op(body, "fft") == 0
    plain_a2a = count_op(plain.lower(xs).compile().as_text(), "all-to-all")
    assert count_op(text, "all-to-all") == plain_a2a + len(branches)
    assert count_op(text, "all-reduce") == count_op(text, "all-gather") == 0


def test_max_if_in_a_stage_loop():
    """The use it is for: a loop over a scheme's stages that needs the maximum of the first stage only. The
    stages' maxima are summed: the sum is the first stage's maximum exactly only if the other three gave 0
    (ungated, it would be 10x that)."""
    m = mesh((8,), "explicit")
    s = NamedSharding(m, PartitionSpec("x"))
    x = put(random((32, 32), np.float32), s)
    field = random((32, 32), np.float32, seed=7)

    def stages(a, f):
        def body(i, carry):
            y, top = carry
            k, t = xfft.xrfftn(y, ndim=2, max_of=f * (i + 1), max_if=i == 0)
            return xfft.ixrfftn(k, ndim=2, s=(32, 32)), top + t

        return jax.lax.fori_loop(0, 4, body, (a, jnp.zeros((), f.dtype)))

    y, top = jax.jit(stages)(x, put(field, s))
    assert float(top) == field.max()
    np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-5, atol=1e-5)


def test_max_if_as_a_python_bool_and_where_nothing_carries():
    """``max_if=True`` is the default (nothing conditional); ``False`` returns 0 and takes no maximum at all.
    Where no exchange carries the maximum (an all-local transform, one device, another backend, a field wider
    than the transform), a traced ``max_if`` gates the plain maximum the same way."""
    m = mesh((8,), "explicit")
    s = NamedSharding(m, PartitionSpec("x"))
    x = put(random((16, 16), np.float32), s)
    field = random((16, 16), np.float32, seed=8)
    fs = put(field, s)
    plain = xfft.xrfftn(x, ndim=2)
    moves = count_op(jax.jit(lambda a: xfft.xrfftn(a, ndim=2)).lower(x).compile().as_text(), "all-to-all")
    for when, expect in ((True, field.max()), (False, 0.0)):
        f = jax.jit(lambda a, b, w=when: xfft.xrfftn(a, ndim=2, max_of=b, max_if=w))
        k, top = f(x, fs)
        assert float(top) == expect
        np.testing.assert_array_equal(np.asarray(k), np.asarray(plain))
        text = f.lower(x, fs).compile().as_text()
        assert " conditional(" not in text and count_op(text, "all-reduce") == 0
        assert count_op(text, "all-to-all") == moves
    local = put(random((8, 16, 16), np.float32), s)  # only a batch axis sharded: one pmax, gated
    wide_field = random((8, 16, 16), np.float32, seed=9)
    g = jax.jit(lambda a, b, w: xfft.xrfftn(a, ndim=2, max_of=b, max_if=w))
    other = DelegatingBackend("counting")
    h = jax.jit(lambda a, b, w: xfft.xrfftn(a, ndim=2, backend=other, max_of=b, max_if=w)[1])
    for when in (True, False):
        assert float(g(local, put(wide_field, s), jnp.asarray(when))[1]) == (wide_field.max() if when else 0.0)
        assert float(g(np.asarray(x), field, jnp.asarray(when))[1]) == (field.max() if when else 0.0)
        assert float(h(x, fs, jnp.asarray(when))) == (field.max() if when else 0.0)
    with jax.enable_x64(True):
        wide = random((16, 16), np.float64, seed=5)
        wide[3, 3] = 1 + 2 ** -40
        for when in (True, False):
            top = g(x, put(wide, s), jnp.asarray(when))[1]
            assert top.dtype == np.float64 and float(top) == (wide.max() if when else 0.0)


def test_bad_max_if_is_refused_naming_it():
    m = mesh((8,), "explicit")
    s = NamedSharding(m, PartitionSpec("x"))
    x = put(np.zeros((16, 16), np.float32), s)
    f = put(np.zeros((16, 16), np.float32), s)
    with pytest.raises(ValueError, match="max_if.*needs max_of"):
        xfft.xrfftn(x, ndim=2, max_if=True)
    with pytest.raises(TypeError, match="max_if"):
        xfft.xrfftn(x, ndim=2, max_of=f, max_if=jnp.asarray(1))
    with pytest.raises(TypeError, match="max_if"):
        xfft.xfftn(x, ndim=2, max_of=f, max_if="yes")
    with pytest.raises(ValueError, match="max_if"):
        xfft.xrfftn(x, ndim=2, max_of=f, max_if=jnp.asarray([True, False]))
