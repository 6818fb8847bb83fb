"""Bad input gets a clear TypeError/ValueError naming the argument, before anything reaches XLA."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import mesh, put
from jax.sharding import NamedSharding, PartitionSpec

import xfft


def test_not_an_array():
    with pytest.raises(TypeError, match="jax.Array or numpy.ndarray"):
        xfft.xfft3d([[[1.0]]])


def test_integer_dtype():
    with pytest.raises(TypeError, match="floating or complex dtype"):
        xfft.xfft3d(np.ones((4, 4, 4), np.int32))
    with pytest.raises(TypeError, match="real floating dtype"):
        xfft.xrfft3d(np.ones((4, 4, 4), np.complex64))


def test_wrong_ndim_and_axes():
    with pytest.raises(ValueError, match="at least 3 axes"):
        xfft.xfft3d(np.ones((4, 4), np.complex64))
    with pytest.raises(ValueError, match="ndim must be 1, 2 or 3"):
        xfft.xfftn(np.ones((4, 4, 4, 4), np.complex64), ndim=4)
    with pytest.raises(ValueError, match="pass ndim"):
        xfft.xfftn(np.ones((2, 4, 4, 4), np.complex64))
    with pytest.raises(ValueError, match="out of range"):
        xfft.xfftn(np.ones((4, 4), np.complex64), axes=(0, 5))
    with pytest.raises(ValueError, match="repeated"):
        xfft.xfftn(np.ones((4, 4), np.complex64), axes=(0, 0))


def test_unknown_norm():
    with pytest.raises(ValueError, match="norm must be one of"):
        xfft.xfft3d(np.ones((4, 4, 4), np.complex64), norm="unitary")


def test_inconsistent_s():
    k = np.ones((8, 8, 5), np.complex64)
    with pytest.raises(ValueError, match="s=.*inconsistent"):
        xfft.ixrfft3d(k, s=(8, 8, 12))
    with pytest.raises(ValueError, match="s=.*inconsistent"):
        xfft.ixrfft3d(k, s=(4, 8, 8))
    with pytest.raises(ValueError, match="one entry per transformed axis"):
        xfft.ixrfft3d(k, s=(8, 8))
    assert xfft.ixrfft3d(k, s=(8, 8, 9)).shape == (8, 8, 9)


def test_kinds_a_sharded_lone_axis_cannot_take():
    """A sharded 1D array is transformed across the devices (four-step), which only the complex FFT can do: the real
    FFT and the DCT/DST kinds are refused, naming the kind (a complex transform of the same array runs)."""
    m = xfft.make_mesh((4,), devices=jax.devices()[:4])
    line = put(np.ones((32,), np.float32), NamedSharding(m, PartitionSpec("x")))
    with pytest.raises(ValueError, match="real-to-complex transform \\(kind 'rfft'\\) of the only axis"):
        xfft.xrfftn(line)
    with pytest.raises(ValueError, match="kind 'dct2' along axis 0.*only the Fourier kind 'fft'"):
        xfft.xdctn(line, axes=(0,))
    with pytest.raises(ValueError, match="kind 'dst4'"):
        xfft.xr2rn(line, ("dst4",))
    assert xfft.xfftn(line.astype(np.complex64)).shape == (32,)


def test_mesh_with_more_devices_than_planes():
    m = mesh((8,), "auto")
    with pytest.raises(ValueError, match="more devices than"):
        xfft.real_sharding(m, (4, 4, 4))
    with pytest.raises(ValueError, match="cannot be split evenly"):
        xfft.wavenumbers(NamedSharding(m, PartitionSpec("x")), (4, 4, 4))
    with pytest.raises(ValueError, match="cannot be split evenly"):
        xfft.xmeshgrid(np.arange(4.0), np.arange(4.0), sharding=NamedSharding(m, PartitionSpec("x")))


def test_bad_helpers_arguments():
    with pytest.raises(ValueError, match="decomposition must be"):
        xfft.make_mesh("cube")
    with pytest.raises(ValueError, match="needs 6 devices"):
        xfft.make_mesh((2, 3))
    with pytest.raises(TypeError, match="NamedSharding"):
        xfft.spectral_sharding(PartitionSpec("x"))
    with pytest.raises(TypeError, match="shift must be a Python int"):
        xfft.xroll(np.ones(4), 1.5, 0)
    with pytest.raises(ValueError, match="same length"):
        xfft.xroll(np.ones((4, 4)), (1, 2), 0)
    with pytest.raises(ValueError, match="box_length"):
        xfft.wavenumbers(NamedSharding(mesh((8,)), PartitionSpec("x")), (8, 8), box_length=-1.0)
    with pytest.raises(ValueError, match="backend must be one of"):
        xfft.xfft3d(np.ones((4, 4, 4), np.complex64), backend="fftw")
