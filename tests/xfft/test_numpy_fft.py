"""``xfft.fft`` against ``numpy.fft`` on gathered data, and its HLO: every function, axes, s, norm, dtype, placement.

How the subset was chosen (the full cross product would be thousands of compiles): every call of ``CALLS`` runs on
one device and on two of the five sharded placements (slab and pencil on Explicit meshes, slab and pencil on Auto
meshes under ``jax.jit``, batch-sharded ``P('x', None, None)``): call ``i`` on sharded placements ``i % 5`` and
``(i % 5 - 2) % 5``, so every placement runs 8 calls of 8 different functions, at least one of them Explicit; the
argument sets cover ``axes`` None / one / several / negative / out of order, ``s`` (and ``n``) cropping and padding,
also along sharded axes. ``norm`` rotates over None, "backward", "ortho", "forward" and the dtype over
float32/float64 (complex64/128) with the call's index, shifted per placement, so each function meets several norms
and both precisions. Sharded placements are compiled ahead of time: the same executable is run and its HLO checked
for all-gathers.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, mesh, random, rel_err
from jax.sharding import NamedSharding, PartitionSpec

import xfft.fft as xf

SHAPE = (16, 8, 12)
NORMS = [None, "backward", "ortho", "forward"]
# name, input kind ("c" complex, "r" real, "h" half spectrum of SHAPE over the last axis), arguments
CALLS = [
    ("fftn", "c", {}),
    ("fftn", "r", {"s": (12, 10, 16), "axes": (0, 1, 2)}),  # crop the slab axis, pad the others
    ("ifftn", "c", {"axes": (2, 0)}),
    ("ifftn", "c", {"s": (20, 6), "axes": (-3, -1)}),
    ("rfftn", "r", {"axes": (-1, 0)}),  # half axis 0 (sharded on slab and pencil)
    ("rfftn", "r", {}),
    ("irfftn", "h", {"s": SHAPE}),
    ("irfftn", "h", {"s": (16, 8, 11)}),  # odd output length
    ("fft", "c", {"n": 24, "axis": 0}),  # pad along the sharded axis
    ("ifft", "c", {"n": 6, "axis": -2}),
    ("rfft", "r", {"axis": 1}),
    ("irfft", "h", {"n": 13}),
    ("fft2", "c", {"s": (6, 16)}),
    ("ifft2", "c", {"axes": (2, 0)}),
    ("rfft2", "r", {"axes": (0, 1)}),
    ("irfft2", "h", {"axes": (0, 2), "s": (16, 12)}),
    ("hfft", "h", {"n": 12}),
    ("ihfft", "r", {"axis": 0}),
    ("fftshift", "c", {}),
    ("ifftshift", "r", {"axes": (0, 2)}),
]
PLACEMENTS = ["one-device", "slab", "pencil", "slab-auto", "pencil-auto", "batch"]


def _calls(placement):
    """The indices into ``CALLS`` that ``placement`` runs: all on one device, 8 on each sharded placement."""
    if placement == "one-device":
        return list(range(len(CALLS)))
    k = PLACEMENTS.index(placement) - 1
    return [i for i in range(len(CALLS)) if i % 5 in (k, (k + 2) % 5)]


def _input(kind, dtype, seed):
    real = np.float64 if dtype == np.float64 else np.float32
    if kind == "r":
        return random(SHAPE, real, seed)
    if kind == "c":
        return random(SHAPE, np.complex128 if real == np.float64 else np.complex64, seed)
    return np.fft.rfft(random(SHAPE, np.float64, seed), axis=-1).astype(np.complex128 if real == np.float64
                                                                        else np.complex64)


def _placed(a, placement):
    """``(array, mesh or None)`` with ``a`` laid out as ``placement`` says."""
    if placement == "one-device":
        return jax.device_put(a, jax.devices()[0]), None
    shape, spec = {"slab": ((8,), PartitionSpec("x")), "pencil": ((2, 4), PartitionSpec("x", "y")),
                   "batch": ((8,), PartitionSpec("x"))}[placement.split("-")[0]]
    m = mesh(shape, "auto" if placement.endswith("auto") else "explicit")
    if placement == "batch":
        a = a[:8]
    return jax.device_put(a, NamedSharding(m, spec)), m


def _reference(name, a, kwargs, norm):
    f = getattr(np.fft, name)
    if name in ("fftshift", "ifftshift"):
        return f(a, **kwargs)
    if "s" in kwargs and "axes" not in kwargs and name.endswith("n"):  # numpy 2 wants axes with s
        kwargs = {**kwargs, "axes": tuple(range(-len(kwargs["s"]), 0))}
    return f(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64), **kwargs, norm=norm)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_every_function_against_numpy(placement):
    """Values equal numpy's; sharded inputs stay sharded and compile without an all-gather."""
    shift = PLACEMENTS.index(placement)
    moved = 0
    for i in _calls(placement):
        name, kind, kwargs = CALLS[i]
        norm = NORMS[(i + shift) % 4]
        dtype = (np.float32, np.float64)[(i + shift) % 2]
        a = _input(kind, dtype, seed=i)
        x, m = _placed(a, placement)
        a = np.asarray(x)
        args = {} if name in ("fftshift", "ifftshift") else {"norm": norm}
        fn = getattr(xf, name)
        f = jax.jit(lambda v, fn=fn, kw=kwargs, args=args: fn(v, **kw, **args))
        if m is None:
            out = f(x)
        else:
            with jax.set_mesh(m):
                compiled = f.lower(x).compile()
                out = compiled(x)
            text = compiled.as_text()
            assert count_op(text, "all-gather") == 0, (placement, name, kwargs)
            moved += count_op(text, "all-to-all") > 0
        ref = _reference(name, a, kwargs, norm)
        assert out.shape == ref.shape, (placement, name, kwargs)
        assert rel_err(out, ref) < (2e-5 if dtype == np.float32 else 1e-12), (placement, name, kwargs, norm)
        ref_fn = getattr(jnp.fft, name)
        want = jax.eval_shape(lambda v, fn=ref_fn, kw=kwargs: fn(v, **kw), jnp.asarray(a)).dtype
        assert out.dtype == want, (placement, name, out.dtype, want)
        if m is not None and m.axis_types[0] == jax.sharding.AxisType.Explicit:
            assert not out.sharding.is_fully_replicated, (placement, name)
    # the planned path ran: half of the 8 calls or more move data (all but the shifts and the transforms of local
    # axes only: 4 on the batch-sharded array, 5 to 6 on the others)
    assert moved >= (0 if m is None else 4), moved


