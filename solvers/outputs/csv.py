"""Diagnostics as CSV files: the writer (:class:`CsvLog`), the reader (:func:`read_csv`), ``run.json``
(:func:`write_json`), and the output that writes a run's rows (:class:`DiagnosticsCSV`)."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .base import Event, Output, Row, RunInfo, writable_directory

__all__ = ["CsvLog", "DiagnosticsCSV", "read_csv", "write_json"]


class CsvLog:
    """An append-only CSV file with a fixed header; floats are written exactly (shortest round-trip repr)."""

    def __init__(self, path: str | os.PathLike, columns: Sequence[str]):
        self.path = Path(path)
        self.columns = list(columns)

    def write(self, row: dict) -> None:
        new = not self.path.exists()
        with open(self.path, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(self.columns)
            w.writerow([_fmt(row.get(c, "")) for c in self.columns])

    def truncate_after(self, step: int) -> None:
        """Drop rows with ``step`` greater than ``step`` (a resumed run rewrites them identically)."""
        if not self.path.exists():
            return
        rows = read_csv(self.path)
        self.path.unlink()
        for r in rows:
            if int(float(r["step"])) <= step:
                self.write(r)


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (np.integer, int)):
        return str(int(v))
    return str(v)


def read_csv(path: str | os.PathLike) -> list[dict]:
    """The rows of a CSV file (``diagnostics.csv``, ``spectra.csv``) as dicts of strings, keyed by the header."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_json(path: str | os.PathLike, data: dict) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically (a temporary file renamed); values JSON cannot hold
    are written as strings."""
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


class DiagnosticsCSV(Output):
    """Writes the run's diagnostics rows to ``diagnostics.csv`` (``step, t, dt`` and the row's values) and, where
    the equation has a spectrum, ``spectra.csv`` (``step, t, E_0, E_1, ...``), in ``directory``.

    Each row is appended after the segment that computed it, so a crash loses at most one segment's rows. A
    resumed run keeps the rows up to its starting step and rewrites the rest identically; a new run replaces the
    files. Only the lead process writes.

    Args:
      directory: where the files go (created).
      every: a row every this many steps (and the last step's).
      spectra: also write the spectra.

    Raises:
      ValueError: ``every`` not a positive integer, or a ``directory`` that cannot be written.
    """

    wants_spectrum = True

    def __init__(self, directory: str | os.PathLike, every: int = 10, spectra: bool = True):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"DiagnosticsCSV: every must be an integer >= 1, got {every!r}")
        self.directory = writable_directory(directory, "DiagnosticsCSV")
        self.row_every = every
        self.wants_spectrum = bool(spectra)
        self.logs: tuple[CsvLog, CsvLog] | None = None
        self.lead = True

    def start(self, run: RunInfo, event: Event) -> None:
        self.lead = run.lead
        diag = CsvLog(self.directory / "diagnostics.csv", ["step", "t", "dt", *run.columns])
        spec = CsvLog(self.directory / "spectra.csv", ["step", "t"] + [f"E_{j}" for j in range(run.shells)])
        self.logs = (diag, spec)
        if not self.lead:
            return
        for log in self.logs:
            if run.resumed:
                log.truncate_after(run.step0)
            else:
                log.path.unlink(missing_ok=True)

    def on_rows(self, rows: list[Row]) -> None:
        if not self.lead or self.logs is None:
            return
        diag, spec = self.logs
        for r in rows:
            diag.write({"step": r.step, "t": r.t, "dt": r.dt, **r.values})
            if r.spectrum is not None and self.wants_spectrum:
                spec.write({"step": r.step, "t": r.t, **{f"E_{j}": float(x) for j, x in enumerate(r.spectrum)}})
