"""Distributed transforms against numpy.fft on gathered data: meshes x axis types x shapes x kinds x backends,
sampled (each mesh, axis type, shape, kind and backend at least once; not the full product: its programs take
minutes to compile)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import AXIS_TYPES, grid_sharding, mesh, put, random, rel_err, tol
from jax.sharding import NamedSharding, PartitionSpec

import xfft

BACKENDS = xfft.available_backends()
# A backend that lacks a feature (jaxdecomp: r2c, 2D, uneven sizes) falls back to native with a one-time warning;
# tests/xfft/test_backends.py checks that warning, here only the values matter.
pytestmark = pytest.mark.filterwarnings("ignore::xfft.backends.BackendFallbackWarning")

# (global shape, number of leading batch axes, number of transformed axes)
SHAPES = [((16, 32, 64), 0, 3), ((30, 40, 50), 0, 3), ((64, 48), 0, 2), ((3, 16, 16, 16), 1, 3)]


def _np_forward(a, nd, real):
    axes = tuple(range(a.ndim - nd, a.ndim))
    return np.fft.rfftn(a, axes=axes) if real else np.fft.fftn(a, axes=axes)


def _case_ids(case):
    shape, batch, nd = case
    return "x".join(map(str, shape))


# A sample of shapes x meshes x kinds (the full product is 70 native cases, each its own program): every shape with
# r2c and with c2c, every mesh of helpers.MESHES at least once (Explicit slab, both 2D slabs (1, 8) and (8, 1), both
# pencils; Auto slab and pencil), the uneven (30, 40, 50) on a slab (r2c) and on a pencil (c2c), the 2D grid and the
# batch axis with each kind. jaxDecomp where it runs the transform
# itself (complex 3D grids the mesh divides) on an Auto pencil with a batch axis (its Explicit pencil:
# test_matches_numpy_float64; its Explicit slab: tests/xfft/test_backends.py): elsewhere it falls back to native,
# whose programs are these very cases (test_backends.py checks the fallback).
_FLOAT32 = [  # (kind, mesh, axis types, shape index into SHAPES, backend)
    ("c2c", (8, 1), "explicit", 0, "native"),
    ("c2c", (2, 4), "explicit", 1, "native"),  # uneven pencil
    ("c2c", (2, 4), "auto", 2, "native"),  # 2D
    ("c2c", (4, 2), "explicit", 3, "native"),  # batch axis
    ("r2c", (8,), "auto", 0, "native"),
    ("r2c", (8,), "explicit", 1, "native"),  # uneven slab
    ("r2c", (1, 8), "explicit", 2, "native"),  # 2D
    ("r2c", (2, 4), "auto", 3, "native"),  # batch axis, pencil
    ("c2c", (2, 4), "auto", 3, "jaxdecomp"),
]


def _float32_cases():
    out = []
    for kind, mesh_shape, axis_types, i, backend in _FLOAT32:
        if backend not in BACKENDS:
            continue
        ids = "-".join([kind, axis_types, "x".join(map(str, mesh_shape)), _case_ids(SHAPES[i]), backend])
        out.append(pytest.param(backend, SHAPES[i], mesh_shape, axis_types, kind == "r2c", id=ids))
    return out


@pytest.mark.parametrize("backend,case,mesh_shape,axis_types,real", _float32_cases())
def test_matches_numpy_float32(backend, case, mesh_shape, axis_types, real):
    """Forward, inverse and round trip under jax.jit equal numpy; the round trip keeps the input sharding."""
    shape, batch, nd = case
    m = mesh(mesh_shape, axis_types)
    if nd == 2:
        # A 2D transform keeps one grid axis unsharded: put every mesh axis on the first grid axis.
        s = NamedSharding(m, PartitionSpec(tuple(m.axis_names), None))
    else:
        s = grid_sharding(m, shape[batch:], batch)
    dtype = np.float32 if real else np.complex64
    a = random(shape, dtype, seed=len(shape) + nd)
    x = put(a, s)

    @jax.jit  # forward and inverse: one program
    def run(x):
        k = (xfft.xrfftn if real else xfft.xfftn)(x, ndim=nd, backend=backend)
        return k, (xfft.ixrfftn(k, s=shape[-nd:], ndim=nd, backend=backend) if real
                   else xfft.ixfftn(k, ndim=nd, backend=backend))

    k, back = run(x)
    ref = _np_forward(a.astype(np.complex128 if not real else np.float64), nd, real)
    assert k.dtype == np.complex64
    assert rel_err(k, ref) < tol(np.float32)
    assert back.dtype == dtype
    assert rel_err(back, a) < tol(np.float32)
    assert back.sharding.is_equivalent_to(x.sharding, x.ndim)
    # The inverse alone against numpy too (not only the round trip).
    axes = tuple(range(len(shape) - nd, len(shape)))
    ref_inv = (np.fft.irfftn(ref, s=shape[-nd:], axes=axes) if real else np.fft.ifftn(ref, axes=axes))
    assert rel_err(back, ref_inv) < tol(np.float32)


# The default norm on native: r2c on a slab, c2c on a pencil, Explicit (their forward programs are those of
# test_spectral_layout_and_natural_order; c2c and r2c on Auto meshes, with the other norms: test_norms_eager);
# jaxDecomp's own c2c on an Explicit pencil (its r2c falls back to native: the native cases' programs; its float64
# slab: test_backends.py).
_FLOAT64 = [("native", (8,), "explicit", True), ("native", (2, 4), "explicit", False),
            ("jaxdecomp", (2, 4), "explicit", False)]


@pytest.mark.parametrize("backend,mesh_shape,axis_types,real",
                         [c for c in _FLOAT64 if c[0] in BACKENDS],
                         ids=[f"{b}-{'x'.join(map(str, m))}-{t}-{['c2c', 'r2c'][r]}" for b, m, t, r in _FLOAT64
                              if b in BACKENDS])
def test_matches_numpy_float64(backend, mesh_shape, axis_types, real):
    shape = (16, 32, 24)
    m = mesh(mesh_shape, axis_types)
    x = put(random(shape, np.float64 if real else np.complex128, seed=3), grid_sharding(m, shape))
    a = np.asarray(x)
    k = (xfft.xrfft3d if real else xfft.xfft3d)(x, backend=backend)
    assert k.dtype == np.complex128
    assert rel_err(k, _np_forward(a, 3, real)) < tol(np.float64)
    back = xfft.ixrfft3d(k, s=shape, backend=backend) if real else xfft.ixfft3d(k, backend=backend)
    assert rel_err(back, a) < tol(np.float64)


@pytest.mark.parametrize("norm,mesh_shape,axis_types,real", [("ortho", (2, 4), "auto", False),
                                                               ("forward", (8,), "auto", True)],
                         ids=["ortho-c2c-pencil-auto", "forward-r2c-slab-auto"])
def test_norms_eager(norm, mesh_shape, axis_types, real):
    """Eager calls (no jax.jit) with the norms other than the default, forward and inverse against numpy: "ortho"
    with c2c on a pencil, "forward" with r2c on a slab, Auto (the grid of test_matches_numpy_float64;
    norm="backward" is the default that test checks; every norm with c2c and r2c transforms on Explicit slabs and
    pencils: tests/xfft/test_numpy_fft.py)."""
    shape = (16, 32, 24)
    m = mesh(mesh_shape, axis_types)
    a = random(shape, np.complex128, seed=5)
    if not real:
        x = put(a, grid_sharding(m, shape))
        assert rel_err(xfft.xfft3d(x, norm=norm), np.fft.fftn(a, norm=norm)) < 1e-12
        assert rel_err(xfft.ixfft3d(x, norm=norm), np.fft.ifftn(a, norm=norm)) < 1e-12
    else:
        r = put(a.real.copy(), grid_sharding(m, shape))
        kr = xfft.xrfft3d(r, norm=norm)
        ref = np.fft.rfftn(a.real, norm=norm)
        assert rel_err(kr, ref) < 1e-12
        back = xfft.ixrfft3d(kr, norm=norm)
        assert rel_err(back, np.fft.irfftn(ref, s=shape, axes=(0, 1, 2), norm=norm)) < 1e-12
        assert rel_err(back, a.real) < 1e-12


@pytest.mark.parametrize("axis_types", AXIS_TYPES)
def test_tutorial_sharding_with_any_axis_name(axis_types):
    """NamedSharding(mesh, P(None, 'gpus')) works, also as jax.jit(xfft3d, in_shardings=s, out_shardings=s)."""
    from jax.sharding import AxisType

    kind = AxisType.Explicit if axis_types == "explicit" else AxisType.Auto
    m = jax.make_mesh((8,), ("gpus",), axis_types=(kind,))
    s = NamedSharding(m, PartitionSpec(None, "gpus"))
    a = random((16, 32, 16), np.complex64, seed=7)
    x = put(a, s)
    f = jax.jit(xfft.xfft3d, in_shardings=s, out_shardings=s)
    k = f(x)
    assert k.sharding.is_equivalent_to(s, 3)
    assert rel_err(k, np.fft.fftn(a)) < 1e-5
    g = jax.jit(xfft.ixfft3d, in_shardings=s, out_shardings=s)
    assert rel_err(g(k), a) < 1e-5


def test_spectral_layout_and_natural_order():
    """Slab P('x') -> spectrum sharded on axis 1 (r2c); pencil -> two axes moved (c2c); spectral_sharding predicts it
    (float64, the grid of test_matches_numpy_float64: these programs are its forward transforms)."""
    shape = (16, 32, 24)
    for mesh_shape, spec, real in [((8,), PartitionSpec("x"), True), ((2, 4), PartitionSpec("x", "y"), False)]:
        m = mesh(mesh_shape, "explicit")
        s = NamedSharding(m, spec)
        a = random(shape, np.float64 if real else np.complex128, seed=11)
        k = (xfft.xrfft3d if real else xfft.xfft3d)(put(a, s))
        predicted = xfft.spectral_sharding(s, shape, real=real)
        assert k.sharding.is_equivalent_to(predicted, 3)
        assert tuple(k.sharding.spec)[0] is None  # kx axis is whole on every device
        # Natural order: the local block of each device is the matching slice of the numpy spectrum.
        ref = (np.fft.rfftn if real else np.fft.fftn)(a)
        for shard in k.addressable_shards:
            assert rel_err(shard.data, ref[shard.index]) < 1e-12


def test_slab_and_pencil_spectral_specs():
    sl = xfft.spectral_sharding(NamedSharding(mesh((8,)), PartitionSpec("x")))
    pe = xfft.spectral_sharding(NamedSharding(mesh((2, 4)), PartitionSpec("x", "y")))
    assert tuple(sl.spec) == (None, "x", None)
    assert tuple(pe.spec) == (None, "x", "y")


def test_pencil_100_cubed_and_unsharded_inputs():
    """100^3 on a 2x4 pencil (not divisible by 8 overall), and replicated / single-device inputs."""
    m = mesh((2, 4), "explicit")
    a = random((100, 100, 100), np.complex64, seed=13)
    x = put(a, NamedSharding(m, PartitionSpec("x", "y")))
    ref = np.fft.fftn(a.astype(np.complex128))
    assert rel_err(jax.jit(xfft.xfft3d)(x), ref) < 1e-5
    small = random((8, 8, 8), np.complex128, seed=1)
    assert rel_err(xfft.xfft3d(put(small, NamedSharding(m, PartitionSpec()))), np.fft.fftn(small)) < 1e-12
    assert rel_err(xfft.xfft3d(small), np.fft.fftn(small)) < 1e-12
    assert rel_err(jax.jit(xfft.xfft3d)(small), np.fft.fftn(small)) < 1e-12


def test_batch_axis_sharding_needs_no_communication():
    """Sharding only a batch axis is embarrassingly parallel: local FFTs, no collectives."""
    from helpers import count_op, hlo

    m = mesh((8,), "explicit")
    a = random((8, 16, 16, 16), np.complex64, seed=2)
    x = put(a, NamedSharding(m, PartitionSpec("x")))
    k = xfft.xfft3d(x)
    assert rel_err(k, np.fft.fftn(a, axes=(1, 2, 3))) < 1e-5
    text = hlo(xfft.xfft3d, x)
    assert count_op(text, "all-to-all") == 0 and count_op(text, "all-gather") == 0


def test_odd_real_length_roundtrip():
    m = mesh((8,), "explicit")
    a = random((16, 8, 15), np.float64, seed=4)
    x = put(a, grid_sharding(m, a.shape))
    k = xfft.xrfft3d(x)
    assert rel_err(k, np.fft.rfftn(a)) < 1e-12
    assert rel_err(xfft.ixrfft3d(k, s=(16, 8, 15)), a) < 1e-12
    assert rel_err(xfft.xrfftn(x, axes=(0, 1)), np.fft.rfftn(a, axes=(0, 1))) < 1e-12


# Order matrix, sampled: r2c on a slab and on a pencil, c2c on a pencil, Explicit and Auto, on a divisible grid and on
# one no mesh divides evenly everywhere (the 2D slabs (1, 8) and (8, 1) in natural order: test_matches_numpy_float32;
# c2c on slabs in transposed order: test_out_sharding_returns_to_the_layout_the_forward_was_given, Explicit, jitted,
# and test_transposed_order_eager_batched_and_one_device, Auto).
ORDER_GRIDS = [(16, 16, 16), (12, 16, 20)]
_ORDER = [((8,), "auto", 1, True), ((2, 4), "explicit", 0, True),
          ((2, 4), "auto", 1, False)]  # (mesh, axis types, grid, real)
ORDER_CASES = [pytest.param(ORDER_GRIDS[g], m, t, real, id="-".join([["c2c", "r2c"][real], "x".join(map(str, m)), t,
                                                                     "x".join(map(str, ORDER_GRIDS[g]))]))
               for m, t, g, real in _ORDER]


@pytest.mark.parametrize("grid,mesh_shape,axis_types,real", ORDER_CASES)
def test_transposed_order_round_trip_and_matches_natural(grid, mesh_shape, axis_types, real):
    """order="transposed": the natural spectrum (to round-off) after permuting by spectral_axes, sharded as
    spectral_sharding predicts; its inverse returns the input (natural real space, the input's sharding)."""
    m = mesh(mesh_shape, axis_types)
    s = grid_sharding(m, grid)
    dtype = np.float32 if real else np.complex64
    a = random(grid, dtype, seed=21)
    x = put(a, s)
    fwd, inv = (xfft.xrfft3d, xfft.ixrfft3d) if real else (xfft.xfft3d, xfft.ixfft3d)

    # A transposed spectrum can fit several real shapes (see the ambiguity test): s= says which.

    @jax.jit
    def run(x):
        kt = fwd(x, order="transposed")
        return fwd(x), kt, inv(kt, s=grid, order="transposed")

    kn, kt, back = run(x)
    perm = xfft.spectral_axes(s, grid, real=real, order="transposed")
    assert sorted(perm) == [0, 1, 2]
    assert xfft.spectral_axes(s, grid, real=real) == (0, 1, 2)
    # the same numbers to round-off (on CPU the natural order's last transform is a matrix DFT: xfft._lower)
    assert rel_err(np.transpose(np.asarray(kt), np.argsort(perm)), np.asarray(kn)) < 1e-6
    ref = _np_forward(a.astype(np.float64 if real else np.complex128), 3, real)
    assert rel_err(kn, ref) < tol(np.float32)
    assert kt.sharding.is_equivalent_to(xfft.spectral_sharding(s, grid, real=real, order="transposed"), 3)
    assert rel_err(back, a) < tol(np.float32)
    assert back.dtype == dtype
    assert back.sharding.is_equivalent_to(x.sharding, 3)


@pytest.mark.parametrize("axis_types", AXIS_TYPES)
def test_transposed_order_ambiguous_shape_needs_s(axis_types):
    """A (12, 20, 16) transposed spectrum on 8 devices is what (12, 16, 20), (12, 20, 16) and (16, 12, 20) all
    leave (same shape, same sharding): the inverse asks for s rather than guess."""
    m = mesh((8,), axis_types)
    x = put(random((12, 16, 20), np.complex64), grid_sharding(m, (12, 16, 20)))
    kt = xfft.xfft3d(x, order="transposed")
    assert kt.shape == (12, 20, 16)
    with pytest.raises(ValueError, match="pass s="):
        jax.jit(lambda k: xfft.ixfft3d(k, order="transposed"))(kt)
    with pytest.raises(ValueError, match="s="):
        xfft.ixfft3d(kt, s=(12, 16, 21), order="transposed")


@pytest.mark.parametrize("axis_types", AXIS_TYPES)
def test_transposed_order_of_two_real_layouts_with_one_spectrum_needs_s(axis_types):
    """(16, 24, 32) sharded ``P('x')`` and (24, 16, 32) sharded ``P(None, 'x')`` leave the same transposed spectrum
    (shape and sharding): where the sharding is visible, its inverse asks for s for either instead of returning the
    likelier grid (the first: :func:`xfft.real_sharding`'s layout), which gave the second's spectrum back as a
    (16, 24, 32) array. Under ``jax.jit`` on an Auto mesh, where it is not, the real layout is assumed to be
    ``real_sharding``'s, so the first returns without s. With s each returns to its own grid and sharding (under
    ``jax.jit`` on an Auto mesh the forward transform too assumes that layout, so its spectrum is the first's)."""
    m = mesh((8,), axis_types)
    xs = [put(random(g, np.complex128, seed=i), NamedSharding(m, spec))
          for i, (g, spec) in enumerate((((16, 24, 32), PartitionSpec("x")),
                                         ((24, 16, 32), PartitionSpec(None, "x"))))]
    ks = [xfft.xfft3d(x, order="transposed") for x in xs]
    assert ks[0].shape == ks[1].shape and ks[0].sharding.is_equivalent_to(ks[1].sharding, 3)
    unsized = jax.jit(lambda k: xfft.ixfft3d(k, order="transposed"))
    for x, k in zip(xs, ks):
        for call in (lambda k: xfft.ixfft3d(k, order="transposed"),) + ((unsized,) if axis_types == "explicit" else ()):
            with pytest.raises(ValueError, match="pass s="):
                call(k)
        sized = lambda k, s=x.shape: xfft.ixfft3d(k, s=s, order="transposed")  # noqa: E731
        # under jax.jit on the Explicit mesh for the layout that is not real_sharding's (eager calls on Auto)
        for back in ((jax.jit(sized)(k),) if axis_types == "explicit" and x is xs[1] else (sized(k),)):
            assert back.shape == x.shape and rel_err(back, np.asarray(x)) < 1e-12
            assert back.sharding.is_equivalent_to(x.sharding, 3)
    if axis_types == "auto":
        assert rel_err(unsized(ks[0]), np.asarray(xs[0])) < 1e-12


@pytest.mark.parametrize("axis_types", AXIS_TYPES)
def test_out_sharding_returns_to_the_layout_the_forward_was_given(axis_types):
    """An 8^3 grid sharded ``P('x')``, ``P(None, 'x')`` or ``P(None, None, 'x')`` on 8 devices: the transposed
    spectra have the same shape and sharding with their axes in different orders, so only ``out_sharding`` (the
    forward's input sharding) tells the inverse which one it holds; without it ``P('x')`` (what
    :func:`xfft.real_sharding` gives) is assumed. Round trips with it return the input and its sharding:
    Explicit, each round trip one ``jax.jit`` program (the layouts are visible in the types), c2c on the two slab
    layouts that are not the assumed one and r2c on ``P(None, 'x')``; Auto, eager calls (where the layout is
    visible), DCT on ``P(None, 'x')``, c2c on a 2x4 pencil, and the natural order's choice of real layout."""
    m = mesh((8,), axis_types)
    a = random((8, 8, 8), np.float64, seed=31)
    c2c = (xfft.xfft3d, lambda k, sh, o="transposed": xfft.ixfft3d(k, order=o, out_sharding=sh), 1j)
    r2c = (xfft.xrfft3d, lambda k, sh, o="transposed": xfft.ixrfft3d(k, order=o, out_sharding=sh), 0)
    dct = (xfft.xdctn, lambda k, sh, o="transposed": xfft.ixdctn(k, order=o, out_sharding=sh), 0)
    y = NamedSharding(m, PartitionSpec(None, "x"))
    explicit = axis_types == "explicit"
    if explicit:
        cases = [(y, c2c), (y, r2c), (NamedSharding(m, PartitionSpec(None, None, "x")), c2c)]
    else:
        cases = [(y, dct), (NamedSharding(mesh((2, 4), axis_types), PartitionSpec(None, "x", "y")), c2c)]
    for sh, (fwd, inv, imag) in cases:
        x = put(a + imag * a[::-1], sh)
        if explicit:
            back = jax.jit(lambda x, fwd=fwd, inv=inv, sh=sh: inv(fwd(x, order="transposed"), sh))(x)
        elif fwd is xfft.xfft3d:  # numpy's spectrum, transposed and laid out as the forward's would be (that it is:
            # test_transposed_order_round_trip_and_matches_natural)
            perm = xfft.spectral_axes(sh, a.shape, order="transposed")
            k = put(np.transpose(np.fft.fftn(np.asarray(x)), perm),
                    xfft.spectral_sharding(sh, a.shape, order="transposed"))
            back = inv(k, sh)
        else:
            back = inv(fwd(x, order="transposed"), sh)
        assert rel_err(back, a + imag * a[::-1]) < 1e-12, sh.spec
        assert back.sharding.is_equivalent_to(sh, 3)
    if not explicit:
        # In natural order it chooses among real layouts: the P('x') spectrum returned as P(None, 'x').
        sx = NamedSharding(m, PartitionSpec("x"))
        back = r2c[1](put(np.fft.rfftn(a), xfft.spectral_sharding(sx, a.shape, real=True)), y, "natural")
        assert rel_err(back, a) < 1e-12 and back.sharding.is_equivalent_to(y, 3)


def test_out_sharding_errors_name_it():
    m = mesh((8,), "explicit")
    # (the grid, sharding and forward program of test_transposed_order_of_two_real_layouts_with_one_spectrum_needs_s)
    x = put(random((16, 24, 32), np.complex128, seed=32), NamedSharding(m, PartitionSpec("x")))
    k = xfft.xfft3d(x, order="transposed")
    with pytest.raises(TypeError, match="out_sharding"):
        xfft.ixfft3d(k, order="transposed", out_sharding=PartitionSpec("x"))
    with pytest.raises(ValueError, match="out_sharding's mesh"):
        xfft.ixfft3d(k, order="transposed", out_sharding=NamedSharding(mesh((2, 4)), PartitionSpec("x")))
    with pytest.raises(ValueError, match="not the 'transposed' spectrum"):  # a replicated grid's is replicated
        xfft.ixfft3d(k, order="transposed", out_sharding=NamedSharding(m, PartitionSpec()))
    small = put(random((8, 4, 16), np.complex128, seed=33), NamedSharding(m, PartitionSpec("x")))
    with pytest.raises(ValueError, match="out_sharding"):  # 4 planes do not split over 8 devices
        xfft.ixfft3d(xfft.xfft3d(small), out_sharding=NamedSharding(m, PartitionSpec(None, "x")))
    with pytest.raises(ValueError, match="not sharded"):
        xfft.ixfft3d(np.zeros((4, 4, 4), np.complex64), out_sharding=NamedSharding(m, PartitionSpec("x")))


def test_transposed_order_eager_batched_and_one_device():
    """Eager calls, a leading batch axis, and a single-device array (where transposed order is natural)."""
    m = mesh((2, 4), "explicit")
    a = random((2, 16, 8, 12), np.float64, seed=22)
    x = put(a, grid_sharding(m, a.shape[1:], batch=1))
    kt = xfft.xrfftn(x, ndim=3, order="transposed")
    perm = xfft.spectral_axes(x.sharding, a.shape, real=True, order="transposed")
    assert perm[0] == 0  # the batch axis stays in front
    ref = np.fft.rfftn(a, axes=(1, 2, 3))
    assert rel_err(np.transpose(np.asarray(kt), np.argsort(perm)), ref) < 1e-12
    assert rel_err(xfft.ixrfftn(kt, s=(16, 8, 12), ndim=3, order="transposed"), a) < 1e-12
    one = random((8, 6, 10), np.complex128, seed=23)
    k1 = xfft.xfft3d(one, order="transposed")
    assert rel_err(k1, np.fft.fftn(one)) < 1e-12
    assert rel_err(xfft.ixfft3d(k1, order="transposed"), one) < 1e-12
    # Without s where only one real shape fits: a c2c cube, and a slab r2c cube.
    c = put(random((16, 16, 16), np.float64, seed=24), grid_sharding(mesh((8,), "auto"), (16, 16, 16)))
    # (each round trip one jax.jit program: on the Auto mesh the inverse sees no layout, only the shapes)
    for fwd, inv in ((xfft.xfft3d, xfft.ixfft3d), (xfft.xrfft3d, xfft.ixrfft3d)):
        assert rel_err(jax.jit(lambda c, fwd=fwd, inv=inv: inv(fwd(c, order="transposed"), order="transposed"))(c),
                       c) < 1e-12


@pytest.mark.parametrize("bad", ["Natural", "fortran", None, 1])
def test_bad_order_is_a_value_error_naming_it(bad):
    m = mesh((8,), "explicit")
    x = put(np.zeros((8, 8, 8), np.float32), grid_sharding(m, (8, 8, 8)))
    for call in (lambda: xfft.xrfft3d(x, order=bad), lambda: xfft.ixfft3d(x, order=bad),
                 lambda: xfft.spectral_sharding(x.sharding, order=bad),
                 lambda: xfft.spectral_axes(x.sharding, (8, 8, 8), order=bad),
                 lambda: xfft.wavenumbers(x.sharding, (8, 8, 8), order=bad)):
        with pytest.raises(ValueError, match="order"):
            call()
