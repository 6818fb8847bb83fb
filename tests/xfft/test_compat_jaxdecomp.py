"""xfft.compat.jaxdecomp against the installed jaxdecomp (its JAX backend), value for value, slab and pencil."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, hlo, mesh, put, random
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xfft.compat.jaxdecomp as xjd

jd = pytest.importorskip("jaxdecomp")  # the jaxdecomp extra (make test installs it)

# jaxDecomp's meshes: (p, 1) slab, (1, p) slab, (a, b) pencils; Auto axes (its custom partitioning needs them)
MESHES = [(8, 1), (1, 8), (2, 4)]


@pytest.mark.parametrize("mshape", MESHES, ids=lambda m: "x".join(map(str, m)))
def test_pfft3d_pifft3d_and_freqs_equal_jaxdecomp(mshape):
    """Every mesh: forward, inverse and the float64 frequencies; the pencil also the other norms and the
    float32 frequencies (eager calls, each its own programs)."""
    m = mesh(mshape, "auto")
    a = random((8, 16, 24), np.float64, seed=2)
    x = put(a, NamedSharding(m, P("x", "y")))
    with jax.set_mesh(m):
        ref = jax.jit(jd.pfft3d)(x)
        got = jax.jit(xjd.pfft3d)(x)
        back_ref = jax.jit(jd.pifft3d)(ref)
        back = jax.jit(xjd.pifft3d)(got)
    assert got.shape == ref.shape == (16, 24, 8)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=0, atol=1e-11 * np.abs(np.asarray(ref)).max())
    np.testing.assert_allclose(np.asarray(got), np.fft.fftn(a).transpose(1, 2, 0), atol=1e-10)
    assert got.sharding.is_equivalent_to(ref.sharding, 3)
    assert xjd.get_fft_output_sharding(x.sharding).is_equivalent_to(ref.sharding, 3)
    np.testing.assert_allclose(np.asarray(back), np.asarray(back_ref), atol=1e-13)
    np.testing.assert_allclose(np.asarray(back).real, a, atol=1e-13)
    assert back.sharding.is_equivalent_to(back_ref.sharding, 3) and back.dtype == back_ref.dtype
    for norm in ("ortho", "forward") if mshape == (2, 4) else ():
        with jax.set_mesh(m):
            r, g = jd.pfft3d(x, norm=norm), xjd.pfft3d(x, norm=norm)
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), atol=1e-12 * np.abs(np.asarray(r)).max())
    for fn, ours in [(jd.fftfreq3d, xjd.fftfreq3d), (jd.rfftfreq3d, xjd.rfftfreq3d)]:
        for k in (ref, ref.astype(jnp.complex64)) if mshape == (2, 4) else (ref,):
            for want, have in zip(fn(k), ours(k), strict=True):
                assert have.shape == want.shape and have.dtype == want.dtype
                eps = np.finfo(want.dtype).eps  # (jaxDecomp's jit may fuse 2 * pi: one rounding apart)
                np.testing.assert_allclose(np.asarray(have), np.asarray(want), rtol=2 * eps, atol=0)


def test_pfft3d_on_explicit_and_one_axis_meshes_and_one_all_to_all():
    """Where jaxDecomp 0.3.1 fails (Explicit meshes, a one-axis mesh), the front-end computes the same layout."""
    a = random((16, 8, 16), np.float32, seed=3)
    ref = np.fft.fftn(a.astype(np.float64)).transpose(1, 2, 0)
    for m, spec, want in [(mesh((2, 4)), P("x", "y"), P("x", "y")), (mesh((8,)), P("x"), P(None, "x"))]:
        x = put(a, NamedSharding(m, spec))
        k = jax.jit(xjd.pfft3d)(x)
        assert k.dtype == np.complex64
        np.testing.assert_allclose(np.asarray(k), ref, atol=2e-5 * np.abs(ref).max())
        assert k.sharding.is_equivalent_to(NamedSharding(m, want), 3)
        np.testing.assert_allclose(np.asarray(xjd.pifft3d(k)).real, a, atol=1e-5)
        assert count_op(hlo(xjd.pfft3d, x), "all-to-all") == len(tuple(spec))
        assert count_op(hlo(xjd.pfft3d, x), "all-gather") == 0


@pytest.mark.parametrize("mshape,periodic", [((8, 1), True), ((1, 8), False), ((2, 4), True), ((2, 4), False)],
                         ids=["8x1-periodic", "1x8-open", "2x4-periodic", "2x4-open"])
def test_halo_exchange_equals_jaxdecomp(mshape, periodic):
    m = mesh(mshape, "auto")
    a = random((48, 32, 4), np.float64, seed=4)  # blocks padded by 2 already (as JaxPM's slice_pad leaves them)
    x = put(a, NamedSharding(m, P("x", "y")))
    extents, periods = (2, 1), (periodic, periodic)
    with jax.set_mesh(m):
        ref = jax.jit(lambda v: jd.halo_exchange(v, extents, periods))(x)
        got = jax.jit(lambda v: xjd.halo_exchange(v, extents, periods))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    assert not np.array_equal(np.asarray(got), a)  # the halos did change
    assert got.sharding.is_equivalent_to(ref.sharding, 3)


def test_errors():
    with pytest.raises(ValueError, match="invalid norm"):
        xjd.pfft3d(jnp.ones((4, 4, 4)), norm="none")
    with pytest.raises(ValueError, match="3-dimensional"):
        xjd.pifft3d(jnp.ones((4, 4)))
    with pytest.raises(ValueError, match="unknown backend"):
        xjd.pfft3d(jnp.ones((4, 4, 4)), backend="mpi")
    with pytest.raises(TypeError, match="must be complex"):
        xjd.fftfreq3d(jnp.ones((4, 4, 4)))


def test_halo_exchange_writes_over_the_halos_in_place():
    """Donated (or inside a larger program), the exchange holds the halo strips only: no copy of a block."""
    m = mesh((2, 4))
    x = put(random((64, 64, 8), np.float32, seed=5), NamedSharding(m, P("x", "y")))
    block = x.nbytes // m.size
    with jax.set_mesh(m):
        f = jax.jit(lambda v: xjd.halo_exchange(v, (2, 2), (True, True)), donate_argnums=0)
        compiled = f.lower(x).compile()
    mem = compiled.memory_analysis()
    assert mem.alias_size_in_bytes == block  # the result is the argument's buffer
    assert mem.temp_size_in_bytes < block / 2  # strips of 2 cells of a (32, 16, 8) block: far less than a block
    text = compiled.as_text()
    # both directions of the 2-device axis in one collective, one per direction of the 4-device axis
    assert count_op(text, "collective-permute") == 3 and count_op(text, "all-to-all") == 0
