"""Faults in multi-process runs end the whole run fast, with the failing rank named: never a hang.

Each case runs ``_fault.py`` (4 processes x 2 CPU devices; the healthy ranks wait on the faulty one inside
``xfft3d``'s all-to-all) under a hard subprocess deadline. ``FAULT-AT`` is the fault's wall-clock time.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _helpers import FAULT, ROOT, launch, process_groups  # noqa: E402

from xfft.launch import free_port, rank_env  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def _fault_time(out: str) -> float:
    m = re.search(r"FAULT-AT (\d+\.\d+)", out)
    assert m, out[-4000:]
    return float(m.group(1))


def test_raising_rank_stops_run_within_20s_and_is_named():
    r = launch(4, 2, FAULT, "raise", "2", timeout=90, deadline=60)
    took = r.end - _fault_time(r.out)
    print(f"raise: launcher exited {took:.2f} s after the exception")
    assert r.code == 1, r.out[-4000:]
    assert took < 20, (took, r.out[-4000:])
    assert re.search(r"^xfft\.launch: rank 2 exited with code 1 after", r.out, re.M), r.out[-4000:]
    assert "xfft.launch: FAILED: rank 2 exited with code 1" in r.out
    assert "[rank 2] [xfft rank 2/4] uncaught RuntimeError" in r.out
    assert "[rank 2] RuntimeError: injected failure on rank 2" in r.out
    assert "rank 0 done" not in r.out


def test_sigkilled_rank_stops_run_within_30s():
    r = launch(4, 2, FAULT, "kill", "1", timeout=90, deadline=60)
    took = r.end - _fault_time(r.out)
    print(f"kill -9: launcher exited {took:.2f} s after the kill")
    assert r.code == 128 + 9, r.out[-4000:]
    assert took < 30, (took, r.out[-4000:])
    assert "xfft.launch: FAILED: rank 1 was killed by SIGKILL" in r.out


@pytest.mark.parametrize("mode,bad", [("kill", 1), ("kill", 0), ("raise", 3), ("kill-idle", 1)])
def test_without_launcher_all_ranks_exit_within_30s(mode, bad):
    """Plain processes (as under srun without --kill-on-bad-exit): initialize()'s fail-fast defaults alone
    bring every rank down; the coordinator (rank 0) may be the one that dies. With ``kill-idle`` the others
    are not in a collective, and the 10 s heartbeat timeout must catch it (JAX's default: 100 s)."""
    addr = f"127.0.0.1:{free_port()}"
    cmd = [sys.executable, "-u", FAULT, mode, str(bad)]
    procs = [subprocess.Popen(cmd, env=rank_env(r, 4, addr, 2, "cpu"), cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True) for r in range(4)]
    with process_groups(procs):
        t0 = time.monotonic()
        fault_seen = None
        while time.monotonic() - t0 < 90 and any(p.poll() is None for p in procs):
            if fault_seen is None and procs[bad].poll() is not None:
                fault_seen = time.monotonic()
            time.sleep(0.05)
        end = time.monotonic()
        codes = [p.poll() for p in procs]
    assert fault_seen is not None and None not in codes, f"ranks still running after 90 s: {codes}"
    print(f"{mode} rank {bad} without launcher: all exited {end - fault_seen:.2f} s later, codes {codes}")
    assert end - fault_seen < 30, codes
    assert all(c != 0 for c in codes), codes
    assert codes[bad] == (1 if mode == "raise" else -9), codes


def test_processes_disagreeing_on_shape_get_a_clear_error():
    r = launch(4, 2, FAULT, "shape", "3", timeout=90, deadline=60)
    assert r.code == 1, r.out[-4000:]
    # Every rank raises the same readable error (no hang, no mismatched collective).
    for rank in range(4):
        assert re.search(rf"^\[rank {rank}\] ValueError: processes disagree on global_array\(shape, dtype, "
                         r"sharding\): processes 0,1,2: \(\(16, 16, 16\).*process 3: \(\(16, 16, 8\)", r.out,
                         re.M), r.out[-4000:]
    assert "xfft.launch: FAILED: rank" in r.out


def test_stuck_rank_is_ended_by_watchdog():
    r = launch(4, 2, FAULT, "stuck", "2", timeout=90, deadline=60)
    took = r.end - _fault_time(r.out)
    print(f"stuck: watchdog ended the run {took:.2f} s after rank 2 stopped")
    assert r.code == 124, r.out[-4000:]
    assert took < 20, took
    assert re.search(r"\[xfft rank 2/4\] watchdog: no progress for \S+ s \(limit 4 s", r.out), r.out[-4000:]
    assert re.search(r'File ".*_fault\.py", line \d+ in <module>', r.out), r.out[-4000:]  # stacks dumped


def test_launcher_deadline_kills_a_hanging_run():
    r = launch(2, 1, FAULT, "stuck", "1", "--no-watchdog", timeout=60, deadline=8)
    assert r.code == 124, r.out[-4000:]
    assert r.wall < 30, r.wall
    assert re.search(r"xfft\.launch: timeout: ranks \[[01, ]+\] still running after the 8 s deadline", r.out)


def test_rank0_epilogue_shorter_than_shutdown_timeout_is_fine():
    """Ranks that finish first wait for the others at exit for up to ``XFFT_SHUTDOWN_TIMEOUT`` seconds."""
    r = launch(2, 1, FAULT, "late:2", "0", timeout=60, deadline=45, env={"XFFT_SHUTDOWN_TIMEOUT": "8"})
    assert r.code == 0, r.out[-4000:]
    assert "[rank 0] rank 0 done" in r.out and "[rank 1] rank 1 done" in r.out
