"""Structural efficiency facts: FFT ops and local transposes in the HLO of every transform.

XLA's FFT op only transforms the minor-most axes, so a transform over a non-minor axis needs a transpose. The
plan is lowered so that each local stage is one FFT op and a transpose appears only where the data movement
forces one (``xfft._lower.lower_plan``). Counts derived from the plans (3D grid, forward; the inverse mirrors it):

- one device, or a one-device mesh: one FFT op (``rfftn``/``fftn`` over all three axes), no transpose;
- slab (one mesh axis of size > 1, whatever its size-1 companions): stage 1 transforms the two trailing axes in one
  op, the all-to-all moves the mesh axis, stage 2 transforms axis 0, which must first be made minor-most (one
  transpose); natural order transposes back at the end (2 transposes), ``"transposed"`` order does not (1);
- pencil (two mesh axes of size > 1): stage 1 is the last axis (minor already), stages 2 and 3 each bring their
  axis minor-most (2 transposes), natural order adds one to restore the order (3) and ``"transposed"`` does not (2).

Before this lowering (plans run step by step with ``jnp.fft``) the lowered StableHLO of the forward held
2 transposes on one device for r2c (0 for c2c), 4 for slab r2c (2 for c2c) and 4 for pencil (c2c and r2c).
"""

from __future__ import annotations

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

SHAPE = (16, 16, 16)
# mesh shape, spec, transposes natural / transposed (per direction), FFT ops per direction
DISTRIBUTED = [
    ((8,), PartitionSpec("x"), 2, 1, 2),
    ((1, 8), PartitionSpec(("x", "y")), 2, 1, 2),
    ((8, 1), PartitionSpec("x", "y"), 2, 1, 2),
    ((2, 4), PartitionSpec("x", "y"), 3, 2, 3),
    ((4, 2), PartitionSpec("x", "y"), 3, 2, 3),
]


def _lowered_transposes(f, x) -> int:
    return jax.jit(f).lower(x).as_text().count("stablehlo.transpose")


def _compiled(f, x) -> str:
    return jax.jit(f).lower(x).compile().as_text()


def _fft_ops(text: str) -> int:
    return len(re.findall(r"[\s=]fft\(", text))


def _transforms(real: bool, order: str):
    if real:
        return (lambda x: xfft.xrfft3d(x, order=order)), (lambda k: xfft.ixrfft3d(k, s=SHAPE, order=order))
    return (lambda x: xfft.xfft3d(x, order=order)), (lambda k: xfft.ixfft3d(k, order=order))


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


@pytest.mark.parametrize("order", ["natural", "transposed"])
@pytest.mark.parametrize("real", [False, True], ids=["c2c", "r2c"])
@pytest.mark.parametrize("mesh_shape,spec,n_nat,n_tr,n_fft", DISTRIBUTED,
                         ids=["x".join(map(str, c[0])) for c in DISTRIBUTED])
def test_distributed_transposes_only_where_movement_forces(mesh_shape, spec, n_nat, n_tr, n_fft, order, real):
    """Slab/pencil: one FFT op per stage and exactly the transposes the stages force (see module docstring)."""
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
    want = n_nat if order == "natural" else n_tr
    # The same count follows from the plan: Transpose steps of the lowered program.
    plan = plan_forward(SHAPE, spec_to_layout(spec, 3), (0, 1, 2),
                        tuple(zip(m.axis_names, m.axis_sizes)), real)
    assert sum(isinstance(s, Transpose) for s in lower_plan(plan, None, order == "natural").steps) == want
    assert _lowered_transposes(fwd, x) == want
    assert _lowered_transposes(inv, k) == want
    assert _fft_ops(_compiled(fwd, x)) == n_fft


def test_transposed_order_saves_the_final_transpose_in_compiled_hlo():
    """Compiled HLO (after XLA's own layout work): transposed order has fewer transposes than natural."""
    m = mesh((2, 4), "explicit")
    x = put(np.zeros(SHAPE, np.complex64), NamedSharding(m, PartitionSpec("x", "y")))
    nat = count_op(_compiled(lambda x: xfft.xfft3d(x), x), "transpose")
    tr = count_op(_compiled(lambda x: xfft.xfft3d(x, order="transposed"), x), "transpose")
    assert tr < nat
