"""Which rank of a failed :func:`xfft.launch.launch` run failed first: the fault log the ranks write and the choice.

Ranks that die of a peer's failure (a collective's connection closed) can exit before the rank that failed, and
each exit is timed by a thread of the launcher, so the order of exits does not name the cause. A rank's fail-fast
hook notes the time it fails in a file the launcher gave it (:func:`note_fault`), before it exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

#: the file where a rank started by :func:`xfft.launch.launch` notes when it failed (:func:`note_fault`)
ENV_FAULT_LOG = "XFFT_FAULT_LOG"


def note_fault(rank: int) -> None:
    """In a rank started by :func:`xfft.launch.launch`: note in the launcher's fault log that it is failing now.

    The fail-fast hook (:func:`xfft.distributed.install_excepthook`) calls it before the rank exits. Ranks that
    die of a peer's failure can exit before the peer that failed (its exit may take longer than their error), so
    the order in which the launcher sees exits does not name the cause; the earliest time noted here does. Does
    nothing outside :func:`xfft.launch.launch` or when the file cannot be written."""
    path = os.environ.get(ENV_FAULT_LOG)
    if not path:
        return
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{int(rank)} {time.time():.6f}\n".encode())  # one write: whole lines, any order
        finally:
            os.close(fd)


def faults(path: str) -> dict[int, float]:
    """Each rank's earliest failure time noted in the fault log ``path`` (:func:`note_fault`)."""
    try:
        lines = open(path).read().split("\n")
    except OSError:
        return {}
    noted: dict[int, float] = {}
    for line in lines:
        parts = line.split()
        with contextlib.suppress(ValueError):
            if len(parts) == 2:
                rank, t = int(parts[0]), float(parts[1])
                noted[rank] = min(t, noted.get(rank, t))
    return noted


def cause(failed: list[tuple[float, int, int]], noted: dict[int, float]) -> tuple[float, int, int]:
    """Of the failed ranks ``(exit time, rank, code)``, the one whose failure the others died of: one killed by a
    signal from outside (not SIGABRT, which is how JAX's runtime ends a rank whose peer died), else the one that
    noted the earliest failure (the fail-fast hook notes it before the rank exits, and a rank that dies of a peer
    can only fail after it), else the first exit seen."""
    killed = [f for f in failed if f[2] < 0 and f[2] != -signal.SIGABRT]
    if killed:
        return min(killed)
    with_note = [f for f in failed if f[1] in noted]
    if with_note:
        return min(with_note, key=lambda f: noted[f[1]])
    return min(failed)
