"""Backend registry and the jaxdecomp backend: same values, layouts and gradients as native; fallbacks; strict mode."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import DelegatingBackend, count_op, hlo, mesh, put, random, rel_err, tol
from jax.sharding import NamedSharding, PartitionSpec

import xfft
from xfft import backends
from xfft.backends import BackendFallbackWarning

HAS_JD = "jaxdecomp" in xfft.available_backends()
needs_jd = pytest.mark.skipif(not HAS_JD, reason='jaxdecomp is not installed (pip install "xfft[jaxdecomp]")')
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHAPE = (8, 16, 24)  # every mesh below divides the jaxdecomp layouts of this grid


def _jd(strict: bool | None = None, engine: str = "auto"):
    from xfft.backends.jaxdecomp import JaxDecompBackend

    return JaxDecompBackend(strict=strict, engine=engine)


@pytest.fixture
def recorder(monkeypatch):
    rec = DelegatingBackend("recorder")  # counts calls, delegates to native
    monkeypatch.setitem(backends._REGISTRY, "recorder", rec)
    monkeypatch.delitem(backends._LOADED, "recorder", raising=False)
    return rec


def _run(code: str, **env) -> str:
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
    for k, v in env.items():
        if v is None:
            full.pop(k)
    out = subprocess.run([sys.executable, "-c", code], env=full, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


# -- registry -----------------------------------------------------------------------------------------------

def test_default_is_native(monkeypatch):
    monkeypatch.delenv("XFFT_BACKEND", raising=False)
    assert xfft.default_backend() == "native"
    assert backends.get_backend().name == "native"
    assert "native" in xfft.available_backends()
    assert set(xfft.available_backends()) <= set(backends.registered_backends())
    assert "jaxdecomp" in backends.registered_backends()


def test_env_var_sets_default(monkeypatch, recorder):
    monkeypatch.setenv("XFFT_BACKEND", "recorder")
    assert xfft.default_backend() == "recorder"
    x = put(random((8, 8, 8), np.complex64), NamedSharding(mesh((8,)), PartitionSpec("x")))
    xfft.xfft3d(x)
    assert recorder.calls == 1
    monkeypatch.setenv("XFFT_BACKEND", "no-such-backend")
    with pytest.raises(ValueError, match="XFFT_BACKEND"):
        xfft.xfft3d(x)


def test_use_backend_context_manager(monkeypatch, recorder):
    monkeypatch.delenv("XFFT_BACKEND", raising=False)
    x = put(random((8, 8, 8), np.complex64), NamedSharding(mesh((8,)), PartitionSpec("x")))
    with xfft.use_backend("recorder"):
        assert xfft.default_backend() == "recorder"
        k = jax.jit(xfft.xfft3d)(x)  # traced inside the block
        xfft.ixfft3d(k)
        with xfft.use_backend("native"):
            assert xfft.default_backend() == "native"
            xfft.xfft3d(x)
        assert xfft.default_backend() == "recorder"
    assert xfft.default_backend() == "native"
    assert recorder.calls == 2
    xfft.xfft3d(x, backend="recorder")
    assert recorder.calls == 3
    with xfft.use_backend(recorder):  # a backend object works too
        xfft.xfft3d(x)
    assert recorder.calls == 4


def test_unknown_backend_is_value_error():
    x = np.ones((4, 4, 4), np.complex64)
    with pytest.raises(ValueError, match="backend must be one of"):
        xfft.xfft3d(x, backend="nope")
    with pytest.raises(ValueError, match="backend must be one of"):
        with xfft.use_backend("nope"):
            pass
    with pytest.raises(ValueError):
        backends.register_backend("", "a:b")
    with pytest.raises(TypeError):
        backends.register_backend("bad", object())


def test_backend_object_is_accepted(recorder):
    x = put(random((8, 8, 8), np.complex64), NamedSharding(mesh((2, 4)), PartitionSpec("x", "y")))
    k = xfft.xfft3d(x, backend=recorder)
    assert recorder.calls == 1
    assert rel_err(k, np.fft.fftn(np.asarray(x))) < tol(np.float32)


def test_import_is_lazy_and_env_var_in_fresh_process():
    """jaxdecomp is not imported by ``import xfft`` nor a native transform; XFFT_BACKEND set before a fresh process
    starts is its default (one process; the unset default and the variable set later: the tests above)."""
    code = ("import sys, xfft; a = 'jaxdecomp' in sys.modules; xfft.xfft3d(__import__('numpy').ones((4, 4, 4))); "
            "b = 'jaxdecomp' in sys.modules; names = xfft.available_backends(); "
            "print(a, b, ('jaxdecomp' in sys.modules) == ('jaxdecomp' in names), xfft.default_backend(), "
            "xfft.backends.get_backend().name)")
    assert _run(code, XFFT_BACKEND="native") == "False False True native native"


def test_missing_jaxdecomp_gives_install_hint(monkeypatch):
    from xfft.backends import jaxdecomp as jdmod

    monkeypatch.setitem(sys.modules, "jaxdecomp", None)  # import jaxdecomp -> ImportError
    monkeypatch.delitem(backends._LOADED, "jaxdecomp", raising=False)
    jdmod._library.cache_clear()
    try:
        with pytest.raises(ImportError, match=r'pip install "xfft\[jaxdecomp\]"'):
            jdmod.JaxDecompBackend()
        with pytest.raises(ImportError, match=r'pip install "xfft\[jaxdecomp\]"'):
            xfft.xfft3d(np.ones((4, 4, 4), np.complex64), backend="jaxdecomp")
        assert "jaxdecomp" not in xfft.available_backends()
        assert "native" in xfft.available_backends()
    finally:
        jdmod._library.cache_clear()


@needs_jd
def test_old_jaxdecomp_is_rejected(monkeypatch):
    import jaxdecomp

    from xfft.backends import jaxdecomp as jdmod

    monkeypatch.setattr(jaxdecomp, "__version__", "0.2.9")
    jdmod._library.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"found 0\.2\.9.*pip install"):
            jdmod.JaxDecompBackend()
    finally:
        jdmod._library.cache_clear()


def test_fallback_warning_is_not_an_error_under_pytest():
    assert issubclass(BackendFallbackWarning, UserWarning)
    assert not issubclass(BackendFallbackWarning, DeprecationWarning)


# -- jaxdecomp against numpy ----------------------------------------------------------------------------------

# A sample, not the full product: both axis types, both dtypes and both engines appear; the public-API engine
# (pfft3d) only on 2D meshes (one-axis meshes always use the kernel). Elsewhere in this file: the Explicit slab (8,)
# with float64 eagerly (the norms), the size-one second mesh axis (8, 1) with both axis types and both engines under
# jit (``test_jaxdecomp_size_one_mesh_axis``), the (2, 4) Explicit pencil with both engines eagerly (the norms; the
# kernel's jvp and transpose; the gradients) and under jax.vmap; in test_fft.py, the kernel on an Auto pencil with
# float32 and on an Explicit pencil with float64.
JD_CASES = [((8,), "auto", np.complex64, "kernel"),  # slab, Auto
            ((2, 4), "auto", np.complex128, "kernel"),  # pencil, Auto, float64
            ((4, 2), "auto", np.complex64, "pfft3d"),  # the other pencil
            ((1, 8), "explicit", np.complex64, "pfft3d")]  # size-one first mesh axis


def _jd_round_trip(x, backend):
    """``(forward on backend, its inverse)``: the transforms of one check, for one jit. (Native's spectrum is laid
    out as xfft.spectral_sharding predicts: tests/xfft/test_fft.py, test_spectral_layout_and_natural_order and the
    order tests.)"""
    k = xfft.xfft3d(x, backend=backend)
    return k, xfft.ixfft3d(k, backend=backend)


def _ids(v):
    return "x".join(map(str, v)) if isinstance(v, tuple) else getattr(v, "__name__", v)


@needs_jd
@pytest.mark.parametrize("mesh_shape,axis_types,dtype,engine", JD_CASES, ids=_ids)
def test_jaxdecomp_matches_numpy_and_native_layout(mesh_shape, axis_types, dtype, engine):
    """c2c forward and inverse under jit equal numpy, run on jaxdecomp (no fallback), with native's shardings."""
    m = mesh(mesh_shape, axis_types)
    s = xfft.real_sharding(m, SHAPE)
    a = random(SHAPE, dtype, seed=1)
    x = put(a, s)
    backend = _jd(engine=engine)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        k, back = jax.jit(_jd_round_trip, static_argnames="backend")(x, backend)  # one program
    ref = np.fft.fftn(a.astype(np.complex128))
    assert k.dtype == dtype and back.dtype == dtype
    assert rel_err(k, ref) < tol(dtype)
    assert rel_err(back, np.fft.ifftn(ref)) < tol(dtype)
    assert rel_err(back, a) < tol(dtype)
    assert k.sharding.is_equivalent_to(xfft.spectral_sharding(s, SHAPE), 3)  # native's layout
    assert back.sharding.is_equivalent_to(x.sharding, 3)


