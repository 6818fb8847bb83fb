"""``xfft.fft`` against the peers' own tests, as the installed packages ship them.

numpy's ``numpy/fft/tests/test_pocketfft.py`` and scipy's ``scipy/fft/tests/test_real_transforms.py`` are imported
from the installed wheels (nothing is copied here) and their test functions are called with the names they test
replaced: ``np.fft`` in numpy's module becomes ``xfft.fft``, scipy's ``dct``/``idct``/... and ``scipy.fft`` become
``xfft.fft``'s. Each runs on one device and sharded: there every array the peer's test hands to a transform (numpy)
or creates with ``xp.asarray`` (scipy) is put on a mesh with its first axis over 8, 4 or 2 devices, whichever
divides it (a 1D array is then sharded along its only axis: the crops, pads and real transforms that have no other
axis to move to). The parametrised cases are sampled, each sample written out below with what it covers (every
transform type, norm, orthogonalize setting and both DCT and DST at least once, one device and sharded; each eager
call on a sharded array compiles programs of its own), to keep the file within a few tens of seconds; the peers'
tests of ``out=``, thread pools and warnings that JAX does not give are left out, as they fail for
``jax.numpy.fft`` too.
"""

from __future__ import annotations

import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpy.fft.tests.test_pocketfft as pocket
import pytest
from jax.sharding import NamedSharding, PartitionSpec

import xfft
import xfft.fft as xf

with warnings.catch_warnings():  # scipy's test module declares marks of its own conftest (skip_xp_backends)
    warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
    import scipy.fft.tests.test_real_transforms as real_transforms

MESHES = {p: xfft.make_mesh((p,), devices=jax.devices()[:p]) for p in (8, 4, 2)}
R2R = ["dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn"]


def shard(a):
    """``a`` with its first axis over 8, 4 or 2 devices (the first that divides it); other inputs unchanged."""
    if isinstance(a, (list, tuple)) or (isinstance(a, np.ndarray) and a.dtype != object):
        a = np.asarray(a)
    if not hasattr(a, "shape") or a.ndim == 0:
        return a
    for p, m in MESHES.items():
        if a.shape[0] % p == 0:
            return jax.device_put(a, NamedSharding(m, PartitionSpec("x")))
    return a


def _sharding_first(f):
    def g(a, *args, **kwargs):
        return f(shard(a), *args, **kwargs)

    g.__name__ = f.__name__
    return g


def namespace(sharded: bool) -> types.SimpleNamespace:
    """``xfft.fft``'s functions; ``sharded``: each shards its first argument first."""
    names = [n for n in xf.__all__ if n not in ("fftfreq", "rfftfreq")]
    out = {n: (_sharding_first(getattr(xf, n)) if sharded else getattr(xf, n)) for n in names}
    return types.SimpleNamespace(**out, fftfreq=xf.fftfreq, rfftfreq=xf.rfftfreq)


class NumpyWith(types.ModuleType):
    """numpy, but with ``fft`` replaced."""

    def __init__(self, fft):
        super().__init__("numpy")
        self.fft = fft

    def __getattr__(self, name):
        return getattr(np, name)


# numpy's tests, TestFFT1D's unless named; ops given by name are replaced by xfft.fft's, a sample of them (each
# eager call compiles programs of its own). One device, where xfft.fft runs jax.numpy.fft's own call: each 1D
# function and its norms (test_fft, test_rfft, test_rfft_even, test_rfft_odd, test_irfft, test_hfft, test_ihfft,
# test_all_1d_norm_preserving), a 2D and a 3D complex pair and a 3D real round trip (test_ifft2, test_fftn,
# test_irfftn); jax.numpy.fft refuses test_fft_n's list and test_ifft's empty list. Sharded: the 1D four-step
# (test_fft, 30 points over 2 devices, every norm), a 2D and a 3D complex pair (test_ifft2, test_fftn), a real 3D
# round trip (test_irfftn) and rfftn over every axis order (test_axes). Left out, as the same calls of the same
# paths: test_fft2, test_ifftn, test_irfft2 (test_rfft2 runs below, both ways) and one-device test_axes (the sharded
# run's calls); test_irfft sharded (8 eager 1D real transforms of a sharded array, about 40 s) is left to
# test_fft_like_jax.py's 1D sharded cases (rfft/irfft/hfft/ihfft against numpy) and test_numpy_fft.py's eager rfft
# of a sharded line; test_rfft_odd's 5 points shard over no mesh; test_rfft and test_rfft_even slice a 1D sharded
# result unevenly (fft(x)[:n // 2 + 1]), which JAX refuses on an Explicit mesh for jax.numpy.fft's result too.
ONE_DEVICE = ["test_fft", "test_rfft", "test_rfft_even", "test_rfft_odd", "test_irfft", "test_hfft", "test_ihfft",
              "test_all_1d_norm_preserving", "test_ifft2", "test_fftn", "test_irfftn"]
