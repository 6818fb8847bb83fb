"""halo_pad and halo_reduce: values against numpy (np.pad wrap per block), exact adjoints, jit/vmap, HLO and bytes."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, hlo, mesh, put, random
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xfft


def ref_pad(a: np.ndarray, widths, blocks, periodic: bool) -> np.ndarray:
    """numpy reference: each block of ``a`` along each axis wrap-padded from the global array (zeros past the ends
    if not periodic), axes in order."""
    for ax, (w, p) in enumerate(zip(widths, blocks)):
        if not w:
            continue
        n = a.shape[ax]
        b = n // p
        parts = []
        for i in range(p):
            lo = np.take(a, np.arange(i * b - w, i * b) % n, axis=ax)
            hi = np.take(a, np.arange((i + 1) * b, (i + 1) * b + w) % n, axis=ax)
            if not periodic and i == 0:
                lo = np.zeros_like(lo)
            if not periodic and i == p - 1:
                hi = np.zeros_like(hi)
            parts.append(np.concatenate([lo, np.take(a, np.arange(i * b, (i + 1) * b), axis=ax), hi], axis=ax))
        a = np.concatenate(parts, axis=ax)
    return a


def ref_reduce(c: np.ndarray, widths, blocks, periodic: bool) -> np.ndarray:
    """numpy reference of the adjoint: each halo cell added into the global cell it copies, halos dropped."""
    nd = c.ndim
    shape = [n - 2 * w * p for n, w, p in zip(c.shape, widths, blocks)]
    out = np.zeros(shape, c.dtype)
    # global source index of every padded cell along each axis (-1: a zero beyond a non-periodic end)
    src = []
    for n, w, p in zip(shape, widths, blocks):
        b = n // p
        idx = []
        for i in range(p):
            for j in range(-w, b + w):
                g = i * b + j
                idx.append(g % n if periodic or 0 <= g < n else -1)
        src.append(np.array(idx))
    for cell in np.ndindex(*c.shape):
        g = tuple(src[d][cell[d]] for d in range(nd))
        if min(g) >= 0:
            out[g] += c[cell]
    return out


# (mesh shape, axis types, spec, grid shape, width)
CASES = [
    ((8,), "explicit", P("x"), (16, 6, 4), 2),
    ((2, 4), "explicit", P("x", "y"), (8, 16, 4), (3, 4, 1)),  # widths = whole blocks; an unsharded axis wraps
    ((2, 4), "auto", P("x", "y"), (8, 16, 4), 1),
    ((8,), "explicit", P("x"), (16, 6), (2, 0)),
    ((2, 4), "explicit", P("x", "y"), (6, 12), 1),
]


def _case_id(c):
    return f"{'x'.join(map(str, c[0]))}-{c[1]}-{len(c[3])}d-w{c[4]}"


# every case, both ends (periodic and zeros) on the slab and on the pencil of whole-block widths
SAMPLE = [(0, True), (0, False), (1, True), (1, False), (2, False), (3, True), (4, False)]


@pytest.mark.parametrize("case,periodic", [(CASES[i], p) for i, p in SAMPLE],
                         ids=[f"{_case_id(CASES[i])}-{'periodic' if p else 'zeros'}" for i, p in SAMPLE])
def test_values_adjoint_and_gradient(case, periodic):
    mshape, types, spec, shape, width = case
    m = mesh(mshape, types)
    a = random(shape, np.float64, seed=1)
    x = put(a, NamedSharding(m, spec))
    blocks = [m.shape[s] if s else 1 for s in tuple(spec) + (None,) * (len(shape) - len(spec))]
    widths = [width * (p > 1) for p in blocks] if isinstance(width, int) else list(width)

    padded_shape = tuple(n + 2 * w * p for n, w, p in zip(shape, widths, blocks))
    c = random(padded_shape, np.float64, seed=2)
    cy = put(c, NamedSharding(m, spec))

    @jax.jit
    def run(x, cy):  # one program: pad, reduce, and the vjp of each
        pad = lambda x: xfft.halo_pad(x, width, periodic)  # noqa: E731
        red = lambda c: xfft.halo_reduce(c, width, periodic)  # noqa: E731
        return pad(x), red(cy), jax.vjp(pad, x)[1](cy)[0], jax.vjp(red, cy)[1](x)[0]

    y, r, pad_t, red_t = run(x, cy)
    np.testing.assert_array_equal(np.asarray(y), ref_pad(a, widths, blocks, periodic))
    assert y.shape == padded_shape
    assert y.sharding.is_equivalent_to(NamedSharding(m, spec), len(shape))
    np.testing.assert_allclose(np.asarray(r), ref_reduce(c, widths, blocks, periodic), rtol=1e-14, atol=1e-14)
    # the vjp of each is the other, to the bit
    np.testing.assert_array_equal(np.asarray(pad_t), np.asarray(r))
    np.testing.assert_array_equal(np.asarray(red_t), np.asarray(y))
    np.testing.assert_allclose(np.vdot(np.asarray(y), c), np.vdot(a, np.asarray(r)), rtol=1e-12)


def _permute_cells(text: str) -> int:
    """Elements sent by the collective permutes of one device in compiled HLO (their result shapes)."""
    shapes = re.findall(r"= \(?\w+\[([\d,]*)\][^\n]*? collective-permute(?:-start)?\(", text)
    return sum(int(np.prod([int(v) for v in s.split(",") if v])) for s in shapes)


@pytest.mark.parametrize("mshape,spec,shape,width",
                         [((8,), P("x"), (32, 8, 8), 3), ((2, 4), P("x", "y"), (8, 16, 8), 2)], ids=["slab", "pencil"])
def test_hlo_only_permutes_exactly_the_halo_cells(mshape, spec, shape, width):
    m = mesh(mshape)
    x = put(np.zeros(shape, np.float32), NamedSharding(m, spec))
    y = xfft.halo_pad(x, width)
    block = [n // (m.shape[s] if s else 1) for n, s in zip(shape, tuple(spec) + (None,) * 3)]
    padded = [b + 2 * width * (s is not None) for b, s in zip(block, tuple(spec) + (None,) * 3)]
    halo_cells = int(np.prod(padded) - np.prod(block))
    for f, arg in [(lambda x: xfft.halo_pad(x, width), x), (lambda y: xfft.halo_reduce(y, width), y)]:
        text = hlo(f, arg)
        assert count_op(text, "all-gather") == 0 and count_op(text, "all-to-all") == 0
        assert count_op(text, "all-reduce") == 0
        # one collective per direction of each sharded axis; both directions in one where the axis has 2 devices
        assert count_op(text, "collective-permute") == sum(1 if m.shape[s] == 2 else 2 for s in spec if s)
        assert _permute_cells(text) == halo_cells


def test_vmap_and_set_mesh():
    m = mesh((2, 4))
    a = random((3, 8, 8, 4), np.float32, seed=3)
    x = put(a, NamedSharding(m, P(None, "x", "y")))
    with jax.set_mesh(m):
        y = jax.jit(jax.vmap(lambda v: xfft.halo_pad(v, 1)))(x)
        z = jax.jit(jax.vmap(lambda v: xfft.halo_reduce(v, 1)))(y)
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(y[i]), ref_pad(a[i], (1, 1, 0), (2, 4, 1), True))
    # reduce(pad(x)): interior cells plus the copies their neighbours hold of them
    np.testing.assert_allclose(np.asarray(z[0]), ref_reduce(ref_pad(a[0], (1, 1, 0), (2, 4, 1), True), (1, 1, 0),
                                                            (2, 4, 1), True), rtol=1e-6)


def test_one_device_wraps_the_axes_it_is_given():
    a = random((5, 4), np.float64, seed=4)
    padded = xfft.halo_pad(jnp.asarray(a), (2, 1))
    np.testing.assert_array_equal(np.asarray(padded), np.pad(a, ((2, 2), (1, 1)), "wrap"))
    np.testing.assert_array_equal(np.asarray(xfft.halo_pad(jnp.asarray(a), 3)), a)  # no sharded axis: nothing


def test_errors():
    m = mesh((8,))
    x = put(np.zeros((16, 4)), NamedSharding(m, P("x")))
    with pytest.raises(ValueError, match="width 3 along axis 0 is wider than the block .2 cells"):
        xfft.halo_pad(x, 3)
    with pytest.raises(ValueError, match="wider than the interior"):
        xfft.halo_reduce(put(np.zeros((24, 4)), NamedSharding(m, P("x"))), 2)
    with pytest.raises(ValueError, match="one entry per array axis"):
        xfft.halo_pad(x, (1, 1, 1))
    with pytest.raises(ValueError, match="non-negative"):
        xfft.halo_pad(x, -1)
    with pytest.raises(TypeError, match="width must be a Python int"):
        xfft.halo_pad(x, 1.5)
    with pytest.raises(TypeError, match="periodic must be True or False"):
        xfft.halo_pad(x, 1, periodic="yes")
    with pytest.raises(TypeError, match="x must be a jax.Array"):
        xfft.halo_pad([1.0, 2.0], 1)
