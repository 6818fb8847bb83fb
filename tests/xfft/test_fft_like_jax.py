"""``xfft.fft`` on sharded arrays where JAX's own ``tests/fft_test.py`` probes: its errors, empty ``axes``, crops
and pads of a sharded axis, real and sine/cosine transforms of a 1D sharded array.

JAX's test file is not in its wheel; these are its cases (``testFftErrors``, ``testFft2Errors``, ``testFftnErrors``,
``testFftn`` with ``axes=[]``, ``testFftshift`` with ``axes=[]``, ``testFft`` with a cropping and a padding ``n`` on a
(10,) array) run on an input sharded along its first axis, plus the costs the guide states: no all-gather where
the new length divides over the devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft
from helpers import count_op, random
from jax.sharding import NamedSharding, PartitionSpec

import xfft
import xfft.fft as xf


def sharded(a, p):
    """``a`` with its first axis over the first ``p`` devices (an Explicit mesh)."""
    m = xfft.make_mesh((p,), devices=jax.devices()[:p])
    return jax.device_put(a, NamedSharding(m, PartitionSpec("x")))


ERRORS = [("fft", {"axis": [1, 1]}), ("ihfft", {"axis": (1, 1)}), ("hfft", {"axis": [2]}), ("rfft", {"axis": [-3]}),
          ("fft2", {"axes": [0]}), ("irfft2", {"axes": [2, 3]}), ("fftn", {"axes": [1, 1]}),
          ("irfftn", {"axes": [-3]}), ("fftn", {"s": [0, 3]}), ("ifftn", {"norm": "bad"})]


@pytest.mark.parametrize("name,kwargs", ERRORS)
def test_errors_are_jax_numpy_fft_errors(name, kwargs):
    """A sharded input raises what ``jax.numpy.fft`` raises for the same call: the type and the message."""
    a = random((2, 3), np.float64, 1)
    with pytest.raises(Exception) as want:
        getattr(jnp.fft, name)(jnp.asarray(a), **kwargs)
    with pytest.raises(type(want.value)) as got:
        getattr(xf, name)(sharded(a, 2), **kwargs)
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
    assert isinstance(got.value, ValueError)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_empty_axes_return_the_input(name):
    """``axes=[]`` transforms nothing: the input, in ``jax.numpy.fft``'s result dtype, sharding kept."""
    a = random((4, 3), np.float32, 2)
    x = sharded(a, 2)
    y = getattr(xf, name)(x, axes=[])
    want = getattr(jnp.fft, name)(jnp.asarray(a), axes=[])
    assert y.dtype == want.dtype and y.sharding.is_equivalent_to(x.sharding, 2)
    np.testing.assert_array_equal(y, want)


def test_empty_sharded_array():
    """An empty array on a mesh (numpy's ``test_ifft`` hands one) gives ``jax.numpy.fft``'s empty result."""
    x = sharded(np.zeros((0,), np.complex128), 8)
    for name in ("fft", "ifft"):
        y = getattr(xf, name)(x, norm="backward")
        assert y.shape == (0,) and y.dtype == np.complex128


def test_shift_with_empty_axes_is_a_no_op():
    a = random((8, 3), np.float64, 3)
    x = sharded(a, 8)
    for f in (xf.fftshift, xf.ifftshift):
        y = f(x, axes=[])
        np.testing.assert_array_equal(y, a)
        assert y.sharding == x.sharding
    np.testing.assert_array_equal(xf.fftshift(x, axes=0), np.fft.fftshift(a, axes=0))


@pytest.mark.parametrize("name,p", [("fft", 2), ("ifft", 8), ("rfft", 8), ("irfft", 2), ("hfft", 8), ("ihfft", 2)])
def test_1d_sharded_crop_pad_and_real_transforms(name, p):
    """JAX's ``testFft``: a (10,) array (p=2) or (16,) (p=8) sharded along its only axis, ``n`` cropping or padding
    it to a length the devices do not divide and padding it to one they do, every 1D function (real ones by
    the complex transform). The three calls in one ``jax.jit`` program (the sharding is visible on an Explicit
    mesh; eagerly each crop, pad and weighting step compiles a program of its own: the eager path runs in
    test_peer_suites.py's sharded numpy tests and test_numpy_fft.py's in-place crop)."""
    size = 10 if p == 2 else 16
    real = name in ("rfft", "ihfft")
    a = random((size,), np.float64 if real else np.complex128, p)
    x = sharded(a, p)
    ns = (None, 7, 24)  # a crop to a length the devices do not divide, a pad to one they do
    outs = jax.jit(lambda v: [getattr(xf, name)(v, n=n) for n in ns])(x)
    for n, got in zip(ns, outs):
        want = getattr(np.fft, name)(a, n=n)
        assert got.shape == want.shape and got.dtype == (np.float64 if name in ("irfft", "hfft") else np.complex128)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11 * np.abs(want).max())


def test_1d_sharded_pad_moves_blocks_without_gather():
    """A pad (32 -> 48) and a crop (32 -> 16) of an axis sharded over 8 devices, and a 1D ``rfft``/``irfft`` pair:
    collective permutes and all-to-alls, no all-gather; values of numpy, also under strict dtype promotion."""
    a = random((32,), np.float64, 4)
    x = sharded(a, 8)
    for n in (48, 16):
        f = jax.jit(lambda v, n=n: xf.fft(v, n=n))
        text = f.lower(x).compile().as_text()
        assert count_op(text, "all-gather") == 0 and count_op(text, "collective-permute") > 0
        with jax.numpy_dtype_promotion("strict"):
            y = f(x)
        assert y.sharding.spec == PartitionSpec("x")
        np.testing.assert_allclose(y, np.fft.fft(a, n=n), rtol=1e-12, atol=1e-12)
    g = jax.jit(lambda v: xf.irfft(xf.rfft(v, n=30), n=32))
    np.testing.assert_allclose(g(x), np.fft.irfft(np.fft.rfft(a, n=30), n=32), rtol=1e-12, atol=1e-12)


