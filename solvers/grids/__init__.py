"""Grids: tensor products of one-dimensional bases on a device mesh (:class:`Grid`), the periodic box
(:class:`SpectralGrid`), and the small spectral helpers equations use on them."""

from ..bases import DEALIAS as DEALIAS
from .gated_max import GatedMax as GatedMax
from .grid import Grid as Grid
from .grid import rmul as rmul
from .grid import safe_inverse as safe_inverse
from .grid import times_i as times_i
from .periodic import SpectralGrid as SpectralGrid
from .reductions import fused as fused
from .walls import wall_grid as wall_grid

__all__ = ["DEALIAS", "GatedMax", "Grid", "SpectralGrid", "fused", "rmul", "safe_inverse", "times_i", "wall_grid"]
