"""xfft: distributed (slab and pencil) FFTs on sharded JAX arrays that never gather the global array.

Public API: the transforms (:func:`xfft3d`, :func:`ixfft3d`, :func:`xrfft3d`, :func:`ixrfft3d` and the n-dim
:func:`xfftn` family), layout helpers (:func:`make_mesh`, :func:`real_sharding`, :func:`spectral_sharding`,
:func:`spectral_axes`), real-to-real transforms (:func:`xdctn`, :func:`xdstn`, their inverses, and :func:`xr2rn`
with one kind per axis), sharded grids (:func:`xmeshgrid`, :func:`wavenumbers`) and :func:`xroll`; halo exchange
(:func:`halo_pad`, its adjoint :func:`halo_reduce`) and particles on sharded meshes (:func:`paint`, :func:`readout`, and
:func:`check_errors` for their checks under ``jit``);
:func:`autotune` (the measured choice of mesh); :class:`LoweringOptions` (how the native backend lowers a
transform on the devices at hand); :mod:`xfft.fft`, a drop-in for ``jax.numpy.fft`` on sharded
arrays (``import xfft.fft as fft``). Multi-process runs:
:mod:`xfft.distributed` (``initialize``, ``global_array``, ``gather``) and ``python -m xfft.launch``.
"""

from . import fft as fft  # noqa: E402  (after the names it uses)
from ._autotune import Tuning as Tuning
from ._autotune import autotune as autotune
from ._errors import check_errors as check_errors
from ._fft import ixfft3d as ixfft3d
from ._fft import ixfftn as ixfftn
from ._fft import ixrfft3d as ixrfft3d
from ._fft import ixrfftn as ixrfftn
from ._fft import xfft3d as xfft3d
from ._fft import xfftn as xfftn
from ._fft import xrfft3d as xrfft3d
from ._fft import xrfftn as xrfftn
from ._grid import make_mesh as make_mesh
from ._grid import real_sharding as real_sharding
from ._grid import spectral_axes as spectral_axes
from ._grid import spectral_sharding as spectral_sharding
from ._grid import wavenumbers as wavenumbers
from ._grid import xmeshgrid as xmeshgrid
from ._halo import halo_pad as halo_pad
from ._halo import halo_reduce as halo_reduce
from ._layout import KINDS as R2R_KINDS
from ._options import LoweringOptions as LoweringOptions
from ._particles import paint as paint
from ._particles import readout as readout
from ._r2r import ixdctn as ixdctn
from ._r2r import ixdstn as ixdstn
from ._r2r import ixr2rn as ixr2rn
from ._r2r import xdctn as xdctn
from ._r2r import xdstn as xdstn
from ._r2r import xr2rn as xr2rn
from ._roll import xroll as xroll
from ._warn import PrecisionWarning as PrecisionWarning
from .backends import BackendFallbackWarning as BackendFallbackWarning
from .backends import available_backends as available_backends
from .backends import default_backend as default_backend
from .backends import use_backend as use_backend

__version__ = "0.3.0"  # the distribution's version (pyproject.toml; tests/xfft/test_version.py keeps them equal)

__all__ = [
    "BackendFallbackWarning",
    "Tuning",
    "autotune",
    "PrecisionWarning",
    "fft",
    "available_backends",
    "LoweringOptions",
    "default_backend",
    "use_backend",
    "R2R_KINDS",
    "ixdctn",
    "ixdstn",
    "ixr2rn",
    "xdctn",
    "xdstn",
    "xr2rn",
    "ixfft3d",
    "ixfftn",
    "ixrfft3d",
    "ixrfftn",
    "make_mesh",
    "real_sharding",
    "spectral_axes",
    "spectral_sharding",
    "wavenumbers",
    "xfft3d",
    "xfftn",
    "xmeshgrid",
    "xrfft3d",
    "xrfftn",
    "xroll",
    "check_errors",
    "halo_pad",
    "halo_reduce",
    "paint",
    "readout",
]