SHARDED = ["test_fft", "test_ifft2", "test_fftn", "test_irfftn", "test_axes"]
POCKET = ([pytest.param(t, "one-device", id=f"{t}-one-device") for t in ONE_DEVICE]
          + [pytest.param(t, "sharded", id=f"{t}-sharded") for t in SHARDED])
ARGS = {"test_axes": {"op": "rfftn"}}


@pytest.mark.parametrize("test,place", POCKET)
def test_numpy_pocketfft(test, place, monkeypatch):
    """numpy's own test passes with ``np.fft`` -> ``xfft.fft`` (one device: ``jax.numpy.fft``'s numbers)."""
    fft = namespace(place == "sharded")
    monkeypatch.setattr(pocket, "np", NumpyWith(fft))
    cls, method = test.split(".") if "." in test else ("TestFFT1D", test)
    kwargs = {k: getattr(fft, v) if k == "op" else v for k, v in ARGS.get(method, {}).items()}
    getattr(getattr(pocket, cls)(), method)(**kwargs)


def test_numpy_rfft2_one_device_and_sharded_slice(monkeypatch):
    """numpy's ``test_rfft2`` slices ``fft2(x)[:, :11]``: on one device, and sharded, where the output is sharded like
    the input (``P('x')``, as ``jax.numpy.fft``'s) so that JAX takes the uneven slice of its unsharded axis, eagerly
    and under ``jax.jit``."""
    monkeypatch.setattr(pocket, "np", NumpyWith(namespace(False)))
    pocket.TestFFT1D().test_rfft2()
    monkeypatch.setattr(pocket, "np", NumpyWith(namespace(True)))
    pocket.TestFFT1D().test_rfft2()
    a = np.random.default_rng(0).random((30, 20))
    y = xf.fft2(shard(a))
    assert y.sharding.spec == PartitionSpec("x", None)
    np.testing.assert_allclose(y[:, :11], np.fft.rfft2(a), atol=1e-10)
    np.testing.assert_allclose(jax.jit(lambda v: xf.fft2(v)[:, :11])(shard(a)), np.fft.rfft2(a), atol=1e-10)


class JnpWith(types.ModuleType):
    """jax.numpy whose ``asarray`` shards the first axis (scipy's tests make every input with ``xp.asarray``)."""

    def __init__(self):
        super().__init__("jax.numpy")

    def asarray(self, a, *args, **kwargs):
        return shard(jnp.asarray(a, *args, **kwargs))

    def __getattr__(self, name):
        return getattr(jnp, name)


def replace_r2r(monkeypatch, place: str):
    """scipy's module with its transforms replaced by xfft.fft's; the array namespace to run it with."""
    for name in R2R:
        monkeypatch.setattr(real_transforms, name, getattr(xf, name))
    monkeypatch.setattr(real_transforms, "fft", types.SimpleNamespace(**{n: getattr(xf, n) for n in R2R}))
    return jnp if place == "one-device" else JnpWith()


PAIRS = [("dct", "idct"), ("dst", "idst")]

# (pair, type, n, axis, norm, orthogonalize, place): each type once, DCT and DST, every norm, orthogonalize both
# ways; sharded (an (n, n) array, axis 0 over 2 devices) along the sharded axis 0 and the unsharded axis 1.
IDENTITY_1D = [(PAIRS[0], 1, 2, 0, None, False, "one-device"), (PAIRS[1], 4, 4, 1, "forward", True, "one-device"),
               (PAIRS[1], 2, 16, 1, "backward", True, "sharded"), (PAIRS[0], 3, 10, 0, "ortho", False, "sharded")]


