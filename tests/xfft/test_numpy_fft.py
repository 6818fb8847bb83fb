"""``xfft.fft`` against ``numpy.fft`` on gathered data, and its HLO: every function, axes, s, norm, dtype, placement.

How the subset was chosen (the full cross product would be thousands of compiles): every call of ``CALLS`` runs on
one device, and every function on one of the five sharded placements (slab and pencil on Explicit meshes, slab and
pencil on Auto meshes under ``jax.jit``, batch-sharded ``P('x', None, None)``; ``SHARDED``), with the argument sets
that move or resize sharded axes where a function has several; the argument sets cover ``axes`` None / one /
several / negative / out of order, ``s`` (and ``n``) cropping and padding, also along sharded axes. ``norm`` rotates
over None, "backward", "ortho", "forward" and the dtype over float32/float64 (complex64/128) with the call's index,
shifted per placement. Sharded placements are compiled ahead of time, one program per call: the same executable is
run and its HLO checked for all-gathers (and, for the shifts, for the collective-permutes of a roll along sharded
axes); the one-device calls (``jax.numpy.fft``'s own: ``test_one_device_runs_exactly_jax_numpy_fft``) run as one
program.
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
# placement: (indices into CALLS, how many of them move data: all-to-alls); every function once, the second argument
# sets of fftn/ifftn/rfftn/irfftn (those that crop, pad, reorder or halve a sharded axis) rather than the first
SHARDED = {"slab": ([1, 9, 14, 19], 2), "pencil": ([3, 10, 15, 18], 3), "slab-auto": ([4, 11, 16], 1),
           "pencil-auto": ([7, 12, 17], 3), "batch": ([8, 13], 2)}


def _calls(placement):
    """The indices into ``CALLS`` that ``placement`` runs: all on one device, ``SHARDED``'s on the others."""
    return list(range(len(CALLS))) if placement == "one-device" else SHARDED[placement][0]


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
    runs = []  # (call index, norm, dtype, placed input, its values, the call)
    for i in _calls(placement):
        name, kind, kwargs = CALLS[i]
        norm = NORMS[(i + shift) % 4]
        dtype = (np.float32, np.float64)[(i + shift) % 2]
        x, m = _placed(_input(kind, dtype, seed=i), placement)
        args = {} if name in ("fftshift", "ifftshift") else {"norm": norm}
        fn = getattr(xf, name)
        runs.append((i, norm, dtype, x, np.asarray(x), lambda v, fn=fn, kw=kwargs, args=args: fn(v, **kw, **args)))
    if m is None:  # on one device (jax.numpy.fft's own calls): every call in one program
        outs = jax.jit(lambda xs: [f(v) for (*_, f), v in zip(runs, xs)])([r[3] for r in runs])
    else:
        outs = []
        for i, *_, x, _a, f in runs:
            with jax.set_mesh(m):
                compiled = jax.jit(f).lower(x).compile()
                outs.append(compiled(x))
            text = compiled.as_text()
            assert count_op(text, "all-gather") == 0, (placement, CALLS[i])
            moved += count_op(text, "all-to-all") > 0
            if CALLS[i][0].endswith("shift"):  # xroll along the sharded axes
                assert count_op(text, "collective-permute") > 0, (placement, CALLS[i])
    for (i, norm, dtype, x, a, _f), out in zip(runs, outs):
        name, kind, kwargs = CALLS[i]
        ref = _reference(name, a, kwargs, norm)
        assert out.shape == ref.shape, (placement, name, kwargs)
        assert rel_err(out, ref) < (2e-5 if dtype == np.float32 else 1e-12), (placement, name, kwargs, norm)
        ref_fn = getattr(jnp.fft, name)
        want = jax.eval_shape(lambda v, fn=ref_fn, kw=kwargs: fn(v, **kw), jnp.asarray(a)).dtype
        assert out.dtype == want, (placement, name, out.dtype, want)
        if m is not None and m.axis_types[0] == jax.sharding.AxisType.Explicit:
            assert not out.sharding.is_fully_replicated, (placement, name)
            if name.endswith("shift"):  # a roll keeps the sharding, and the values exactly
                assert out.sharding.is_equivalent_to(x.sharding, 3) and rel_err(out, ref) == 0, (placement, name)
    # the planned path ran: the calls that transform a sharded axis move data (all but the shifts and the transforms
    # of local axes only)
    assert moved >= (0 if m is None else SHARDED[placement][1]), moved


