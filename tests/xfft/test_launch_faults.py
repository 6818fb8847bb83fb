"""Which rank of a failed launch is named as the cause: the fault log and the choice, without processes.

The multi-process fault tests (``tests/multiprocess/test_faults.py``) run the real thing; there the order in
which ranks die depends on the machine's scheduling, which is why the launcher does not trust it. Here each case
is the order that misled it, written down."""

import signal

from xfft._launch_faults import ENV_FAULT_LOG, cause, faults, note_fault


def test_noted_failure_wins_over_a_victim_that_exited_first():
    # rank 2 raised (noted at 100.0) but exited after rank 0, which died of it in a collective (noted later)
    failed = [(5.0, 0, 1), (5.3, 2, 1)]
    assert cause(failed, {2: 100.0, 0: 100.2}) == (5.3, 2, 1)


def test_a_rank_killed_from_outside_wins_over_victims_that_noted_their_errors():
    # rank 1 was SIGKILLed (it notes nothing); ranks 0 and 2 noted the collective errors it caused; one of them
    # died by JAX's runtime abort, which is not a cause
    failed = [(5.0, 2, 1), (5.01, 0, -signal.SIGABRT), (5.2, 1, -signal.SIGKILL)]
    assert cause(failed, {2: 100.0}) == (5.2, 1, -signal.SIGKILL)


def test_without_notes_the_first_exit():
    assert cause([(5.2, 3, 1), (5.0, 1, 1)], {}) == (5.0, 1, 1)
    assert cause([(5.2, 3, 1), (5.0, 1, -signal.SIGABRT)], {}) == (5.0, 1, -signal.SIGABRT)


def test_fault_log_written_by_ranks_and_read_by_the_launcher(tmp_path, monkeypatch):
    log = tmp_path / "faults"
    monkeypatch.setenv(ENV_FAULT_LOG, str(log))
    note_fault(3)
    note_fault(1)
    note_fault(3)  # a second note of a rank keeps its first time
    with open(log, "a") as f:
        f.write("\ngarbage\n2 x\n")  # (nothing else is ever written; not a reason to fail)
    noted = faults(str(log))
    assert sorted(noted) == [1, 3] and noted[3] <= noted[1]
    assert faults(str(tmp_path / "missing")) == {}
    monkeypatch.delenv(ENV_FAULT_LOG)
    note_fault(0)  # outside a launch: nothing, no error
    assert sorted(faults(str(log))) == [1, 3]


def test_a_rank_ended_by_its_watchdog_notes_its_failure(tmp_path):
    """A stuck rank's watchdog notes the rank in the fault log before it exits with 124: its peers then die of
    the closed connection (and note their errors, and may exit first), and the launcher must name the stuck rank
    (a fault test had named a peer)."""
    import os
    import subprocess
    import sys
    import textwrap

    log = tmp_path / "faults"
    script = textwrap.dedent("""
        import time
        from types import SimpleNamespace
        import xfft.distributed._init as init
        from xfft.distributed import Watchdog
        init._SPEC = SimpleNamespace(multi_process=True, process_id=2, num_processes=4)  # as rank 2 of 4
        Watchdog(0.3).start()
        time.sleep(30)
    """)
    env = dict(os.environ, **{ENV_FAULT_LOG: str(log)})
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 124, done.stderr[-2000:]
    assert "[xfft rank 2/4] watchdog: no progress" in done.stderr
    noted = faults(str(log))
    assert list(noted) == [2]
    assert cause([(5.0, 1, 1), (5.1, 2, 124)], {**noted, 1: noted[2] + 0.5}) == (5.1, 2, 124)
