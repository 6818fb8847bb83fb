"""xmeshgrid, wavenumbers, make_mesh/real_sharding, xroll and a spectral derivative."""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import AXIS_TYPES, count_op, grid_sharding, hlo, mesh, put, random, rel_err
from jax.sharding import NamedSharding, PartitionSpec

import xfft


def test_make_mesh_shapes_and_types():
    assert xfft.make_mesh("slab").axis_sizes == (8,)
    assert xfft.make_mesh("pencil").axis_sizes == (2, 4)
    assert xfft.make_mesh((4, 2)).axis_names == ("x", "y")
    assert all(str(t).endswith("Explicit") for t in xfft.make_mesh("slab").axis_types)
    assert all(str(t).endswith("Auto") for t in xfft.make_mesh("pencil", axis_types="auto").axis_types)
    assert tuple(xfft.real_sharding(xfft.make_mesh("pencil")).spec) == ("x", "y", None)


@pytest.mark.parametrize("axis_types", AXIS_TYPES)
def test_xmeshgrid_values_sharding_and_memory(axis_types):
    m = mesh((2, 4), axis_types)
    s = NamedSharding(m, PartitionSpec("x", "y"))
    cs = [np.linspace(0, 1, 16), np.arange(32.0), np.linspace(-1, 1, 24)]
    grids = xfft.xmeshgrid(*cs, sharding=s)
    for g, r in zip(grids, np.meshgrid(*cs, indexing="ij")):
        assert g.sharding.is_equivalent_to(s, 3)
        np.testing.assert_array_equal(np.asarray(g), r)
    # No global-size temporary: each device materializes only its block, also inside a caller's jit under
    # ``jax.set_mesh`` (where, on an Explicit mesh, a jit's out_shardings alone typed the arrays replicated and XLA
    # all-gathered them: 8x the bytes, found 2026-11-24).
    local = 16 * 32 * 24 * 8 // 8
    for ctx in (contextlib.nullcontext(), jax.set_mesh(m)):
        with ctx:
            compiled = jax.jit(lambda: xfft.xmeshgrid(*cs, sharding=s)).lower().compile()
            mem = compiled.memory_analysis()
            assert 3 * local <= mem.output_size_in_bytes <= 3 * local + 256  # plus the output tuple's pointers
            assert mem.temp_size_in_bytes <= local
            assert count_op(compiled.as_text(), "all-gather") == 0
            used = jax.jit(lambda: sum(xfft.xmeshgrid(*cs, sharding=s))).lower().compile()  # consumed inside
            assert used.memory_analysis().output_size_in_bytes <= local + 256
            assert used.memory_analysis().temp_size_in_bytes <= 2 * local
            assert count_op(used.as_text(), "all-gather") == 0


@pytest.mark.parametrize("mesh_shape,real", [((8,), False), ((2, 4), True)], ids=["slab-c2c", "pencil-r2c"])
def test_wavenumbers_match_numpy_and_spectrum_layout(real, mesh_shape):
    m = mesh(mesh_shape, "explicit")
    shape = (16, 32, 24)
    s = grid_sharding(m, shape)
    L = (2 * np.pi, 1.0, 3.0)
    ks = xfft.wavenumbers(s, shape, real=real, box_length=L, dtype=np.float64)
    spec = (xfft.xrfft3d if real else xfft.xfft3d)(put(np.zeros(shape), s))
    for d, k in enumerate(ks):
        n = shape[d]
        f = np.fft.rfftfreq(n, 1 / n) if (real and d == 2) else np.fft.fftfreq(n, 1 / n)
        np.testing.assert_allclose(np.asarray(k).ravel(), 2 * np.pi / L[d] * f, rtol=1e-15)
        assert k.shape[d] == spec.shape[d] and k.size == spec.shape[d]
        assert k.sharding.spec[d] == spec.sharding.spec[d]
    full = xfft.wavenumbers(s, shape, real=real, box_length=L, sparse=False, dtype=np.float64)
    for k, kf in zip(ks, full):
        assert kf.shape == spec.shape and kf.sharding.is_equivalent_to(spec.sharding, 3)
        np.testing.assert_array_equal(np.asarray(kf), np.broadcast_to(np.asarray(k), spec.shape))
    # Multiplying by k is local: no collective at all.
    text = hlo(lambda u, k: k * u, spec, ks[1])
    assert count_op(text, "all-to-all") == 0 and count_op(text, "all-gather") == 0
    # Built inside a caller's jit under the mesh: each device builds its block (no all-gather, no global array).
    with jax.set_mesh(m):
        compiled = jax.jit(lambda u: u * sum(xfft.wavenumbers(s, shape, real=real, sparse=False,
                                                             dtype=np.float64))).lower(spec).compile()
    assert count_op(compiled.as_text(), "all-gather") == 0
    assert compiled.memory_analysis().temp_size_in_bytes <= 3 * spec.size * 8 // m.size


@pytest.mark.parametrize("mesh_shape,axis_types", [((8,), "explicit"), ((2, 4), "auto")],
                         ids=["slab-explicit", "pencil-auto"])
