"""How an equation runs as a job: its :class:`RunSpec` (name, dimensions, grid, default box and integrator, plots,
blow-up bound), kept beside the equation rather than in it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..grids import Grid, SpectralGrid
from ..model import Equation, Param
from ..model.params import as_initial_condition
from ..outputs import PlotSpec

__all__ = ["RunSpec", "complex_periodic_grid", "periodic_grid"]

#: a grid builder: ``grid(shape, mesh, box_length, *, dtype, dealias, backend, points) -> Grid``; raises ValueError
#: naming what it refuses (sizes its bases cannot take, a box it cannot hold, a mesh that cannot split it)
GridBuilder = Callable[..., Grid]


def periodic_grid(shape, mesh, box_length, *, dtype, dealias, backend, points=None) -> Grid:
    """The periodic box (:class:`~solvers.SpectralGrid`) with spectra in the transposed order (the faster one;
    checkpoints and outputs stay in natural order)."""
    return SpectralGrid(shape, mesh, ndim=len(shape), box_length=box_length, dtype=dtype, dealias=dealias,
                        backend=backend, order="transposed", points=points)


def complex_periodic_grid(shape, mesh, box_length, *, dtype, dealias, backend, points=None) -> Grid:
    """The periodic box for complex fields (a wavefunction): full spectra, transposed order."""
    if points is not None:
        raise ValueError("a complex-field box cannot hold its modes on more points")
    return SpectralGrid(shape, mesh, ndim=len(shape), box_length=box_length, dtype=dtype, dealias=dealias,
                        backend=backend, complex_fields=True, order="transposed")


@dataclass(frozen=True)
class RunSpec:
    """What the main job, the command line and the plots need to run an equation: nothing here is physics.

    Args:
      name: the name on the command line (``python -m solvers run NAME``) and in messages.
      equation: the :class:`~solvers.Equation` subclass.
      description: one line for ``python -m solvers list``.
      ndims: the grid dimensions it runs on; the first is the default of ``--n N``.
      integrator: the default integrator's name (None: ``imex`` where the equation solves its linear part
        implicitly, else ``rk4``).
      grid: the grid builder (default :func:`periodic_grid`); its errors name what it refuses.
      box: the default box lengths: a function ``(ndim, params) -> lengths`` of the run's parameters (a box may
        follow a wavelength), or None (``2 pi`` per axis).
      plot: what the plots show (:class:`~solvers.outputs.PlotSpec`).
      energy_bound: ``(equation, initial_energy) -> bound``: a run stops with a blow-up when the energy passes it
        (None: only non-finite states stop it).
      points: the grid can hold its modes on more points (a size the mesh cannot split).
      statistics: the physical reading of averaged profiles (``derive`` of :class:`~solvers.outputs.Statistics`,
        e.g. :func:`solvers.outputs.wall_units.channel`: the columns of ``statistics.csv``); None: on a wall grid,
        each physical field's mean, rms and covariances (``<f>_mean``, ``<f>_rms``, ``<f>_<g>_cov``).
      presets: name -> settings of a :class:`~solvers.RunConfig` (fields, and ``params``) that a run with
        ``preset=NAME`` starts from: what the run sets itself wins.
      choose: a run parameter that picks one of ``variants`` (e.g. ``walls`` of convection), or None.
      variants: value of ``choose`` -> the :class:`RunSpec` it runs (its other fields replace these).
      dt: the fixed time step a run takes where it gives neither ``dt``, ``cfl`` nor ``controller``: for an
        equation without a CFL rate (``max_rate``; e.g. a comoving N-body run's step in the scale factor); None:
        such runs must give ``dt``.
    """

    name: str
    equation: type[Equation]
    description: str = ""
    ndims: tuple[int, ...] = (3,)
    integrator: str | None = None
    grid: GridBuilder = periodic_grid
    box: Callable[[int, Mapping[str, Any]], tuple[float, ...]] | None = None
    plot: PlotSpec = field(default_factory=PlotSpec)
    energy_bound: Callable[[Equation, float], float] | None = None
    points: bool = True
    statistics: Callable | None = None
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    choose: Param | None = None
    variants: Mapping[str, RunSpec] = field(default_factory=dict)
    dt: float | None = None

    def __post_init__(self):
        if not (isinstance(self.equation, type) and issubclass(self.equation, Equation)):
            raise TypeError(f"RunSpec {self.name!r}: equation must be a solvers.Equation subclass, got "
                            f"{self.equation!r}")
        if not self.ndims or any(d not in (1, 2, 3) for d in self.ndims):
            raise ValueError(f"RunSpec {self.name!r}: ndims must be dimensions 1, 2 or 3, got {self.ndims!r}")
        if (self.choose is None) != (not self.variants):
            raise ValueError(f"RunSpec {self.name!r}: choose and variants go together")
        if self.dt is not None and not (isinstance(self.dt, (int, float)) and math.isfinite(self.dt) and self.dt > 0):
            raise ValueError(f"RunSpec {self.name!r}: dt must be a positive number or None, got {self.dt!r}")

    @classmethod
    def of(cls, equation: type[Equation], name: str | None = None) -> RunSpec:
        """The spec of an equation that has none: the periodic box in 3D or 2D (``--n`` gives one size or one per
        axis), the default integrator, no plot of a field."""
        return cls(name or f"{equation.__module__}:{equation.__qualname__}", equation, ndims=(3, 2))

    def variant(self, params: Mapping[str, Any]) -> RunSpec:
        """The spec the run's ``params`` pick (itself where it has no variants)."""
        if self.choose is None:
            return self
        return self.variants[params.get(self.choose.name, self.choose.default)]

    def run_parameters(self) -> tuple[Param, ...]:
        """The parameters the job takes besides the equation's and the initial condition's (``choose``)."""
        return () if self.choose is None else (self.choose,)

    def default_integrator(self, params: Mapping[str, Any]) -> str:
        spec = self.variant(params)
        if spec.integrator is not None:
            return spec.integrator
        return "imex" if _implicit(spec.equation) else "rk4"

    def default_box(self, ndim: int, params: Mapping[str, Any]) -> tuple[float, ...]:
        spec = self.variant(params)
        return (2 * math.pi,) * ndim if spec.box is None else tuple(float(v) for v in spec.box(ndim, params))

    def declared(self, ic: str | None) -> tuple[Param, ...]:
        """Every parameter a run of ``ic`` takes: the job's own, the equation's (of every variant) and the initial
        condition's."""
        out: dict[str, Param] = {p.name: p for p in self.run_parameters()}
        for spec in [self, *self.variants.values()]:
            out.update({p.name: p for p in spec.equation.parameters})
            ics = spec.equation.initial_conditions
            if ic in ics:
                out.update({p.name: p for p in as_initial_condition(ics[ic]).params})
        return tuple(out.values())

    def initial_conditions(self) -> dict:
        """The initial conditions of the equation (of the first variant where there are variants)."""
        spec = next(iter(self.variants.values())) if self.variants else self
        return dict(spec.equation.initial_conditions)


def _implicit(cls: type[Equation]) -> bool:
    """Whether instances of ``cls`` solve their linear part implicitly (:class:`~solvers.ImplicitLinear`)."""
    return all(callable(getattr(cls, m, None)) for m in ("implicit_factor", "implicit_solve"))
