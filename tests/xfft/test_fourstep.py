"""Transforms along an axis that stays sharded (the four-step algorithm, :mod:`xfft._fourstep`) and DFTs along an
axis where it lies (matrix products, :mod:`xfft._matdft`), against numpy.

A sharded 1D array has no other axis to take its mesh axes, so it is transformed across the devices: three
all-to-alls, no all-gather, and, where ``p`` does not divide ``n / p``, collective permutes that hand each device's
surplus to the next. Cases: ``p^2`` divides ``n`` (64 on 8), it does not (28 on 4), blocks shorter than ``p`` (24
on 8: the surplus crosses several devices), two mesh axes on the one axis (48 on 2 x 4), an Auto
mesh under ``jit`` (the layout is guessed); forward, inverse (the norm rotating over the cases), ``grad`` and
``vmap`` in one jitted program per case.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, hlo, random, rel_err, tol
from jax.sharding import NamedSharding, PartitionSpec

import xfft
from xfft._matdft import dft_along, factors
from xfft.backends.native import NativeBackend

# n, mesh shape, spec, dtype, collective permutes (the surplus hops of the last all-to-all's blocks)
CASES = [
    (64, (8,), ("x",), np.complex64, 0),
    (28, (4,), ("x",), np.complex128, 1),
    (24, (8,), ("x",), np.complex128, 5),
    (48, (2, 4), (("x", "y"),), np.complex64, 2),
]


def _mesh(shape, axis_types="explicit"):
    n = int(np.prod(shape))
    return xfft.make_mesh(shape, axis_types=axis_types, devices=jax.devices()[:n])


@pytest.mark.parametrize("n, mesh_shape, spec, dtype, permutes", CASES, ids=[f"{c[0]}-on-{c[1]}" for c in CASES])
def test_sharded_1d_transform(n, mesh_shape, spec, dtype, permutes):
    m = _mesh(mesh_shape)
    sharding = NamedSharding(m, PartitionSpec(*spec))
    a = random((n,), dtype, seed=n)
    x = jax.device_put(a, sharding)
    xb = jax.device_put(np.stack([a, 1j * a]), NamedSharding(m, PartitionSpec(None, *spec)))
    c = random((n,), np.complex128, seed=1)

    def loss(r, i):  # Re sum(conj(c) * fft(r + i i)): its gradient is (Re, Im) of conj(fft(conj(c)))
        return jnp.sum(jnp.real(jnp.conj(c) * xfft.xfftn(r + 1j * i)))

    norm = ("backward", "ortho", "forward")[n % 3]

    @jax.jit
    def run(v, vb):
        k = xfft.xfftn(v, norm=norm)
        return k, xfft.ixfftn(k, norm=norm), jax.grad(loss, (0, 1))(v.real, v.imag), jax.vmap(xfft.xfftn)(vb)

    k, back, g, kb = run(x, xb)
    t = tol(dtype)
    assert rel_err(k, np.fft.fft(a.astype(np.complex128), norm=norm)) < t, norm
    assert k.sharding.is_equivalent_to(sharding, 1) and k.dtype == dtype
    assert rel_err(back, a) < t and back.sharding.is_equivalent_to(sharding, 1)
    adjoint = np.conj(np.fft.fft(np.conj(c)))
    assert rel_err(g[0], adjoint.real) < t and rel_err(g[1], adjoint.imag) < t
    assert rel_err(kb[1], np.fft.fft(1j * a.astype(np.complex128))) < t
    text = hlo(lambda v: xfft.xfftn(v), x)
    assert count_op(text, "all-to-all") == 3
    assert count_op(text, "all-gather") == 0
    assert count_op(text, "collective-permute") == permutes


def test_sharded_1d_on_an_auto_mesh_under_jit():
    """Under jit an Auto mesh hides the layout: xfft assumes the only one a 1D grid has, P('x')."""
    m = _mesh((4,), "auto")
    a = random((36,), np.complex128, seed=3)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec("x")))
    @jax.jit
    def run(v):  # one program: the transform, its inverse, and numpy's names
        k = xfft.xfftn(v)
        return k, xfft.ixfftn(k), xfft.fft.ifft(xfft.fft.fft(v))

    k, back, back_np = run(x)
    assert rel_err(k, np.fft.fft(a)) < 1e-12
    assert rel_err(back, a) < 1e-12
    assert rel_err(back_np, a) < 1e-12


@pytest.mark.parametrize("n, axis, shape", [(1, 0, (1, 3)), (7, 1, (2, 7, 3)), (32, 0, (32, 5)), (48, 1, (3, 48, 2)),
                                            (64, 0, (64,)), (1024, 0, (1024, 2))])
def test_matrix_dft_along_an_axis(n, axis, shape):
    """dft_along: numpy's FFT along any axis, every norm, forward and inverse; one product up to 32 points, two
    factors of at most 32 beyond; a length with a larger prime factor has none (the FFT op takes it)."""
    assert shape[axis] == n and factors(n) is not None
    a = random(shape, np.complex128, seed=n)
    norms = ("backward", "ortho", "forward")

    @jax.jit
    def run(v):
        return ([dft_along(v, axis, inv, norm) for norm in norms for inv in (False, True)],
                dft_along(v.astype(np.complex64), axis))

    got, single = run(a)
    for i, (norm, inv) in enumerate((norm, inv) for norm in norms for inv in (False, True)):
        assert rel_err(got[i], (np.fft.ifft if inv else np.fft.fft)(a, axis=axis, norm=norm)) < 1e-13, (norm, inv)
    assert rel_err(single, np.fft.fft(a, axis=axis)) < 1e-6
    assert factors(37 * 2) is None and factors(1031) is None and factors(30) == (30,) and factors(256) == (16, 16)


def test_matrix_dft_after_an_all_to_all_is_bit_stable():
    """The last stage of a natural-order slab transform of 48 points (two factors, 6 x 8) gives the same bits
    whether the all-to-all before it is the plain exchange or the one that transposes on the sending side
    (``LoweringOptions.send_transposed``): its products never see where their input comes from."""
    m = xfft.make_mesh((8,))
    a = random((48, 24), np.complex64, seed=4)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec("x")))
    got = []
    for on in (True, False):
        b = NativeBackend(xfft.LoweringOptions(matrix_dft=True, send_transposed=on))
        got.append(np.asarray(jax.jit(functools.partial(xfft.xfftn, backend=b))(x)))
    np.testing.assert_array_equal(got[0], got[1])
    assert rel_err(got[0], np.fft.fft2(a.astype(np.complex128))) < 1e-5
