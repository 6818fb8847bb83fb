"""Checks inside jitted programs that report on the host, never by raising on a device.

A host callback that raises inside a multi-device program stops that device's program while its peers wait in
the next collective: XLA then aborts the whole process after its rendezvous timeout (measured on 8 CPU devices:
one call in a few dozen). So the checks of :func:`xfft.paint` and :func:`xfft.readout` under ``jit`` (a full
particle exchange buffer, a particle outside its halo) make the result NaN on the device and *record* their message
here from a callback that does not raise; :func:`check_errors` raises it on the host, where the caller can handle
it (the solvers' run loop calls it after every segment). Each message is also logged once (logger ``xfft``), so a
jitted program that never calls :func:`check_errors` still says why its result is NaN.
"""

from __future__ import annotations

import logging
import threading

import jax

_LOCK = threading.Lock()
_PENDING: list[str] = []
_LOGGED: set[str] = set()
_LOG = logging.getLogger("xfft")


def record(message: str) -> None:
    """Keep ``message`` for :func:`check_errors` (once while pending) and log it (once per process; called from
    host callbacks)."""
    with _LOCK:
        if message not in _PENDING:
            _PENDING.append(message)
        if message in _LOGGED:
            return
        _LOGGED.add(message)
    _LOG.error("%s (raised by xfft.check_errors())", message)


def recording(check):
    """The host callback that runs ``check(*args)`` and records the ``ValueError`` it raises instead of raising."""

    def callback(*args) -> None:
        try:
            check(*args)
        except ValueError as e:
            record(str(e))

    return callback


def check_errors() -> None:
    """Raise the error a check inside a jitted xfft program recorded since the last call, and forget it.

    Under ``jit``, :func:`xfft.paint` and :func:`xfft.readout` cannot raise when a particle exchange buffer is
    full or a particle lies outside its halo (a device that stopped alone would leave its peers waiting in the next
    collective); their result is NaN instead, and the message waits here. Call this after the jitted program (it
    waits for the program's host callbacks first). Outside ``jit`` the same checks raise at the call.

    Raises:
      ValueError: the first recorded message (with how many more there were).
    """
    jax.effects_barrier()
    with _LOCK:
        pending = _PENDING[:]
        _PENDING.clear()
    if pending:
        more = f" (and {len(pending) - 1} more error(s) recorded)" if len(pending) > 1 else ""
        raise ValueError(pending[0] + more)
