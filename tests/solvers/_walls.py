"""Helpers of the wall-bounded flow tests (channel, Couette): the equation on a float64 grid, its diagnostics."""

from __future__ import annotations

import csv
import math

import jax
import jax.numpy as jnp
import numpy as np

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
    """The equation's diagnostics of ``s`` as floats (one compiled program per equation, however many calls:
    ``jax.jit`` of a bound method made anew each call would compile it again each time)."""
    jitted = eq.__dict__.get("_tests_jitted_diagnostics")
    if jitted is None:
        jitted = eq.__dict__["_tests_jitted_diagnostics"] = jax.jit(eq.diagnostics)
    with jax.set_mesh(eq.grid.mesh):
        return {k: float(v) for k, v in jitted(s, 0.0, dt).items()}


def max_change_and_diagnostics(eq, s, s0=None, dt=0.01):
    """``max |s - s0|`` (``max |s|`` without ``s0``) and the equation's diagnostics of ``s``, as floats, from one
    compiled program (eager array operations would compile one program each)."""
    def both(s, s0):
        return jnp.max(jnp.abs(s if s0 is None else s - s0)), eq.diagnostics(s, 0.0, dt)
    with jax.set_mesh(eq.grid.mesh):
        change, diag = jax.device_get(jax.jit(both)(s, s0))
    return float(change), {k: float(v) for k, v in diag.items()}


def fields_and_diagnostics(eq, s, dt=0.01, mean_profile=False):
    """The equation's physical fields of ``s`` (numpy), its diagnostics (floats) and, if asked, its mean profile's
    Chebyshev coefficients (numpy), from one compiled program (one per equation and ``mean_profile``, however many
    calls)."""
    key = f"_tests_jitted_fields_{bool(mean_profile)}"
    jitted = eq.__dict__.get(key)
    if jitted is None:
        def both(s, dt):
            return eq.physical_fields(s), eq.diagnostics(s, 0.0, dt), eq.mean_profile(s) if mean_profile else None
        jitted = eq.__dict__[key] = jax.jit(both)
    with jax.set_mesh(eq.grid.mesh):
        fields, diag, profile = jax.device_get(jitted(s, dt))
    out = {k: np.asarray(v) for k, v in fields.items()}, {k: float(v) for k, v in diag.items()}
    return out + ((np.asarray(profile),) if mean_profile else ())
