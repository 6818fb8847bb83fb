"""SpectralGrid: operators against numpy.fft references, dealiasing, Parseval, radial sums, 3/2 padding."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers import SpectralGrid
from solvers.grids import GatedMax

N = 16


def _field(seed, shape=(3, N, N, N)):
    return np.random.default_rng(seed).standard_normal(shape)


def _put(grid, a, batch=1):
    return jax.device_put(jnp.asarray(a, grid.dtype), grid.real_sharding(batch))


def _np_k(n=N):
    k = np.fft.fftfreq(n, 1 / n)
    kz = np.fft.rfftfreq(n, 1 / n)
    return np.meshgrid(k, k, kz, indexing="ij")


@pytest.mark.parametrize("kind", ["single", "pencil"])
def test_operators_match_numpy(meshes, kind):
    grid = SpectralGrid(N, meshes[kind], dtype=jnp.float64)
    u = _field(0)
    kx, ky, kz = _np_k()
    nyq_free = (np.abs(kx) != N // 2) & (np.abs(ky) != N // 2) & (np.abs(kz) != N // 2)
    ref_hat = np.fft.rfftn(u, axes=(1, 2, 3)) / N**3

    @jax.jit
    def ops(u):
        u_hat = grid.rfft(u)
        v = grid.dealias(u_hat) * 0 + u_hat * nyq_free  # Nyquist-free copy (odd derivatives are defined)
        p = grid.project(v)
        return {"u_hat": u_hat, "back": grid.irfft(u_hat), "div": grid.div(v), "curl": grid.curl(v),
                "lap": grid.laplacian(v[0]), "div_p": grid.div(p), "pp": grid.project(p) - p,
                "curl_grad": grid.curl(grid.grad(v[0])), "inv": grid.inv_laplacian(grid.laplacian(v[0]))}

    out = {k: np.asarray(v) for k, v in ops(_put(grid, u)).items()}
    assert ops(_put(grid, u))["u_hat"].sharding.spec == grid.spectral_sharding(1).spec  # spectral layout
    np.testing.assert_allclose(out["u_hat"], ref_hat, atol=1e-15)
    np.testing.assert_allclose(out["back"], u, atol=1e-13)
    v = ref_hat * nyq_free
    np.testing.assert_allclose(out["div"], 1j * (kx * v[0] + ky * v[1] + kz * v[2]), atol=1e-14)
    np.testing.assert_allclose(out["curl"][2], 1j * (kx * v[1] - ky * v[0]), atol=1e-14)
    np.testing.assert_allclose(out["lap"], -(kx**2 + ky**2 + kz**2) * v[0], atol=1e-13)
    assert np.abs(out["div_p"]).max() < 1e-15  # the Leray projection is divergence-free to round-off
    assert np.abs(out["pp"]).max() < 1e-15  # and a projector
    assert np.abs(out["curl_grad"]).max() < 1e-13
    np.testing.assert_allclose(out["inv"].ravel()[1:], v[0].ravel()[1:], atol=1e-15)
    assert out["inv"][0, 0, 0] == 0  # zero-mean solution


def test_parseval_radial_sum_and_masks(meshes):
    grid = SpectralGrid(N, meshes["pencil"], dtype=jnp.float64)
    u = _field(1)

    @jax.jit
    def parseval_and_shells(u):  # one program
        u_hat = grid.rfft(u)
        return grid.mean_square(u_hat), grid.radial_sum(0.5 * jnp.sum(jnp.abs(u_hat) ** 2, axis=0)), \
            grid.dealias_mask()

    mean_square, shells, mask = parseval_and_shells(_put(grid, u))
    np.testing.assert_allclose(float(mean_square), np.mean(np.sum(u**2, axis=0)), rtol=1e-13)
    shells = np.asarray(shells)
    full = np.abs(np.fft.fftn(u, axes=(1, 2, 3)) / N**3) ** 2
    k = np.fft.fftfreq(N, 1 / N)
    kk = np.sqrt(sum(a**2 for a in np.meshgrid(k, k, k, indexing="ij")))
    ref = np.bincount(np.rint(kk).astype(int).ravel(), weights=0.5 * full.sum(0).ravel(),
                      minlength=grid.num_shells)
    np.testing.assert_allclose(shells, ref, rtol=1e-12, atol=1e-18)
    mask = np.asarray(mask)
    kx, ky, kz = _np_k()
    np.testing.assert_array_equal(mask, ((np.abs(kx) < N / 3) & (np.abs(ky) < N / 3) & (np.abs(kz) < N / 3)))
    assert int(mask.sum()) == 11 * 11 * 6  # |k_i| <= 5 for N = 16


@pytest.mark.parametrize("kind", ["single", "slab"])
def test_three_halves_padding_is_alias_free(meshes, kind):
    """Products formed on the 3/2 grid equal the exact (infinite-resolution) product, truncated."""
    grid = SpectralGrid(N, meshes[kind], dtype=jnp.float64, dealias="3/2")
    assert grid.padded_shape == (24, 24, 24)
    rng = np.random.default_rng(2)
    kx, ky, kz = _np_k()
    keep = (np.abs(kx) < N // 2) & (np.abs(ky) < N // 2) & (np.abs(kz) < N // 2)
    a_hat, b_hat = (np.fft.rfftn(rng.standard_normal((N, N, N))) / N**3 * keep for _ in range(2))
    to_phys = jax.jit(grid.to_physical)
    a, b = (jax.device_put(jnp.asarray(h), grid.spectral_sharding()) for h in (a_hat, b_hat))
    prod = jax.jit(grid.from_physical)(to_phys(a) * to_phys(b))
    # Reference: the product on a 2N grid (no aliasing at all), truncated to |k_i| < N/2.
    big = 2 * N

    def up(h):
        full = np.zeros((big, big, big // 2 + 1), complex)
        idx = np.r_[0:N // 2, big - N // 2:big]
        full[np.ix_(idx, idx, np.arange(N // 2 + 1))] = h
        return np.fft.irfftn(full * big**3, s=(big,) * 3, axes=(0, 1, 2))

    ref_big = np.fft.rfftn(up(a_hat) * up(b_hat)) / big**3
    idx = np.r_[0:N // 2, big - N // 2:big]
    ref = ref_big[np.ix_(idx, idx, np.arange(N // 2 + 1))] * keep
    np.testing.assert_allclose(np.asarray(prod), ref, atol=1e-15)
    # and the 2/3 rule zeroes what it should, while 3/2 keeps all non-Nyquist modes
    assert float(jnp.sum(grid.dealias_mask())) == (N - 1) ** 2 * (N // 2)


def test_grid_errors(meshes):
    with pytest.raises(ValueError, match="cannot"):
        SpectralGrid(12, meshes["slab"])  # 12 planes over 8 devices
    with pytest.raises(ValueError, match="dealias"):
        SpectralGrid(16, None, dealias="1/2")
    with pytest.raises(ValueError, match="even"):
        SpectralGrid(15, None)


def test_two_dimensional_grid(meshes):
    """2D grids (for 2D equations): transforms, scalar vorticity, projection and Parseval against numpy."""
    grid = SpectralGrid((32, 16), meshes["slab"], dtype=jnp.float64, box_length=(2 * np.pi, np.pi))
    u = _field(4, (2, 32, 16))
    k0, k1 = np.meshgrid(np.fft.fftfreq(32, 1 / 32), 2 * np.fft.rfftfreq(16, 1 / 16), indexing="ij")
    ref = np.fft.rfftn(u, axes=(1, 2)) / (32 * 16)
    ref = ref * (np.abs(k0) != 16) * (np.abs(k1) != 16)  # drop Nyquist modes: odd derivatives are defined
    assert not grid.nyquist and grid.spectral_shape == (32, 8)  # the half axis without its Nyquist coefficient
    k0, k1, ref = k0[:, :8], k1[:, :8], ref[..., :8]

    @jax.jit
    def ops(v_hat):
        p = grid.project(v_hat)
        return grid.irfft(v_hat), grid.curl(v_hat), grid.div(p), grid.mean_square(v_hat)

    back, curl, div_p, ms = ops(jax.device_put(jnp.asarray(ref), grid.spectral_sharding(1)))
    np.testing.assert_allclose(np.asarray(back), np.fft.irfftn(ref * 32 * 16, s=(32, 16), axes=(1, 2)), atol=1e-13)
    np.testing.assert_allclose(np.asarray(curl), 1j * (k0 * ref[1] - k1 * ref[0]), atol=1e-13)
    assert float(jnp.max(jnp.abs(div_p))) < 1e-14
    assert float(ms) == pytest.approx(np.mean(np.asarray(back) ** 2) * 2, rel=1e-12)


@pytest.mark.parametrize("kind, dealias", [("slab", "2/3"), ("pencil", "2/3"), ("slab", "3/2"), ("single", "2/3")])
def test_from_physical_and_max(meshes, kind, dealias):
    """``Grid.from_physical_and_max``: the coefficients of ``from_physical`` to the bit and the field's maximum
    exactly, a plain reduction beside the transform (the compiled program has the all-to-alls of
    ``from_physical`` and, on several devices, all-reduces taking the maximum). With a ``GatedMax`` (the driver's
    stage loop) the same where its flag is set and 0 where not; any other ``reduce`` is used as it is."""
    g = SpectralGrid(16, meshes[kind], dtype=jnp.float64, dealias=dealias)
    pg = g.padded if dealias == "3/2" else g
    rng = np.random.default_rng(3)
    f = jax.device_put(rng.standard_normal((3,) + pg.shape), pg.real_sharding(1))
    field = rng.standard_normal(pg.shape)
    field[5, 6, 7] = 9.25
    fs = jax.device_put(field, pg.real_sharding())
    plain = jax.jit(g.from_physical).lower(f).compile()  # (each program compiled once: run and read)
    ref = np.asarray(plain(f))
    exchanges = plain.as_text().count(" all-to-all(")
    calls = {
        "plain": jax.jit(lambda a, b: g.from_physical_and_max(a, b)),
        "gated": jax.jit(lambda a, b, w: g.from_physical_and_max(a, b, reduce=GatedMax(w, jnp.float64))),
        "given": jax.jit(lambda a, b: g.from_physical_and_max(a, b, reduce=lambda r: jnp.max(r) + 1)),
    }
    for name, fn in calls.items():
        compiled = None
        for when in ((True, False) if name == "gated" else (None,)):
            args = (f, fs) if when is None else (f, fs, jnp.asarray(when))
            if compiled is None:
                compiled = fn.lower(*args).compile()
                text = compiled.as_text()
                assert text.count(" all-to-all(") == exchanges, name
                maxima = [ln for ln in text.splitlines()
                          if re.search(r" all-reduce(?:-start)?\(", ln) and "max" in ln]
                assert bool(maxima) == (kind != "single"), (name, maxima)
            c, top = compiled(*args)
            np.testing.assert_array_equal(np.asarray(c), ref)
            assert float(top) == {"plain": 9.25, "gated": 9.25 if when else 0.0, "given": 10.25}[name], name


# both orders on a slab (where the all-to-alls are counted), the transposed one on one device
@pytest.mark.parametrize("kind, order", [("single", "transposed"), ("slab", "natural"), ("slab", "transposed")])
def test_2d_grids_leave_out_the_nyquist_coefficient(meshes, kind, order):
    """A dealiased 2D grid stores ``n // 2`` coefficients on its half axis, on every mesh (one state shape):
    a field without a Nyquist component transforms as before, the natural view (checkpoints, users) has the
    Nyquist coefficient, zero, like ``numpy.fft.rfft2``; on a slab each transform takes one all-to-all (two with
    the Nyquist coefficient). 3D grids and ``dealias="none"`` keep it."""
    grid = SpectralGrid(32, meshes[kind], ndim=2, dtype=jnp.float64, order=order)
    assert not grid.nyquist and not grid.bases[-1].nyquist
    assert grid.natural_spectral_shape == (32, 17) and sorted(grid.spectral_shape) == [16, 32]
    j = np.arange(32) * 2 * np.pi / 32
    f = np.sin(3 * j)[:, None] * np.cos(5 * j)[None, :] + np.cos(j[:, None] + 2 * j[None, :]) ** 2
    fs = jax.device_put(f, grid.real_sharding())
    fwd = jax.jit(grid.rfft).lower(fs).compile()  # (each program compiled once: run and, on a slab, read)
    c = fwd(fs)
    back = jax.jit(grid.irfft).lower(c).compile()
    assert c.shape == grid.spectral_shape
    nat = jax.jit(grid.to_natural)(c)
    np.testing.assert_allclose(np.asarray(nat), np.fft.rfft2(f) / f.size, rtol=0, atol=1e-15)
    assert nat.sharding.is_equivalent_to(grid.natural_sharding(), 2)
    np.testing.assert_array_equal(np.asarray(jax.jit(grid.from_natural)(nat)), np.asarray(c))
    np.testing.assert_allclose(np.asarray(back(c)), f, rtol=0, atol=1e-14)
    like = grid.natural_like(jax.ShapeDtypeStruct(grid.spectral_shape, grid.cdtype))
    assert like.shape == (32, 17)
    if kind == "slab":
        def count_op(text, op):
            return len(re.findall(rf" {op}(?:-start)?\(", text))

        assert count_op(fwd.as_text(), "all-to-all") == 1
        assert count_op(back.as_text(), "all-to-all") == 1
        with_it = SpectralGrid(32, meshes[kind], ndim=2, dtype=jnp.float64, order=order, dealias="none")
        assert with_it.nyquist and with_it.spectral_shape in ((32, 17), (17, 32))
        assert count_op(jax.jit(with_it.rfft).lower(fs).compile().as_text(), "all-to-all") == 2
    assert SpectralGrid(16, meshes[kind], dtype=jnp.float64, order=order).nyquist  # 3D keeps it


def test_2d_state_has_one_shape_whatever_the_mesh(meshes):
    """2D Navier-Stokes (random vorticity, RK4) on one device, a slab and a 2 x 4 mesh: the same state shape
    without the Nyquist coefficient on each, the same numbers to round-off."""
    from solvers import INTEGRATORS
    from solvers.equations.navier_stokes_2d import NavierStokes2D

    out = {}
    for kind in ("single", "slab", "pencil"):
        eq = NavierStokes2D(SpectralGrid(32, meshes[kind], ndim=2, dtype=jnp.float64, order="transposed"), nu=0.01)
        w = eq.initial_state("random", seed=2)
        w5 = INTEGRATORS["rk4"](eq).advance(w, 0.0, 0.01, 5)
        with jax.set_mesh(eq.grid.mesh):
            out[kind] = np.asarray(jax.jit(eq.grid.to_natural)(w5))
        assert not eq.grid.nyquist and w.shape == eq.grid.spectral_shape
    scale = np.abs(out["single"]).max()
    assert out["single"].shape == (32, 17) and scale > 0 and np.all(out["single"][:, 16] == 0)
    for kind in ("slab", "pencil"):
        np.testing.assert_allclose(out[kind], out["single"], rtol=0, atol=1e-13 * scale)
