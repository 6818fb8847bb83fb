"""Host memory on CPU devices is a setting of the process, documented in the layouts guide (xfft changes no
``malloc``): the guide's ``GLIBC_TUNABLES`` line makes a program's freed host buffers serve its next call (counted in
page faults, not timed), where glibc's defaults fault most of them in again."""

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

import xfft

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "layouts.md"

# A program whose output is 40 MiB per CPU device (glibc's default serves blocks above 32 MiB by mmap and unmaps
# them when freed): page faults per call, after twenty warm-up calls
# (the heap settles into the blocks the program reuses), with and without the guide's settings.
_SCRIPT = """
import resource
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((8,), ("x",))
x = jax.device_put(jnp.ones((8, 10 << 20), jnp.float32), NamedSharding(mesh, P("x")))
f = jax.jit(lambda a: 2 * a)
for _ in range(20):
    f(x).block_until_ready()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    y = f(x)
    y.block_until_ready()
    del y
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""

_GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _faults_per_call(tunables: str | None) -> float:
    env = dict(os.environ)
    env.pop("XFFT_TEST_COMPILES", None)
    env.pop("GLIBC_TUNABLES", None)
    if tunables is not None:
        env["GLIBC_TUNABLES"] = tunables
    p = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return float(p.stdout.split()[-1])


@pytest.mark.skipif(not _GLIBC, reason="glibc's malloc only (other C libraries ignore GLIBC_TUNABLES)")
def test_the_guides_settings_keep_freed_buffers_for_the_next_call():
    """With glibc's defaults each call faults in most of its 8 x 40 MiB output (10240 pages of 4 KiB per device,
    fewer where the kernel backs them with huge pages); with the guide's ``GLIBC_TUNABLES`` the next call reuses
    them: under 10 % of those pages per call (measured: 0 alone, up to 8 % with other processes computing beside
    it: the devices' threads share one heap, whose blocks then settle in a different order)."""
    (tunables,) = re.findall(r"^export GLIBC_TUNABLES=(\S+)$", GUIDE.read_text(), flags=re.M)
    assert set(re.findall(r"glibc\.malloc\.(\w+)=", tunables)) == {"arena_max", "mmap_max", "trim_threshold",
                                                                    "top_pad"}
    pages = 8 * (40 << 20) // 4096
    faults = _faults_per_call(tunables)
    assert faults < 0.1 * pages, (faults, pages)
    # The control: without it, the same program faults in at least half its output on every call (unless the
    # kernel backs every mapping with transparent huge pages, 512 times fewer faults).
    faults_default = _faults_per_call(None)
    if "[always]" not in _read("/sys/kernel/mm/transparent_hugepage/enabled"):
        assert faults_default > 0.5 * pages, (faults_default, pages)


def test_xfft_changes_no_malloc():
    """The process's allocator is no part of xfft's API: no function of it sets ``mallopt``."""
    assert not hasattr(xfft, "keep_host_memory")
    assert not any("malloc" in (getattr(xfft, name).__doc__ or "").lower() for name in xfft.__all__
                   if callable(getattr(xfft, name)))
