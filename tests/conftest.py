"""Test configuration: 8 virtual CPU devices and float64 enabled before JAX computes anything.

Tests always pass explicit dtypes; float64 is enabled so the float64 cases are real float64.
"""

import os
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flag = "--xla_force_host_platform_device_count=8"
if _flag not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

# JAX's persistent compilation cache, shared by the pytest workers and every process the tests start (CLI runs,
# notebook kernels, README blocks, ranks; they inherit these variables): a program compiled once is loaded, not
# compiled again, by the next test that builds the same program. Every distinct program is still compiled on a
# clean clone. Off with JAX_ENABLE_COMPILATION_CACHE=false; a JAX_COMPILATION_CACHE_DIR already set is kept. The
# size cap makes JAX lock the directory (filelock) while it reads and writes, which concurrent processes need.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.3")
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(4 << 30))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

assert jax.device_count() == 8, f"tests need 8 CPU devices, got {jax.devices()}"


_SERIAL_DIRS = {"multiprocess", "cluster"}


def pytest_collection_modifyitems(config, items):
    """Multi-process and cluster tests (their own processes, deadlines in seconds) are marked ``serial``:
    ``make test`` runs the rest on two pytest workers, then these alone (see the README, "Tests")."""
    import pytest

    here = Path(__file__).resolve().parent
    for item in items:
        path = Path(item.path).resolve()
        parts = path.relative_to(here).parts if path.is_relative_to(here) else ()
        if parts and parts[0] in _SERIAL_DIRS:
            item.add_marker(pytest.mark.serial)


# Opt-in accounting of where the suite's time goes: XFFT_TEST_COMPILES=FILE appends one JSON line per test (its
# node id, wall seconds, XLA programs compiled in this process, their compile seconds and tracing seconds) to FILE
# (every pytest worker appends to the same file). Subprocesses a test starts are not counted.
_COMPILES = os.environ.get("XFFT_TEST_COMPILES")
if _COMPILES:
    import json
    import time

    from jax import monitoring

    _tally = {"programs": 0, "compile_s": 0.0, "trace_s": 0.0, "cache_hits": 0}

    def _on_duration(event, duration, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            _tally["programs"] += 1
            _tally["compile_s"] += duration
        elif event == "/jax/core/compile/jaxpr_trace_duration":
            _tally["trace_s"] += duration

    def _on_event(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            _tally["cache_hits"] += 1

    monitoring.register_event_duration_secs_listener(_on_duration)
    monitoring.register_event_listener(_on_event)

    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        before, start = dict(_tally), time.perf_counter()
        yield
        row = {k: round(v - before[k], 2) for k, v in _tally.items()}
        row.update(test=item.nodeid, seconds=round(time.perf_counter() - start, 2))
        with open(_COMPILES, "a") as f:
            f.write(json.dumps(row) + "\n")
