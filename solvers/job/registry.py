"""The built-in equations as jobs: one :class:`~solvers.RunSpec` each, and ``REGISTRY`` (name -> spec)."""

from __future__ import annotations

import math

from ..equations import (
    AllenCahn,
    Burgers,
    CahnHilliard,
    Channel,
    Couette,
    GrossPitaevskii,
    NavierStokes,
    NavierStokes2D,
    RayleighBenard,
    RayleighBenardFreeSlip,
    RayleighBenardNoSlip,
    SchrodingerPoisson,
)
from ..equations.rayleigh_benard import K_CRITICAL, K_CRITICAL_NO_SLIP
from ..grids import wall_grid
from ..model import Param
from ..outputs import PlotSpec, wall_units
from ..particles import ComovingNBody, PhaseSpace, PowerSpectrum, VlasovPoisson
from ..particles import periodic_grid as particle_grid
from .spec import RunSpec, complex_periodic_grid

__all__ = ["REGISTRY", "register"]

_KINETIC = "kinetic energy E"


# ----- walls ---------------------------------------------------------------------------------------------
def _channel_grid(shape, mesh, box_length, *, dtype, dealias, backend, points=None):
    """The channel's wall grid: Chebyshev on ``[-1, 1]`` (the wall-normal box must be 2), Fourier in x, z."""
    if box_length[0] != 2.0:
        raise ValueError(f"the wall-normal box (the first entry) must be 2 (walls at y = -1, 1), got "
                         f"{box_length[0]:g}")
    try:
        return wall_grid(shape, mesh, walls=(-1.0, 1.0), lengths=box_length[1:], dtype=dtype, dealias=dealias,
                         backend=backend, points=points)
    except ValueError as e:
        if mesh is not None:
            raise
        raise ValueError(f"channel takes NY NX [NZ]: NY >= 5 Chebyshev points across the channel and even NX, "
                         f"NZ >= 4, got {' '.join(map(str, shape))} ({e})") from None


def _channel_box(ndim, params):
    """``(2, 2 pi / alpha[, pi])`` (``alpha``: the Tollmien-Schlichting wavenumber, default 1)."""
    alpha = float(params.get("alpha", 1.0))
    return (2.0, 2 * math.pi / alpha) + ((math.pi,) if ndim == 3 else ())


def _channel_bound(eq, initial: float) -> float:
    """With the pressure drive, ``dE/dt = Pi U_b - nu <|grad u|^2>`` and the Poincare inequality (``pi^2 / 4`` on
    ``[-1, 1]``) give ``E <= 8 Pi^2 / (nu^2 pi^4)`` (4 times that); at constant flow rate, 100 times the larger of
    the initial and the laminar energy ``4/15``."""
    if eq.drive == "pressure":
        return 4 * max(initial, 8 * (2 * eq.nu) ** 2 / (eq.nu ** 2 * math.pi ** 4))
    return 100 * max(initial, 4.0 / 15.0)


def _couette_bound(eq, initial: float) -> float:
    """100 times the larger of the initial and the laminar energy ``1/6``."""
    return 100 * max(initial, 1.0 / 6.0)


def _convection_grid(cls):
    def build(shape, mesh, box_length, *, dtype, dealias, backend, points=None):
        if box_length[0] != 1.0:
            raise ValueError(f"the depth (the first entry, z) must be 1, got {box_length[0]:g}")
        try:
            return cls.make_grid(shape, mesh, lengths=box_length[1:], dtype=dtype, dealias=dealias,
                                 backend=backend, points=points)
        except ValueError as e:
            if mesh is not None:
                raise
            least = cls.wall_basis.min_points
            raise ValueError(f"rayleigh-benard takes NZ NX [NY]: NZ >= {least} points between the plates and even "
                             f"horizontal sizes >= 4, got {' '.join(map(str, shape))} ({e})") from None
    build.__doc__ = f"The grid of {cls.__name__}: depth 1 (the first entry of the box), Fourier horizontally."
    return build


def _convection_box(kc):
    def box(ndim, params):
        return (1.0,) + (2 * math.pi / kc,) * (ndim - 1)
    return box


def _convection_bound(eq, initial: float) -> float:
    """The energy budget ``dE/dt = Ra Pr <w theta> - Pr <|grad u|^2>``, ``|theta| <= 1 + amplitude`` and the
    Poincare inequality give ``E <= max(E(0), (Ra (1 + amplitude))^2 / (2 k_min^4))``; 4 times that."""
    kmin = min([math.pi] + [2 * math.pi / L for L in eq.grid.box_length[1:]])
    return 4 * max(initial, (eq.Ra * (1 + eq.amplitude)) ** 2 / (2 * kmin ** 4))


def _lee_moser(nu_lm: float) -> float:
    """``Re`` of this code's units (laminar centreline velocity 1, bulk velocity 2/3) for Lee & Moser's viscosity
    ``nu_lm`` (bulk velocity 1): velocities scale by 2/3, so ``nu = 2 nu_lm / 3``."""
    return 1.0 / (2.0 * nu_lm / 3.0)


