"""The axis matrix of mpi4py-fft's test suite against numpy: every case runs, including every layout whose
transformed axes are all sharded (planned through a batch axis, :func:`xfft._plan._plan_batch`, or without one by
lending mesh axes to another transformed axis, :func:`xfft._plan._plan_lend`) and real-to-complex outputs with no
even layout at all (gathered, :class:`xfft._layout.Gather`).

Covered: arrays of 2, 3 and 4 axes with sizes 14 and 23 mixed across axes; ``axes`` None (all axes; for 4D arrays,
where ``xfftn`` asks for ``ndim``, ``axes=(0, 1, 2, 3)``), (-1,), (-2,), (-1, -2), (-2, -1), (-1, 0), (0, -1); c2c
and r2c; forward, inverse and round trip (which must return the input's sharding); meshes: a slab of 2 devices
(``P('x')`` on an axis of 14), a slab of 4 (``P('x')`` on an axis of 28: 14 and 23 do not split over 4) and a 2x2
pencil (``P('x', 'y')`` on axes of 14 and 14, or 14 and 46 = 2 x 23). Sharded axes must divide (JAX arrays are
sharded evenly); the unsharded axes take 14 and 23, so padding in transit is exercised. dtypes rotate over the
cases: float32/complex64 (rtol 1e-5) and float64/complex128 (rtol 1e-12).

Per mesh and dimension 14 cases (7 axes x c2c/r2c), 126 in all, all run. ``FORMERLY_REFUSED`` are the 8 that had no
plan before lending and gathering: c2c of a 2D array sharded over both axes of a pencil and transformed along both
(no batch axis: one axis lends its mesh axis to the other, 4 all-to-alls), and r2c of a 28 x 14 slab of 4 devices
along the sharded axis (15 coefficients, 14 rows: nothing divides by 4, so the output is replicated, 1 all-gather);
they are also run under ``jit``, ``grad`` and ``vmap`` (:func:`test_formerly_refused_under_jit_grad_vmap`). ``BATCH``
counts the cases that the direct planner refuses (27); their round trips must return the input's sharding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, hlo, random, rel_err, tol
from jax.sharding import NamedSharding, PartitionSpec

import xfft
from xfft._layout import spec_to_layout
from xfft._plan import _plan_direct

AXES = [None, (-1,), (-2,), (-1, -2), (-2, -1), (-1, 0), (0, -1)]
MESHES = {"slab2": ((2,), 2, PartitionSpec("x")), "slab4": ((4,), 4, PartitionSpec("x")),
          "pencil": ((2, 2), 4, PartitionSpec("x", "y"))}
SHAPES = {
    "slab2": {2: (14, 23), 3: (14, 23, 14), 4: (14, 23, 14, 23)},
    "slab4": {2: (28, 14), 3: (28, 23, 28), 4: (28, 14, 23, 28)},
    "pencil": {2: (14, 14), 3: (14, 46, 23), 4: (14, 14, 23, 14)},
}
# (mesh, ndim, axes, real) without a plan before lending and gathering (see the module docstring).
FORMERLY_REFUSED = [
    *(("pencil", 2, ax, False) for ax in (None, (-1, -2), (-2, -1), (-1, 0), (0, -1))),
    ("slab4", 2, (-2,), True), ("slab4", 2, (-1, -2), True), ("slab4", 2, (-1, 0), True),
]
BATCH = {"slab2": [4, 0, 1], "slab4": [4, 0, 0], "pencil": [14, 4, 0]}  # cases the direct planner refuses


def _mesh(name):
    shape, n, spec = MESHES[name]
    m = xfft.make_mesh(shape, devices=jax.devices()[:n])
    return m, NamedSharding(m, spec)


def _batch_planned(m, shape, sharding, axes, real) -> bool:
    """True when the planner before batch-axis plans refused this case."""
    try:
        _plan_direct(shape, spec_to_layout(sharding.spec, len(shape)), axes, tuple(zip(m.axis_names, m.axis_sizes)),
                     real)
    except ValueError:
        return True
    return False


def _full(spec, ndim):
    return tuple(spec) + (None,) * (ndim - len(tuple(spec)))


def _axes(ax, ndim):
    if ax is None:
        return tuple(range(ndim))
    return tuple(a % ndim for a in ax)


def _cases(name, ndim):
    for i, ax in enumerate(AXES):
        for real in (False, True):
            yield i, ax, real


@jax.jit(static_argnames="cases")
def _forwards(xs, cases):
    """Every case's forward transform in one program; ``cases``: ``(axes, real, s)`` per array."""
    return [(xfft.xrfftn if real else xfft.xfftn)(x, axes=axes) for x, (axes, real, _) in zip(xs, cases)]


