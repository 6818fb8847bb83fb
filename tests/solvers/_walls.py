"""Helpers of the wall-bounded flow tests (channel, Couette): the equation on a float64 grid, its diagnostics."""

from __future__ import annotations

import csv
import math

import jax
import jax.numpy as jnp

from solvers import wall_grid


def wall_flow(cls, shape, mesh, dealias="2/3", **params):
    """``cls`` (a :class:`~solvers.equations.channel.Channel` kind) on ``shape`` (``NY NX [NZ]``): walls at
    ``y = -1, 1``, periodic box ``(2 pi[, pi])``, float64."""
    lengths = (2 * math.pi,) + ((math.pi,) if len(shape) == 3 else ())
    grid = wall_grid(shape, mesh, walls=(-1.0, 1.0), lengths=lengths, dtype=jnp.float64, dealias=dealias)
    return cls(grid, **params)


def energy_rate(out, t0: float, t1: float) -> float:
    """``d ln(perturbation_energy) / dt`` between the rows at ``t0`` and ``t1`` of a run's diagnostics CSV."""
    with open(out / "diagnostics.csv") as f:
        rows = {round(float(r["t"]), 6): float(r["perturbation_energy"]) for r in csv.DictReader(f)}
    return math.log(rows[t1] / rows[t0]) / (t1 - t0)


def diagnostics(eq, s, dt=0.01):
    """The equation's diagnostics of ``s`` as floats."""
    with jax.set_mesh(eq.grid.mesh):
        return {k: float(v) for k, v in jax.jit(eq.diagnostics)(s, 0.0, dt).items()}