#: turbulent channels at the friction Reynolds numbers of the DNS databases (Lee & Moser 2015: nu = 3.5e-4 at
#: Re_tau 182, Re_b 13750 at 392, 20000 at 544; Moser, Kim & Mansour 1999 boxes and wall resolutions), started from
#: laminar flow and a strong random perturbation, with statistics (outer and wall units) and a stop where the flow
#: relaminarizes. re-tau-180-minimal is the minimal channel of Jimenez & Moin (1991) for one CPU node.
_CHANNEL_PRESETS = {
    "re-tau-180": {"n": (129, 128, 128), "box_length": (2.0, 4 * math.pi, 4 * math.pi / 3), "dtype": "float64",
                   "ic": "turbulent", "params": {"Re": _lee_moser(3.5e-4), "amplitude": 0.3}, "t_end": 400.0,
                   "cfl": 0.5, "dt_max": 0.02, "stats_every": 10, "stats_start": 150.0, "checkpoint_every": 2000,
                   "relaminarization": {"after": 60.0, "patience": 30.0}},
    "re-tau-180-minimal": {"n": (65, 48, 32), "box_length": (2.0, math.pi, 0.3 * math.pi), "dtype": "float64",
                           "ic": "turbulent", "params": {"Re": _lee_moser(3.5e-4), "amplitude": 0.3},
                           "t_end": 600.0, "cfl": 0.5, "dt_max": 0.02, "stats_every": 10, "stats_start": 200.0,
                           "checkpoint_every": 2000, "relaminarization": {"after": 60.0, "patience": 30.0}},
    "re-tau-395": {"n": (193, 256, 192), "box_length": (2.0, 2 * math.pi, math.pi), "dtype": "float64",
                   "ic": "turbulent", "params": {"Re": _lee_moser(2.0 / 13750), "amplitude": 0.3}, "t_end": 300.0,
                   "cfl": 0.5, "dt_max": 0.01, "stats_every": 10, "stats_start": 100.0, "checkpoint_every": 2000,
                   "relaminarization": {"after": 60.0, "patience": 30.0}},
    "re-tau-590": {"n": (257, 384, 384), "box_length": (2.0, 2 * math.pi, math.pi), "dtype": "float64",
                   "ic": "turbulent", "params": {"Re": _lee_moser(2.0 / 20000), "amplitude": 0.3}, "t_end": 300.0,
                   "cfl": 0.5, "dt_max": 0.01, "stats_every": 10, "stats_start": 100.0, "checkpoint_every": 2000,
                   "relaminarization": {"after": 60.0, "patience": 30.0}},
}

_WALL_PLOT = PlotSpec("u", "streamwise velocity u", "velocity.png", normal=2, index=0, axes=(1, 0),
                      energy_label=_KINETIC, history=("perturbation_energy",), history_log=True)
_CONVECTION_PLOT = PlotSpec("temperature", "temperature T", "temperature.png", normal=2, index=0, axes=(1, 0),
                            energy_label=_KINETIC, history=("nusselt", "nusselt_bottom", "nusselt_top"))


def _convection(cls, kc, integrator):
    return RunSpec("rayleigh-benard", cls, ndims=(2, 3), integrator=integrator, grid=_convection_grid(cls),
                   box=_convection_box(kc), plot=_CONVECTION_PLOT, energy_bound=_convection_bound,
                   statistics=wall_units.convection)


def _particle_grid(shape, mesh, box_length, *, dtype, dealias, backend, points=None):
    """The mesh of a particle run (:func:`solvers.particles.periodic_grid`): Fourier bases, no dealiasing (the
    field solve is linear; ``dealias`` and ``backend`` do not apply)."""
    return particle_grid(shape, box_length, mesh, dtype=dtype)


