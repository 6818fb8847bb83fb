"""Readers and writers of run files under their earlier module name: the same objects as :mod:`solvers.outputs`."""

from .outputs import Checkpoints as Checkpoints
from .outputs import CsvLog as CsvLog
from .outputs import SnapshotError as SnapshotError
from .outputs import SnapshotWriter as SnapshotWriter
from .outputs import load_snapshot as load_snapshot
from .outputs import open_snapshots as open_snapshots
from .outputs import plot_history as plot_history
from .outputs import plot_slice as plot_slice
from .outputs import plot_spectrum as plot_spectrum
from .outputs import read_csv as read_csv
from .outputs import write_json as write_json
from .outputs import write_plots as write_plots

__all__ = ["Checkpoints", "CsvLog", "SnapshotError", "SnapshotWriter", "load_snapshot", "open_snapshots",
           "plot_history", "plot_slice", "plot_spectrum", "read_csv", "write_json", "write_plots"]