@pytest.mark.parametrize("pair,type,n,axis,norm,orthogonalize,place", IDENTITY_1D,
                         ids=[f"{c[6]}-{c[0][0]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}-{c[5]}" for c in IDENTITY_1D])
def test_scipy_identity_1d(pair, type, n, axis, norm, orthogonalize, place, monkeypatch):
    """scipy's ``test_identity_1d`` (inverse of forward, and an inverse whose ``n`` crops a padded input)."""
    fwd, back = (getattr(xf, f) for f in pair)
    real_transforms.test_identity_1d(fwd, back, type, n, axis, norm, orthogonalize, replace_r2r(monkeypatch, place))


NDPAIRS = [("dctn", "idctn"), ("dstn", "idstn")]
# (pair, type, (shape, axes), norm, orthogonalize, place): each type, both pairs, every norm, orthogonalize both
# ways; one device: a scalar ``axes`` of a 2D array and two axes of a 3D one; sharded (axis 0 over 4 devices):
# ``axes`` None on a 2D array (both axes padded to 8 and cropped back, the sharded one too) and a scalar ``axes`` of
# a 3D array (an unsharded axis).
IDENTITY_ND = [(NDPAIRS[0], 1, ((4, 4), 0), None, False, "one-device"),
               (NDPAIRS[0], 3, ((4, 5, 6), (0, 2)), "ortho", False, "one-device"),
               (NDPAIRS[1], 4, ((4, 4), None), "forward", True, "sharded"),
               (NDPAIRS[1], 2, ((4, 5, 6), 1), "backward", True, "sharded")]


@pytest.mark.parametrize("pair,type,shape_axes,norm,orthogonalize,place", IDENTITY_ND,
                         ids=[f"{c[5]}-{c[0][0]}-{c[1]}-{'x'.join(map(str, c[2][0]))}-{c[2][1]}-{c[3]}-{c[4]}"
                              for c in IDENTITY_ND])
def test_scipy_identity_nd(pair, type, shape_axes, norm, orthogonalize, place, monkeypatch):
    """scipy's ``test_identity_nd`` (``s`` crops the padded spectrum back; a scalar ``axes`` included)."""
    fwd, back = (getattr(xf, f) for f in pair)
    real_transforms.test_identity_nd(fwd, back, type, *shape_axes, norm, orthogonalize,
                                     replace_r2r(monkeypatch, place))


@pytest.mark.parametrize("func,type,norm,place", [("dct", 1, None, "one-device"), ("dstn", 4, "forward", "one-device"),
                                                  ("dst", 2, "backward", "sharded"), ("dctn", 3, "ortho", "sharded")])
def test_scipy_fftpack_equivalence(func, type, norm, place, monkeypatch):
    """scipy's ``test_fftpack_equivalience``: the values of ``scipy.fftpack`` for an (8, 16) array (sharded: its
    first axis over 8 devices), each type, 1D and n-dim, DCT and DST, every norm."""
    real_transforms.test_fftpack_equivalience(getattr(xf, func), type, norm, replace_r2r(monkeypatch, place))


@pytest.mark.parametrize("func,type,place", [("dct", 1, "one-device"), ("dst", 2, "one-device"),
                                              ("dctn", 3, "one-device"), ("dct", 4, "one-device")])
def test_scipy_orthogonalize(func, type, place, monkeypatch):
    """scipy's ``test_orthogonalize_default`` and ``_noop`` on a 1D array of 100 (the sharded 1D path is checked
    against scipy in test_fft_like_jax.py). Its ``_dct1``/``_dcst2``/``_dcst3`` change arrays in place
    (``xpx.at(y, 0).divide``), which a JAX array ignores, so they fail for ``jax.numpy`` too:
    :func:`test_orthogonalize_boundaries` checks the same facts."""
    xp = replace_r2r(monkeypatch, place)
    real_transforms.test_orthogonalize_default(getattr(xf, func), type, xp)
    if type == 4:
        real_transforms.test_orthogonalize_noop(getattr(xf, func), type, "ortho", xp)


