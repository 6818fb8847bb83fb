"""Sharded real-to-real transforms (xdctn/xdstn and inverses, xr2rn) against scipy.fft on gathered data."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft as sf
from helpers import mesh, random
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xfft
from xfft._layout import Fft, Plan
from xfft._lower import Program, lower_plan
from xfft._partition import run_program

SHAPE = (16, 8, 12)
TOL = {np.float32: 2e-5, np.float64: 1e-12}
FWD = {"dct": (xfft.xdctn, xfft.ixdctn, sf.dctn, sf.idctn), "dst": (xfft.xdstn, xfft.ixdstn, sf.dstn, sf.idstn)}


def _rel(got, ref) -> float:
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def _put(x: np.ndarray, m, spec) -> jax.Array:
    return jax.device_put(x, NamedSharding(m, spec))


def _check(kind, t, norm, m, spec, dtype, axes=None):
    fwd, inv, ref_f, ref_i = FWD[kind]
    xn = random(SHAPE, dtype, seed=t)
    x = _put(xn, m, spec)

    @jax.jit
    def run(a):
        y = fwd(a, type=t, axes=axes, norm=norm)
        return y, inv(y, type=t, axes=axes, norm=norm), inv(a, type=t, axes=axes, norm=norm)

    with jax.set_mesh(m):
        y, back, yi = run(x)
    tol = TOL[dtype]
    x64 = xn.astype(np.float64)
    assert y.dtype == dtype and back.dtype == dtype
    assert _rel(y, ref_f(x64, type=t, axes=axes, norm=norm)) < tol
    assert _rel(yi, ref_i(x64, type=t, axes=axes, norm=norm)) < tol
    assert _rel(back, xn) < tol
    if m.axis_types[0] == jax.sharding.AxisType.Explicit:
        assert back.sharding.is_equivalent_to(x.sharding, x.ndim)  # the inverse returns the input layout


# Each type on a float64 slab, the kinds alternating; with the cases below every kind x type runs sharded:
# dct 1 3 here, 2 4 below; dst 2 4 here, 1 3 below (and every kind x type x norm on one device further down).
@pytest.mark.parametrize("kind,t", [("dct", 1), ("dst", 2), ("dct", 3), ("dst", 4)])
def test_every_type_slab_float64(kind, t):
    norm = {1: None, 2: "ortho", 3: "forward", 4: "backward"}[t]
    _check(kind, t, norm, mesh((8,)), P("x"), np.float64)


# float32 on both pencils and an Auto slab (float64 on a pencil: test_axes_subset_and_negative)
@pytest.mark.parametrize("kind,t,norm,shape,axis_types,dtype", [
    ("dct", 2, "ortho", (2, 4), "explicit", np.float32),
    ("dst", 3, "ortho", (2, 4), "auto", np.float32),
    ("dct", 4, "backward", (8,), "auto", np.float32),
    ("dst", 1, "forward", (4, 2), "explicit", np.float32),
])
def test_types_norms_dtypes_on_slab_and_pencil(kind, t, norm, shape, axis_types, dtype):
    m = mesh(shape, axis_types)
    spec = P("x") if len(shape) == 1 else P("x", "y")
    _check(kind, t, norm, m, spec, dtype)


def test_axes_subset_and_negative():
    """``axes`` as scipy: a subset, negative indices; the sharded axis 0 is a batch axis here."""
    _check("dct", 2, "ortho", mesh((8,)), P("x"), np.float64, axes=(-1, 1))
    _check("dst", 1, None, mesh((2, 4)), P("x", "y"), np.float64, axes=2)


@pytest.mark.parametrize("shape,spec", [((8,), P("x")), ((2, 4), P("x", "y"))])
def test_mixed_kinds_against_numpy_scipy(shape, spec):
    """Sine in axis 0 (walls), FFT and real FFT in the periodic axes: one planned transform."""
    m = mesh(shape)
    xn = random(SHAPE, np.float64)
    x = _put(xn, m, spec)
    kinds = ("dst2", "fft", "rfft")
    @jax.jit
    def there_and_back(a):  # one program
        y = xfft.xr2rn(a, kinds, norm="ortho")
        return y, xfft.ixr2rn(y, kinds, norm="ortho")

    with jax.set_mesh(m):
        y, back = there_and_back(x)
    ref = np.fft.fft(np.fft.rfft(sf.dst(xn, type=2, axis=0, norm="ortho"), axis=2, norm="ortho"), axis=1, norm="ortho")
    assert _rel(y, ref) < 1e-12
    assert back.dtype == np.float64 and _rel(back, xn) < 1e-12
    assert back.sharding.is_equivalent_to(x.sharding, x.ndim)
    # complex input, cosine last: each kind on its own axis, in any order of axes
    zn = random(SHAPE, np.complex64)
    with jax.set_mesh(m):
        w = jax.jit(lambda a: xfft.xr2rn(a, ("dct3", "fft"), axes=(2, 0)))(_put(zn, m, spec))
    ref = np.fft.fft(sf.dct(zn.astype(np.complex128), type=3, axis=2), axis=0)
    assert w.dtype == np.complex64 and _rel(w, ref) < 2e-5


@pytest.mark.parametrize("order", ["natural", "transposed"])
def test_drop_nyquist_a_wall_grid_half_spectrum(order):
    """``drop_nyquist=True``: the ``"rfft"`` axis keeps ``n // 2`` coefficients (a 2D wall grid's spectrum: a DCT-I
    across the walls, the real FFT split over the 8 devices), the inverse takes the Nyquist coefficient as zero."""
    m = mesh((8,))
    xn = random((17, 32), np.float64)
    kinds = ("dct1", "rfft")
    x = _put(xn, m, P(None, "x"))
    with jax.set_mesh(m):
        y = jax.jit(lambda a: xfft.xr2rn(a, kinds, norm="forward", order=order, drop_nyquist=True))(x)
        back = jax.jit(lambda a: xfft.ixr2rn(a, kinds, norm="forward", order=order, s=(17, 32),
                                             drop_nyquist=True))(y)
    full = sf.dct(np.fft.rfft(xn, axis=1, norm="forward"), type=1, axis=0, norm="forward")
    got = np.asarray(y) if order == "natural" else np.asarray(y).T
    assert got.shape == (17, 16) and _rel(got, full[:, :16]) < 1e-12
    assert y.sharding.spec[list(xfft.spectral_axes(x.sharding, (17, 32), real=True, ndim=2, order=order,
                                                    drop_nyquist=True)).index(1)] == "x"  # the modes split
    no_nyquist = np.fft.irfft(np.concatenate([np.fft.rfft(xn, axis=1)[:, :16], np.zeros((17, 1))], axis=1), 32)
    assert back.dtype == np.float64 and _rel(back, no_nyquist) < 1e-12
    if order == "natural":  # without s, the real length is twice the coefficients kept (not 2 (m - 1))
        with jax.set_mesh(m):
            assert jax.eval_shape(lambda a: xfft.ixr2rn(a, kinds, drop_nyquist=True), y).shape == (17, 32)
    with pytest.raises(ValueError, match="'rfft' axis"):
        xfft.xr2rn(xn, ("dct1", "fft"), drop_nyquist=True)
    with pytest.raises(ValueError, match="even length"):
        xfft.xr2rn(xn[:, :31], kinds, drop_nyquist=True)
    with pytest.raises(TypeError, match="drop_nyquist"):
        xfft.ixr2rn(y, kinds, drop_nyquist=1)


@pytest.mark.parametrize("shape,spec,moves", [((8,), P("x"), 1), ((2, 4), P("x", "y"), 2)])
def test_hlo_all_to_all_count_and_no_gather(shape, spec, moves):
    """Same moves as the complex FFT plan: slab 1 all-to-all, pencil 2, whatever the kinds; never a gather.

    The slab compiles a DCT and an inverse DST, the pencil mixed kinds and the inverse DST."""
    m = mesh(shape)
    x = _put(random(SHAPE, np.float64), m, spec)
    y = jax.eval_shape(lambda a: xfft.xdstn(a, type=3), x)  # the spectral layout, nothing compiled
    y = jax.ShapeDtypeStruct(y.shape, y.dtype, sharding=NamedSharding(m, y.sharding.spec))
    fwd = ((lambda a: xfft.xdctn(a, type=2)) if len(shape) == 1 else
           (lambda a: xfft.xr2rn(a, ("dst1", "fft", "dct4"))))
    for f, a in ((fwd, x), (lambda a: xfft.ixdstn(a, type=3, norm="ortho"), y)):  # the inverse: spectral layout
        hlo = jax.jit(f).lower(a).compile().as_text()
        assert hlo.count("all-to-all(") == moves
        assert "all-gather" not in hlo


@pytest.mark.parametrize("shape,spec", [((8,), P("x")), ((2, 4), P("x", "y"))])
def test_gradients_dot_product_adjoint(shape, spec):
    """vjp of the orthonormal DCT-II is its inverse (orthogonal matrix, on the slab); <T x, c> = <x, T^T c> for
    the others (an inverse DCT-III on the slab, mixed kinds on the pencil)."""
    m = mesh(shape)
    xn, cn = random(SHAPE, np.float64, 1), random(SHAPE, np.float64, 2)
    x, c = _put(xn, m, spec), _put(cn, m, spec)
    if len(shape) == 1:
        @jax.jit
        def vjp_of_transform(a, c):  # one program
            _, vjp = jax.vjp(lambda a: xfft.xdctn(a, norm="ortho"), a)
            return vjp(xfft.xdctn(c, norm="ortho"))[0]

        with jax.set_mesh(m):
            g = vjp_of_transform(x, c)
        assert _rel(g, cn) < 1e-12
        fs = (lambda a: xfft.ixdctn(a, type=3, norm="forward"),)
    else:
        fs = (lambda a: xfft.xr2rn(a, ("dst1", "dct2", "dst4")),)
    for f in fs:

        @jax.jit
        def both(a, ct, f=f):
            y, vjp = jax.vjp(f, a)
            ct = jax.sharding.reshard(ct, jax.typeof(y).sharding.spec)
            return y, vjp(ct)[0], jax.linear_transpose(f, a)(ct)[0]

        with jax.set_mesh(m):
            y, g, gt = both(x, c)
        lhs = float(np.sum(np.asarray(y) * cn))
        assert abs(lhs - float(np.sum(xn * np.asarray(g)))) < 1e-12 * np.sum(np.abs(np.asarray(y) * cn))
        assert _rel(g, gt) < 1e-12


def test_local_matches_scipy_every_type_and_norm():
    """One device: every kind x type x norm, forward and inverse, along the leading (not minor-most) axis."""
    xn = random((7, 5), np.float64)
    cases = [(kind, t, norm) for kind in ("dct", "dst") for t in (1, 2, 3, 4) for norm in (None, "ortho", "forward")]

    @jax.jit
    def every(a):  # one program of all 48 transforms (not 48 eager calls)
        return [(FWD[k][0](a, type=t, axes=0, norm=n), FWD[k][1](a, type=t, axes=0, norm=n)) for k, t, n in cases]

    for (kind, t, norm), (got_f, got_i) in zip(cases, every(xn)):
        _, _, ref_f, ref_i = FWD[kind]
        assert _rel(got_f, ref_f(xn, type=t, axes=0, norm=norm)) < 1e-13
        assert _rel(got_i, ref_i(xn, type=t, axes=0, norm=norm)) < 1e-13


def test_errors_name_the_argument():
    x = np.zeros((8, 4))
    with pytest.raises(ValueError, match="type"):
        xfft.xdctn(x, type=5)
    with pytest.raises(ValueError, match="norm"):
        xfft.xdstn(x, norm="unitary")
    with pytest.raises(ValueError, match="axes"):
        xfft.xdctn(x, axes=(0, 0))
    with pytest.raises(ValueError, match="kinds"):
        xfft.xr2rn(x, ("dct2", "wavelet"))
    with pytest.raises(ValueError, match="rfft"):
        xfft.xr2rn(x, ("rfft", "rfft"))
    with pytest.raises(ValueError, match="kinds"):
        xfft.xr2rn(x, ("fft",), axes=(0, 1))
    with pytest.raises(TypeError, match="kinds"):
        xfft.xr2rn(x, "dct2")
    with pytest.raises(TypeError, match="rfft"):
        xfft.xr2rn(x.astype(np.complex64), ("rfft", "fft"))
    with pytest.raises(TypeError, match="dtype"):
        xfft.xdctn(np.zeros((4, 4), np.int32))
    with pytest.raises(ValueError, match="s="):
        xfft.ixr2rn(np.zeros((8, 3), np.complex64), ("fft", "rfft"), s=(8, 7))
    with pytest.raises(TypeError, match="unknown plan step"):
        lower_plan(Plan(((),), (Fft((0,), kinds=("dct2",)), "bogus"), ((),), (4,)))
    with pytest.raises(TypeError, match="unknown program step"):
        run_program(jnp.zeros(4), Program(("bogus",), (0,), (0,), ((),), ((),)), "backward", {})