def test_frequencies_are_jax_numpy_s():
    """fftfreq/rfftfreq are jax.numpy.fft's: small unsharded vectors that broadcast against any spectrum."""
    assert xf.fftfreq is jnp.fft.fftfreq and xf.rfftfreq is jnp.fft.rfftfreq
    np.testing.assert_allclose(np.asarray(xf.fftfreq(8, 0.5)), np.fft.fftfreq(8, 0.5))
    np.testing.assert_allclose(np.asarray(xf.rfftfreq(9)), np.fft.rfftfreq(9))


def test_one_device_runs_exactly_jax_numpy_fft():
    """Off a mesh the call is jax.numpy.fft's own: the same jaxpr (so the same XLA op), also for numpy input."""
    a = random(SHAPE, np.float32)
    for name, kw in [("fftn", {"axes": (0, 2)}), ("rfftn", {"s": (8, 8, 8)}), ("irfft", {"n": 7}),
                     ("hfft", {}), ("fftshift", {"axes": 1})]:
        ours = str(jax.make_jaxpr(lambda v, name=name, kw=kw: getattr(xf, name)(v, **kw))(a))
        theirs = str(jax.make_jaxpr(lambda v, name=name, kw=kw: getattr(jnp.fft, name)(v, **kw))(a))
        assert ours == theirs, name
    np.testing.assert_array_equal(np.asarray(xf.fft(a)), np.asarray(jnp.fft.fft(a)))


@pytest.mark.parametrize("mesh_shape,spec", [((8,), ("x",)), ((2, 4), ("x", "y"))], ids=["slab", "pencil"])
def test_round_trips_keep_the_sharding(mesh_shape, spec):
    """On an Explicit mesh a spectrum is sharded like its input (``jax.numpy.fft``'s output type): the plan's
    all-to-alls, then the reshard back (at most one all-to-all per mesh axis), never an all-gather."""
    m = mesh(mesh_shape)
    a = random(SHAPE, np.float64)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec(*spec)))
    forward = jax.jit(xf.rfftn).lower(x).compile()  # the program checked is the one run
    k = forward(x)
    assert k.sharding.is_equivalent_to(x.sharding, 3) and rel_err(k, np.fft.rfftn(a)) < 1e-12
    text = forward.as_text()
    assert count_op(text, "all-gather") == 0 and len(spec) < count_op(text, "all-to-all") <= 2 * len(spec)
    back = xf.irfftn(k, s=SHAPE)
    assert back.sharding.is_equivalent_to(x.sharding, 3) and rel_err(back, a) < 1e-12
    z = xf.ifftn(xf.fftn(x, axes=(1, 0)), axes=(1, 0))
    assert z.sharding.is_equivalent_to(x.sharding, 3) and rel_err(z, a) < 1e-12
    shift = jax.jit(xf.fftshift).lower(x).compile()  # (an eager fftshift of a sharded array: test_fft_like_jax.py)
    shifted = shift(x)  # xroll along the sharded axes: sharding kept
    assert shifted.sharding.is_equivalent_to(x.sharding, 3) and rel_err(shifted, np.fft.fftshift(a)) == 0
    text = shift.as_text()
    assert count_op(text, "all-gather") == 0 and count_op(text, "collective-permute") > 0