@needs_jd
@pytest.mark.parametrize("mesh_shape,runs", [((8,), (("forward", "kernel"),)),
                                              ((2, 4), (("backward", "kernel"), ("ortho", "pfft3d")))],
                         ids=["slab-forward", "pencil-backward-ortho"])  # (a slab always runs the kernel)
def test_jaxdecomp_norms_and_batch_eager(runs, mesh_shape):
    """Eager calls (by name for the kernel engine), two leading batch axes, every norm, both engines: numpy's
    values, normalized over the grid only; round trips with "forward" and "ortho" (with "backward", the default:
    test_jaxdecomp_matches_numpy_and_native_layout)."""
    m = mesh(mesh_shape, "explicit")
    shape = (2, 3) + SHAPE
    s = NamedSharding(m, PartitionSpec(None, None, *xfft.real_sharding(m, SHAPE).spec))
    a = random(shape, np.complex128, seed=2)
    x = put(a, s)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        for norm, engine in runs:
            k = xfft.xfft3d(x, norm=norm, backend="jaxdecomp" if engine == "kernel" else _jd(engine=engine))
            ref = np.fft.fftn(a, axes=(2, 3, 4), norm=norm)
            assert rel_err(k, ref) < tol(np.float64)
            if norm == "backward":
                continue
            back = xfft.ixfft3d(k, norm=norm, backend="jaxdecomp" if engine == "kernel" else _jd(engine=engine))
            assert rel_err(back, a) < tol(np.float64)
            assert back.sharding.is_equivalent_to(x.sharding, x.ndim)