def test_frequencies_are_jax_numpy_s():
    """fftfreq/rfftfreq are jax.numpy.fft's: small unsharded vectors that broadcast against any spectrum."""
    assert xf.fftfreq is jnp.fft.fftfreq and xf.rfftfreq is jnp.fft.rfftfreq
    f, rf = jax.jit(lambda: (xf.fftfreq(8, 0.5), xf.rfftfreq(9)))()  # one program
    np.testing.assert_allclose(np.asarray(f), np.fft.fftfreq(8, 0.5))
    np.testing.assert_allclose(np.asarray(rf), np.fft.rfftfreq(9))


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
    all-to-alls, then the reshard back (at most one all-to-all per mesh axis), never an all-gather. (fftshift of a
    sharded array keeps its sharding: test_every_function_against_numpy, on these two layouts.)"""
    m = mesh(mesh_shape)
    a = random(SHAPE, np.float64)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec(*spec)))
    forward = jax.jit(xf.rfftn).lower(x).compile()  # the program checked is the one run
    k = forward(x)
    assert k.sharding.is_equivalent_to(x.sharding, 3) and rel_err(k, np.fft.rfftn(a)) < 1e-12
    text = forward.as_text()
    assert count_op(text, "all-gather") == 0 and len(spec) < count_op(text, "all-to-all") <= 2 * len(spec)
    # the inverse, and a c2c round trip over out-of-order axes: one program (eager calls on a sharded array run in
    # test_errors_are_jax_numpy_ffts and test_auto_mesh_under_jit_with_no_plan_runs_on_the_gathered_array)
    back, z = jax.jit(lambda k, x: (xf.irfftn(k, s=SHAPE), xf.ifftn(xf.fftn(x, axes=(1, 0)), axes=(1, 0))))(k, x)
    assert back.sharding.is_equivalent_to(x.sharding, 3) and rel_err(back, a) < 1e-12
    assert z.sharding.is_equivalent_to(x.sharding, 3) and rel_err(z, a) < 1e-12


def test_grad_and_vmap_through_sharded_transforms():
    """jax.grad and jax.vmap through xfft.fft on a slab equal numpy's values (the gradient of
    ``sum(w |R v|^2)``, ``R`` the orthonormal rfftn, in closed form: ``2 Re R^H (w R v)``, ``R^H`` the orthonormal
    ifftn of the half spectrum padded with zeros)."""
    m = mesh((8,))
    a = random((4,) + SHAPE, np.float64)
    w = random((4, 16, 8, 7), np.float64, seed=2)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec(None, "x")))

    def loss(v):
        return jnp.sum(w * jnp.abs(xf.rfftn(v, axes=(1, 2, 3), norm="ortho")) ** 2)

    # the gradient and the vmapped round trip in one program; the program checked below is the one run
    grad = jax.jit(lambda x: (jax.grad(loss)(x),
                              jax.vmap(lambda u: xf.ifftn(xf.fftn(u, s=(16, 8, 16)), axes=(0, 2)))(x)))
    grad = grad.lower(x).compile()
    g, v = grad(x)
    half = np.zeros(a.shape, np.complex128)
    half[..., :7] = w * np.fft.rfftn(a, axes=(1, 2, 3), norm="ortho")
    assert rel_err(g, 2 * np.real(np.fft.ifftn(half, axes=(1, 2, 3), norm="ortho"))) < 1e-12
    assert rel_err(v, np.fft.ifftn(np.fft.fftn(a, s=(16, 8, 16), axes=(1, 2, 3)), axes=(1, 3))) < 1e-12
    assert count_op(grad.as_text(), "all-gather") == 0


def test_errors_are_jax_numpy_ffts():
    """A sharded input gets ``jax.numpy.fft``'s own argument checks: the same exception type and message."""
    m = mesh((8,))
    a = random(SHAPE, np.float32)
    x = jax.device_put(a, NamedSharding(m, PartitionSpec("x")))
    calls = [("fftn", {"norm": "unitary"}), ("fftn", {"axes": (0, 0)}), ("fftn", {"axes": 1}),
             ("fftn", {"s": (4, 4), "axes": (0,)}), ("fft", {"axis": (0,)}), ("rfftn", {"dtype": np.complex64})]
    for name, kwargs in calls:
        v = jax.device_put(a.astype(kwargs.pop("dtype")), x.sharding) if "dtype" in kwargs else x
        with pytest.raises(Exception) as want:
            getattr(jnp.fft, name)(jnp.asarray(np.asarray(v)), **kwargs)
        with pytest.raises(type(want.value), match=re.escape(str(want.value))):
            getattr(xf, name)(v, **kwargs)
    c = random((64,), np.complex64)
    line = jax.device_put(c, NamedSharding(m, PartitionSpec("x")))
    # a 1D array sharded over the mesh: transformed across the devices (four-step), its real FFT too (as complex)
    assert rel_err(xf.fft(line), np.fft.fft(c)) < 1e-5
    assert rel_err(xf.rfft(jax.device_put(c.real, line.sharding)), np.fft.rfft(c.real)) < 1e-5
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