def test_grad_and_vmap_through_sharded_transforms():
    """jax.grad and jax.vmap through xfft.fft on a slab equal single-device jax.numpy.fft."""
    m = mesh((8,))
    a = random((4,) + SHAPE, np.float64)
    w = random((4, 16, 8, 7), np.float64, seed=2)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec(None, "x")))

    def loss(fft):
        return lambda v: jnp.sum(w * jnp.abs(fft.rfftn(v, axes=(1, 2, 3), norm="ortho")) ** 2)

    grad = jax.jit(jax.grad(loss(xf))).lower(x).compile()  # the program checked below is the one run
    g = grad(x)
    assert rel_err(g, jax.grad(loss(jnp.fft))(jnp.asarray(a))) < 1e-12
    v = jax.jit(jax.vmap(lambda u: xf.ifftn(xf.fftn(u, s=(16, 8, 16)), axes=(0, 2))))(x)
    ref = jax.vmap(lambda u: jnp.fft.ifftn(jnp.fft.fftn(u, s=(16, 8, 16)), axes=(0, 2)))(jnp.asarray(a))
    assert rel_err(v, ref) < 1e-12
    assert count_op(grad.as_text(), "all-gather") == 0


def test_errors_are_jax_numpy_ffts():
    """A sharded input gets ``jax.numpy.fft``'s own argument checks: the same exception type and message."""
    m = mesh((8,))
    a = random(SHAPE, np.float32)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec("x")))
    calls = [("fftn", {"norm": "unitary"}), ("fftn", {"axes": (0, 0)}), ("fftn", {"axes": 1}),
             ("fftn", {"s": (4, 4), "axes": (0,)}), ("fft", {"axis": (0,)}), ("rfftn", {"dtype": np.complex64})]
    for name, kwargs in calls:
        v = x.astype(kwargs.pop("dtype")) if "dtype" in kwargs else x
        with pytest.raises(Exception) as want:
            getattr(jnp.fft, name)(jnp.asarray(np.asarray(v)), **kwargs)
        with pytest.raises(type(want.value), match=re.escape(str(want.value))):
            getattr(xf, name)(v, **kwargs)
    line = jax.device_put(random((64,), np.complex64), NamedSharding(m, PartitionSpec("x")))
    # a 1D array sharded over the mesh: transformed across the devices (four-step), its real FFT too (as complex)
    assert rel_err(xf.fft(line), np.fft.fft(np.asarray(line))) < 1e-5
    assert rel_err(xf.rfft(line.real), np.fft.rfft(np.asarray(line.real))) < 1e-5
    # 16 -> 12 along x, and nothing else takes 8 devices: cropped in place, the 12 rows replicated (12 % 8 != 0)
    b = random((16, 4), np.complex64)
    y = xf.fft(jax.device_put(b, NamedSharding(m, PartitionSpec("x"))), n=12, axis=0)
    assert rel_err(y, np.fft.fft(b, n=12, axis=0)) < 1e-5


def test_auto_mesh_under_jit_with_no_plan_runs_on_the_gathered_array():
    """Where xfft cannot see the layout (an Auto mesh under ``jax.jit``) and no distributed plan fits the shape, the
    transform runs on the whole array, replicated, as ``jax.numpy.fft`` would gather it. Left to XLA's partitioner,
    these two calls failed when run (``INTERNAL: RET_CHECK failure ... fft_thunk.cc``, an FFT operand in a
    column-major layout); with the layout visible (eagerly, or an Explicit mesh) xfft resizes the sharded axis
    in place."""
    m3 = jax.make_mesh((2, 2, 2), ("x", "y", "z"), axis_types=(jax.sharding.AxisType.Auto,) * 3)
    a = random((6, 4), np.complex64)
    x = jax.device_put(a, NamedSharding(m3, PartitionSpec("y", "x")))
    m18 = jax.make_mesh((1, 8), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    b = random((4, 7, 24, 9), np.complex128, seed=1)
    y = jax.device_put(b, NamedSharding(m18, PartitionSpec("x", None, "y", None)))
    cases = [(x, lambda v: xf.fftn(v, s=[5], axes=[1], norm="ortho"), np.fft.fftn(a, s=[5], axes=[1], norm="ortho"),
              1e-5),
             (y, lambda v: xf.irfftn(v, s=[5, 6, 26, 11], axes=(0, 1, 2, 3), norm="forward"),
              np.fft.irfftn(b, s=[5, 6, 26, 11], axes=(0, 1, 2, 3), norm="forward"), 1e-12)]
    for v, f, ref, rtol in cases:
        with jax.set_mesh(v.sharding.mesh):
            got = jax.jit(f)(v)
            assert rel_err(got, ref) < rtol
            assert got.sharding.is_fully_replicated
            # eagerly the layout is visible: the sharded axis is cropped or padded in place, no gather of the input
            assert rel_err(f(v), ref) < rtol
