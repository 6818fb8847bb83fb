"""Type-1 DCTs whose FFT length has a large prime factor run as one product with the cosine matrix."""

from __future__ import annotations

import jax
import numpy as np
import scipy.fft as sf
from helpers import random

import xfft
from xfft._r2r_local import dense_dct1


def test_dense_dct1_where_the_extension_has_a_large_prime_factor():
    """32 and 128 points (FFT lengths 2 x 31, 2 x 127) compile to no FFT op and agree with scipy to 1e-13 along
    either axis, forward and inverse; 129 points (length 256) keep the FFT."""
    assert [n for n in (32, 33, 128, 129, 384, 512) if dense_dct1(n)] == [32, 128, 384]
    for n in (32, 128, 129):
        cases = [(shape, axis, fwd, ref) for shape, axis in (((n, 6), 0), ((5, n), 1))
                 for fwd, ref in ((xfft.xdctn, sf.dctn), (xfft.ixdctn, sf.idctn))]
        xs = {shape: random(shape, np.float64, seed=n) for shape, _, _, _ in cases}

        @jax.jit
        def every(xs, cases=cases):  # one program per length: both axes, forward and inverse
            return [fwd(xs[shape], type=1, axes=axis, norm="forward") for shape, axis, fwd, _ in cases]

        for (shape, axis, fwd, ref), got in zip(cases, every(xs)):
            x = xs[shape]
            want = ref(x, type=1, axes=axis, norm="forward")
            assert np.max(np.abs(np.asarray(got) - want)) < 1e-13 * np.max(np.abs(want)), (n, axis, fwd)
            text = jax.jit(lambda a, fwd=fwd, axis=axis: fwd(a, type=1, axes=axis, norm="forward")).lower(x).as_text()
            assert ("stablehlo.fft" in text) != dense_dct1(n), (n, axis)
