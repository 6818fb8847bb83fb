"""Outputs of a run, each an :class:`Output` (one protocol): checkpoints, the diagnostics CSV, plots, snapshots,
progress, the resolution check, your own callback; and the readers of what they write."""

from .base import Event as Event
from .base import Output as Output
from .base import Row as Row
from .base import RunInfo as RunInfo
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
from .plots import write_plots as write_plots
from .progress import Progress as Progress
from .resolution import ResolutionCheck as ResolutionCheck
from .resolution import ResolutionMonitor as ResolutionMonitor
from .resolution import ResolutionWarning as ResolutionWarning
from .snapshot_reader import load_snapshot as load_snapshot
from .snapshot_reader import open_snapshots as open_snapshots
from .snapshots import SnapshotError as SnapshotError
from .snapshots import SnapshotWriter as SnapshotWriter

__all__ = ["Callback", "Checkpoint", "Checkpoints", "CsvLog", "DiagnosticsCSV", "Event", "Output", "PlotSpec", "Plots",
           "Progress", "ResolutionCheck", "ResolutionMonitor", "ResolutionWarning", "Row", "RunInfo", "SnapshotError",
           "SnapshotWriter", "load_snapshot", "open_snapshots", "plot_history", "plot_slice", "plot_spectrum",
           "read_csv", "write_json", "write_plots"]
