"""Subprocess helpers for the multi-process tests: hard deadlines, never a stray process left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAULT = str(Path(__file__).with_name("_fault.py"))
CHECK = str(ROOT / "slurm" / "xfft_check.py")


@dataclass
class Result:
    code: int
    out: str
    wall: float
    end: float  # time.time() when the process was seen to exit


def run(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> Result:
    """Run ``cmd`` (stdout+stderr merged) under a hard deadline; on expiry SIGTERM (the launcher then stops
    its ranks), then SIGKILL, and fail the test."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                         env=env, stdin=subprocess.DEVNULL)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        pytest.fail(f"{cmd} did not finish within {timeout} s:\n{out[-5000:]}")
    return Result(p.returncode, out, time.monotonic() - t0, time.time())


def launch(nprocs: int, devices: int, script: str, *args: str, timeout: float = 120, deadline: float = 100,
           env: dict[str, str] | None = None) -> Result:
    """``python -m xfft.launch -n nprocs --devices-per-process devices --timeout deadline script args``."""
    cmd = [sys.executable, "-m", "xfft.launch", "-n", str(nprocs), "--devices-per-process", str(devices),
           "--timeout", str(deadline), script, *args]
    return run(cmd, timeout, None if env is None else {**os.environ, **env})


@contextlib.contextmanager
def process_groups(procs: list[subprocess.Popen]):
    """Yield ``procs``; on the way out SIGKILL each one's process group (started with a new session)."""
    try:
        yield procs
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
