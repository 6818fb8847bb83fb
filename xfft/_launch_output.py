"""The launcher's output: each rank's streams copied as they arrive, ``[rank i]``-prefixed, Gloo's chatter dropped.

Used by :mod:`xfft.launch` (see its docstring for what the output looks like and why Gloo's lines need care).
"""

from __future__ import annotations

import codecs
import os
import re
import select
import sys
import threading
from typing import IO

# Gloo's connection message is written by several C++ threads, one ``<<`` at a time and unsynchronised, so the
# pieces of two messages can interleave on one line ("[Gloo] Rank [Gloo] Rank 23 is connected to ..."): a line
# made only of these pieces, numbers and spaces is Gloo's.
_GLOO_PIECES = ("[Gloo] Rank ", " is connected to ", " peer ranks. ", "Expected number of connected peer ranks is : ")
_GLOO_MARKS = (_GLOO_PIECES[0], _GLOO_PIECES[3])  # pieces no program prints by accident
_GLOO_FILLER = set("0123456789 \0")
PARTIAL_S = 0.05  # a partial line (no newline yet) is shown after this long without more output


class _Pump:
    """Copy one output stream of one rank to the launcher's stream as it arrives, with ``[rank i]`` prefixes.

    Text goes out as soon as it is read (partial lines included), so carriage-return progress bars stay live; a
    line that another rank left open is ended first, and this rank's next text gets its prefix again. ``quiet``
    holds back a line that may be Gloo's connection message until it is complete, and drops it if it is.
    """

    def __init__(self, rank: int, out: IO[str] | None, name: str, lock: threading.Lock, open_lines: dict,
                 quiet: bool) -> None:
        self.rank, self.out, self.name, self.lock = rank, out, name, lock
        self.open_lines, self.quiet = open_lines, quiet
        self.started = False  # this rank's current line is on the target (prefix written)
        self.broken = False  # another writer ended this rank's partial line with a newline

    def target(self) -> IO[str]:
        return self.out if self.out is not None else getattr(sys, self.name)  # notebooks replace sys.stdout

    def write(self, text: str, end: str) -> None:
        """Write ``text`` of the current line, then ``end`` (``""``, ``"\n"`` or ``"\r"``)."""
        with self.lock:
            target = self.target()
            _end_open_line(target, self.open_lines, keep=self)
            if self.broken and not text:
                self.broken = False
                return  # the rest of a line that another writer already ended
            self.broken = False
            if not (text or end == "\n" or self.started):
                return  # a carriage return with nothing on the line yet
            target.write(("" if self.started else f"[rank {self.rank}] ") + text + end)
            target.flush()
            self.started = end == ""  # after "\r" the next text starts at column 0: prefix again
            if end == "\n":
                self.open_lines.pop(id(target), None)
            else:
                self.open_lines[id(target)] = self  # no newline yet: another writer ends this line first

    def clean(self, text: str) -> str:
        """``text`` without pieces of Gloo's message written into it (``quiet`` only)."""
        return _strip_gloo(text) if self.quiet else text

    def close(self) -> None:
        """End this rank's open line, if any (the stream reached its end)."""
        with self.lock:
            target = self.target()
            if self.open_lines.get(id(target)) is self:
                _end_open_line(target, self.open_lines)

    def run(self, stream: IO[bytes]) -> None:
        """Copy ``stream`` until it ends: whole lines at once, a partial line after ``PARTIAL_S`` without more."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        fd = stream.fileno()
        line = ""  # text of the current line not yet written
        while True:
            if line and not select.select([fd], [], [], PARTIAL_S)[0]:
                # Nothing more for a moment (a progress bar, print(..., end="")): show what there is, unless it
                # may still become a Gloo line.
                if not (self.quiet and not self.started and _may_be_gloo(line)):
                    self.write(self.clean(line), "")
                    line = ""
                    continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            for piece in re.split(r"([\r\n])", decoder.decode(chunk, final=not chunk)):
                if piece in ("\n", "\r"):
                    if not (self.quiet and not self.started and _is_gloo(line)):
                        self.write(self.clean(line), piece)
                    line = ""
                else:
                    line += piece
            if not chunk:
                break
        if line:
            self.write(self.clean(line), "\n")
        self.close()
        stream.close()


def _gloo_residue(line: str) -> str:
    for piece in _GLOO_PIECES:
        line = line.replace(piece, "\0")
    return line


def _may_be_gloo(line: str) -> bool:
    """True when the partial line ``line`` may still become a Gloo connection line."""
    rest = _gloo_residue(line)
    for cut in range(min(len(rest), max(map(len, _GLOO_PIECES))), 0, -1):  # a piece still being written
        if any(piece.startswith(rest[-cut:]) for piece in _GLOO_PIECES):
            rest = rest[:-cut]
            break
    return set(rest) <= _GLOO_FILLER


def _strip_gloo(line: str) -> str:
    """``line`` without the pieces of Gloo's message that a C++ thread wrote into the program's own line.

    Gloo's threads write to the same stdout as the program, unsynchronised, so a printed line can come out as
    ``"[Gloo] Rank LOADED True"`` (the rest of Gloo's message on the next line, which :func:`_is_gloo` drops).
    Only a line that holds one of Gloo's unmistakable pieces (``"[Gloo] Rank "``, ``"Expected number of ..."``)
    loses them; other text that happens to read ``" is connected to "`` is kept.
    """
    if not any(piece in line for piece in _GLOO_MARKS):
        return line
    for piece in _GLOO_PIECES:
        line = line.replace(piece, "")
    return line


def _is_gloo(line: str) -> bool:
    """True when the whole line ``line`` is made only of Gloo's connection message (or pieces of it)."""
    rest = _gloo_residue(line)
    return "\0" in rest and set(rest) <= _GLOO_FILLER


def _end_open_line(target: IO[str], open_lines: dict, keep: _Pump | None = None) -> None:
    """Write the newline that a rank's partial line on ``target`` still lacks (unless ``keep`` owns it).

    Call with the output lock held.
    """
    other = open_lines.get(id(target))
    if other is not None and other is not keep:
        target.write("\n")
        target.flush()
        other.started = False
        other.broken = True
        del open_lines[id(target)]
