"""The main job's diagnostics rows: computed inside the compiled time loop, written by the host after each segment.

A row of step ``s`` (an equation's ``diagnostics`` and ``spectrum``) is computed by the step program right after
step ``s`` (:meth:`solvers._stepper.Stepper.segment`), from the state it has then, into a buffer that comes back
with the segment's step sizes in one transfer. So rows are no reason to end a segment: a run with rows every 10
steps dispatches one program per checkpoint, snapshot or stop (or per ``MAX_ROWS`` rows), not one per row (issue
18: each program costs about 2 ms to start and end on 8 CPU devices, measured at 256^2 in 2D). Only the row of
the initial state has a program of its own. The host gives each row its step, time and dt from its own float64
clock, writes the rows of a segment before any checkpoint that follows them, and on a blow-up writes the rows of
the steps before it.

Inside the loop a row sees the device's time and the step's dt in the state's precision (the first row, time 0 and
dt 0): built-in equations' diagnostics do not depend on the time.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._reductions import fused
from ._resolution import ResolutionMonitor


def pack_dtype():
    """The dtype of the vectors a step program returns: float64 where JAX has it (every float32 value, every
    step count and status is exact in it), else float32."""
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


class Recorder:
    """Diagnostics rows of a run (every process calls it; the lead process writes).

    Args:
      eq: the equation (``diagnostics(state, t, dt)``, ``spectrum(state)`` or None).
      diag_log, spec_log: the :class:`~solvers.io.CsvLog` files (``spec_log`` unused without a spectrum).
      lead: whether this process writes.
      has_spec: whether the equation has a spectrum.

    Raises:
      ValueError: a diagnostic of ``eq`` is not a scalar (naming it).
    """

    def __init__(self, eq, diag_log, spec_log, lead: bool, has_spec: bool):
        self.eq, self.has_spec = eq, has_spec
        d, spec = jax.eval_shape(self._values, eq.abstract_state(), 0.0, 1.0)
        self.names = sorted(d)  # the row's layout in the packed vector: these, then the spectrum
        key = getattr(eq, "cfl_diagnostic", None)
        #: where the CFL number ``dt * max_rate`` sits in the row (:attr:`Equation.cfl_diagnostic`), or None
        self.cfl_position = self.names.index(key) if key in self.names else None
        jax.eval_shape(self.row, eq.abstract_state(), 0.0, 1.0)  # every diagnostic a scalar (else ValueError)
        self.logs = (diag_log, spec_log)
        self.resolution = ResolutionMonitor(warn=lead)
        self.lead = lead
        self.last: dict | None = None  # the last row written (diagnostics only)
        self.written = 0  # rows written
        self._received: list[tuple[int, float, float, np.ndarray]] = []  # values back, not yet written
        self._first: Any = None  # the initial row's program (compiled when needed)

    @classmethod
    def detached(cls, eq) -> Recorder:
        """A recorder of ``eq`` without files (nothing is written): its :meth:`row` for a program compiled
        before a run (the memory check)."""
        return cls(eq, None, None, False, jax.eval_shape(eq.spectrum, eq.abstract_state()) is not None)

    def _values(self, state, t, dt, rate=None):
        """The diagnostics (the CFL number ``dt * rate`` where ``rate`` is given) and the spectrum of ``state``,
        their reductions over the devices in one collective (:func:`solvers._reductions.fused`: XLA:CPU runs one
        rendezvous of the device threads per reduction)."""
        def values(s):
            d = self.eq.diagnostics(s, t, dt)
            if rate is not None and self.cfl_position is not None:
                d = {**d, self.names[self.cfl_position]: dt * rate}
            return d, self.eq.spectrum(s) if self.has_spec else None

        return fused(values, self.eq.grid.mesh, state)

    def row(self, state, t, dt, rate=None) -> jax.Array:
        """The row of ``state`` as one vector (:func:`pack_dtype`): the diagnostics in :attr:`names` order, then
        the spectrum. Pure and jit-able (traced into the step program's loop). ``rate`` (where the row has a CFL
        number, :attr:`cfl_position`): the state's advective rate, known already; the CFL number is then
        ``dt * rate`` and the equation's own rate of the state is not computed (XLA drops what nothing uses)."""
        d, spec = self._values(state, t, dt, rate)
        pack = pack_dtype()
        for k in self.names:
            if jnp.size(d[k]) != 1:
                raise ValueError(f"{type(self.eq).__name__}.diagnostics: {k!r} must be a scalar, got shape "
                                 f"{jnp.shape(d[k])}")
        parts = [jnp.stack([jnp.reshape(d[k], ()).astype(pack) for k in self.names])]
        if self.has_spec:
            parts.append(jnp.ravel(spec).astype(pack))
        return jnp.concatenate(parts)

    # ----- the host's side ------------------------------------------------------------------------
    def first(self, state) -> dict:
        """Compute and write the row of the initial state (step 0, t = 0, dt = 0); returns its diagnostics."""
        if self._first is None:
            self._first = jax.jit(self.row)
        self.receive(0, 0.0, 0.0, jax.device_get(self._first(state, 0.0, 0.0)))
        return self.write()

    def receive(self, step: int, t: float, dt: float, values: Any) -> None:
        """A row's packed values (:meth:`row`) and the host's step, time and dt; written by :meth:`write`."""
        self._received.append((step, t, dt, np.asarray(values)))

    def write(self, before: int | None = None) -> dict | None:
        """Write the received rows in order (only those of steps before ``before``, if given: a blow-up's); returns
        the last one's diagnostics (else None)."""
        out = None
        for step, t, dt, v in self._received:
            if before is not None and step >= before:
                continue
            d = {k: float(x) for k, x in zip(self.names, v)}
            self.resolution.observe(d, step, t)  # warns once when the run leaves its resolution
            if self.lead:
                diag_log, spec_log = self.logs
                diag_log.write({"step": step, "t": t, "dt": dt, **d})
                if self.has_spec:
                    spec = v[len(self.names):]
                    spec_log.write({"step": step, "t": t, **{f"E_{j}": float(x) for j, x in enumerate(spec)}})
            self.last = out = d
            self.written += 1
        self._received.clear()
        return out