def test_spectral_derivative_float32(axis_types, mesh_shape):
    """d/dx [sin(x) cos(2y)] = cos(x) cos(2y) to 1e-5 in float32, via wavenumbers and the r2c transforms."""
    m = mesh(mesh_shape, axis_types)
    n = 32
    s = xfft.real_sharding(m, (n, n, n))
    c = np.arange(n) * 2 * np.pi / n
    x, y, z = xfft.xmeshgrid(c, c, c, sharding=s)
    u = (jnp.sin(x) * jnp.cos(2 * y)).astype(jnp.float32)
    kx, ky, kz = xfft.wavenumbers(s, (n, n, n), real=True, dtype=np.float32)

    @jax.jit
    def ddx(u):
        return xfft.ixrfft3d(1j * kx * xfft.xrfft3d(u), s=(n, n, n))

    du = ddx(u)
    exact = np.cos(np.asarray(x, np.float64)) * np.cos(2 * np.asarray(y, np.float64))
    assert du.dtype == np.float32
    assert np.max(np.abs(np.asarray(du) - exact)) < 1e-5
    assert du.sharding.is_equivalent_to(u.sharding, 3)


# shifts within a block, of a whole block (2 rows), across blocks (negative), more than half the axis, past the
# length, zero; the axis types alternate
@pytest.mark.parametrize("shift,axis_types", [(1, "explicit"), (-3, "auto"), (2, "explicit"), (13, "auto"),
                                              (-17, "explicit"), (0, "auto")])
def test_xroll_matches_numpy_on_sharded_axis(axis_types, shift):
    m = mesh((8,), axis_types)
    a = random((16, 6, 4), np.float32, seed=shift % 7)
    x = put(a, NamedSharding(m, PartitionSpec("x")))
    r = jax.jit(lambda x: xfft.xroll(x, shift, 0))(x)
    np.testing.assert_array_equal(np.asarray(r), np.roll(a, shift, 0))
    assert r.sharding.is_equivalent_to(x.sharding, 3)
    np.testing.assert_array_equal(np.asarray(xfft.xroll(x, shift, 0)), np.roll(a, shift, 0))


def test_xroll_pencil_multi_axis_and_hlo():
    m = mesh((2, 4), "explicit")
    a = random((8, 16, 4), np.float64, seed=1)
    x = put(a, NamedSharding(m, PartitionSpec("x", "y")))
    r = xfft.xroll(x, (3, -5, 1), (0, 1, 2))
    np.testing.assert_array_equal(np.asarray(r), np.roll(a, (3, -5, 1), (0, 1, 2)))
    text = hlo(lambda x: xfft.xroll(x, 1, 1), x)
    assert count_op(text, "collective-permute") >= 1
    assert count_op(text, "all-gather") == 0 and count_op(text, "all-to-all") == 0
    # jnp.roll on a sharded axis of an Explicit mesh is what xroll replaces.
    with pytest.raises(Exception, match="slicing on sharded dims"):  # noqa: B017 (ShardingTypeError is private)
        jax.jit(lambda x: jnp.roll(x, 1, 1))(x)


@pytest.mark.parametrize("mesh_shape,real", [((8,), True), ((2, 4), False)], ids=["slab-r2c", "pencil-c2c"])
def test_wavenumbers_and_derivative_in_transposed_order(real, mesh_shape):
    """wavenumbers(order="transposed") still returns (kx, ky, kz), each along the spectrum axis spectral_axes
    names and sharded like it, so i kx û of a transposed spectrum is the permuted spectrum of du/dx."""
    m = mesh(mesh_shape, "explicit")
    shape = (16, 32, 24)
    s = grid_sharding(m, shape)
    a = np.random.default_rng(5).standard_normal(shape)
    x = put(a, s)
    fwd = xfft.xrfft3d if real else xfft.xfft3d
    kt, kn = fwd(x, order="transposed"), fwd(x)
    perm = xfft.spectral_axes(s, shape, real=real, order="transposed")
    ks_t = xfft.wavenumbers(s, shape, real=real, dtype=np.float64, order="transposed")
    ks_n = xfft.wavenumbers(s, shape, real=real, dtype=np.float64)
    for d in range(3):
        i = perm.index(d)
        assert ks_t[d].shape[i] == kt.shape[i] and ks_t[d].size == kt.shape[i]
        assert ks_t[d].sharding.spec[i] == kt.sharding.spec[i]
        np.testing.assert_array_equal(np.asarray(ks_t[d]).ravel(), np.asarray(ks_n[d]).ravel())
        dt = np.transpose(np.asarray(1j * ks_t[d] * kt), np.argsort(perm))
        assert rel_err(dt, np.asarray(1j * ks_n[d] * kn)) < 1e-14
    full = xfft.wavenumbers(s, shape, real=real, dtype=np.float64, sparse=False, order="transposed")
    for k, kf in zip(ks_t, full):
        assert kf.shape == kt.shape and kf.sharding.is_equivalent_to(kt.sharding, 3)
        np.testing.assert_array_equal(np.asarray(kf), np.broadcast_to(np.asarray(k), kt.shape))
