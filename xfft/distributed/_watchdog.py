"""The watchdog: end a rank that stops making progress (stuck in a collective, deadlocked)."""

from __future__ import annotations

import faulthandler
import math
import os
import sys
import threading
import time

from ._detect import _int
from ._init import _rank_tag, note_own_fault


class Watchdog:
    """End this process if :meth:`kick` is not called for ``timeout_s`` seconds (a stuck rank).

    A rank that is alive but stuck (a deadlock, a collective that another rank never joins) is invisible to
    heartbeats. Kick the watchdog once per step; when a step takes too long it prints which rank stalled and
    every thread's stack, then calls ``os._exit(exit_code)`` so the launcher stops the whole run::

        with Watchdog(120) as dog:
            for step in range(n):
                state = advance(state)
                dog.kick()

    Args:
      timeout_s: seconds allowed between kicks (and from :meth:`start` to the first kick).
      exit_code: process exit status when it fires (default 124, like ``timeout``).

    Raises:
      ValueError: ``timeout_s`` is not positive.
    """

    def __init__(self, timeout_s: float, *, exit_code: int = 124) -> None:
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
            raise TypeError(f"timeout_s must be a number of seconds, got {timeout_s!r}")
        if not timeout_s > 0 or math.isinf(timeout_s):
            raise ValueError(f"timeout_s must be positive and finite, got {timeout_s}")
        self.timeout_s = float(timeout_s)
        self.exit_code = _int(exit_code, "exit_code", 1)
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.kicks = 0

    def start(self) -> Watchdog:
        """Start watching (the first period starts now). Returns ``self``."""
        if self._thread is None:
            self._last = time.monotonic()
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="xfft-watchdog", daemon=True)
            self._thread.start()
        return self

    def kick(self) -> None:
        """Record progress: the next ``timeout_s`` seconds start now."""
        self._last = time.monotonic()
        self.kicks += 1

    def stop(self) -> None:
        """Stop watching (the process is no longer ended)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _watch(self) -> None:
        while not self._stop.wait(min(1.0, self.timeout_s / 4)):
            idle = time.monotonic() - self._last
            if idle > self.timeout_s:
                try:
                    note_own_fault()  # before the peers' collectives fail on its exit (xfft.launch names it)
                    sys.stdout.flush()
                    sys.stderr.write(f"{_rank_tag()} watchdog: no progress for {idle:.1f} s (limit "
                                     f"{self.timeout_s:g} s, {self.kicks} kicks so far); this rank is stuck. "
                                     f"Stacks of all threads follow; exiting with code {self.exit_code}\n")
                    sys.stderr.flush()
                    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                    sys.stderr.flush()
                finally:
                    os._exit(self.exit_code)

