"""Structural efficiency facts: FFT ops, matrix DFTs and local transposes in the HLO of every transform.

XLA's FFT op only transforms the minor-most axes, so a transform over a non-minor axis needs a transpose. The
plan is lowered so that each local stage is one FFT op and a transpose appears only where the data movement
forces one (``xfft._lower.lower_plan``). Counts derived from the plans (3D grid, forward; the inverse mirrors it):

- one device, or a one-device mesh: one FFT op (``rfftn``/``fftn`` over all three axes), no transpose;
- slab (one mesh axis of size > 1, whatever its size-1 companions): stage 1 transforms the two trailing axes in one
  op, the all-to-all moves the mesh axis, stage 2 transforms axis 0, which must first be made minor-most (one
  transpose, done on CPU devices on the sending side of the all-to-all, per destination chunk, where the
  exchange copies the data anyway: ``xfft._exchange``); ``"transposed"`` order stops there (1 transpose);
- pencil (two mesh axes of size > 1): stage 1 is the last axis (minor already), stages 2 and 3 each bring their
  axis minor-most (2 transposes); ``"transposed"`` order stops there (2).

Natural order on CPU devices: the last stage runs in natural axis order, its axis transformed where it lies by
matrix products (one ``dot`` instead of the FFT op; ``xfft._matdft``), so the natural order costs no transpose of
its own: slab 0 transposes, pencil 2 (the transpose to natural order after the last all-to-all replaces the one
that made axis 0 minor-most), never more than ``"transposed"`` order. The lowering for accelerators
(``matrix_dft=False``) restores natural order with one more transpose at the end (slab 2, pencil 3).

Before this lowering (plans run step by step with ``jnp.fft``) the lowered StableHLO of the forward held
2 transposes on one device for r2c (0 for c2c), 4 for slab r2c (2 for c2c) and 4 for pencil (c2c and r2c).
"""

from __future__ import annotations

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, mesh, put
from jax.sharding import NamedSharding, PartitionSpec

import xfft
from xfft._layout import spec_to_layout
from xfft._lower import Transpose, lower_plan
from xfft._plan import plan_forward
from xfft.backends.native import NativeBackend

SHAPE = (16, 16, 16)
# mesh shape, spec, transposes natural (accelerator lowering) / transposed / natural on CPU, FFT ops per direction
DISTRIBUTED = [
    ((8,), PartitionSpec("x"), 2, 1, 0, 2),
    ((1, 8), PartitionSpec(("x", "y")), 2, 1, 0, 2),
    ((8, 1), PartitionSpec("x", "y"), 2, 1, 0, 2),
    ((2, 4), PartitionSpec("x", "y"), 3, 2, 2, 3),
    ((4, 2), PartitionSpec("x", "y"), 3, 2, 2, 3),
]


def _lowered_transposes(f, x) -> int:
    return jax.jit(f).lower(x).as_text().count("stablehlo.transpose")


def _compiled(f, x) -> str:
    return jax.jit(f).lower(x).compile().as_text()


def _fft_ops(text: str) -> int:
    return len(re.findall(r"[\s=]fft\(", text))


def _transforms(real: bool, order: str, backend=None):
    if real:
        return ((lambda x: xfft.xrfft3d(x, order=order, backend=backend)),
                (lambda k: xfft.ixrfft3d(k, s=SHAPE, order=order, backend=backend)))
    return ((lambda x: xfft.xfft3d(x, order=order, backend=backend)),
            (lambda k: xfft.ixfft3d(k, order=order, backend=backend)))


@pytest.mark.parametrize("where", ["array", "mesh1"])
@pytest.mark.parametrize("order", ["natural", "transposed"])
@pytest.mark.parametrize("real", [False, True], ids=["c2c", "r2c"])
def test_one_device_is_one_fft_op_without_transpose(where, order, real):
    """A single-device array or a one-device mesh runs exactly jnp.fft's single op, forward and inverse."""
    dtype = np.float32 if real else np.complex64
    a = np.random.default_rng(0).standard_normal(SHAPE).astype(dtype)
    if where == "array":
        x = jax.device_put(a, jax.devices()[0])
    else:
        one = xfft.make_mesh((1,), devices=jax.devices()[:1])
        x = put(a, NamedSharding(one, PartitionSpec("x")))
    fwd, inv = _transforms(real, order)
    k = fwd(x)
    for f, arg in ((fwd, x), (inv, k)):
        assert _lowered_transposes(f, arg) == 0
        text = _compiled(f, arg)
        assert count_op(text, "transpose") == 0
        assert _fft_ops(text) == 1
    ref = (jnp.fft.rfftn if real else jnp.fft.fftn)(a)
    np.testing.assert_allclose(np.asarray(k), np.asarray(ref), rtol=1e-5, atol=1e-3)


