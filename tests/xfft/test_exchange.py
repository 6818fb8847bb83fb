"""The exchange of a move with the transpose after it done on the sending side (``xfft._exchange``).

On CPU devices (``xfft.LoweringOptions.send_transposed``, the CPU default) a move that the lowered program
transposes right after is one :class:`xfft._lower.SendTransposed` step, run as
:func:`xfft._exchange.move_then_transpose`: the same array, bit for bit, as the all-to-all followed by the transpose,
with the same number of all-to-alls and of transposes that change the minor-most axis. The tests choose the
lowering by passing options to the native backend, never by switching a global.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import count_op, mesh, put
from jax.sharding import NamedSharding, PartitionSpec

import xfft
from xfft import _exchange
from xfft._layout import Move
from xfft.backends.native import NativeBackend


def _native(matrix_dft: bool = True, send_transposed: bool = True) -> NativeBackend:
    return NativeBackend(xfft.LoweringOptions(matrix_dft=matrix_dft, send_transposed=send_transposed))


def _both(f, x, matrix_dft: bool = True):
    """``(value, all-to-alls, transposes in the lowered program)`` of ``f(x, backend)`` with the send-side
    exchange and with the plain one (XLA places the transpose)."""
    out = []
    for on in (True, False):
        g = jax.jit(functools.partial(f, backend=_native(matrix_dft, on)))
        lowered = g.lower(x)
        out.append((np.asarray(g(x)), count_op(lowered.compile().as_text(), "all-to-all"),
                    lowered.as_text().count("stablehlo.transpose")))
    return out


_SLAB, _P24, _P42 = ((8,), ("x",)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y"))


# A sample of order x kind x decomposition: each order with each kind, each decomposition with each order, each
# decomposition with r2c (the uneven spectral axis), and c2c on a slab and a pencil.
@pytest.mark.parametrize("order,real,shape,spec", [
    ("transposed", False, *_SLAB), ("natural", True, *_SLAB), ("transposed", True, *_P24), ("natural", False, *_P24),
    ("natural", True, *_P42)], ids=["transposed-c2c-slab", "natural-r2c-slab", "transposed-r2c-pencil2x4",
                                    "natural-c2c-pencil2x4", "natural-r2c-pencil4x2"])
def test_transforms_are_bit_identical_with_the_plain_exchange(shape, spec, real, order):
    """Forward and inverse, both orders, slab and both pencils (natural order with the accelerator lowering too,
    whose last move is followed by a transpose): the same bits and all-to-alls."""
    m = mesh(shape, "explicit")
    grid = (16, 24, 32)
    a = np.random.default_rng(3).standard_normal(grid).astype(np.float64)
    x = put(a if real else a + 1j * a[::-1], NamedSharding(m, PartitionSpec(*spec)))
    def fwd(v, backend):
        return (xfft.xrfft3d if real else xfft.xfft3d)(v, order=order, backend=backend)

    def inv(k, backend):
        return (xfft.ixrfft3d if real else xfft.ixfft3d)(k, s=grid, order=order, backend=backend)

    # (transposed order lowers the same with and without matrix DFTs: test_efficiency's natural-order test)
    for matrix_dft in (True, False) if order == "natural" else (True,):
        (k1, n1, t1), (k0, n0, t0) = _both(fwd, x, matrix_dft)
        np.testing.assert_array_equal(k1, k0)
        assert n1 == n0 == len(shape)
        # the last move is followed by a transpose (so runs on the sending side) except where natural order's
        # last stage runs in place (matrix DFTs on CPU)
        assert t1 > t0 if order == "transposed" or not matrix_dft else t1 >= t0
        k = put(k1, xfft.spectral_sharding(x.sharding, grid, real=real, order=order))
        (b1, _, _), (b0, _, _) = _both(inv, k, matrix_dft)
        np.testing.assert_array_equal(b1, b0)
    ref = (np.fft.rfftn if real else np.fft.fftn)(np.asarray(x))
    perm = xfft.spectral_axes(x.sharding, grid, real=real, order=order)
    np.testing.assert_allclose(k1, np.transpose(ref, perm), rtol=1e-12, atol=1e-10)


def _exchange_in_shard_map(m, x, step: Move, perm, in_spec, out_spec, fused: bool) -> np.ndarray:
    sizes = dict(zip(m.axis_names, m.axis_sizes))

    def body(b):
        if fused:
            return _exchange.move_then_transpose(b, step, perm, sizes)
        return jnp.transpose(_exchange.all_to_all(b, step, sizes), perm)

    f = jax.shard_map(body, mesh=m, in_specs=in_spec, out_specs=out_spec, check_vma=False)
    return np.asarray(jax.jit(f)(x))


@pytest.mark.parametrize("dst,src,perm,shape_mesh,axes", [
    (1, 0, (1, 2, 0), (8,), ("x",)), (1, 0, (2, 1, 0), (2, 4), ("x", "y")), (2, 0, (1, 2, 0), (8,), ("x",)),
    (0, 1, (2, 0, 1), (2, 4), ("x", "y")), (2, 1, (0, 2, 1), (8,), ("x",)), (0, 2, (1, 0, 2), (2, 4), ("x", "y"))])
def test_move_then_transpose_is_the_exchange_then_the_transpose(dst, src, perm, shape_mesh, axes):
    """Every pair of exchanged axes and output order, in shard_map on 8 devices or on 2 x 4 devices over both
    mesh axes (each on three pairs); a length the group does not divide (padded in transit) takes the plain path."""
    m = mesh(shape_mesh, "explicit")
    spec, out = [None] * 3, [None] * 3
    spec[src] = axes
    out[perm.index(dst)] = axes
    for n_dst, n_src in ((16, 24), (12, 8)):  # 12 on 8 devices: padded to 16 in transit
        shape = [10, 10, 10]
        shape[dst], shape[src] = n_dst, n_src
        a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        x = put(a, NamedSharding(m, PartitionSpec(*spec)))
        args = (m, x, Move(axes, src, dst, n_src, n_dst), perm, PartitionSpec(*spec), PartitionSpec(*out))
        fused, plain = _exchange_in_shard_map(*args, True), _exchange_in_shard_map(*args, False)
        np.testing.assert_array_equal(fused, plain)
        if n_dst % 8 == 0:
            np.testing.assert_array_equal(fused, np.transpose(a, perm))
        else:
            assert fused.shape[perm.index(dst)] == 16


def test_gradient_and_vmap_through_the_send_side_exchange():
    """The exchange is plain JAX: ``grad`` and ``vmap`` of a transposed-order transform give the plain exchange's
    bits, the batch numpy's ``rfftn`` in the transposed axis order, and the gradient one device's ``jnp.fft.rfftn``
    gradient."""
    m = mesh((8,), "explicit")
    a = np.random.default_rng(4).standard_normal((4, 16, 16, 16))
    x = put(a, NamedSharding(m, PartitionSpec(None, "x")))

    got = []
    for on in (True, False):
        fwd = functools.partial(xfft.xrfft3d, order="transposed", backend=_native(send_transposed=on))
        loss = lambda v, fwd=fwd: jnp.sum(jnp.abs(fwd(v)) ** 2)  # noqa: E731
        g, v = jax.jit(lambda b, loss=loss, fwd=fwd: (jax.grad(loss)(b[0]), jax.vmap(fwd)(b)))(x)  # one program
        got.append((np.asarray(g), np.asarray(v)))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])
    perm = xfft.spectral_axes(x[0].sharding, a.shape[1:], real=True, order="transposed")
    want = np.transpose(np.fft.rfftn(a, axes=(1, 2, 3)), (0,) + tuple(p + 1 for p in perm))
    np.testing.assert_allclose(got[0][1], want, rtol=1e-12, atol=1e-10)
    one = jax.device_put(a[0], jax.devices()[0])
    ref = jax.grad(lambda v: jnp.sum(jnp.abs(jnp.fft.rfftn(v)) ** 2))(one)
    np.testing.assert_allclose(got[0][0], np.asarray(ref), rtol=1e-12, atol=1e-9)


def test_padded_exchange_of_a_length_one_axis():
    """Grids with a length-1 axis that a move pads in transit (the mesh axes move onto it): XLA's CPU backend sent
    the chunks holding only padding as broadcasts whose layout differed from the data chunk's, and its HLO
    verifier rejected the all-to-all (``INVALID_ARGUMENT ... all-to-all has operands with different shapes``). The
    padded block now stays whole; the transforms equal numpy's under ``jit`` (and eagerly on the first grid), and
    ``grad`` runs."""
    cases = [((4, 2), (6, 14, 1, 16), PartitionSpec(None, None, None, ("x", "y")), None),
             ((2, 2, 2), (23, 23, 1, 12), PartitionSpec(None, None, None, "x"), None),
             ((4,), (1, 3, 8, 2), PartitionSpec(None, None, "x", None), (0, 2, 1))]
    for i, (shape, grid, spec, axes) in enumerate(cases):
        m = xfft.make_mesh(shape, devices=jax.devices()[:int(np.prod(shape))])
        a = np.random.default_rng(5).standard_normal(grid) + 1j * np.random.default_rng(6).standard_normal(grid)
        x = put(a, NamedSharding(m, spec))
        ref = np.fft.fftn(a, axes=axes)
        with jax.set_mesh(m):
            fft = functools.partial(xfft.fft.fftn, axes=axes)
            if i == 0:  # eagerly once
                np.testing.assert_allclose(np.asarray(fft(x)), ref, rtol=1e-12, atol=1e-11)

            @jax.jit
            def run(v, fft=fft):  # one program: the transform and the gradient
                return fft(v), jax.grad(lambda r: jnp.sum(jnp.abs(fft(r)) ** 2))(v.real)

            k, g = run(x)
            np.testing.assert_allclose(np.asarray(k), ref, rtol=1e-12, atol=1e-11)
        # Parseval: the gradient of sum |F x|^2 over real x is 2 N x
        np.testing.assert_allclose(np.asarray(g), 2 * np.prod([grid[d] for d in (axes or range(len(grid)))])
                                   * a.real, rtol=1e-12, atol=1e-9)


def test_the_program_shows_the_send_side_exchange():
    """The lowered program lists every step the interpreter runs: with ``send_transposed`` a move that a transpose
    follows is one ``SendTransposed`` step (no move-then-transpose pair is left for the interpreter to fuse),
    without it the pair stays as two steps. The options are part of the lowering's key (two programs), and a
    CPU mesh without options gets the CPU defaults' program."""
    from xfft._layout import spec_to_layout
    from xfft._lower import SendTransposed, Transpose, lower_plan
    from xfft._partition import lowered, placement
    from xfft._plan import plan_forward

    plan = plan_forward((16, 24, 32), spec_to_layout(PartitionSpec("x"), 3), (0, 1, 2), (("x", 8),), False)

    def pairs(program):
        return [(type(a), type(b)) for a, b in zip(program.steps, program.steps[1:])]

    for natural in (False, True):
        on = lower_plan(plan, None, natural, xfft.LoweringOptions(send_transposed=True))
        off = lower_plan(plan, None, natural, xfft.LoweringOptions())
        assert (Move, Transpose) in pairs(off) and (Move, Transpose) not in pairs(on)
        sends = [s for s in on.steps if isinstance(s, SendTransposed)]
        assert [(s.move, s.perm) for s in sends] == [(Move(("x",), 0, 1, 16, 24), (1, 2, 0))]
        assert len(on.steps) == len(off.steps) - 1 and on.out_perm == off.out_perm
    x = put(np.zeros((16, 24, 32), np.complex64), NamedSharding(mesh((8,), "explicit"), PartitionSpec("x")))
    program = lowered(plan, placement(x), x.shape)
    assert program == lower_plan(plan, None, True, xfft.LoweringOptions.for_platform("cpu"), x.shape)
    assert program != lowered(plan, placement(x), x.shape, options=xfft.LoweringOptions())