_SPECS = [
    RunSpec("navier-stokes", NavierStokes, "3D incompressible Navier-Stokes (pseudo-spectral, rotational form, "
            "dealiased)", integrator="lsrk4",
            plot=PlotSpec("vorticity_magnitude", "|vorticity|", "vorticity.png", energy_label=_KINETIC,
                          spectrum_slope=-5 / 3)),
    RunSpec("schrodinger-poisson", SchrodingerPoisson, "self-gravitating scalar field (fuzzy dark matter), "
            "split-step", ndims=(3, 2), integrator="split-step", grid=complex_periodic_grid, points=False,
            plot=PlotSpec("density", "density |psi|^2", energy_label="total energy E = kinetic + potential")),
    RunSpec("gross-pitaevskii", GrossPitaevskii, "Bose-Einstein condensate in a harmonic trap, split-step (ground "
            "states: --integrator split-step-imaginary)", ndims=(3, 2), integrator="split-step",
            grid=complex_periodic_grid, points=False,
            plot=PlotSpec("density", "density |psi|^2", energy_label="total energy E = kinetic + potential")),
    RunSpec("cahn-hilliard", CahnHilliard, "Cahn-Hilliard phase separation, stabilized split (2D/3D)", ndims=(2, 3),
            integrator="etdrk4", plot=PlotSpec("c", "concentration c", energy_label="free energy F")),
    RunSpec("allen-cahn", AllenCahn, "Allen-Cahn phase ordering, stabilized split (2D/3D)", ndims=(2, 3),
            integrator="etdrk4", plot=PlotSpec("c", "concentration c", energy_label="free energy F")),
    RunSpec("navier-stokes-2d", NavierStokes2D, "2D incompressible Navier-Stokes, vorticity form (dealiased; "
            "Kolmogorov forcing, drag)", ndims=(2,), integrator="rk4",
            plot=PlotSpec("vorticity", "vorticity", energy_label=_KINETIC, spectrum_slope=-3.0)),
    RunSpec("burgers", Burgers, "3D viscous Burgers, vector form (pseudo-spectral, dealiased; --n NX NY NZ: long "
            "thin grids)", integrator="rk4", plot=PlotSpec("u", "u_x", energy_label=_KINETIC)),
    RunSpec("rayleigh-benard", RayleighBenard, "Rayleigh-Benard convection between free-slip or no-slip plates "
            "(--param walls=...; --n NZ NX [NY], z first, Chebyshev or sine/cosine in z, Fourier in x, y)",
            ndims=(2, 3), integrator="etdrk4", grid=_convection_grid(RayleighBenardFreeSlip),
            box=_convection_box(K_CRITICAL), plot=_CONVECTION_PLOT, energy_bound=_convection_bound,
            choose=Param("walls", "free-slip", "plates: free-slip (stress-free) or no-slip (rigid)", str,
                         choices=("free-slip", "no-slip"), legacy="free-slip"),
            variants={"free-slip": _convection(RayleighBenardFreeSlip, K_CRITICAL, "etdrk4"),
                      "no-slip": _convection(RayleighBenardNoSlip, K_CRITICAL_NO_SLIP, "imex")}),
    RunSpec("channel", Channel, "plane channel flow between no-slip walls y = -1, 1 (--n NY NX [NZ]: Chebyshev "
            "tau in y, Fourier in x, z; velocity-vorticity form)", ndims=(2, 3), integrator="imex",
            grid=_channel_grid, box=_channel_box, plot=_WALL_PLOT, energy_bound=_channel_bound,
            statistics=wall_units.channel, presets=_CHANNEL_PRESETS),
    RunSpec("vlasov-poisson", VlasovPoisson, "electrostatic particle-in-cell plasma, 1D to 3D (Landau damping, "
            "two-stream; --n NX [NY NZ] mesh cells, --param particles=N; box in Debye lengths)", ndims=(1, 2, 3),
            integrator="leapfrog", grid=_particle_grid, box=lambda ndim, params: (4 * math.pi,) * ndim,
            points=False, plot=PlotSpec("delta", "density contrast delta", "density.png",
                                        energy_label="kinetic energy", history=("field_energy",), history_log=True,
                                        panels=(PhaseSpace(),))),  # x_1, v_1 in the run's plasma units
    RunSpec("comoving-nbody", ComovingNBody, "cold dark matter: particle-mesh N-body in comoving coordinates, "
            "Einstein-de Sitter (time: the scale factor, from the initial condition's a0 to --t-end; --dt: its "
            "step; --n mesh cells, one particle per cell by default)", ndims=(3, 2), integrator="leapfrog", dt=0.01,
            grid=_particle_grid, box=lambda ndim, params: (1.0,) * ndim, points=False,
            plot=PlotSpec("delta", "density contrast delta", "density.png", energy_label="kinetic energy",
                          history=("field_energy",), history_log=True, time_label="a",
                          panels=(PhaseSpace(position_label="comoving position $x_1$",
                                             velocity_label=r"momentum $p_1 = a^2\,dx_1/dt$"),
                                  PowerSpectrum(growth=ComovingNBody.growth_factor)))),
    RunSpec("couette", Couette, "plane Couette flow between walls y = -1, 1 moving at u = -1, +1 (--n NY NX [NZ]: "
            "Chebyshev tau in y, Fourier in x, z; velocity-vorticity form)", ndims=(2, 3), integrator="imex",
            grid=_channel_grid, box=_channel_box, plot=_WALL_PLOT, energy_bound=_couette_bound,
            statistics=wall_units.channel),
]

#: the equations runnable by name (``python -m solvers run NAME``), name -> :class:`~solvers.RunSpec`
REGISTRY: dict[str, RunSpec] = {s.name: s for s in _SPECS}


def register(spec: RunSpec) -> RunSpec:
    """Add ``spec`` to :data:`REGISTRY` under its name (so ``RunConfig(equation=NAME)`` finds it).

    Raises:
      TypeError: not a RunSpec. ValueError: the name is taken by another spec.
    """
    if not isinstance(spec, RunSpec):
        raise TypeError(f"register: spec must be a solvers.RunSpec, got {type(spec).__name__}")
    if spec.name in REGISTRY and REGISTRY[spec.name] is not spec:
        raise ValueError(f"register: the name {spec.name!r} is taken")
    REGISTRY[spec.name] = spec
    return spec
