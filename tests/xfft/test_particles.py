"""paint and readout on sharded meshes: values against a numpy loop, exact adjoints, gradients against finite
differences, the exchange buffer's limit (an error, never a silent loss) and the compiled collectives."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, hlo, mesh, put
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xfft


def taps(x: float, kernel: str) -> list[tuple[int, float]]:
    """(cell, weight) of one coordinate: the textbook NGP, CIC and TSC assignment functions."""
    if kernel == "ngp":
        return [(int(np.floor(x + 0.5)), 1.0)]
    if kernel == "cic":
        b = np.floor(x)
        return [(int(b), 1 - (x - b)), (int(b) + 1, x - b)]
    b = np.floor(x + 0.5)
    d = x - b
    return [(int(b) - 1, 0.5 * (0.5 - d) ** 2), (int(b), 0.75 - d**2), (int(b) + 1, 0.5 * (0.5 + d) ** 2)]


def stencil(q, shape, kernel):
    for combo in itertools.product(*[taps(q[d], kernel) for d in range(len(shape))]):
        yield tuple(c % n for (c, _), n in zip(combo, shape)), np.prod([w for _, w in combo])


def ref_paint(pos, w, shape, kernel):
    out = np.zeros(shape)
    for q, m in zip(pos.reshape(-1, len(shape)), w.reshape(-1)):
        for cell, k in stencil(q, shape, kernel):
            out[cell] += m * k
    return out


def ref_readout(f, pos, kernel):
    vals = [sum(f[cell] * k for cell, k in stencil(q, f.shape, kernel)) for q in pos.reshape(-1, f.ndim)]
    return np.array(vals).reshape(pos.shape[:-1])


# (mesh shape, positions' shape, positions' spec, grid shape); positions anywhere, also outside the box
CASES = [
    ((8,), (64, 3), P("x"), (16, 8, 8)),
    ((2, 4), (4, 8, 2, 3), P("x", "y"), (8, 16, 4)),  # a Lagrangian grid sharded like the mesh
    ((2, 4), (64, 2), P(("x", "y")), (16, 8)),
]


# every kernel and every case once (TSC, the widest stencil, on the slab)
@pytest.mark.parametrize("case,kernel", [(CASES[0], "tsc"), (CASES[1], "cic"), (CASES[2], "ngp")],
                         ids=["slab-3d-tsc", "pencil-3d-grid-cic", "pencil-2d-ngp"])
def test_paint_readout_values_and_adjoint(case, kernel):
    mshape, pshape, pspec, shape = case
    m = mesh(mshape)
    rng = np.random.default_rng(7)
    a = rng.uniform(-20, 40, pshape)
    w = rng.standard_normal(pshape[:-1])
    g = rng.standard_normal(shape)
    pos, wj = put(a, NamedSharding(m, pspec)), put(w, NamedSharding(m, pspec))
    gj = put(g, xfft.real_sharding(m, shape, ndim=len(shape)))
    # one program: paint, and readout of a field in the painted field's sharding
    f, v = jax.jit(lambda p, w, g: (xfft.paint(p, shape, w, kernel=kernel), xfft.readout(g, p, kernel=kernel)))(
        pos, wj, gj)
    np.testing.assert_allclose(np.asarray(f), ref_paint(a, w, shape, kernel), rtol=0, atol=1e-13)
    assert f.sharding.is_equivalent_to(gj.sharding, len(shape))
    np.testing.assert_allclose(np.asarray(v), ref_readout(g, a, kernel), rtol=0, atol=1e-13)
    assert v.sharding.is_equivalent_to(NamedSharding(m, pspec), len(pshape) - 1)
    np.testing.assert_allclose(np.vdot(np.asarray(f), g), np.vdot(w, np.asarray(v)), rtol=1e-13)


@pytest.fixture
def small_blocks(monkeypatch):
    """The receive buffer painted and read 3 rows of each sender's chunk at a time (programs built afresh)."""
    from xfft import _particles_program as prog

    monkeypatch.setattr(prog, "ROWS", 3)
    prog.paint_program.cache_clear()
    prog.readout_program.cache_clear()
    yield prog
    prog.paint_program.cache_clear()
    prog.readout_program.cache_clear()


@pytest.mark.parametrize("packed_max,x64", [(2**31 - 1, True), (0, True), (0, False)],
                         ids=["int32", "int64", "argsort-without-x64"])
def test_particles_grouped_by_destination_in_order(packed_max, x64):
    """Particles grouped by destination keep their order: one packed integer sort, or the stable argsort where
    the packed key would not fit."""
    from xfft._particles_program import _group

    key = np.random.default_rng(5).integers(0, 9, 1000).astype(np.int32)
    with jax.enable_x64(x64):
        order, skey = _group(jnp.asarray(key), 8, packed_max)
    np.testing.assert_array_equal(np.asarray(order), np.argsort(key, kind="stable"))
    np.testing.assert_array_equal(np.asarray(skey), np.sort(key))


