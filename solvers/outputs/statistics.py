"""Statistics of a flow between walls, as an output: plane- and time-averaged profiles accumulated on the devices
inside the compiled loop (no host synchronization per sample), with standard errors from batch means, carried in
checkpoints so that a resumed run continues the same averages.

Every ``every`` steps (from ``start`` on) the sampler averages over the homogeneous (periodic) axes the equation's
physical fields (``physical_fields``: channel ``u, v, w``; convection ``u, w, temperature``) and the products of
their fluctuations about the plane mean, on the wall-normal points (array axis 0); the time averages are updated
Welford's way (no cancellation: the rms of a steady laminar flow is exactly zero). The samples also fill batches of
``batch`` samples; a batch's mean is kept on the devices (at most :data:`MAX_BATCHES`; when full, neighbours are
merged and the batch size doubles), so the standard error of any averaged quantity is the spread of its batch
values over ``sqrt(batches - 1)``: a user can tell how converged an average is.

Columns (one row per wall-normal point): the wall-normal coordinate, named as the grid names axis 0 (``y`` of a
channel, ``z`` of convection); then the reading ``derive`` gives (:mod:`solvers.outputs.wall_units`: channel
``U, W, u_rms, v_rms, w_rms, uv`` in outer units and ``y_plus, U_plus, u_rms_plus, ...`` in wall units; convection
``T, T_rms, wT, U, u_rms, w_rms``), or without one each field's ``<f>_mean``, ``<f>_rms`` and the covariances
``<f>_<g>_cov``; then ``<name>_se``, the standard error of each column but the coordinate (NaN until two batches
exist: the run warns why at its end).

Files (in ``directory``, written at the output's events and at the end, atomically): ``statistics.csv``,
``statistics.h5`` (the same columns, the scalars and the sample count as attributes; read with
:func:`open_statistics`) and ``statistics.png`` (:func:`~solvers.outputs.plot_statistics`).
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..stepping import Sampler
from .base import Event, Output, RunInfo, writable_directory
from .csv import CsvLog

__all__ = ["MAX_BATCHES", "Statistics", "open_statistics"]

#: the most batch means the devices keep (neighbours merge when full, the batch size doubles)
MAX_BATCHES = 32


def _pairs(fields: list[str]) -> list[tuple[int, int]]:
    """The index pairs of the covariances: each field with itself and with each later one."""
    return list(itertools.combinations_with_replacement(range(len(fields)), 2))


class Statistics(Output):
    """Plane- and time-averaged profiles of a wall-bounded flow (see the module).

    Args:
      directory: where ``statistics.csv``/``.h5``/``.png`` go (created).
      every: a sample every this many steps (steps that are multiples of it).
      start: samples only from this time on (the transient before is left out).
      batch: samples per batch of the batch means (doubles when :data:`MAX_BATCHES` are full).
      derive: ``derive(equation, y, means, covariances) -> (columns, scalars)``: the physical reading of the
        averages (``y``: the wall-normal points; ``means``: field -> profile; ``covariances``: ``"uv"`` ->
        ``<u'v'>`` profile, fields named in order; e.g. :func:`~solvers.outputs.wall_units.channel`); its columns
        are the file's. None: each field's ``<f>_mean``, ``<f>_rms`` and covariances ``<f>_<g>_cov``.
      write_every: write the files every this many steps (and at the end); default ``50 * every``.

    Raises:
      ValueError: ``every``, ``batch`` or ``write_every`` not positive integers, ``start`` negative, a ``directory``
        that cannot be written; at the start of a run, an equation without physical fields, a grid whose axis 0
        is periodic, or a ``start`` at or past the run's ``t_end`` (no sample would be taken).
    """

    wants_spectrum = False

    def __init__(self, directory: str | os.PathLike, every: int = 10, start: float = 0.0, batch: int = 10,
                 derive: Callable | None = None, write_every: int | None = None):
        for name, v in (("every", every), ("batch", batch), ("write_every", write_every or 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Statistics: {name} must be an integer >= 1, got {v!r}")
        if not (isinstance(start, (int, float)) and math.isfinite(start) and start >= 0):
            raise ValueError(f"Statistics: start must be a time >= 0, got {start!r}")
        self.directory = writable_directory(directory, "Statistics")
        self.every, self.start_time, self.batch, self.derive = every, float(start), batch, derive
        self.write_every = write_every or 50 * every
        self.equation = None
        self.lead = True
        self.columns: dict[str, np.ndarray] = {}
        self.scalars: dict[str, float] = {}
        self._acc = None

    # ----- the device side -------------------------------------------------------------------------
    def sampler(self, equation) -> Sampler:
        grid = equation.grid
        if getattr(grid.bases[0], "kind", "fft") in ("fft", "rfft"):
            raise ValueError("Statistics: axis 0 of the grid must be a wall-normal axis (Chebyshev, sine or cosine)")
        try:
            fields = list(jax.eval_shape(equation.physical_fields, equation.abstract_state()))
        except NotImplementedError as e:
            raise ValueError(f"Statistics: {e}") from None
        self.fields, self.pairs, self.coordinate = fields, _pairs(fields), grid.axis_names[0]
        nf, ny, real = len(fields), grid.shape[0], grid.dtype
        npairs = len(self.pairs)
        start, size0 = self.start_time, self.batch
        axes = tuple(range(1, grid.ndim))

        def plane(state):
            """Plane means of the fields and plane covariances of their fluctuations (no cancellation)."""
            f = equation.physical_fields(state)
            vals = jnp.stack([f[k] for k in fields])
            m = jnp.mean(vals, axis=tuple(a + 1 for a in axes))
            d = vals - jnp.expand_dims(m, tuple(a + 1 for a in axes))
            c = jnp.stack([jnp.mean(d[i] * d[j], axis=axes) for i, j in self.pairs])
            # replicated like the accumulators (the fields may be sharded along the wall-normal axis)
            return grid.replicate(m.astype(real)), grid.replicate(c.astype(real))

        def init(state):
            count = jnp.zeros((), jnp.int32)
            return {"count": count, "mean": jnp.zeros((nf, ny), real), "comoment": jnp.zeros((npairs, ny), real),
                    "cov": jnp.zeros((npairs, ny), real), "batch": jnp.zeros((nf + npairs, ny), real),
                    "in_batch": count, "means": jnp.zeros((MAX_BATCHES, nf + npairs, ny), real), "batches": count,
                    "size": jnp.asarray(size0, jnp.int32)}

        def update(acc, state, t, dt, step):
            take = t >= start
            m, c = plane(state)
            n = acc["count"] + 1
            delta = m - acc["mean"]  # Welford: a constant plane mean adds exactly nothing to the co-moments
            mean = acc["mean"] + delta / n.astype(real)
            after = m - mean
            co = acc["comoment"] + jnp.stack([delta[i] * after[j] for i, j in self.pairs])
            batch = acc["batch"] + jnp.concatenate([m, c])
            in_batch = acc["in_batch"] + 1
            full = in_batch >= acc["size"]
            k = jnp.minimum(acc["batches"], MAX_BATCHES - 1)
            means = jnp.where(full, acc["means"].at[k].set(batch / acc["size"].astype(real)), acc["means"])
            batches = acc["batches"] + full.astype(jnp.int32)
            merge = batches >= MAX_BATCHES  # neighbours merge: half as many batches of twice the size
            merged = jnp.concatenate([0.5 * (means[0::2] + means[1::2]), jnp.zeros_like(means[: MAX_BATCHES // 2])])
            new = {"count": n, "mean": mean, "comoment": co, "cov": acc["cov"] + c,
                   "batch": jnp.where(full, 0, batch), "in_batch": jnp.where(full, 0, in_batch),
                   "means": jnp.where(merge, merged, means), "batches": jnp.where(merge, MAX_BATCHES // 2, batches),
                   "size": jnp.where(merge, 2 * acc["size"], acc["size"])}
            return jax.tree.map(lambda a, b: jnp.where(take, a, b), new, acc)

        return Sampler(init, update, self.every)

    # ----- the host side ---------------------------------------------------------------------------
    def start(self, run: RunInfo, event: Event) -> None:
        if self.start_time >= run.t_end:
            raise ValueError(f"Statistics: start = {self.start_time:g} is at or past the run's t_end = {run.t_end:g}: "
                             "no sample would be taken; give an earlier start or a later t_end")
        self.equation, self.lead = run.equation, run.lead

    def next_step(self, step: int) -> int | None:
        return (step // self.write_every + 1) * self.write_every

    def on_event(self, event: Event) -> None:
        if event.step % self.write_every == 0:
            self._collect(event)
            self.write()

    def finish(self, event: Event) -> None:
        self._collect(event)
        self.write()
        if not self.lead:
            return
        if not self.columns:
            warnings.warn(f"Statistics: no sample taken (every {self.every} steps from t = {self.start_time:g} to "
                          f"t = {event.t:g}); no statistics written", stacklevel=2)
        elif self.scalars["batches"] < 2:
            warnings.warn(f"Statistics: the standard errors (the _se columns) are NaN: they need 2 batches of "
                          f"{self.scalars['batch_size']} samples, and the run took {self.scalars['samples']} "
                          "samples (take more, or give a smaller batch)", stacklevel=2)

    def _collect(self, event: Event) -> None:
        acc = jax.device_get(event.samples.get(self.name))
        if acc is None or int(acc["count"]) == 0:
            return
        y = np.asarray(self.equation.grid.bases[0].points(), np.float64)
        count, nf = int(acc["count"]), len(self.fields)
        mean = np.asarray(acc["mean"], np.float64)
        cov = (np.asarray(acc["cov"], np.float64) + np.asarray(acc["comoment"], np.float64)) / count
        profiles, scalars = self._describe(y, mean, cov)
        batches = int(acc["batches"])
        per = [self._describe(y, b[:nf], b[nf:]) for b in np.asarray(acc["means"][:batches], np.float64)]

        def se(values) -> np.ndarray:  # the spread of the batch values (NaN before two batches)
            if batches < 2:
                return np.full(np.shape(values[0]) if values else (), np.nan)
            return np.std(np.stack(values), axis=0, ddof=1) / math.sqrt(batches)

        columns = {self.coordinate: y, **profiles}
        columns.update({f"{k}_se": se([p[0][k] for p in per]) if per else np.full(y.shape, np.nan)
                        for k in profiles})
        scalars.update({f"{k}_se": float(se([p[1][k] for p in per])) if per else math.nan for k in list(scalars)})
        scalars.update({"samples": count, "batches": batches, "batch_size": int(acc["size"]), "t": event.t,
                        "step": event.step, "start": self.start_time, "every": self.every})
        self.columns, self.scalars = columns, scalars

    def _describe(self, y: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> tuple[dict, dict]:
        """The profiles and scalars of averaged quantities: the reading of ``derive``, or each field's mean, rms
        and covariances (``<f>_mean``, ``<f>_rms``, ``<f>_<g>_cov``)."""
        means = dict(zip(self.fields, mean))
        covs = {self.fields[i] + self.fields[j]: cov[k] for k, (i, j) in enumerate(self.pairs)}
        if self.derive is not None:
            cols, scalars = self.derive(self.equation, y, means, covs)
            return {k: np.asarray(v, np.float64) for k, v in cols.items()}, dict(scalars)
        cols: dict[str, np.ndarray] = {}
        for a in self.fields:
            cols[f"{a}_mean"] = means[a]
            cols[f"{a}_rms"] = np.sqrt(np.maximum(covs[a + a], 0))
        for k, (i, j) in enumerate(self.pairs):
            if i != j:
                cols[f"{self.fields[i]}_{self.fields[j]}_cov"] = cov[k]
        return cols, {}

    def write(self) -> None:
        """Write ``statistics.csv``, ``statistics.h5`` and ``statistics.png`` from the last averages (lead only)."""
        if not self.lead or not self.columns:
            return
        names = list(self.columns)
        tmp = self.directory / "statistics.csv.tmp"
        tmp.unlink(missing_ok=True)
        log = CsvLog(tmp, names)
        for i in range(len(self.columns[self.coordinate])):
            log.write({k: float(self.columns[k][i]) for k in names})
        os.replace(tmp, self.directory / "statistics.csv")
        try:
            import h5py
        except ImportError:
            h5py = None
        if h5py is not None:
            tmp = self.directory / "statistics.h5.tmp"
            with h5py.File(tmp, "w", track_order=True) as f:  # the columns in the CSV's order
                for k, v in self.columns.items():
                    f.create_dataset(k, data=np.asarray(v, np.float64))
                for k, v in self.scalars.items():
                    f.attrs[k] = v
                f.attrs["coordinate"] = self.coordinate
            os.replace(tmp, self.directory / "statistics.h5")
        from .statistics_plot import plot_statistics

        plot_statistics(self.directory / "statistics.png", self.columns, self.scalars)


def open_statistics(path: str | os.PathLike):
    """``statistics.h5`` (or a run directory holding it) as an ``xarray.Dataset``.

    Args:
      path: the file, or a run directory holding it.

    Returns:
      one variable per column along the wall-normal coordinate (``y`` of a channel, ``z`` of convection: the
      attribute ``coordinate`` names it), the scalars (``samples``, ``u_tau``, ``u_tau_se``, ...) as attributes.

    Raises:
      FileNotFoundError: no statistics file there. ImportError: h5py or xarray missing (``pip install "xfft[io]"``).
    """
    import h5py
    import xarray as xr

    p = Path(path)
    p = p / "statistics.h5" if p.is_dir() else p
    if not p.exists():
        raise FileNotFoundError(f"open_statistics: no statistics file at {str(p)!r}")
    with h5py.File(p, "r") as f:
        attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
        name = str(attrs.get("coordinate", "y"))
        data = {k: (name, np.asarray(f[k])) for k in f if k != name}
        coordinate = np.asarray(f[name])
    return xr.Dataset(data, coords={name: coordinate}, attrs=attrs)