@jax.jit(static_argnames="cases")
def _inverses(ks, cases):
    """Every case's inverse transform in one program (run twice: on the forwards' spectra, on fresh ones)."""
    return [xfft.ixrfftn(k, s=s, axes=axes) if real else xfft.ixfftn(k, axes=axes)
            for k, (axes, real, s) in zip(ks, cases)]


@pytest.mark.parametrize("ndim", [2, 3, 4])
@pytest.mark.parametrize("name", ["slab2", "slab4", "pencil"])
def test_axis_matrix(name, ndim):
    """All 14 cases of a mesh and dimension in two compiled programs: the forwards, and the inverses (run on the
    forwards' spectra for the round trips, then on fresh spectra in the same shardings)."""
    m, sharding = _mesh(name)
    shape = SHAPES[name][ndim]
    rows, xs, cases = [], [], []
    for i, ax, real in _cases(name, ndim):
        axes = _axes(ax, ndim)
        f64 = (i + ndim + real) % 2 == 0
        rdt, cdt = (np.float64, np.complex128) if f64 else (np.float32, np.complex64)
        a = random(shape, rdt if real else cdt, seed=i)
        rows.append((i, ax, real, axes, rdt, cdt, a))
        xs.append(jax.device_put(a, sharding))
        cases.append((axes, real, tuple(shape[d] for d in axes)))
    cases = tuple(cases)
    ks = _forwards(xs, cases)
    backs = _inverses(ks, cases)
    fresh = []
    ran = batch = 0
    for (i, ax, real, axes, rdt, cdt, a), k, back in zip(rows, ks, backs):
        ref_fwd = (np.fft.rfftn if real else np.fft.fftn)(a.astype(np.float64 if real else np.complex128), axes=axes)
        t = tol(cdt)
        assert k.dtype == cdt
        assert rel_err(k, ref_fwd) < t, (name, shape, ax, real, "forward")
        # round trip: values and the input's sharding back
        assert rel_err(back, a) < t, (name, shape, ax, real, "round trip")
        if _batch_planned(m, shape, sharding, axes, real):
            # a plan through a batch axis, lending or gathering: the inverse finds it, so the round trip returns
            # the input's sharding
            assert _full(back.sharding.spec, ndim) == _full(sharding.spec, ndim), (name, shape, ax, real)
            batch += 1
        # inverse of fresh spectral data (Hermitian for r2c) in the forward's spectral sharding
        b = random(shape, rdt if real else cdt, seed=100 + i).astype(np.float64 if real else np.complex128)
        kk = (np.fft.rfftn if real else np.fft.fftn)(b, axes=axes)
        fresh.append((b, jax.device_put(kk.astype(cdt), k.sharding)))
    for (_, ax, real, _, _, cdt, _), (b, _), got in zip(rows, fresh, _inverses([kk for _, kk in fresh], cases)):
        assert rel_err(got, b) < tol(cdt), (name, shape, ax, real, "inverse")
        ran += 1
    assert ran == 2 * len(AXES)
    assert batch == BATCH[name][ndim - 2]


@pytest.mark.parametrize("name, shape, spec, axes, real, n_a2a, n_gather", [
    ("slab2", (14, 23), ("x",), (0,), False, 2, 0),  # 1D along the slab axis: to axis 1 and back
    ("slab2", (14, 23), ("x",), (0,), True, 2, 0),
    ("pencil", (14, 14, 23), ("x", "y"), (0, 1), False, 4, 0),  # both transformed axes sharded: 2 there, 2 back
    ("pencil", (14, 46, 23), ("x", "y"), (1,), True, 2, 0),
    ("slab4", (28, 23, 28), ("x",), (0,), True, 1, 0),  # 15 coefficients: x stays on the batch axis of 28
    ("pencil", (14, 14), ("x", "y"), (0, 1), True, 4, 0),  # no batch axis: the half axis lends x to axis 1 and back
    ("pencil", (14, 14, 23, 14), ("x", "y"), (1, 0), False, 4, 0),
    ("pencil", (14, 14), ("x", "y"), (0, 1), False, 4, 0),  # c2c, no batch axis: each axis lends to the other
    ("slab4", (28, 14), ("x",), (0,), True, 0, 1),  # 15 x 14 has no even layout over 4: gathered
    ("slab4", (28, 14), ("x",), (1, 0), True, 0, 1),
])
def test_batch_plan_hlo(name, shape, spec, axes, real, n_a2a, n_gather):
    m = xfft.make_mesh(MESHES[name][0], devices=jax.devices()[:MESHES[name][1]])
    dt = np.float32 if real else np.complex64
    x = jax.device_put(random(shape, dt), NamedSharding(m, PartitionSpec(*spec)))
    f = (lambda v: xfft.xrfftn(v, axes=axes)) if real else (lambda v: xfft.xfftn(v, axes=axes))
    compiled = jax.jit(f).lower(x).compile()
    text = compiled.as_text()
    assert count_op(text, "all-gather") == n_gather
    assert count_op(text, "all-to-all") == n_a2a
    g = (lambda v: xfft.ixrfftn(v, s=[shape[d] for d in axes], axes=axes)) if real else (
        lambda v: xfft.ixfftn(v, axes=axes))
    k = compiled(x)  # (the program compiled once, for its text and to run)
    text = hlo(g, k)
    assert count_op(text, "all-gather") == 0  # the inverse of a gather keeps each device's block
    assert count_op(text, "all-to-all") <= n_a2a


