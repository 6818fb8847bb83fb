"""Structural facts: the collectives in the compiled HLO and the per-device memory of the transforms."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import AXIS_TYPES, count_op, hlo, mesh, put
from jax.sharding import NamedSharding, PartitionSpec

import xfft

CASES = [("slab", (8,), PartitionSpec("x"), 1), ("pencil", (2, 4), PartitionSpec("x", "y"), 2)]


@pytest.mark.parametrize("axis_types", AXIS_TYPES)
@pytest.mark.parametrize("name,mesh_shape,spec,n_a2a", CASES, ids=[c[0] for c in CASES])
def test_forward_c2c_collectives_and_memory(axis_types, name, mesh_shape, spec, n_a2a):
    """Exactly 1 (slab) / 2 (pencil) all-to-alls, no all-gather, temporaries <= 3 local blocks."""
    m = mesh(mesh_shape, axis_types)
    x = put(np.zeros((32, 32, 32), np.complex64), NamedSharding(m, spec))
    compiled = jax.jit(xfft.xfft3d).lower(x).compile()
    text = compiled.as_text()
    assert count_op(text, "all-to-all") == n_a2a
    assert count_op(text, "all-gather") == 0
    assert count_op(text, "all-reduce") == 0
    local = x.nbytes // 8
    mem = compiled.memory_analysis()
    assert mem.output_size_in_bytes == local
    assert mem.temp_size_in_bytes <= 3 * local


@pytest.mark.parametrize("name,mesh_shape,spec,n_a2a", CASES, ids=[c[0] for c in CASES])
def test_round_trip_and_r2c_collectives(name, mesh_shape, spec, n_a2a):
    m = mesh(mesh_shape, "explicit")
    x = put(np.zeros((32, 32, 32), np.float32), NamedSharding(m, spec))
    assert count_op(hlo(xfft.xrfft3d, x), "all-to-all") == n_a2a
    text = hlo(lambda x: xfft.ixrfft3d(xfft.xrfft3d(x)), x)
    assert count_op(text, "all-to-all") == 2 * n_a2a
    assert count_op(text, "all-gather") == 0


def test_batched_vector_field_moves_once_per_stage():
    """A (3, N, N, N) field is transformed with one all-to-all per stage for all components."""
    m = mesh((2, 4), "explicit")
    u = put(np.zeros((3, 16, 16, 16), np.float32), NamedSharding(m, PartitionSpec(None, "x", "y")))
    assert count_op(hlo(xfft.xrfft3d, u), "all-to-all") == 2
    assert count_op(hlo(xfft.xfft3d, u), "all-to-all") == 2


def test_plain_jnp_fft_gathers_but_xfft_does_not():
    """The problem xfft solves: XLA's own fftn on a slab-sharded array all-gathers it."""
    m = mesh((8,), "explicit")
    x = put(np.zeros((32, 32, 32), np.complex64), NamedSharding(m, PartitionSpec("x")))
    plain = jax.jit(jnp.fft.fftn).lower(x).compile()
    assert count_op(plain.as_text(), "all-gather") >= 1
    assert plain.memory_analysis().temp_size_in_bytes >= x.nbytes  # at least the global array per device
    ours = jax.jit(xfft.xfft3d).lower(x).compile()
    assert ours.memory_analysis().temp_size_in_bytes < x.nbytes // 2


def test_uneven_grid_pads_only_in_transit():
    """30x40x50 on 8 devices: correct, no all-gather, output even (sharded on the divisible axis)."""
    m = mesh((8,), "explicit")
    x = put(np.zeros((30, 40, 50), np.complex64), NamedSharding(m, PartitionSpec(None, "x")))
    text = hlo(xfft.xfft3d, x)
    assert count_op(text, "all-gather") == 0
    assert count_op(text, "all-to-all") == 2
    assert tuple(xfft.xfft3d(x).sharding.spec) == (None, "x", None)


@pytest.mark.parametrize("order", ["natural", "transposed"])
def test_2d_slab_r2c_moves_twice_c2c_once(order):
    """The 2D rows of the README's Layouts table: on a slab P('x', None) at 256^2 over 8 devices a c2c transform
    takes 1 all-to-all; an r2c transform takes 2 in either order, because the 129 half-spectrum rows take the
    mesh axis only padded, in transit, and it moves back onto the 256 axis. Values match numpy."""
    m = mesh((8,), "explicit")
    a = np.random.default_rng(0).standard_normal((256, 256))
    s = NamedSharding(m, PartitionSpec("x", None))
    xr, xc = put(a.astype(np.float32), s), put(a.astype(np.complex64), s)
    assert count_op(hlo(lambda v: xfft.xfftn(v, ndim=2, order=order), xc), "all-to-all") == 1
    r2c = jax.jit(lambda v: xfft.xrfftn(v, ndim=2, order=order)).lower(xr).compile()
    assert count_op(r2c.as_text(), "all-to-all") == 2
    k = r2c(xr)  # (compiled once, for its text and to run)
    ref = np.fft.rfft2(a)
    if order == "natural":
        assert k.shape == (256, 129) and tuple(k.sharding.spec) == ("x", None)
    else:
        assert k.shape == (129, 256) and tuple(k.sharding.spec) == (None, "x")
        ref = ref.T
    assert np.abs(np.asarray(k) - ref).max() < 1e-5 * np.abs(ref).max()