def test_receive_buffer_in_blocks_skips_only_empty_ones(small_blocks):
    """Received particles fill the first rows of each sender's chunk; blocks past the fullest chunk are skipped.
    With 3-row blocks of 64-slot chunks (22 blocks, about 8 particles per pair: a few blocks painted, most skipped)
    the values are the numpy loop's, and the gradients those of one block."""
    m = mesh((8,))
    rng = np.random.default_rng(11)
    shape = (16, 8, 8)
    a = rng.uniform(-20, 40, (512, 3))
    w = rng.standard_normal(512)
    g = rng.standard_normal(shape)
    s = NamedSharding(m, P("x"))
    pos, wj = put(a, s), put(w, s)
    gj = put(g, xfft.real_sharding(m, shape))

    def both(p, w, g):
        return xfft.paint(p, shape, w), xfft.readout(g, p)

    f, v = jax.jit(both)(pos, wj, gj)
    np.testing.assert_allclose(np.asarray(f), ref_paint(a, w, shape, "cic"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(v), ref_readout(g, a, "cic"), rtol=0, atol=1e-12)

    def loss(p, w):
        f = xfft.paint(p, shape, w)
        return jnp.sum(f * gj) + jnp.sum(w * xfft.readout(f, p))

    grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(pos, wj)
    small_blocks.ROWS = 4096  # one block per chunk, as before blocks
    small_blocks.paint_program.cache_clear()
    small_blocks.readout_program.cache_clear()
    whole = jax.jit(jax.grad(loss, argnums=(0, 1)))(pos, wj)
    for x, y in zip(grads, whole):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel,shape", [("cic", (8, 8, 4)), ("tsc", (8, 16))], ids=["cic-3d", "tsc-2d"])
def test_gradients_against_finite_differences(kernel, shape):
    m = mesh((2, 4))
    rng = np.random.default_rng(3)
    a = rng.uniform(-3, 8, (16, len(shape)))
    w = rng.uniform(0.5, 1.5, 16)
    g = rng.standard_normal(shape)
    c = rng.standard_normal(16)
    s = NamedSharding(m, P(("x", "y")))
    gj = put(g, xfft.real_sharding(m, shape, ndim=len(shape)))

    def loss(p, w):  # paint then read back, weighted: both maps, both arguments
        f = xfft.paint(p, shape, w, kernel=kernel)
        return jnp.sum(f * gj) + jnp.sum(c * xfft.readout(f, p, kernel=kernel))

    vg = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))  # one program for the gradient and the differences

    def lj(p, w):
        return vg(p, w)[0]

    gp, gw = vg(put(a, s), put(w, s))[1]
    eps = 1e-6
    for i, d in [(0, 0), (5, len(shape) - 1), (11, 1)]:
        e = np.zeros_like(a)
        e[i, d] = eps
        fd = (lj(put(a + e, s), put(w, s)) - lj(put(a - e, s), put(w, s))) / (2 * eps)
        np.testing.assert_allclose(float(np.asarray(gp)[i, d]), float(fd), rtol=1e-6, atol=1e-8)
    for i in (2, 9):
        e = np.zeros_like(w)
        e[i] = eps
        fd = (lj(put(a, s), put(w + e, s)) - lj(put(a, s), put(w - e, s))) / (2 * eps)
        np.testing.assert_allclose(float(np.asarray(gw)[i]), float(fd), rtol=1e-6, atol=1e-8)


def test_full_buffer_raises_and_says_what_to_set():
    m = mesh((8,))
    # all 64 particles of device 0 belong to device 5's block: 64 to send, 8 slots
    a = np.zeros((512, 3))
    a[:64, 0] = 10.5
    pos = put(a, NamedSharding(m, P("x")))
    with pytest.raises(ValueError, match="one device had 64 particles to send to one other device, but capacity=8"):
        xfft.paint(pos, (16, 4, 4), capacity=8)
    f = put(np.ones((16, 4, 4)), xfft.real_sharding(m, (16, 4, 4)))
    with pytest.raises(ValueError, match="pass capacity=64 or more"):
        xfft.readout(f, pos, capacity=8)
    # under jit: NaN, and the message waits for xfft.check_errors(); repeated calls followed by a collective (an
    # FFT) run to the end, every time (a device that raised inside the program would leave its peers waiting in the
    # FFT's all-to-all until XLA aborts the process)
    step = jax.jit(lambda p, g: (xfft.paint(p, (16, 4, 4), capacity=8), xfft.xrfft3d(g * jnp.sum(
        xfft.readout(g, p, capacity=8)))))
    for _ in range(20):
        rho, k = step(pos, f)
        assert np.isnan(np.asarray(rho)).all() and np.isnan(np.asarray(k)).all()
        with pytest.raises(ValueError, match=r"^paint: .* pass capacity=64 or more.*\(and 1 more error"):
            xfft.check_errors()
        xfft.check_errors()  # forgotten once raised
    # the default capacity (all 64 of a device's particles) holds them; the mass is all there
    total = jax.jit(lambda p: jnp.sum(xfft.paint(p, (16, 4, 4))))(pos)
    assert float(total) == 512.0


