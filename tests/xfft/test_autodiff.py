"""Gradients, adjoints, jvp and vmap through every transform and xroll."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import grid_sharding, mesh, put, random, rel_err
from jax.sharding import NamedSharding, PartitionSpec

import xfft

SHAPE = (16, 8, 12)
MESHES = [((8,), "explicit"), ((2, 4), "auto")]

# name -> (xfft function, jnp reference, input is real)
TRANSFORMS = {
    "xfft3d": (xfft.xfft3d, jnp.fft.fftn, False),
    "ixfft3d": (xfft.ixfft3d, jnp.fft.ifftn, False),
    "xrfft3d": (xfft.xrfft3d, jnp.fft.rfftn, True),
    "ixrfft3d": (lambda k: xfft.ixrfft3d(k, s=SHAPE), lambda k: jnp.fft.irfftn(k, s=SHAPE), False),
}


def _input(name, m):
    f, ref, real = TRANSFORMS[name]
    shape = SHAPE if name != "ixrfft3d" else SHAPE[:2] + (SHAPE[2] // 2 + 1,)
    a = random(shape, np.float64 if real else np.complex128, seed=hash(name) % 100)
    return a, put(a, grid_sharding(m, shape)) if name != "ixrfft3d" else put(a, xfft.spectral_sharding(
        grid_sharding(m, SHAPE), SHAPE, real=True))


# every transform once, each mesh of MESHES with a complex and a real one
@pytest.mark.parametrize("name,mesh_shape,axis_types", [
    ("xfft3d", *MESHES[0]), ("ixfft3d", *MESHES[1]), ("xrfft3d", *MESHES[1]), ("ixrfft3d", *MESHES[0])],
    ids=["xfft3d-slab-explicit", "ixfft3d-pencil-auto", "xrfft3d-pencil-auto", "ixrfft3d-slab-explicit"])
def test_grad_matches_single_device_jnp(name, mesh_shape, axis_types):
    f, ref, real = TRANSFORMS[name]
    m = mesh(mesh_shape, axis_types)
    a, x = _input(name, m)
    w = random(jax.eval_shape(ref, a).shape, np.float64, seed=1)

    def loss(fn):
        return lambda x: jnp.sum(w * jnp.abs(fn(x)) ** 2) + jnp.sum(w * jnp.real(fn(x)))

    g = jax.jit(jax.grad(loss(f)))(x)
    # the single-device reference in one program (op by op, each jnp call compiles its own)
    assert rel_err(g, jax.jit(jax.grad(loss(ref)))(jnp.asarray(a))) < 1e-12


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_dot_product_adjoint_and_jvp(name):
    """<A x, y> == <x, A^T y> with A^T from jax.vjp and jax.linear_transpose; jvp(A)(t) == A t."""
    f, ref, real = TRANSFORMS[name]
    m = mesh((8,), "explicit")
    a, x = _input(name, m)
    out = jax.eval_shape(f, x)
    y = random(out.shape, out.dtype, seed=9)
    t = random(x.shape, x.dtype, seed=10)

    @jax.jit
    def run(x, c, t):  # one program: A x, A^T c by vjp and by linear_transpose, jvp(A)(t)
        ax, vjp = jax.vjp(f, x)
        c = jax.sharding.reshard(c, jax.typeof(ax).sharding.spec)  # the cotangent carries the output's sharding
        return ax, vjp(c)[0], jax.linear_transpose(f, x)(c)[0], jax.jvp(f, (x,), (t,))[1]

    with jax.set_mesh(m):
        ax, aty, aty2, tangent = run(x, put(y, NamedSharding(m, out.sharding.spec)), put(t, x.sharding))
    lhs = np.vdot(np.conj(np.asarray(ax)), y)  # bilinear <Ax, y>
    rhs = np.vdot(np.conj(np.asarray(x)), np.asarray(aty))
    if name in ("xrfft3d", "ixrfft3d"):  # only R-linear: the identity holds for the real part of the pairing
        lhs, rhs = lhs.real, rhs.real
    assert abs(lhs - rhs) <= 1e-11 * abs(lhs)
    assert rel_err(aty2, aty) < 1e-12
    assert rel_err(tangent, ref(t)) < 1e-12


def test_vmap_equals_batched_call():
    m = mesh((8,), "explicit")
    a = random((2,) + SHAPE, np.complex128, seed=3)
    x = put(a, NamedSharding(m, PartitionSpec(None, "x")))

    @jax.jit
    def run(x, xr):  # one program
        return (jax.vmap(xfft.xfft3d)(x), xfft.xfft3d(x),
                jax.vmap(lambda u: xfft.ixrfft3d(xfft.xrfft3d(u), s=SHAPE))(xr))

    v, batched, r = run(x, put(a.real.copy(), x.sharding))
    assert rel_err(v, batched) < 1e-14
    assert rel_err(v, np.fft.fftn(a, axes=(1, 2, 3))) < 1e-12
    assert rel_err(r, a.real) < 1e-12


@pytest.mark.parametrize("shift,axis", [(-5, 0), (2, 1)])  # negative and past a shard (2 rows); unsharded axis
def test_xroll_grad_and_adjoint(shift, axis):
    m = mesh((8,), "explicit")
    a = random(SHAPE, np.float64, seed=4)
    x = put(a, grid_sharding(m, SHAPE))
    w = random(SHAPE, np.float64, seed=5)
    # Explicit meshes need jax.jit (or jax.set_mesh) around eager grads, for any function (a JAX rule).
    @jax.jit
    def run(x, c):  # one program: the gradient of a loss and the vjp of a cotangent
        g = jax.grad(lambda x: jnp.sum(w * xfft.xroll(x, shift, axis) ** 2))(x)
        return g, jax.vjp(lambda x: xfft.xroll(x, shift, axis), x)[1](c)[0]

    g, back = run(x, put(w, x.sharding))
    g_ref = 2 * np.roll(w, -shift, axis) * a
    assert rel_err(g, g_ref) < 1e-13
    assert rel_err(back, np.roll(w, -shift, axis)) == 0.0


@pytest.mark.parametrize("real,mesh_shape,axis_types", [(False, *MESHES[1]), (True, *MESHES[0])],
                         ids=["c2c-pencil-auto", "r2c-slab-explicit"])
def test_transposed_order_adjoint_and_grad(mesh_shape, axis_types, real):
    """order="transposed": dot-product adjoint test for the forward (vjp and linear_transpose), and gradients of
    a loss through forward + inverse equal those in natural order."""
    m = mesh(mesh_shape, axis_types)
    a = random(SHAPE, np.float64 if real else np.complex128, seed=12)
    x = put(a, grid_sharding(m, SHAPE))
    fwd, inv = (xfft.xrfft3d, xfft.ixrfft3d) if real else (xfft.xfft3d, xfft.ixfft3d)
    f = jax.jit(lambda x: fwd(x, order="transposed"))
    ax = f(x)
    y = put(random(ax.shape, ax.dtype, seed=13), ax.sharding)
    _, vjp = jax.vjp(f, x)
    (aty,) = vjp(y)
    lhs = np.vdot(np.conj(np.asarray(ax)), np.asarray(y))  # bilinear <Ax, y>
    rhs = np.vdot(np.conj(np.asarray(x)), np.asarray(aty))
    if real:  # only R-linear: the identity holds for the real part of the pairing
        lhs, rhs = lhs.real, rhs.real
    assert abs(lhs - rhs) <= 1e-11 * abs(lhs)
    (aty2,) = jax.jit(lambda c: jax.linear_transpose(f, x)(c))(y)
    assert rel_err(aty2, aty) < 1e-12
    w = random(SHAPE, np.float64, seed=14)

    def loss(order):
        def g(x):
            k = fwd(x, order=order)
            return jnp.sum(w * jnp.real(inv(k * k, s=SHAPE, order=order)))
        return g

    g_t = jax.jit(jax.grad(loss("transposed")))(x)
    g_n = jax.jit(jax.grad(loss("natural")))(x)
    assert rel_err(g_t, g_n) < 1e-12
