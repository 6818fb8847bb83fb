"""``drop_nyquist``: a real transform whose half axis holds ``n // 2`` coefficients, without the Nyquist one.

``n // 2 + 1`` coefficients rarely split over the devices; where the mesh axes must land on the half axis (a 2D
slab), the planner pads them in transit and moves the mesh axes back: two all-to-alls per transform. Without the
Nyquist coefficient the half axis splits evenly and one all-to-all does. These tests check the values against
numpy (``rfftn(x)[..., :n // 2]`` and ``irfftn(k, s=...)``, the Nyquist coefficient taken as zero), the layout
helpers, the all-to-all counts in the compiled programs, the fallback of other backends, and the errors.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
from helpers import DelegatingBackend, count_op, mesh, put, random, rel_err, tol
from jax.sharding import NamedSharding, PartitionSpec

import xfft

# (mesh shape, global shape, sharding spec, transformed trailing axes, dtype)
CASES = [
    ((8,), (64, 64), ("x",), 2, np.float32),  # 2D slab: one all-to-all instead of two
    ((8,), (2, 32, 48), (None, "x"), 2, np.float64),  # batched 2D slab, a non-square grid
    ((8,), (16, 32, 32), ("x",), 3, np.float32),  # 3D slab: the same moves as with the Nyquist coefficient
    ((2, 4), (16, 16, 16), ("x", "y"), 3, np.float64),  # pencil
]
IDS = ["slab-2d", "slab-2d-batched-f64", "slab-3d", "pencil-3d-f64"]


def _sharded(mesh_shape, shape, spec, dtype, axis_types="explicit", seed=0):
    m = mesh(mesh_shape, axis_types)
    s = NamedSharding(m, PartitionSpec(*spec))
    return m, s, random(shape, dtype, seed=seed)


# A sample of case x axis types x order: every case, each with Explicit axes (the layout checks) in one order,
# each order and axis type on a 2D slab and on the pencil.
SAMPLE = [(0, "explicit", "natural"), (0, "auto", "transposed"), (1, "explicit", "transposed"),
          (2, "explicit", "natural"), (3, "explicit", "transposed"), (3, "auto", "natural")]


@pytest.mark.parametrize("mesh_shape,shape,spec,ndim,dtype,axis_types,order",
                         [CASES[i] + (t, o) for i, t, o in SAMPLE], ids=[f"{IDS[i]}-{t}-{o}" for i, t, o in SAMPLE])
def test_matches_numpy_without_the_nyquist_coefficient(mesh_shape, shape, spec, ndim, dtype, axis_types, order):
    """Forward: ``numpy.fft.rfftn(x)[..., :n // 2]``; inverse: ``numpy.fft.irfftn(k, s)`` (the Nyquist
    coefficient zero), back on the input's layout; the layout helpers describe the spectrum returned."""
    m, s, x = _sharded(mesh_shape, shape, spec, dtype, axis_types)
    axes = tuple(range(len(shape) - ndim, len(shape)))
    xs = put(x, s)
    k = jax.jit(lambda a: xfft.xrfftn(a, ndim=ndim, order=order, drop_nyquist=True))(xs)
    perm = xfft.spectral_axes(s, shape, real=True, ndim=ndim, order=order, drop_nyquist=True)
    ref = np.fft.rfftn(x, axes=axes)[..., : shape[-1] // 2]
    got = np.transpose(np.asarray(k), np.argsort(perm))
    assert got.shape == ref.shape
    assert rel_err(got, ref) < tol(dtype)
    if axis_types == "explicit":
        want = xfft.spectral_sharding(s, shape, real=True, ndim=ndim, order=order, drop_nyquist=True)
        assert k.sharding.is_equivalent_to(want, k.ndim)
    y = jax.jit(lambda c: xfft.ixrfftn(c, ndim=ndim, order=order, s=shape[len(shape) - ndim:],
                                        drop_nyquist=True))(k)
    assert y.shape == x.shape and y.dtype == x.dtype
    assert rel_err(np.asarray(y), np.fft.irfftn(ref, s=shape[len(shape) - ndim:], axes=axes)) < tol(dtype)
    if axis_types == "explicit":
        assert y.sharding.is_equivalent_to(s, y.ndim)


def test_a_round_trip_is_exact_for_a_field_without_a_nyquist_component():
    """A band-limited field (no Nyquist component, as the solvers' dealiased fields) comes back to rounding;
    without ``s`` the inverse takes the real length ``2 m``."""
    m, s, _ = _sharded((8,), (32, 32), ("x",), np.float64)
    j = np.arange(32) * 2 * np.pi / 32
    x = np.sin(3 * j)[:, None] * np.cos(5 * j)[None, :] + np.cos(j[:, None] + 2 * j[None, :]) ** 2
    xs = put(x, s)
    for order in ("natural", "transposed"):
        k = xfft.xrfftn(xs, order=order, drop_nyquist=True)
        y = xfft.ixrfftn(k, order=order, drop_nyquist=True, s=(32, 32))
        assert rel_err(np.asarray(y), x) < 1e-14
    assert xfft.ixrfftn(xfft.xrfftn(xs, drop_nyquist=True), drop_nyquist=True).shape == (32, 32)


@pytest.mark.parametrize("shape,spec,ndim,moves,order", [((64, 64), ("x",), 2, 1, "natural"),
                                                         ((64, 64), ("x",), 2, 1, "transposed"),
                                                         ((16, 32, 32), ("x",), 3, 1, "transposed")],
                         ids=["slab-2d-natural", "slab-2d-transposed", "slab-3d-transposed"])
def test_all_to_alls(shape, spec, ndim, moves, order):
    """The 2D slab saves one all-to-all each way (two with the Nyquist coefficient); elsewhere the count is the
    same."""
    m, s, x = _sharded((8,), shape, spec, np.float32)
    xs = put(x, s)
    fwd = jax.jit(lambda a: xfft.xrfftn(a, ndim=ndim, order=order, drop_nyquist=True))
    plain = jax.jit(lambda a: xfft.xrfftn(a, ndim=ndim, order=order))
    compiled = fwd.lower(xs).compile()
    k = compiled(xs)  # (compiled once, for its text and to run)
    inv = jax.jit(lambda c: xfft.ixrfftn(c, ndim=ndim, order=order, s=shape[-ndim:], drop_nyquist=True))
    n_fwd = count_op(compiled.as_text(), "all-to-all")
    n_inv = count_op(inv.lower(k).compile().as_text(), "all-to-all")
    n_plain = count_op(plain.lower(xs).compile().as_text(), "all-to-all")
    assert n_fwd == n_inv == moves
    assert n_plain == (2 if ndim == 2 else 1)


def test_wavenumbers():
    """``wavenumbers(..., drop_nyquist=True)`` lies along the spectrum it describes (``rfftfreq`` without its
    last entry)."""
    m, s, x = _sharded((8,), (32, 64), ("x",), np.float32)
    xs = put(x, s)
    for order in ("natural", "transposed"):
        k = xfft.xrfftn(xs, order=order, drop_nyquist=True)
        kx, ky = xfft.wavenumbers(s, (32, 64), real=True, order=order, drop_nyquist=True)
        perm = xfft.spectral_axes(s, (32, 64), real=True, ndim=2, order=order, drop_nyquist=True)
        assert (kx * ky).shape == k.shape
        np.testing.assert_allclose(np.asarray(ky).ravel(), np.fft.rfftfreq(64, 1 / 64)[:32])
        assert ky.shape[perm.index(1)] == 32


def test_one_device_and_other_backends():
    """On one device it is a local crop; a backend that does not declare ``drops_nyquist`` runs on native with a
    one-time fallback warning (values the same)."""
    x = random((16, 24), np.float32)
    k = xfft.xrfftn(x, drop_nyquist=True)
    np.testing.assert_allclose(np.asarray(k), np.fft.rfft2(x)[:, :12], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(xfft.ixrfftn(k, drop_nyquist=True)),
                               np.fft.irfft2(np.asarray(k), s=(16, 24)), rtol=1e-5, atol=1e-5)
    m, s, _ = _sharded((8,), (16, 24), ("x",), np.float32)
    other = DelegatingBackend("no-drop")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k2 = xfft.xrfftn(put(x, s), backend=other, drop_nyquist=True)
    assert other.calls == 0
    assert any(issubclass(w.category, xfft.BackendFallbackWarning) and "drop_nyquist" in str(w.message)
               for w in caught)
    np.testing.assert_allclose(np.asarray(k2), np.asarray(k), rtol=1e-5, atol=1e-4)
    with pytest.raises(NotImplementedError, match="drop_nyquist"):
        xfft.xrfftn(put(x, s), backend=DelegatingBackend("strict", strict=True), drop_nyquist=True)


def test_bad_input_names_drop_nyquist():
    m, s, _ = _sharded((8,), (16, 16), ("x",), np.float32)
    x = put(np.zeros((16, 16), np.float32), s)
    with pytest.raises(TypeError, match="drop_nyquist"):
        xfft.xrfftn(x, drop_nyquist=1)
    with pytest.raises(TypeError, match="drop_nyquist"):
        xfft.ixrfftn(xfft.xrfftn(x, drop_nyquist=True), drop_nyquist="yes")
    with pytest.raises(ValueError, match="drop_nyquist"):
        xfft.xrfftn(np.zeros((16, 15), np.float32), drop_nyquist=True)  # odd: no Nyquist coefficient
    k = xfft.xrfftn(x, drop_nyquist=True)
    with pytest.raises(ValueError, match="drop_nyquist"):
        xfft.ixrfftn(k, s=(16, 15), drop_nyquist=True)
    with pytest.raises(ValueError, match="drop_nyquist"):
        xfft.spectral_sharding(s, (16, 16), real=False, ndim=2, drop_nyquist=True)
    with pytest.raises(ValueError, match="drop_nyquist"):
        xfft.wavenumbers(s, (16, 15), real=True, drop_nyquist=True)
    with pytest.raises(TypeError, match="drop_nyquist"):
        xfft.spectral_axes(s, (16, 16), real=True, ndim=2, drop_nyquist=None)
