"""The axis matrix of mpi4py-fft's test suite against numpy, including every layout whose transformed axes are all
sharded (planned through a batch axis: :func:`xfft._plan._plan_batch`).

Covered: arrays of 2, 3 and 4 axes with sizes 14 and 23 mixed across axes; ``axes`` None (all axes; for 4D arrays,
where ``xfftn`` asks for ``ndim``, ``axes=(0, 1, 2, 3)``), (-1,), (-2,), (-1, -2), (-2, -1), (-1, 0), (0, -1); c2c
and r2c; forward, inverse and round trip (which must return the input's sharding); meshes: a slab of 2 devices
(``P('x')`` on an axis of 14), a slab of 4 (``P('x')`` on an axis of 28: 14 and 23 do not split over 4) and a 2x2
pencil (``P('x', 'y')`` on axes of 14 and 14, or 14 and 46 = 2 x 23). Sharded axes must divide (JAX arrays are
sharded evenly); the unsharded axes take 14 and 23, so padding in transit is exercised. dtypes rotate over the
cases: float32/complex64 (rtol 1e-5) and float64/complex128 (rtol 1e-12).

Per mesh and dimension 14 cases (7 axes x c2c/r2c), 126 in all: 118 run (forward, inverse, round trip), 8 must
raise ``ValueError`` (``RAISES``): c2c of a 2D array sharded over both axes of a pencil and transformed along both
(no batch axis to move onto; r2c works: the half axis lends its mesh axis), and r2c of a 28 x 14 slab of 4 devices
along the sharded axis (15 coefficients, 14 rows: nothing divides by 4). ``BATCH`` counts the cases that the planner
refused before batch-axis plans (19); their round trips must return the input's sharding.
"""

from __future__ import annotations

import jax
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
# (mesh, ndim, axes, real) with no even plan (see the module docstring).
RAISES = {
    *(("pencil", 2, ax, False) for ax in (None, (-1, -2), (-2, -1), (-1, 0), (0, -1))),
    ("slab4", 2, (-2,), True), ("slab4", 2, (-1, -2), True), ("slab4", 2, (-1, 0), True),
}
BATCH = {"slab2": [4, 0, 1], "slab4": [1, 0, 0], "pencil": [9, 4, 0]}  # cases planned through a batch axis


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


@pytest.mark.parametrize("ndim", [2, 3, 4])
@pytest.mark.parametrize("name", ["slab2", "slab4", "pencil"])
def test_axis_matrix(name, ndim):
    m, sharding = _mesh(name)
    shape = SHAPES[name][ndim]
    ran = raised = batch = 0
    for i, ax, real in _cases(name, ndim):
        axes = _axes(ax, ndim)
        f64 = (i + ndim + real) % 2 == 0
        rdt, cdt = (np.float64, np.complex128) if f64 else (np.float32, np.complex64)
        a = random(shape, rdt if real else cdt, seed=i)
        x = jax.device_put(a, sharding)
        fwd, inv = (xfft.xrfftn, xfft.ixrfftn) if real else (xfft.xfftn, xfft.ixfftn)
        ref_fwd = (np.fft.rfftn if real else np.fft.fftn)(a.astype(np.float64 if real else np.complex128), axes=axes)
        if (name, ndim, ax, real) in RAISES:
            with pytest.raises(ValueError, match="transformed|half axis"):
                fwd(x, axes=axes)
            raised += 1
            continue
        t = tol(cdt)
        k = fwd(x, axes=axes)
        assert k.dtype == cdt
        assert rel_err(k, ref_fwd) < t, (name, shape, ax, real, "forward")
        s = [shape[d] for d in axes]
        # round trip: values and the input's sharding back
        back = inv(k, s=s, axes=axes) if real else inv(k, axes=axes)
        assert rel_err(back, a) < t, (name, shape, ax, real, "round trip")
        if _batch_planned(m, shape, sharding, axes, real):
            # a plan through a batch axis: the inverse finds it, so the round trip returns the input's sharding
            assert _full(back.sharding.spec, ndim) == _full(sharding.spec, ndim), (name, shape, ax, real)
            batch += 1
        # inverse of fresh spectral data (Hermitian for r2c) in the forward's spectral sharding
        b = random(shape, rdt if real else cdt, seed=100 + i).astype(np.float64 if real else np.complex128)
        kk = (np.fft.rfftn if real else np.fft.fftn)(b, axes=axes)
        got = inv(jax.device_put(kk.astype(cdt), k.sharding), **({"s": s} if real else {}), axes=axes)
        assert rel_err(got, b) < t, (name, shape, ax, real, "inverse")
        ran += 1
    assert ran + raised == 2 * len(AXES)
    assert raised == sum(1 for c in RAISES if c[:2] == (name, ndim))
    assert batch == BATCH[name][ndim - 2]


@pytest.mark.parametrize("name, shape, spec, axes, real, n_a2a", [
    ("slab2", (14, 23), ("x",), (0,), False, 2),  # 1D along the slab axis: to axis 1 and back
    ("slab2", (14, 23), ("x",), (0,), True, 2),
    ("pencil", (14, 14, 23), ("x", "y"), (0, 1), False, 4),  # both transformed axes sharded: 2 there, 2 back
    ("pencil", (14, 46, 23), ("x", "y"), (1,), True, 2),
    ("slab4", (28, 23, 28), ("x",), (0,), True, 1),  # 15 coefficients: x stays on the batch axis of 28
    ("pencil", (14, 14), ("x", "y"), (0, 1), True, 4),  # no batch axis: the half axis lends x to axis 1 and back
    ("pencil", (14, 14, 23, 14), ("x", "y"), (1, 0), False, 4),
])
def test_batch_plan_hlo(name, shape, spec, axes, real, n_a2a):
    m = xfft.make_mesh(MESHES[name][0], devices=jax.devices()[:MESHES[name][1]])
    dt = np.float32 if real else np.complex64
    x = jax.device_put(random(shape, dt), NamedSharding(m, PartitionSpec(*spec)))
    f = (lambda v: xfft.xrfftn(v, axes=axes)) if real else (lambda v: xfft.xfftn(v, axes=axes))
    text = hlo(f, x)
    assert count_op(text, "all-gather") == 0
    assert count_op(text, "all-to-all") == n_a2a
    g = (lambda v: xfft.ixrfftn(v, s=[shape[d] for d in axes], axes=axes)) if real else (
        lambda v: xfft.ixfftn(v, axes=axes))
    k = jax.jit(f)(x)
    text = hlo(g, k)
    assert count_op(text, "all-gather") == 0
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
