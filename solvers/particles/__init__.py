"""Particle simulations on sharded meshes: electrostatic particle-in-cell and comoving particle-mesh N-body.

Built on xfft's public particle primitives (:func:`xfft.paint`, :func:`xfft.readout`) and transforms. A particle
state (:class:`Particles`) is a pytree of positions and velocities sharded over every device; an equation
(:class:`VlasovPoisson`, :class:`ComovingNBody`) is a :class:`~solvers.Equation` on a :class:`~solvers.SpectralGrid`
whose mesh carries the field solve (:class:`ParticleMesh`); :class:`Leapfrog` (kick-drift-kick) advances it through
:func:`solvers.simulate` with its controllers and outputs; :class:`PhaseSpace` and :class:`PowerSpectrum` are the
figures a run's plots add (:func:`plot_phase_space`, :func:`plot_power_spectra` on axes of your own).
"""

from ..integrators import Leapfrog as Leapfrog
from .analysis import fit_damped_oscillation as fit_damped_oscillation
from .analysis import fit_growth_rate as fit_growth_rate
from .analysis import power_spectrum as power_spectrum
from .cosmology import ComovingNBody as ComovingNBody
from .equation import ParticleEquation as ParticleEquation
from .equation import periodic_grid as periodic_grid
from .mesh import ParticleMesh as ParticleMesh
from .plots import PhaseSpace as PhaseSpace
from .plots import PowerSpectrum as PowerSpectrum
from .plots import plot_phase_space as plot_phase_space
from .plots import plot_power_spectra as plot_power_spectra
from .state import Particles as Particles
from .state import particle_sharding as particle_sharding
from .theory import landau_root as landau_root
from .theory import two_stream_growth as two_stream_growth
from .theory import zeldovich_plane_wave as zeldovich_plane_wave
from .vlasov_poisson import VlasovPoisson as VlasovPoisson

__all__ = ["ComovingNBody", "Leapfrog", "ParticleEquation", "ParticleMesh", "Particles", "PhaseSpace", "PowerSpectrum",
           "VlasovPoisson", "fit_damped_oscillation", "fit_growth_rate", "landau_root", "particle_sharding",
           "periodic_grid", "plot_phase_space", "plot_power_spectra", "power_spectrum", "two_stream_growth",
           "zeldovich_plane_wave"]
