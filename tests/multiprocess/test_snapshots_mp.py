"""Snapshots from 4 processes x 2 devices hold the same bytes per field as from 1 process x 8 devices; a write that
fails on one rank is a clear error on every rank (no hang)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _helpers import launch  # noqa: E402

pytestmark = pytest.mark.timeout(300)
SCRIPT = str(Path(__file__).with_name("_snapshot_writer.py"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script on 4 processes x 2 devices and on 1 process x 8 devices, both with XLA's default compile options
    (the bytes are compared: with the suite's options, tests/conftest.py, the state built with 2 devices per
    process differs from the one built with 8 at round-off)."""
    d = tmp_path_factory.mktemp("snap-mp")
    defaults = {"XLA_FLAGS": ""}  # (the launcher adds each rank's device count)
    multi = launch(4, 2, SCRIPT, str(d / "4x2"), timeout=150, deadline=120, env=defaults)
    single = launch(1, 8, SCRIPT, str(d / "1x8"), timeout=150, deadline=120, env=defaults)
    assert single.code == 0, single.out[-6000:]
    return multi, d


def test_every_rank_writes_its_blocks_and_reads_them_back(runs):
    multi, d = runs
    assert multi.code == 0, multi.out[-6000:]
    for rank in range(4):
        # (whole: Gloo's C++ threads print on a pipe of their own, test_launch.py; before, a rank's line once
        # came out as "[rank 3] 1LOADED True ...", CI 2026-11-24)
        assert re.search(rf"^\[rank {rank}\] LOADED True P\('x', 'y', None\)$", multi.out, re.M), \
            multi.out[-3000:]
        with h5py.File(d / "4x2" / f"snap_00000.p{rank:04d}.h5") as f:
            assert set(f["u"]) == {f"{4 * rank}_0_0", f"{4 * rank + 2}_0_0"}  # two slabs of 2 planes each


def test_four_by_two_writes_the_same_bytes_as_one_by_eight(runs):
    _, d = runs
    with h5py.File(d / "4x2" / "snap_00000.h5") as a, h5py.File(d / "1x8" / "snap_00000.h5") as b:
        assert sorted(a) == sorted(b) and len(a) == 8  # 7 fields and the axis points
        for name in a["coordinates"]:
            assert a["coordinates"][name][...].tobytes() == b["coordinates"][name][...].tobytes(), name
        for name in sorted(set(a) - {"coordinates"}):
            x, y = a[name][...], b[name][...]
            assert x.dtype == np.float32 and x.shape == (16, 16, 16)
            assert x.tobytes() == y.tobytes(), name
            assert np.isfinite(x).all() and np.abs(x).max() > 0


def test_a_failed_write_on_one_rank_is_an_error_on_every_rank(runs):
    multi, _ = runs
    for rank in range(4):
        line = next((ln for ln in multi.out.splitlines() if ln.startswith(f"[rank {rank}] SNAPSHOT-ERROR")), None)
        assert line is not None, multi.out[-4000:]
        assert "writing its blocks of snapshot 1 (step 1)" in line and "failed on process 1" in line
        assert f"[rank {rank}] DONE" in multi.out
    assert "IsADirectoryError" in multi.out or "Is a directory" in multi.out  # rank 1 names the cause