def test_hlo_one_all_to_all_and_halo_permutes():
    m = mesh((2, 4))
    pos = put(np.zeros((64, 3), np.float32), NamedSharding(m, P(("x", "y"))))
    text = hlo(lambda p: xfft.paint(p, (8, 16, 8), kernel="cic"), pos)
    assert count_op(text, "all-gather") == 0
    assert count_op(text, "all-to-all") == 2  # positions and weights
    assert count_op(text, "collective-permute") == 2  # CIC reaches one cell up: one halo per sharded axis


def test_errors():
    m = mesh((2, 4))
    pos = put(np.zeros((64, 3)), NamedSharding(m, P(("x", "y"))))
    with pytest.raises(ValueError, match="kernel must be one of"):
        xfft.paint(pos, (8, 8, 8), kernel="pcs")
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 2\)"):
        xfft.paint(pos, (8, 8))
    with pytest.raises(ValueError, match="sharded over every mesh axis"):
        xfft.paint(put(np.zeros((64, 3)), NamedSharding(m, P("x"))), (8, 8, 8))
    with pytest.raises(TypeError, match="real floating point"):
        xfft.paint(put(np.zeros((64, 3), np.int32), NamedSharding(m, P(("x", "y")))), (8, 8, 8))
    with pytest.raises(ValueError, match="capacity must be a positive int"):
        xfft.paint(pos, (8, 8, 8), capacity=0)
    with pytest.raises(ValueError, match="weights must be a scalar or of shape"):
        xfft.paint(pos, (8, 8, 8), jnp.ones(3))


@pytest.mark.parametrize("axis_type", [jax.sharding.AxisType.Explicit, jax.sharding.AxisType.Auto])
def test_a_mesh_of_one_device_paints_and_reads_out_as_no_mesh(axis_type):
    """Positions and a field on a mesh of one device (an Explicit mesh types them as sharded over its size-1 axis)
    paint and read out as plain arrays do, eagerly and under ``jit``."""
    one = jax.make_mesh((1,), ("x",), axis_types=(axis_type,), devices=jax.devices()[:1])
    q = np.random.default_rng(0).uniform(0, 8, (64, 2)).astype(np.float32)
    ref = xfft.paint(q, (8, 8))
    x = jax.device_put(q, NamedSharding(one, P("x", None)))
    f = jax.device_put(np.asarray(ref), NamedSharding(one, P("x", None)))
    with jax.set_mesh(one):
        np.testing.assert_array_equal(np.asarray(xfft.paint(x, (8, 8))), np.asarray(ref))
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda p: xfft.paint(p, (8, 8)))(x)), np.asarray(ref))
        back = jax.jit(lambda g, p: xfft.readout(g, p))(f, x)
    np.testing.assert_allclose(np.asarray(back), np.asarray(xfft.readout(ref, q)), rtol=1e-6, atol=1e-6)


def test_readout_of_a_trailing_component_axis_equals_readouts_of_each_component():
    """A field ``(*shape, C)`` is read at once (one stencil, one exchange): the values and the gradient in the
    positions of ``C`` readouts, sharded and on one device; a sharded component axis is an error."""
    m = mesh((2, 4))
    shape = (8, 16, 4)
    rng = np.random.default_rng(5)
    a = rng.uniform(-3, 11, (64, 3))
    g = rng.standard_normal(shape + (2,))
    c = rng.standard_normal((64, 2))
    pos = put(a, NamedSharding(m, P(("x", "y"))))
    gj = put(g, NamedSharding(m, P(*xfft.real_sharding(m, shape, ndim=3).spec, None)))

    @jax.jit
    def both(p, g):
        def at_once(p):
            return jnp.sum(c * xfft.readout(g, p, kernel="tsc"))

        def each(p):
            return sum(jnp.sum(c[:, i] * xfft.readout(g[..., i], p, kernel="tsc")) for i in range(2))

        return xfft.readout(g, p, kernel="tsc"), jax.grad(at_once)(p), jax.grad(each)(p)

    v, ga, ge = both(pos, gj)
    ref = np.stack([ref_readout(g[..., i], a, "tsc") for i in range(2)], -1)
    assert v.shape == (64, 2) and v.sharding.is_equivalent_to(NamedSharding(m, P(("x", "y"), None)), 2)
    np.testing.assert_allclose(np.asarray(v), ref, rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.asarray(ga), np.asarray(ge), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(xfft.readout(g, a, kernel="tsc")), ref, rtol=0, atol=1e-13)
    with pytest.raises(ValueError, match="component axis .* must not be sharded"):
        xfft.readout(put(np.zeros(shape + (8,)), NamedSharding(m, P("x", None, None, "y"))), pos)