@pytest.mark.parametrize("kind,type,norm,place", [("dct", 1, "backward", "one-device"),
                                                  ("dct", 2, "forward", "sharded"), ("dst", 2, "ortho", "one-device"),
                                                  ("dct", 3, "backward", "one-device"),
                                                  ("dst", 3, "forward", "one-device")])
def test_orthogonalize_boundaries(kind, type, norm, place):
    """What scipy's ``test_orthogonalize_dct1``/``_dcst2``/``_dcst3`` check: ``orthogonalize=True`` scales the
    boundary inputs by sqrt 2 (types 1, 3) and divides the boundary outputs by sqrt 2 (types 1, 2); the inverse
    undoes it. Sharded (16 points over 8 devices): the three calls in one ``jax.jit`` program (the sharding is
    visible on an Explicit mesh; eagerly each step would compile a program of its own)."""
    x = np.random.default_rng(type).random(16)
    f, inv = getattr(xf, kind), getattr(xf, "i" + kind)
    first = {"dct": 0, "dst": -1}[kind]
    ends = [0, -1] if type == 1 else [first]
    x2 = x.copy()
    if type in (1, 3):
        x2[ends] *= np.sqrt(2)

    def calls(v, v2):
        got = f(v, type, norm=norm, orthogonalize=True)
        return f(v2, type, norm=norm, orthogonalize=False), got, inv(got, type, norm=norm, orthogonalize=True)

    if place == "sharded":
        plain, got, back = jax.jit(calls)(shard(x), shard(x2))
        assert got.sharding.spec == PartitionSpec("x")
    else:
        plain, got, back = calls(jnp.asarray(x), jnp.asarray(x2))
    want = np.array(plain)
    if type in (1, 2):
        want[ends] /= np.sqrt(2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(back, x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pair,type,dtype,axis,norm", [(PAIRS[0], 1, np.float16, 0, None),
                                                       (PAIRS[1], 3, np.complex128, 1, "ortho")],
                         ids=["dct-1-float16-0-None", "dst-3-complex128-1-ortho"])
def test_scipy_identity_overwrite_float16(pair, type, dtype, axis, norm, monkeypatch):
    """scipy's numpy-only tests: float16 (computed in float32, as scipy does), complex (real and imaginary parts
    transformed; float32 and float64 inputs are the other tests' cases); ``overwrite_x`` ignored."""
    for name in R2R:
        monkeypatch.setattr(real_transforms, name, getattr(xf, name))
    fwd, back = (getattr(xf, f) for f in pair)
    real_transforms.test_identity_1d_overwrite(fwd, back, type, dtype, axis, norm, False, np)
    real_transforms.test_identity_nd_overwrite(getattr(xf, pair[0] + "n"), getattr(xf, pair[1] + "n"), type,
                                               (4, 5), None, dtype, norm, True, np)


@pytest.mark.parametrize("func", ["dct", "idstn"])
def test_scipy_array_like(func, monkeypatch):
    """scipy's ``test_array_like``: a nested list transforms like the array (DCT and DST, forward and inverse, 1D
    and n-dim between them: each of the eight names is one call of the same front end, ``r2r``)."""
    real_transforms.test_array_like(np, getattr(xf, func))


@pytest.mark.parametrize("kind,type,norm", [("dct", 1, "ortho"), ("dst", 2, "ortho"), ("dct", 3, "ortho"),
                                            ("dst", 4, "ortho")])
def test_float16_like_scipy(kind, type, norm):
    """float16 input gives scipy's float32 result (scipy upcasts), to float32 precision, for every type (DCT and
    DST alternating; the upcast is the front end's, before the type is looked at)."""
    import scipy.fft

    x = np.random.default_rng(type).random(16).astype(np.float16)
    for name in (kind, "i" + kind):
        y = getattr(xf, name)(x, type, norm=norm)
        ref = getattr(scipy.fft, name)(x, type, norm=norm)
        assert y.dtype == ref.dtype == np.float32
        np.testing.assert_allclose(y, ref, rtol=2e-6, atol=2e-6 * np.abs(ref).max())
