"""paint and readout through halos (``halo=``): the same values as the particles sent to their owners, exact
adjoints, gradients, collective-permutes only (no all-to-all), and a particle outside its halo an error that says
what to set (eagerly and under jit), never a silent loss."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, hlo, mesh, put
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xfft

N = 16


def lagrangian(m, n: int, displacement: float, seed: int = 0):
    """A Lagrangian grid of particles (``(n, n, n, 3)`` in cell units, sharded like the mesh's blocks), displaced
    by up to ``displacement`` cells and wrapped into the box, with random weights."""
    rng = np.random.default_rng(seed)
    q = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float64)] * 3, indexing="ij"), -1)
    x = (q + displacement * (2 * rng.random(q.shape) - 1)) % n
    spec = P(*m.axis_names)
    return put(x, NamedSharding(m, spec)), put(rng.random(q.shape[:-1]), NamedSharding(m, spec))


@pytest.mark.parametrize("mshape, kernel", [((2, 4), "tsc"), ((8,), "cic")])
def test_paint_and_readout_through_halos_equal_the_migrating_ones_and_are_adjoint(mshape, kernel):
    m = mesh(mshape)
    x, w = lagrangian(m, N, 1.2)
    halo = 2 if len(mshape) == 2 else (2, 0, 0)  # (a width per axis; the slab's blocks are 2 cells)
    with jax.set_mesh(m):
        cap = N**3 // m.size  # (the reference sends particles to their owners: room for all of a device's)
        a = xfft.paint(x, (N,) * 3, w, kernel=kernel, capacity=cap)
        b = xfft.paint(x, (N,) * 3, w, kernel=kernel, halo=halo)
        f = put(np.random.default_rng(3).random((N,) * 3), b.sharding)
        ra, rb = xfft.readout(f, x, kernel=kernel, capacity=cap), xfft.readout(f, x, kernel=kernel, halo=halo)
    assert b.sharding.is_equivalent_to(a.sharding, 3) and rb.sharding.is_equivalent_to(ra.sharding, 3)
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=0, atol=1e-13)
    np.testing.assert_allclose(float(jnp.sum(b)), float(jnp.sum(w)), rtol=1e-13)  # no mass lost
    np.testing.assert_allclose(np.asarray(rb), np.asarray(ra), rtol=0, atol=1e-13)
    # adjoint: <paint(x, w), f> = <w, readout(f, x)>
    np.testing.assert_allclose(float(jnp.sum(b * f)), float(jnp.sum(w * rb)), rtol=1e-13)


def test_through_halos_the_program_permutes_only_and_gradients_equal_the_migrating_ones():
    m = mesh((2, 4))
    x, w = lagrangian(m, N, 0.7, seed=1)
    f = put(np.random.default_rng(4).random((N,) * 3), NamedSharding(m, P("x", "y")))
    with jax.set_mesh(m):
        text = hlo(lambda x, w, f: (xfft.readout(f, x, halo=1), xfft.paint(x, (N,) * 3, w, halo=1)), x, w, f)

        def loss(x, w, halo):
            return jnp.sum(xfft.paint(x, (N,) * 3, w, halo=halo) * f) + jnp.sum(xfft.readout(f, x, halo=halo) ** 2)

        gh = jax.grad(loss, argnums=(0, 1))(x, w, 1)
        gm = jax.grad(loss, argnums=(0, 1))(x, w, None)
    assert count_op(text, "all-to-all") == 0 and count_op(text, "all-gather") == 0
    assert count_op(text, "collective-permute") >= 4  # (both directions of both sharded axes, paint and readout)
    for a, b in zip(gh, gm):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12 * float(jnp.max(jnp.abs(b))))


def test_through_halos_a_trailing_component_axis_reads_as_each_component_and_as_the_migrating_one():
    m = mesh((2, 4))
    x, _ = lagrangian(m, N, 0.7, seed=2)
    f = put(np.random.default_rng(5).random((N,) * 3 + (3,)), NamedSharding(m, P("x", "y", None)))
    with jax.set_mesh(m):
        v, each, moved = jax.jit(lambda f, x: (xfft.readout(f, x, halo=1), [xfft.readout(f[..., i], x, halo=1)
                                                                          for i in range(3)], xfft.readout(f, x)))(f, x)
    assert v.shape == (N,) * 3 + (3,)
    np.testing.assert_allclose(np.asarray(v), np.stack([np.asarray(e) for e in each], -1), rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.asarray(v), np.asarray(moved), rtol=0, atol=1e-13)


def test_a_particle_outside_its_halo_is_an_error_that_says_what_to_set():
    m = mesh((2, 4))
    x, w = lagrangian(m, N, 1.2, seed=2)
    f = put(np.ones((N,) * 3), NamedSharding(m, P("x", "y")))
    with jax.set_mesh(m):
        with pytest.raises(ValueError, match=r"paint: \d+ particles have kernel cells more than halo=1 cells "
                                             r"outside the block .* pass a wider halo"):
            xfft.paint(x, (N,) * 3, kernel="tsc", halo=1)
        with pytest.raises(ValueError, match=r"readout: \d+ particles .* halo=1"):
            xfft.readout(f, x, kernel="tsc", halo=1)
        step = jax.jit(lambda x: xfft.xrfft3d(xfft.paint(x, (N,) * 3, kernel="tsc", halo=1)))
        for _ in range(20):  # under jit: NaN and xfft.check_errors(), every time (no device raises: no abort)
            assert np.isnan(np.asarray(step(x))).all()
            with pytest.raises(ValueError, match="paint: \\d+ particles have kernel cells more than halo=1"):
                xfft.check_errors()
        with pytest.raises(ValueError, match="halo 9 along axis 0 is wider than a block \\(8 cells\\)"):
            xfft.paint(x, (N,) * 3, halo=9)
        with pytest.raises(ValueError, match="capacity and halo exclude each other"):
            xfft.readout(f, x, halo=1, capacity=10)
        with pytest.raises(ValueError, match="halo must be a non-negative int or one per axis"):
            xfft.paint(x, (N,) * 3, halo=-1)
