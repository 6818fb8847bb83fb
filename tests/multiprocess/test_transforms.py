"""4 processes x 2 CPU devices: slab and pencil xfft3d/xrfft3d on a global array built from process-local data.

The script (``slurm/xfft_check.py``, also what the Slurm templates run) builds the field block by block on
each process and checks the spectra against the exact one and against numpy on gathered data; here the
saved spectra are also checked against numpy in the test process and against a 1-process x 8-device run.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _helpers import CHECK, launch  # noqa: E402

sys.path.insert(0, str(Path(CHECK).parent))
from xfft_check import field_block  # noqa: E402

pytestmark = pytest.mark.timeout(300)

SHAPE = (16, 16, 16)
KEYS = ("slab_xfft3d", "slab_xrfft3d", "pencil_xfft3d", "pencil_xrfft3d")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("mp")
    multi = launch(4, 2, CHECK, "--save", str(d / "4x2.npz"), timeout=200, deadline=180)
    single = launch(1, 8, CHECK, "--save", str(d / "1x8.npz"), timeout=120, deadline=100)
    return multi, single, d


def test_four_processes_pass_their_checks(runs):
    multi, _, _ = runs
    assert multi.code == 0, multi.out[-6000:]
    out = multi.out
    for rank in range(4):
        assert re.search(rf"^\[rank {rank}\] process {rank}/4 \(explicit\): 2 local of 8 devices", out, re.M), out
    for decomp in ("slab", "pencil"):
        for check in ("xmeshgrid", "xfft3d exact", "xfft3d numpy", "xfft3d d/dx", "xrfft3d exact",
                      "xrfft3d numpy", "xrfft3d d/dx"):
            m = re.search(rf"^\[rank 0\] xfft-check {decomp} {check}: max error (\S+) \(ok", out, re.M)
            assert m and float(m.group(1)) < 1e-9, (decomp, check, out[-4000:])
    # The spectra come back in the documented layouts, across processes.
    assert "xfft-check slab xfft3d: mesh {'x': 8}, spectrum sharding P(None, 'x', None)" in out
    assert "xfft-check pencil xfft3d: mesh {'x': 2, 'y': 4}, spectrum sharding P(None, 'x', 'y')" in out
    assert "[rank 0] xfft-check PASSED: 4 processes x 2 devices (cpu)" in out
    assert "xfft.launch: all 4 ranks exited 0" in out
    assert "[Gloo]" not in out  # Gloo's connection chatter is dropped by the launcher (XFFT_VERBOSE=1 keeps it)


def test_gathered_spectra_equal_numpy_and_single_process_run(runs):
    multi, single, d = runs
    assert multi.code == 0 and single.code == 0, (multi.out[-3000:], single.out[-3000:])
    assert "[rank 0] xfft-check PASSED: 1 processes x 8 devices (cpu)" in single.out
    a, b = np.load(d / "4x2.npz"), np.load(d / "1x8.npz")
    u = field_block(tuple(slice(0, n) for n in SHAPE), SHAPE)
    assert sorted(a.files) == sorted(KEYS)
    for key in KEYS:
        ref = np.fft.rfftn(u) if "xrfft" in key else np.fft.fftn(u)
        assert a[key].shape == ref.shape and a[key].dtype == np.complex128
        np.testing.assert_allclose(a[key], ref, rtol=0, atol=1e-10)
        # Same program on a different process count: same numbers (bitwise here; allow rounding).
        np.testing.assert_allclose(a[key], b[key], rtol=0, atol=1e-12)
