"""One-dimensional bases, one per file: each knows its points, weights, xfft transform kind, coefficients,
derivatives and dealiasing (see :class:`Basis`). A :class:`solvers.Grid` is a tensor product of them on a mesh.

| basis | points | transform | boundary conditions |
| --- | --- | --- | --- |
| :class:`Fourier` | uniform, periodic | ``fft`` | periodic |
| :class:`RealFourier` | uniform, periodic | ``rfft`` (half spectrum) | periodic, real fields |
| :class:`Cosine` | cell-centred | ``dct2`` | zero normal derivative (free-slip, Neumann) |
| :class:`Sine` | cell-centred | ``dst2`` | zero value (free-slip normal velocity, Dirichlet) |
| :class:`Chebyshev` | Gauss-Lobatto (walls included) | ``dct1`` | any per wall (:mod:`~solvers.bases.bc`), by tau |
"""

from . import bc as bc
from . import tau as tau
from ._base import DEALIAS as DEALIAS
from ._base import Basis as Basis
from ._base import along as along
from .chebyshev import Chebyshev as Chebyshev
from .cosine import Cosine as Cosine
from .fourier import Fourier as Fourier
from .fourier import RealFourier as RealFourier
from .sine import Sine as Sine

__all__ = ["DEALIAS", "Basis", "along", "Chebyshev", "Cosine", "Fourier", "RealFourier", "Sine", "bc", "tau"]
