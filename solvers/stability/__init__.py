"""Linear-stability references in numpy, for checking the wall-bounded solvers against known growth rates.

:mod:`.orr_sommerfeld`: plane Poiseuille flow (``eigenvalues``, ``least_stable_mode``, ``mode_fields``,
``matrices``). :mod:`.rayleigh_benard`: the conduction state between plates (``growth_rate``,
``critical_rayleigh``, ``onset``, ``eigenmode``, ``evaluate``). Both are Chebyshev tau discretizations in the
spurious-free D^2 form (:mod:`._matrices`); eigenfunctions come back as Chebyshev coefficients.
"""

from . import orr_sommerfeld as orr_sommerfeld
from . import rayleigh_benard as rayleigh_benard
from .orr_sommerfeld import least_stable_mode as least_stable_mode
from .orr_sommerfeld import mode_fields as mode_fields
from .rayleigh_benard import critical_rayleigh as critical_rayleigh
from .rayleigh_benard import eigenmode as eigenmode
from .rayleigh_benard import growth_rate as growth_rate
from .rayleigh_benard import onset as onset

__all__ = ["critical_rayleigh", "eigenmode", "growth_rate", "least_stable_mode", "mode_fields", "onset",
           "orr_sommerfeld", "rayleigh_benard"]
