"""The main job's diagnostics rows: computed inside the step program that follows them, written one segment later.

A row of step ``s`` (an equation's ``diagnostics`` and ``spectrum``) needs the state of step ``s``, and the next
thing the devices do with that state is the next segment of steps. So the row is not a program of its own: the
host *defers* it (:meth:`Recorder.defer`), and the next step program (:meth:`solvers._stepper.Stepper.program`)
computes it first, from its input state, and returns its values packed into the same vector as the segment's
scalars: one dispatch and one transfer per segment instead of two of each (issue 18: measured at 256^2 in 2D on
8 CPU devices, a separate row program with its own transfer cost about 2 ms more per row). Where no segment
follows (before a checkpoint, at the end of a run, the first row) the same program runs with no steps
(:meth:`solvers._stepper.Stepper.row_only`), so every row is computed by the same compiled code and a resumed run's
CSV is the same as a straight run's. Rows are written after the next program is dispatched, so the host writes
while the devices compute, and before any checkpoint that follows them; on a blow-up the rows already computed
are still written.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

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
        jax.eval_shape(self.row, eq.abstract_state(), 0.0, 1.0)  # every diagnostic a scalar (else ValueError)
        self.logs = (diag_log, spec_log)
        self.resolution = ResolutionMonitor(warn=lead)
        self.lead = lead
        self.last: dict | None = None  # the last row written (diagnostics only)
        self._deferred: tuple[int, float, float] | None = None  # (step, t, dt) of the state the next program takes
        self._in_flight: tuple[int, float, float] | None = None  # handed to a program, values not back yet
        self._received: list[tuple[int, float, float, np.ndarray]] = []  # values back, not yet written

    def _values(self, state, t, dt):
        return self.eq.diagnostics(state, t, dt), self.eq.spectrum(state) if self.has_spec else None

    def row(self, state, t, dt) -> jax.Array:
        """The row of ``state`` as one vector (:func:`pack_dtype`): the diagnostics in :attr:`names` order, then
        the spectrum. Pure and jit-able (traced into the step program)."""
        d, spec = self._values(state, t, dt)
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
    @property
    def deferred(self) -> bool:
        """Whether a row waits for the next program that takes the state."""
        return self._deferred is not None

    def defer(self, step: int, t: float, dt: float) -> None:
        """Ask for the row of the current state (step ``step``): the next step program computes it first."""
        if self._deferred is not None or self._in_flight is not None:
            raise RuntimeError("a diagnostics row is still waiting for its program")
        self._deferred = (step, t, dt)

    def take(self) -> tuple[float, float] | None:
        """The ``(t, dt)`` of the deferred row for the program about to be dispatched (None: no row)."""
        if self._deferred is None:
            return None
        self._in_flight, self._deferred = self._deferred, None
        return self._in_flight[1:]

    def receive(self, values: Any) -> None:
        """The packed values of the row handed out by :meth:`take` (None where none was); written by :meth:`write`."""
        if self._in_flight is None:
            return
        step, t, dt = self._in_flight
        self._in_flight = None
        self._received.append((step, t, dt, np.asarray(values)))

    def write(self) -> dict | None:
        """Write the received rows in order; returns the last one's diagnostics (else None)."""
        out = None
        for step, t, dt, v in self._received:
            d = {k: float(x) for k, x in zip(self.names, v)}
            self.resolution.observe(d, step, t)  # warns once when the run leaves its resolution
            if self.lead:
                diag_log, spec_log = self.logs
                diag_log.write({"step": step, "t": t, "dt": dt, **d})
                if self.has_spec:
                    spec = v[len(self.names):]
                    spec_log.write({"step": step, "t": t, **{f"E_{j}": float(x) for j, x in enumerate(spec)}})
            self.last = out = d
        self._received.clear()
        return out
