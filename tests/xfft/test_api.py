"""One API: signatures agree across transforms, the spellings removed in the release after their deprecation are
refused naming what to write, the r2r
transforms take ``backend=``/``order=`` through the one execution path, the typed Backend protocol, and the
one-time warning for float64 input with JAX's 64-bit mode off."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import numpy as np
import pytest
import scipy.fft as sf
from helpers import DelegatingBackend, mesh, random, rel_err
from jax.sharding import NamedSharding, PartitionSpec

import xfft
from xfft import backends
from xfft._layout import Move, spec_to_layout
from xfft._lower import Transpose, lower_plan
from xfft._plan import plan_forward
from xfft.backends import BackendFallbackWarning

INVERSES = [xfft.ixfftn, xfft.ixrfftn, xfft.ixfft3d, xfft.ixrfft3d, xfft.ixr2rn, xfft.ixdctn, xfft.ixdstn]
TRANSFORMS = INVERSES + [xfft.xfftn, xfft.xrfftn, xfft.xfft3d, xfft.xrfft3d, xfft.xr2rn, xfft.xdctn, xfft.xdstn]


def test_signatures_agree():
    """s is a keyword in every inverse, norm defaults to "backward" and backend=/order= exist everywhere; the
    layout helpers take (sharding, shape)."""
    for f in TRANSFORMS:
        params = inspect.signature(f).parameters
        assert params["norm"].default == "backward", f.__name__
        assert params["backend"].kind == params["order"].kind == inspect.Parameter.KEYWORD_ONLY, f.__name__
        if f in INVERSES:
            assert params["s"].kind == inspect.Parameter.KEYWORD_ONLY, f.__name__
    for f in (xfft.spectral_sharding, xfft.spectral_axes, xfft.wavenumbers):
        assert list(inspect.signature(f).parameters)[1] == "shape", f.__name__


def test_removed_spellings_are_refused_naming_the_argument():
    """The spellings deprecated in 0.2.0 and 0.3.0 are gone: each raises an error that names the argument (no
    warning, no silent reinterpretation); ``max_of``/``max_if`` are no arguments of the forward transforms."""
    m = mesh((8,))
    a = random((16, 8, 12), np.float64)
    s = NamedSharding(m, PartitionSpec("x"))
    k = xfft.xrfft3d(jax.device_put(a, s))
    h = xfft.xr2rn(jax.device_put(a, s), ("dst2", "fft", "rfft"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises((TypeError, ValueError), match="norm"):
            xfft.ixrfft3d(k, a.shape)  # s positional
        with pytest.raises(TypeError, match="ndim"):
            xfft.ixrfftn(k, a.shape)
        with pytest.raises(TypeError, match="axes"):
            xfft.ixrfftn(k, None, 3)  # the old order: s=None, ndim=3
        with pytest.raises(TypeError, match="'n'"):
            xfft.ixr2rn(h, ("dst2", "fft", "rfft"), n=12)
        with pytest.raises(TypeError, match=r"spectral_axes takes \(sharding, shape\)"):
            xfft.spectral_axes(a.shape, s)
        with pytest.raises(TypeError, match=r"wavenumbers takes \(sharding, shape\)"):
            xfft.wavenumbers(a.shape, s, real=True)
        with pytest.raises(ValueError, match=r"axes=\(0, 1, 2, 3\)"):
            xfft.xdctn(random((2, 4, 4, 4), np.float64))
    for f in (xfft.xfftn, xfft.xrfftn):
        assert not {"max_of", "max_if"} & set(inspect.signature(f).parameters), f.__name__
    assert not hasattr(xfft, "cpu_matrix_dft") and not hasattr(xfft, "keep_host_memory")


@pytest.mark.parametrize("mesh_shape,spec", [((8,), ("x",)), ((2, 4), ("x", "y"))], ids=["slab", "pencil"])
def test_r2r_transposed_order(mesh_shape, spec):
    """DCT/DST take order="transposed" like the FFTs: the permuted result, its sharding, and the round trip."""
    m = mesh(mesh_shape)
    a = random((16, 8, 12), np.float64)
    s = NamedSharding(m, PartitionSpec(*spec))
    x = jax.device_put(a, s)
    perm = xfft.spectral_axes(s, a.shape, order="transposed")
    kinds = ("dst1", "fft", "rfft")

    @jax.jit
    def run(x):  # one program: both transforms and their inverses
        y = xfft.xdctn(x, type=2, norm="ortho", order="transposed")
        z = xfft.xr2rn(x, kinds, order="transposed")
        return (y, xfft.ixdctn(y, type=2, norm="ortho", order="transposed", s=a.shape), z,
                xfft.ixr2rn(z, kinds, order="transposed", s=a.shape))

    y, back, z, back_z = run(x)
    assert rel_err(y, np.transpose(sf.dctn(a, type=2, norm="ortho"), perm)) < 1e-12
    assert y.sharding.is_equivalent_to(xfft.spectral_sharding(s, a.shape, order="transposed"), 3)
    assert rel_err(back, a) < 1e-12 and back.sharding.is_equivalent_to(s, 3)
    ref = np.fft.fft(np.fft.rfft(sf.dst(a, type=1, axis=0), axis=2), axis=1)
    perm_r = xfft.spectral_axes(s, a.shape, real=True, order="transposed")
    assert rel_err(z, np.transpose(ref, perm_r)) < 1e-12
    assert rel_err(back_z, a) < 1e-12


def test_r2r_plans_move_like_the_fft():
    """Kinds ride on the FFT plan: same moves, same lowered transposes; the kinds reach the local stages."""
    sizes = (("x", 2), ("y", 4))
    layout = spec_to_layout(PartitionSpec("x", "y"), 3)
    fft = plan_forward((16, 8, 12), layout, (0, 1, 2), sizes, True)
    mixed = plan_forward((16, 8, 12), layout, (0, 1, 2), sizes, True, ((0, "dst2"), (1, "dct4")))
    assert [s for s in fft.steps if isinstance(s, Move)] == [s for s in mixed.steps if isinstance(s, Move)]
    assert fft.out_layout == mixed.out_layout
    for natural in (True, False):
        a, b = lower_plan(fft, None, natural), lower_plan(mixed, None, natural)
        assert [s for s in a.steps if isinstance(s, Transpose)] == [s for s in b.steps if isinstance(s, Transpose)]
        assert a.out_perm == b.out_perm
    assert {k for s in lower_plan(mixed).steps for k in getattr(s, "kinds", ())} - {"fft", "rfft"} == {"dst2", "dct4"}


def test_r2r_backend_registry_and_fallback():
    m = mesh((8,))
    a = random((16, 8, 12), np.float64)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec("x")))
    b = DelegatingBackend("fft-only-test")
    with pytest.warns(BackendFallbackWarning, match="kinds.*dct2"):
        y = xfft.xdctn(x, backend=b)
    assert b.calls == 0 and rel_err(y, sf.dctn(a)) < 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        xfft.xdctn(x, backend=b)  # once per backend and feature
        xfft.xr2rn(x, ("fft", "fft", "rfft"), backend=b)  # Fourier kinds only: the backend runs it itself
    assert b.calls == 1
    assert rel_err(xfft.ixdctn(y, backend="native"), a) < 1e-12
    with pytest.raises(NotImplementedError, match="strict.*kinds"):
        xfft.xdstn(x, backend=DelegatingBackend("fft-only-strict", strict=True))


def test_backend_protocol_is_typed():
    native = backends.get_backend("native")
    assert isinstance(native, backends.Backend)
    assert native.supports_order and native.kinds == frozenset(xfft.R2R_KINDS) and not native.strict
    assert native.drops_nyquist and native.takes_real_layout
    assert set(backends.Backend.__annotations__) == {"name", "supports_order", "kinds", "strict", "drops_nyquist",
                                                     "takes_real_layout"}
    assert {"order", "kinds"} <= set(inspect.signature(backends.Backend.forward).parameters)
    assert "real_layout" in inspect.signature(type(native).inverse).parameters
    minimal = DelegatingBackend("minimal")
    assert [backends.capability(minimal, a) for a in ("supports_order", "kinds", "strict", "drops_nyquist",
                                                       "takes_real_layout")] == [
        False, frozenset({"fft", "rfft"}), False, False, False]
    from xfft.backends.jaxdecomp import JaxDecompBackend

    assert JaxDecompBackend.supports_order is False and JaxDecompBackend.kinds == frozenset({"fft", "rfft"})
    assert JaxDecompBackend.drops_nyquist is False
    assert JaxDecompBackend.takes_real_layout is False


def test_float64_without_x64_warns_once():
    """With JAX's 64-bit mode off a float64 numpy input is computed in float32: one PrecisionWarning, saying how."""
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("always")
        import numpy as np, xfft, xfft.fft
        a = np.ones((8, 8))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            xfft.xfftn(a); xfft.fft.rfftn(a); xfft.xdctn(a.astype(np.complex128)); xfft.xfftn(a.astype(np.float32))
        print(len(w), *[(x.category.__name__, x.filename.endswith("<string>")) for x in w[:1]])
        print(*[x.message for x in w[:1]])
    """)
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env.update(JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    first, message = out.stdout.strip().split("\n", 1)
    assert first == "1 ('PrecisionWarning', True)", out.stdout
    assert "jax.config.update('jax_enable_x64', True)" in message and "JAX_ENABLE_X64=1" in message
    # with the 64-bit mode on (as in this process, tests/conftest.py): the same calls, no warning
    assert jax.config.jax_enable_x64
    a = np.ones((8, 8))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        xfft.xfftn(a), xfft.fft.rfftn(a), xfft.xdctn(a.astype(np.complex128)), xfft.xfftn(a.astype(np.float32))
    assert [x.category.__name__ for x in w] == [], [str(x.message) for x in w]