@needs_jd
@pytest.mark.parametrize("mesh_shape,engine", [((8,), "kernel"), ((2, 4), "kernel"), ((2, 4), "pfft3d")],
                         ids=["slab-kernel", "pencil-kernel", "pencil-pfft3d"])  # (a slab always runs the kernel)
def test_jaxdecomp_translation_moves_no_data(mesh_shape, engine):
    """Native's all-to-all count (one per mesh axis: tests/xfft/test_distribution.py checks native's) and no other
    collective: the natural-order translation is local."""
    m = mesh(mesh_shape, "explicit")
    x = put(np.ones(SHAPE, np.complex64), xfft.real_sharding(m, SHAPE))
    k = jax.eval_shape(xfft.xfft3d, x)  # the spectrum's shape and sharding, nothing compiled
    k = jax.ShapeDtypeStruct(k.shape, k.dtype, sharding=NamedSharding(m, k.sharding.spec))
    backend = _jd(engine=engine)
    for direction in ("forward", "inverse"):
        if direction == "forward":
            text = hlo(lambda x: xfft.xfft3d(x, backend=backend), x)
        else:
            text = hlo(lambda k: xfft.ixfft3d(k, backend=backend), k)
        assert count_op(text, "all-to-all") == len(mesh_shape)
        for op in ("all-gather", "collective-permute", "all-reduce"):
            assert count_op(text, op) == 0, op


@needs_jd
def test_jaxdecomp_under_vmap():
    m = mesh((2, 4), "explicit")
    a = random((2,) + SHAPE, np.complex64, seed=4)
    x = put(a, NamedSharding(m, PartitionSpec(None, "x", "y")))
    for backend in ("jaxdecomp", _jd(engine="pfft3d")):
        k = jax.jit(jax.vmap(lambda v, b=backend: xfft.xfft3d(v, backend=b)))(x)
        assert rel_err(k, np.fft.fftn(a, axes=(1, 2, 3))) < tol(np.float32)


@needs_jd
def test_engines():
    from xfft.backends.jaxdecomp import _library

    assert _library().kernel is not None, "the tested jaxdecomp must expose the per-device kernel"
    assert backends.get_backend("jaxdecomp").engine == "kernel"
    assert _jd(engine="pfft3d").engine == "pfft3d"
    with pytest.raises(ValueError, match="engine"):
        _jd(engine="cudecomp")


# -- fallbacks and strict mode ------------------------------------------------------------------------------

def _fallback_cases():
    pencil = mesh((2, 4), "explicit")
    slab = mesh((8,), "auto")
    r2c = put(random(SHAPE, np.float32, seed=5), xfft.real_sharding(pencil, SHAPE))
    two_d = put(random((64, 48), np.complex64, seed=6), NamedSharding(pencil, PartitionSpec(("x", "y"), None)))
    uneven = put(random((30, 40, 50), np.complex64, seed=7), xfft.real_sharding(slab, (30, 40, 50)))
    return [
        ("real-to-complex", lambda b: xfft.ixrfft3d(xfft.xrfft3d(r2c, backend=b), s=SHAPE, backend=b)),
        ("2D transforms", lambda b: xfft.ixfftn(xfft.xfftn(two_d, ndim=2, backend=b), ndim=2, backend=b)),
        ("divide evenly", lambda b: jax.jit(lambda v: xfft.ixfft3d(xfft.xfft3d(v, backend=b), backend=b))(uneven)),
    ]


