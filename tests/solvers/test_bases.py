"""Bases and the Grid: transforms and derivatives against numpy.polynomial / scipy on gathered data, quadrature
and Parseval means, 3/2 padding, shardings, and the errors for grids a basis cannot use."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft
from numpy.polynomial import chebyshev as npcheb

from solvers import Grid, SpectralGrid
from solvers.bases import Chebyshev, Cosine, Fourier, RealFourier, Sine


def _field(grid: Grid, fn):
    with jax.set_mesh(grid.mesh):
        return jax.jit(fn)(*grid.coordinates())


def test_chebyshev_transform_and_derivatives_match_numpy_polynomial(meshes):
    """A polynomial of degree n - 1 on [a, b] sampled on the Gauss-Lobatto points: the grid's coefficients are
    numpy's Chebyshev coefficients of it (in y = 2 (x - a) / L - 1), derivatives too, on a slab and a pencil."""
    rng = np.random.default_rng(0)
    n, a, b = 17, 0.5, 2.5
    coef = rng.normal(size=n) / (1 + np.arange(n)) ** 2  # numpy's coefficients in the reference variable
    y = lambda x: 2 * (x - a) / (b - a) - 1  # noqa: E731
    for kind in ("single", "slab", "pencil"):
        grid = Grid((Chebyshev(n, (a, b)), Fourier(16, 2 * math.pi), RealFourier(16, 2 * math.pi)),
                    meshes[kind] if kind != "single" else None, dtype=jnp.float64)
        x = grid.bases[0].points()
        np.testing.assert_allclose(x, a + (b - a) * (1 - np.cos(np.pi * np.arange(n) / (n - 1))) / 2)
        profile = jnp.asarray(npcheb.chebval(y(x), coef))[:, None, None]
        f = _field(grid, lambda X, Y, Z, p=profile: p * (1 + jnp.cos(Y)) + 0 * X)

        def ops(f, grid=grid):  # one program: the transform, both derivatives and the way back
            c = grid.forward(f)
            return c, grid.derivative(c, 0, 1), grid.derivative(c, 0, 2), grid.backward(c)

        with jax.set_mesh(grid.mesh):
            c, *ds, back = jax.jit(ops)(f)
        assert c.sharding.spec == grid.spectral_sharding().spec
        got = np.asarray(c)[:, 0, 0]  # the y-profile's coefficients sit in the mean mode (x, z)
        np.testing.assert_allclose(got, coef, atol=1e-13)
        for order, d in zip((1, 2), ds, strict=True):
            d = np.asarray(d)[:, 0, 0]
            want = npcheb.chebder(coef, order) * (2 / (b - a)) ** order
            np.testing.assert_allclose(d[: len(want)], want, atol=1e-11)
            assert np.all(d[len(want):] == 0)
        np.testing.assert_allclose(np.asarray(back), np.asarray(f), atol=1e-13)


def test_chebyshev_quadrature_and_mean_square():
    """Clenshaw-Curtis weights integrate polynomials of degree n - 1 exactly; mean_square from the coefficients
    (Gram matrix) equals the quadrature of |f|^2 on the 3/2-padded points (exact for degree 2 (n - 1))."""
    b = Chebyshev(9, (0.0, 3.0))
    x = b.points()
    for p in range(9):
        assert abs(np.sum(b.weights() * x ** p) - 3.0 ** (p + 1) / (p + 1)) < 1e-12 * 3.0 ** (p + 1)
    grid = Grid((Chebyshev(9, (0.0, 3.0)), Fourier(8, 2.0)), dtype=jnp.float64)
    f = _field(grid, lambda X, Y: X ** 3 - X * jnp.sin(math.pi * Y) + 0.5)
    fine = Grid((Chebyshev(17, (0.0, 3.0)), Fourier(16, 2.0)), dtype=jnp.float64)

    @jax.jit
    def both(f):  # one program
        c = grid.forward(f)
        ff = fine.backward(grid.resize(c, fine))
        return grid.mean_square(c), fine.mean(ff ** 2)

    with jax.set_mesh(grid.mesh):
        coarse, fine_mean = both(f)
    np.testing.assert_allclose(float(coarse), float(fine_mean), rtol=1e-13)


def test_cosine_sine_against_scipy(meshes):
    """Cosine/sine coefficients are scipy's DCT-II/DST-II scaled to series amplitudes on the cell-centred points,
    on a slab mesh (the sine's index shift is a roll across shards), and Parseval gives the quadrature mean."""
    n = 16
    for basis, tr in ((Cosine(n, (0.0, 2.0)), scipy.fft.dct), (Sine(n, (0.0, 2.0)), scipy.fft.dst)):
        grid = Grid((basis, Fourier(16, 1.0)), meshes["slab"], dtype=jnp.float64)
        rng = np.random.default_rng(1)
        data = rng.normal(size=(n, 16))
        f = jax.device_put(data, grid.real_sharding())
        with jax.set_mesh(grid.mesh):
            c = np.asarray(jax.jit(grid.forward)(f))
        ref = tr(data, type=2, axis=0, norm="forward")
        ref = np.fft.fft(ref, axis=1, norm="forward")
        if isinstance(basis, Sine):
            want = np.concatenate([np.zeros((1, 16)), 2 * ref[:-1]])
        else:
            want = ref * np.r_[1.0, np.full(n - 1, 2.0)][:, None]
        np.testing.assert_allclose(c, want, atol=1e-13)
        with jax.set_mesh(grid.mesh):  # the sine drops the grid-scale mode n
            band, ms = jax.jit(lambda c, grid=grid: (grid.backward(c), grid.mean_square(c)))(jnp.asarray(c))
        np.testing.assert_allclose(float(ms), float(np.mean(np.asarray(band) ** 2)), rtol=1e-12)


