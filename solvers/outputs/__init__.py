"""Outputs of a run, each an :class:`Output` (one protocol): checkpoints, the diagnostics CSV, plots, snapshots,
progress, the resolution check, your own callback; and the readers of what they write."""

from . import wall_units as wall_units
from .base import Event as Event
from .base import Output as Output
from .base import Row as Row
from .base import RunInfo as RunInfo
from .base import StopRun as StopRun
from .callback import Callback as Callback
from .checkpoints import Checkpoint as Checkpoint
from .checkpoints import Checkpoints as Checkpoints
from .csv import CsvLog as CsvLog
from .csv import DiagnosticsCSV as DiagnosticsCSV
from .csv import read_csv as read_csv
from .csv import write_json as write_json
from .plots import Plots as Plots
from .plots import PlotSpec as PlotSpec
from .plots import plot_history as plot_history
from .plots import plot_slice as plot_slice
from .plots import plot_spectrum as plot_spectrum
from .plots import plot_statistics as plot_statistics
from .plots import write_plots as write_plots
from .progress import Progress as Progress
from .resolution import ResolutionCheck as ResolutionCheck
from .resolution import ResolutionMonitor as ResolutionMonitor
from .resolution import ResolutionWarning as ResolutionWarning
from .snapshot_reader import load_snapshot as load_snapshot
from .snapshot_reader import open_snapshots as open_snapshots
from .snapshots import SnapshotError as SnapshotError
from .snapshots import SnapshotWriter as SnapshotWriter
from .statistics import Statistics as Statistics
from .statistics import open_statistics as open_statistics
from .watch import RelaminarizationStop as RelaminarizationStop
from .watch import StopOnSignal as StopOnSignal

__all__ = ["Callback", "Checkpoint", "Checkpoints", "CsvLog", "DiagnosticsCSV", "Event", "Output", "PlotSpec", "Plots",
           "Progress", "RelaminarizationStop", "ResolutionCheck", "ResolutionMonitor", "ResolutionWarning", "Row",
           "RunInfo", "SnapshotError", "SnapshotWriter", "Statistics", "StopOnSignal", "StopRun", "load_snapshot",
           "open_snapshots", "open_statistics", "plot_history", "plot_slice", "plot_spectrum", "plot_statistics",
           "read_csv", "wall_units", "write_json", "write_plots"]