@needs_jd
@pytest.mark.parametrize("index", [0, 1, 2], ids=["r2c", "2d", "uneven"])
def test_fallback_warns_once_and_matches_native(index):
    feature, fn = _fallback_cases()[index]
    backend = _jd()
    with pytest.warns(BackendFallbackWarning, match=feature):
        got = fn(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got2 = fn(backend)  # once per feature: no second warning
    ref = fn("native")
    assert rel_err(got, ref) < 1e-6 and rel_err(got2, ref) < 1e-6
    assert got.sharding.is_equivalent_to(ref.sharding, ref.ndim)


@needs_jd
@pytest.mark.parametrize("index", [0, 1, 2], ids=["r2c", "2d", "uneven"])
def test_strict_raises_naming_the_feature(index, monkeypatch):
    feature, fn = _fallback_cases()[index]
    with pytest.raises(NotImplementedError, match=f"strict.*{feature}"):
        fn(_jd(strict=True))
    monkeypatch.setenv("XFFT_STRICT_BACKEND", "1")
    with pytest.raises(NotImplementedError, match=feature):
        fn(_jd())
    monkeypatch.setenv("XFFT_STRICT_BACKEND", "0")
    with pytest.warns(BackendFallbackWarning):
        fn(_jd())


@needs_jd
def test_strict_other_sharding_and_single_device():
    m = mesh((2, 4), "explicit")
    x = put(random(SHAPE, np.complex64), NamedSharding(m, PartitionSpec("y", "x")))
    with pytest.raises(NotImplementedError, match=r"sharding P\('y', 'x'"):
        xfft.xfft3d(x, backend=_jd(strict=True))
    with pytest.raises(NotImplementedError, match="single device"):
        xfft.xfft3d(np.ones((4, 4, 4), np.complex64), backend=_jd(strict=True))
    with pytest.warns(BackendFallbackWarning, match="sharding"):
        k = xfft.xfft3d(x, backend=_jd())
    assert rel_err(k, np.fft.fftn(np.asarray(x))) < tol(np.float32)


# -- gradients ----------------------------------------------------------------------------------------------

def _grad_loss(v, b, w):
    k = xfft.xfft3d(v.astype(jnp.complex128), norm="ortho", backend=b)
    y = xfft.ixfft3d(k * w, backend=b)
    return jnp.sum(jnp.abs(k * w) ** 2) + jnp.sum(jnp.real(y) ** 3)


@jax.jit(static_argnames="b")
def _grads(x, w, b):
    """One program: the loss's gradient on backend ``b`` for complex input ``x`` and for its real part."""
    return [jax.grad(_grad_loss)(v, b, w) for v in (x, jnp.real(x))]


@needs_jd
def test_gradients_agree_with_native():
    """The public-API engine's gradients (sharded; its own differentiation rules) equal native's (on one device:
    jax.numpy.fft's), laid out as the input, for complex input and for real. (The kernel engine is differentiated
    by JAX itself: its jvp and transpose, which make its gradient, in test_kernel_engine_jvp_and_linear_transpose.)"""
    mesh_shape, axis_types, engine = (2, 4), "explicit", "pfft3d"
    m = mesh(mesh_shape, axis_types)
    s = xfft.real_sharding(m, SHAPE)
    x = put(random(SHAPE, np.complex128, seed=8), s)
    w = jnp.asarray(random(SHAPE, np.complex128, seed=9))
    backend = _jd(engine=engine)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        g_jds = _grads(x, w, backend)
    for g_jd, g_native in zip(g_jds, _grads(jax.device_put(np.asarray(x), jax.devices()[0]), w, "native")):
        assert rel_err(g_jd, g_native) < 1e-12  # complex and real inputs; native on one device
        assert g_jd.sharding.is_equivalent_to(x.sharding, 3)  # laid out as the input


@needs_jd
@pytest.mark.parametrize("mesh_shape,direction", [((8,), "forward"), ((2, 4), "inverse")],
                         ids=["slab-forward", "pencil-inverse"])
def test_kernel_engine_jvp_and_linear_transpose(mesh_shape, direction):
    """The kernel engine is plain JAX: jax.jvp and jax.linear_transpose (eager and jitted) equal numpy's transforms
    (the DFT is linear: its jvp along v is its value at v; its matrix is symmetric: its transpose is itself)."""
    m = mesh(mesh_shape, "explicit")
    x = put(random(SHAPE, np.complex128, seed=10), xfft.real_sharding(m, SHAPE))
    # the inverse's input: numpy's spectrum, laid out as xfft3d's
    fwd, arg = (xfft.xfft3d, x) if direction == "forward" else (
        xfft.ixfft3d, put(np.fft.fftn(np.asarray(x)), xfft.spectral_sharding(x.sharding, SHAPE)))
    ref = np.fft.fftn if direction == "forward" else np.fft.ifftn
    f_jd = lambda v: fwd(v, backend="jaxdecomp")  # noqa: E731
    _, t_jd = jax.jvp(f_jd, (arg,), (arg,))
    assert rel_err(t_jd, ref(np.asarray(arg))) < 1e-12
    ct = t_jd  # a cotangent laid out as the transform's output
    lt_ref = ref(np.asarray(ct))
    (lt_jd,) = jax.linear_transpose(f_jd, arg)(ct)
    assert rel_err(lt_jd, lt_ref) < 1e-12
    if direction == "inverse":  # jitted too (one of the two: the same rules)
        (lt_jit,) = jax.jit(lambda c: jax.linear_transpose(f_jd, arg)(c))(ct)
        assert rel_err(lt_jit, lt_ref) < 1e-12


def test_transposed_order_on_backend_without_it_falls_back_once():
    """order="transposed" on a backend without supports_order: native, one BackendFallbackWarning; strict raises."""
    m = xfft.make_mesh((2, 4))
    a = np.random.default_rng(3).standard_normal((16, 16, 16)).astype(np.float32)
    x = jax.device_put(a, xfft.real_sharding(m, a.shape))
    b = DelegatingBackend("no-order-test")
    with pytest.warns(BackendFallbackWarning, match="order"):
        k = xfft.xrfft3d(x, backend=b, order="transposed")
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        np.testing.assert_array_equal(np.asarray(k), np.asarray(xfft.xrfft3d(x, order="transposed")))
        back = xfft.ixrfft3d(k, s=a.shape, backend=b, order="transposed")
        calls = b.calls
        jax.eval_shape(lambda v: xfft.xrfft3d(v, backend=b), x)  # natural order runs on the backend itself, silently
        assert b.calls == calls + 1
    np.testing.assert_allclose(np.asarray(back), a, atol=1e-5)
    with pytest.raises(NotImplementedError, match="order"):
        xfft.xfft3d(x, backend=DelegatingBackend("no-order-strict", strict=True), order="transposed")


@needs_jd
@pytest.mark.parametrize("axis_types,engine", [("explicit", "kernel"), ("auto", "pfft3d")])
def test_jaxdecomp_size_one_mesh_axis(axis_types, engine):
    """A slab written as jaxDecomp users write it: mesh (8, 1), input ``P('a', 'b', None)`` (issue 12).

    Runs on jaxdecomp (no fallback), equals numpy both ways, and lands on native's shardings.
    """
    kind = jax.sharding.AxisType.Explicit if axis_types == "explicit" else jax.sharding.AxisType.Auto
    m = jax.make_mesh((8, 1), ("a", "b"), axis_types=(kind,) * 2)
    a = random(SHAPE, np.complex128, seed=3)
    x = put(a, NamedSharding(m, PartitionSpec("a", "b", None)))
    backend = _jd(engine=engine)
    with warnings.catch_warnings(), jax.set_mesh(m):
        warnings.simplefilter("error", BackendFallbackWarning)
        k, back = jax.jit(_jd_round_trip, static_argnames="backend")(x, backend)  # one program
    assert rel_err(k, np.fft.fftn(a)) < tol(np.float64)
    assert rel_err(back, a) < tol(np.float64)
    assert k.sharding.is_equivalent_to(xfft.spectral_sharding(x.sharding, SHAPE), 3)  # native's layout
    assert back.sharding.is_equivalent_to(x.sharding, 3)


@needs_jd
def test_out_sharding_runs_on_native_with_a_warning():
    """jaxDecomp's inverse does not take ``out_sharding=``: the native backend runs it, once warned."""
    m = mesh((8,), "explicit")
    x = put(random(SHAPE, np.complex64, seed=8), xfft.real_sharding(m, SHAPE))
    k = put(np.fft.fftn(np.asarray(x)).astype(np.complex64), xfft.spectral_sharding(x.sharding, SHAPE))  # its spectrum
    with pytest.warns(BackendFallbackWarning, match="out_sharding"):
        back = xfft.ixfft3d(k, backend=_jd(), out_sharding=x.sharding)
    assert rel_err(back, np.asarray(x)) < 1e-5 and back.sharding.is_equivalent_to(x.sharding, 3)