def test_crop_of_a_sharded_axis_no_other_axis_can_take():
    """An (8, 7, 13) array on 8 devices cropped along its sharded axis (``jax.numpy.fft`` crashes the process on
    it): the crop is in place (5 does not split over 8: the cropped axis ends replicated); with a pad of the
    sharded axis (16) and a crop of another (6), real. Both in one ``jax.jit`` program (the sharding is visible on
    an Explicit mesh; eagerly each step of the in-place resize compiles a program of its own: the eager in-place
    crop runs in test_numpy_fft.py's ``test_errors_are_jax_numpy_ffts``)."""
    a = random((8, 7, 13), np.float64, 5)
    x = sharded(a, 8)
    crop, pad = jax.jit(lambda v: (xf.fftn(v, s=(5, 7, 13)), xf.rfftn(v, s=(16, 6), axes=(0, 2))))(x)
    np.testing.assert_allclose(crop, np.fft.fftn(a, s=(5, 7, 13), axes=(0, 1, 2)), rtol=1e-11, atol=1e-10)
    np.testing.assert_allclose(pad, np.fft.rfftn(a, s=(16, 6), axes=(0, 2)), rtol=1e-11, atol=1e-10)


@pytest.mark.parametrize("kind,type,norm", [("dct", 1, "ortho"), ("dct", 2, None), ("dst", 3, "forward"),
                                            ("dst", 4, "ortho")])
def test_dct_dst_of_a_1d_sharded_array(kind, type, norm):
    """scipy's values for a DCT/DST and its inverse of a (16,) array sharded over 8 devices (the complex FFT of
    length 2M route), and (type 2) for ``n=`` padding it: the calls of a case in one ``jax.jit`` program (the
    sharding is visible on an Explicit mesh; eagerly, as in test_peer_suites.py's sharded scipy tests, each step
    compiles a program of its own). Type 2 (its pad 16 -> 24 too) without an all-gather."""
    a = random((16,), np.float64, type)
    x = sharded(a, 8)
    calls = [(name, n) for name in (kind, "i" + kind) for n in ((None, 24) if type == 2 else (None,))]
    f = jax.jit(lambda v: [getattr(xf, name)(v, type, n=n, norm=norm) for name, n in calls])
    compiled = f.lower(x).compile()
    for (name, n), got in zip(calls, compiled(x)):
        want = getattr(scipy.fft, name)(a, type, n=n, norm=norm)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11 * np.abs(want).max())
    if type == 2:
        assert count_op(compiled.as_text(), "all-gather") == 0


def test_scipy_front_end_arguments():
    """scipy's argument rules: scalar ``s``, ``s`` of -1, float16 -> float32, ints -> float64, lists, errors."""
    a = random((8, 6), np.float64, 7)
    x = sharded(a, 8)
    np.testing.assert_allclose(xf.dctn(x, 2, s=4, axes=1), scipy.fft.dctn(a, 2, s=4, axes=1), rtol=1e-12)
    np.testing.assert_allclose(xf.idstn(x, 3, s=(-1, 9)), scipy.fft.idstn(a, 3, s=(-1, 9)), rtol=1e-12)
    x2 = sharded(a, 2)  # over both axes: the plan moves the sharding, the result is sharded like the input
    y = xf.dctn(x2, 2)
    assert y.sharding.is_equivalent_to(x2.sharding, 2) and y[:, :5].shape == (8, 5)
    np.testing.assert_allclose(y, scipy.fft.dctn(a, 2), rtol=1e-12)
    assert xf.dct(np.ones(4, np.float16)).dtype == np.float32
    assert xf.dct(np.arange(4)).dtype == np.float64
    np.testing.assert_allclose(xf.idct([1.0, 2.0, 3.0], 4), scipy.fft.idct([1.0, 2.0, 3.0], 4), rtol=1e-12)
    for bad, kwargs in [({"type": 5}, {}), ({}, {"norm": "bad"}), ({}, {"n": 0})]:
        with pytest.raises(ValueError):
            xf.dct(x, **bad, **kwargs)
    with pytest.raises(ValueError, match="all axes must be unique"):
        xf.dctn(x, axes=(0, 0))


def test_second_order_gradients_of_a_sharded_input():
    """JAX's ``testFftn`` checks second-order gradients: ``jax.vjp`` of ``jax.jvp`` of ``fftn`` (crops and a pad,
    the sharded axis transformed too) on an input sharded over 2 devices, with NumPy cotangents, runs eagerly and
    gives ``jax.numpy.fft``'s values on one device."""
    s, axes = (2, 2, 3, 7), (0, 1, 2, 3)
    a, da = random((2, 3, 4, 5), np.float64, 8), random((2, 3, 4, 5), np.float64, 9)
    out = np.fft.fftn(a, s=s, axes=axes)
    ct, dct = random(out.shape, np.complex128, 10), random(out.shape, np.complex128, 11)

    def second(fftn, x, dx):
        f = lambda y: fftn(y, s=s, axes=axes)  # noqa: E731
        first, vjp = jax.vjp(lambda p, t: jax.jvp(f, (p,), (t,)), x, dx)
        return first, vjp((ct, dct)), jax.vjp(f, x)[1](ct)

    got = second(xf.fftn, sharded(a, 2), sharded(da, 2))
    want = second(jnp.fft.fftn, jnp.asarray(a), jnp.asarray(da))
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * np.abs(w).max())