def _minor_transposes(text: str) -> int:
    """Transposes in lowered StableHLO that change the minor-most axis (not a reorder of whole rows)."""
    dims = re.findall(r"stablehlo.transpose %\S+, dims = \[([\d, ]+)\]", text)
    return sum(int(d.split(",")[-1]) != len(d.split(",")) - 1 for d in dims)


def _sampled():
    """The slab (8,) and pencil (2, 4) with every kind and order; the other meshes with each kind and each order
    once (c2c in one order, r2c in the other)."""
    for i, case in enumerate(DISTRIBUTED):
        name = "x".join(map(str, case[0]))
        for real in (False, True):
            for order in ("natural", "transposed"):
                if case[0] in ((8,), (2, 4)) or (order == "natural") == (real == (i % 2 == 0)):
                    yield pytest.param(*case, order, real, id=f"{name}-{'r2c' if real else 'c2c'}-{order}")


@pytest.mark.parametrize("mesh_shape,spec,n_nat,n_tr,n_cpu,n_fft,order,real", list(_sampled()))
def test_distributed_transposes_only_where_movement_forces(mesh_shape, spec, n_nat, n_tr, n_cpu, n_fft, order, real):
    """Slab/pencil: one FFT op (or, natural order's last stage on CPU, one matrix product) per stage and exactly the
    transposes the stages force (see module docstring)."""
    m = mesh(mesh_shape, "explicit")
    s = NamedSharding(m, spec)
    x = jax.ShapeDtypeStruct(SHAPE, np.float32 if real else np.complex64, sharding=s)
    perm = xfft.spectral_axes(s, SHAPE, real=real, order=order)
    kshape = [SHAPE[p] for p in perm]
    if real:
        kshape[perm.index(2)] = SHAPE[2] // 2 + 1
    k = jax.ShapeDtypeStruct(tuple(kshape), np.complex64, sharding=xfft.spectral_sharding(s, SHAPE, real=real,
                                                                                          order=order))
    fwd, inv = _transforms(real, order)
    natural = order == "natural"
    want = n_cpu if natural else n_tr
    # The same counts follow from the plan: Transpose steps of the lowered program, on CPU and on accelerators.
    plan = plan_forward(SHAPE, spec_to_layout(spec, 3), (0, 1, 2),
                        tuple(zip(m.axis_names, m.axis_sizes)), real)
    for matrix_dft, n in ((True, want), (False, n_nat if natural else n_tr)):
        options = xfft.LoweringOptions(matrix_dft=matrix_dft)
        assert sum(isinstance(s, Transpose) for s in lower_plan(plan, None, natural, options).steps) == n
    # A move followed by a transpose runs transposed on the sending side (xfft._exchange): one more transpose
    # per such move, a reorder of whole rows that keeps the minor-most axis.
    text = _compiled(fwd, x)
    moves = count_op(text, "all-to-all")
    for f, arg in ((fwd, x), (inv, k)):
        assert _minor_transposes(jax.jit(f).lower(arg).as_text()) == want
        assert want <= _lowered_transposes(f, arg) <= want + moves
    assert _fft_ops(text) == n_fft - natural
    assert len(re.findall(r"[\s=]dot\(", text)) == natural