def test_derivative_parities_and_fourier():
    """d/dx of cos(3 pi x / L) is -3 pi / L sin(...) (a sine series, same index); of sin, +k cos; Fourier: i k."""
    L = 2.0
    cgrid = Grid((Cosine(12, (0.0, L)), Fourier(8, 1.0)), dtype=jnp.float64)
    sgrid = cgrid.with_basis(0, Sine(12, (0.0, L)))
    k = 3 * math.pi / L
    box = SpectralGrid(16, ndim=2, box_length=(2 * math.pi, 4.0), dtype=jnp.float64)
    cos, sin = (_field(g, lambda X, Y, f=f: f(k * X) + 0 * Y) for g, f in ((cgrid, jnp.cos), (sgrid, jnp.sin)))
    wave = _field(box, lambda X, Y: jnp.sin(2 * X) * jnp.cos(math.pi * Y))

    @jax.jit
    def derivatives(cos, sin, wave):  # one program
        return (sgrid.backward(cgrid.derivative(cgrid.forward(cos), 0)),
                cgrid.backward(sgrid.derivative(sgrid.forward(sin), 0, 3)),
                box.backward(box.derivative(box.forward(wave), 1, 2)))

    with jax.set_mesh(cgrid.mesh):
        d_cos, d3_sin, d2_wave = derivatives(cos, sin, wave)
    np.testing.assert_allclose(np.asarray(d_cos),
                               np.asarray(_field(sgrid, lambda X, Y: -k * jnp.sin(k * X) + 0 * Y)), atol=1e-12)
    np.testing.assert_allclose(np.asarray(d3_sin),
                               np.asarray(_field(cgrid, lambda X, Y: -k ** 3 * jnp.cos(k * X) + 0 * Y)), atol=1e-9)
    want = _field(box, lambda X, Y: -(math.pi ** 2) * jnp.sin(2 * X) * jnp.cos(math.pi * Y))
    np.testing.assert_allclose(np.asarray(d2_wave), np.asarray(want), atol=1e-12)


def test_three_halves_padding_on_a_chebyshev_axis_dealiases_products():
    """Products formed on the 3/2-padded Gauss-Lobatto points: the degree-2(n-1) product, truncated to n
    coefficients, equals numpy's truncated product (no aliasing into the kept coefficients)."""
    n = 9
    grid = Grid((Chebyshev(n), Fourier(8, 2 * math.pi)), dtype=jnp.float64, dealias="3/2")
    assert grid.padded.shape == (14, 12)
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=n), rng.normal(size=n)
    ca = jnp.asarray(np.pad(a[:, None], ((0, 0), (0, 7))), grid.cdtype)
    cb = jnp.asarray(np.pad(b[:, None], ((0, 0), (0, 7))), grid.cdtype)
    with jax.set_mesh(grid.mesh):
        prod = jax.jit(lambda a, b: grid.from_physical(grid.to_physical(a) * grid.to_physical(b)))(ca, cb)
    want = npcheb.chebmul(a, b)[:n]
    keep = grid.bases[0].keep("3/2")
    np.testing.assert_allclose(np.asarray(prod)[:, 0].real[keep], want[keep], atol=1e-12)


def test_grid_errors_name_the_problem(meshes):
    with pytest.raises(ValueError, match="Chebyshev needs at least 5 points"):
        Chebyshev(4)
    with pytest.raises(ValueError, match="RealFourier"):
        Grid((RealFourier(8), Fourier(8)))
    with pytest.raises(TypeError, match="Basis"):
        Grid((Fourier(8), 8))
    # a Chebyshev axis whose coefficients the layout would shard (the wall axis last, spectrum sharded there)
    with pytest.raises(ValueError, match="must be unsharded in spectral space"):
        Grid((Fourier(16), Chebyshev(16)), meshes["slab"])
    with pytest.raises(ValueError, match="domain"):
        Fourier(8, (1.0, 1.0))


def test_real_fourier_without_nyquist():
    """``RealFourier(n, nyquist=False)``: the ``n // 2`` modes ``0 .. n/2 - 1``, Parseval weights 1 then 2 (against
    ``numpy.fft.rfft`` of a field with no Nyquist component), a distinct basis; the padded grid's basis keeps the
    choice; an odd ``n`` or a non-bool is refused, naming the argument."""
    b = RealFourier(16, 2 * math.pi, nyquist=False)
    assert b.size == 8 and list(b.modes()) == list(range(8)) and b != RealFourier(16, 2 * math.pi)
    assert b == RealFourier(16, 2 * math.pi).without_nyquist() and hash(b) == hash(RealFourier(16).without_nyquist())
    assert "nyquist=False" in repr(b) and not b.resized(24).nyquist and b.resized(24).size == 12
    x = np.arange(16) * 2 * np.pi / 16
    f = 1.5 + np.cos(3 * x) - 2 * np.sin(7 * x)
    c = np.fft.rfft(f)[:8] / 16
    assert float(np.sum(b.parseval() * np.abs(c) ** 2)) == pytest.approx(np.mean(f ** 2), rel=1e-14)
    with pytest.raises(ValueError, match="RealFourier needs an even number of points"):  # (every Fourier basis)
        RealFourier(15, nyquist=False)
    with pytest.raises(TypeError, match="nyquist"):
        RealFourier(16, nyquist="no")