def test_dct_along_the_slab_axis():
    """Real-to-real transforms take the same batch-axis plans (2 all-to-alls), against scipy."""
    import scipy.fft

    m = xfft.make_mesh((2,), devices=jax.devices()[:2])
    sharding = NamedSharding(m, PartitionSpec("x"))
    a = random((14, 23), np.float64)
    x = jax.device_put(a, sharding)
    k = xfft.xdctn(x, type=2, axes=(0,))
    assert rel_err(k, scipy.fft.dctn(a, type=2, axes=(0,))) < 1e-12
    back = xfft.ixdctn(k, type=2, axes=(0,))
    assert rel_err(back, a) < 1e-12
    assert _full(back.sharding.spec, 2) == ("x", None)
    text = hlo(lambda v: xfft.xdctn(v, type=2, axes=(0,)), x)
    assert count_op(text, "all-gather") == 0
    assert count_op(text, "all-to-all") == 2


def _functional(a, axes, real, seed):
    """A real linear functional ``L(v) = Re sum(conj(c) * F(v))`` of the transform ``F``, and its gradient with
    respect to ``v`` (real part, imaginary part) from numpy: ``L`` of every unit vector."""
    f = np.fft.rfftn if real else np.fft.fftn
    c = random(f(a.astype(np.float64 if real else np.complex128), axes=axes).shape, np.complex128, seed=seed)
    unit = np.eye(a.size).reshape((a.size,) + a.shape)
    grads = [np.real(np.sum(np.conj(c) * f(s * unit, axes=tuple(d + 1 for d in axes)),
                             axis=tuple(range(1, a.ndim + 1)))).reshape(a.shape) for s in ((1,) if real else (1, 1j))]
    return c, grads


@pytest.mark.parametrize("name, ndim, ax, real", FORMERLY_REFUSED, ids=lambda v: str(v))
def test_formerly_refused_under_jit_grad_vmap(name, ndim, ax, real):
    """The cases without a plan before lending and gathering, in one jitted program each: forward and round trip
    against numpy, the gradient of a linear functional against numpy's, and vmap over a batch of two."""
    m, sharding = _mesh(name)
    shape = SHAPES[name][ndim]
    axes = _axes(ax, ndim)
    dt = np.float64 if real else np.complex128
    a = random(shape, dt, seed=7)
    x = jax.device_put(a, sharding)
    xb = jax.device_put(np.stack([a, 2 * a + 1]), NamedSharding(m, PartitionSpec(None, *sharding.spec)))
    fwd, inv = (xfft.xrfftn, xfft.ixrfftn) if real else (xfft.xfftn, xfft.ixfftn)
    s = [shape[d] for d in axes]
    c, grads = _functional(a, axes, real, seed=8)

    def loss(v):
        return jnp.sum(jnp.real(jnp.conj(c) * fwd(v, axes=axes)))

    @jax.jit
    def run(v, vb):
        k = fwd(v, axes=axes)
        g = jax.grad(loss)(v) if real else jax.grad(lambda r, i: loss(r + 1j * i), (0, 1))(v.real, v.imag)
        return k, inv(k, s=s, axes=axes), g, jax.vmap(lambda u: fwd(u, axes=axes))(vb)

    k, back, g, kb = run(x, xb)
    ref = (np.fft.rfftn if real else np.fft.fftn)(a, axes=axes)
    assert rel_err(k, ref) < 1e-12
    assert rel_err(back, a) < 1e-12
    assert _full(back.sharding.spec, ndim) == _full(sharding.spec, ndim)
    for got, want in zip((g,) if real else g, grads):
        assert rel_err(got, want) < 1e-12
    assert rel_err(kb[1], (np.fft.rfftn if real else np.fft.fftn)(2 * a + 1, axes=axes)) < 1e-12
    assert rel_err(kb[0], ref) < 1e-12