@pytest.mark.parametrize("mesh_shape, spec", [((8,), PartitionSpec("x")), ((2, 4), PartitionSpec("x", "y"))])
@pytest.mark.parametrize("real", [False, True], ids=["c2c", "r2c"])
def test_natural_order_costs_no_more_transposes_than_transposed(mesh_shape, spec, real):
    """On CPU, natural order holds no more minor-axis transposes than transposed order, forward and inverse, and
    at most 3 local blocks of temporaries; the lowering for accelerators (``LoweringOptions(matrix_dft=False)``,
    passed to the native backend) has one more each way. Both give the same numbers to round-off."""
    m = mesh(mesh_shape, "explicit")
    a = np.random.default_rng(5).standard_normal(SHAPE).astype(np.float32 if real else np.complex64)
    x = put(a, NamedSharding(m, spec))
    counts, values = {}, {}
    for matrix_dft in (True, False):
        backend = NativeBackend(xfft.LoweringOptions(matrix_dft=matrix_dft, send_transposed=True))
        for order in ("natural", "transposed"):
            fwd, inv = _transforms(real, order, backend)
            lowered = jax.jit(fwd).lower(x)
            compiled = lowered.compile()
            k = compiled(x)  # (compiled once: its memory, and the values)
            counts[matrix_dft, order] = (_minor_transposes(lowered.as_text()),
                                         _minor_transposes(jax.jit(inv).lower(k).as_text()))
            assert compiled.memory_analysis().temp_size_in_bytes <= 3 * a.nbytes * (1 + real) // m.size
            values[matrix_dft, order] = np.asarray(k)
    for way in (0, 1):
        assert counts[True, "natural"][way] <= counts[True, "transposed"][way]
        assert counts[False, "natural"][way] == counts[False, "transposed"][way] + 1
    assert counts[True, "transposed"] == counts[False, "transposed"]
    ref = values[False, "natural"]
    assert np.max(np.abs(values[True, "natural"] - ref)) <= 1e-6 * np.max(np.abs(ref))
    np.testing.assert_array_equal(values[True, "transposed"], values[False, "transposed"])


def test_lowering_options_are_a_value_defaulted_per_platform():
    """``xfft.LoweringOptions`` is a frozen, hashable value (checked: bools only); CPU devices default to both
    choices on, accelerators to both off; the native backend without options lowers with its devices'
    defaults (the same program text), and one given explicitly is what the program is traced with, whatever
    was traced before it (no global decides)."""
    cpu, accel = xfft.LoweringOptions.for_platform("cpu"), xfft.LoweringOptions.for_platform("gpu")
    assert cpu == xfft.LoweringOptions(matrix_dft=True, send_transposed=True)
    assert accel == xfft.LoweringOptions.for_platform("tpu") == xfft.LoweringOptions()
    assert len({cpu, accel, xfft.LoweringOptions(matrix_dft=True, send_transposed=True)}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        cpu.matrix_dft = False
    with pytest.raises(TypeError, match="matrix_dft must be a bool"):
        xfft.LoweringOptions(matrix_dft="no")
    with pytest.raises(TypeError, match="platform"):
        xfft.LoweringOptions.for_platform(None)
    with pytest.raises(TypeError, match="lowering must be"):
        NativeBackend(lowering={"matrix_dft": False})
    m = mesh((8,), "explicit")
    x = jax.ShapeDtypeStruct(SHAPE, np.complex64, sharding=NamedSharding(m, PartitionSpec("x")))

    def text(backend):  # a new function each time: JAX reuses the trace of a function it has seen with these types
        return jax.jit(lambda a: xfft.xfft3d(a, backend=backend)).lower(x).as_text()

    default, plain = text(None), text(NativeBackend(accel))
    assert text(NativeBackend(cpu)) == default != plain
    assert _minor_transposes(plain) > _minor_transposes(default)  # natural order restored by transposes
    assert text(None) == default


def test_lengths_without_small_factors_keep_the_fft_op():
    """A last stage whose length has no factors of at most 32 (74 = 2 x 37) keeps the FFT op and its transposes
    (the accelerator lowering), with the same values as numpy."""
    m = xfft.make_mesh((2,), devices=jax.devices()[:2])
    a = np.random.default_rng(6).standard_normal((74, 8, 6)).astype(np.complex128)
    x = put(a, NamedSharding(m, PartitionSpec("x")))
    assert _minor_transposes(jax.jit(xfft.xfft3d).lower(x).as_text()) == 2
    k = jax.jit(xfft.xfft3d)(x)
    assert np.max(np.abs(np.asarray(k) - np.fft.fftn(a))) < 1e-12 * np.max(np.abs(np.fft.fftn(a)))
    assert _minor_transposes(jax.jit(xfft.ixfft3d).lower(k).as_text()) == 2
