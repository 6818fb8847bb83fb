"""``wall_grid``: a grid between walls in one call, its shape rules from the bases, and its errors naming what
is wrong."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from solvers import wall_grid
from solvers.bases import Chebyshev, Cosine, Fourier, RealFourier


def test_one_call_builds_the_bases(meshes):
    g = wall_grid((17, 8, 16), meshes["slab"], walls=(0.0, 2.0), lengths=(math.pi, 1.0), dtype=jnp.float64)
    assert [type(b) for b in g.bases] == [Chebyshev, Fourier, RealFourier]
    assert g.bases[0].domain == (0.0, 2.0) and g.box_length == (2.0, math.pi, 1.0)
    assert g.axis_names == ("y", "x", "z") and g.spectral_sharding().spec[0] is None  # the wall axis stays whole
    np.testing.assert_allclose(g.bases[0].points()[[0, -1]], [0.0, 2.0])  # both walls are points
    two = wall_grid((9, 16), meshes["slab"], basis=Cosine, walls=(0.0, 1.0), axis_names=("z", "x"))
    assert [type(b) for b in two.bases] == [Cosine, RealFourier]  # 2D: a half spectrum along x, without Nyquist
    assert not two.nyquist and two.spectral_shape == (9, 8) and tuple(two.spectral_sharding().spec) == (None, "x")
    for kw in (dict(real_last=False), dict(dealias="none")):  # all 16 coefficients (none dropped without dealiasing)
        full = wall_grid((9, 16), meshes["slab"], basis=Cosine, walls=(0.0, 1.0), **kw)
        assert [type(b) for b in full.bases] == [Cosine, Fourier] and full.spectral_shape == (9, 16), kw
    assert wall_grid((65, 8), None).bases[0].n == 65  # a Chebyshev axis takes any n >= 5


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(shape=(4, 8)), ValueError, "Chebyshev needs at least 5"),
    (dict(shape=(9, 7)), ValueError, "even number of points"),
    (dict(shape=(9,)), ValueError, "shape needs 2 or 3"),
    (dict(shape=(9, 8), walls=(1.0, -1.0)), ValueError, "walls must be an interval"),
    (dict(shape=(9, 8), lengths=(1.0, 2.0)), ValueError, "lengths needs 1 positive"),
    (dict(shape=(9, 8), lengths=(-1.0,)), ValueError, "lengths"),
    (dict(shape=(9, 8), basis=int), TypeError, "basis must be a solvers.bases.Basis"),
    (dict(shape=(9, 8), points=(11, 8)), ValueError, "keeps its 9 points"),
    (dict(shape=(16, 12), mesh="slab"), ValueError, "shape/mesh: axis 0 .* must be unsharded in spectral space"),
])
def test_bad_input_names_what_is_wrong(kwargs, error, match, meshes):
    kwargs = dict(kwargs)
    shape = kwargs.pop("shape")
    mesh = meshes[kwargs.pop("mesh")] if "mesh" in kwargs else None
    with pytest.raises(error, match=match):
        wall_grid(shape, mesh, **kwargs)
