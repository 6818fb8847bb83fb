"""Test configuration: 8 virtual CPU devices and float64 enabled before JAX computes anything.

Tests always pass explicit dtypes; float64 is enabled so the float64 cases are real float64.
"""

import os
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flag = "--xla_force_host_platform_device_count=8"
if _flag not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

# The suite compiles about 3000 XLA programs and spends most of its time doing so. Two XLA:CPU options compile the
# same HLO faster: LLVM optimization level 0, and the elemental IR emitters in place of the MLIR fusion emitters
# (which build an MLIR pipeline per fused kernel). Together they compile the suite's programs in about half the time
# of XLA's defaults (a 17x16x8 channel step program: 3.4-4.0 s against 5.6-6.1 s at level 0 alone), while the
# kernels run slower, which costs less in tests of small grids than it saves. Fusion, SPMD partitioning,
# collectives and buffer assignment, which the tests read, are HLO passes that run the same under both options.
# Values differ from the defaults only at round-off (no floating-point contraction at -O0); the tests that compare
# two different programs to the bit, and the few that run long loops of small kernels, are marked ``default_opt``
# and run with XLA's defaults in a subprocess (``pytest_pyfunc_call`` below). The suite with XLA's defaults:
# XFFT_TEST_XLA_OPT=default. Processes the tests start (CLI runs, notebook kernels, the docs' code) inherit the
# options: they share the programs that the persistent cache holds, which are keyed by the flags (a notebook that
# is listed in docs/_ext/notebook_kernel.py as mostly running kernels does not).
OPT0 = "--xla_backend_optimization_level=0"
FAST_COMPILE = (OPT0, "--xla_cpu_use_fusion_emitters=false")
if os.environ.get("XFFT_TEST_XLA_OPT", "0") == "0" and "xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += "".join(" " + f for f in FAST_COMPILE if f.split("=")[0] not in os.environ["XLA_FLAGS"])
_OPT0 = OPT0 in os.environ["XLA_FLAGS"].split()  # (pytest-xdist's workers inherit the flag from the controller)

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
    ``make test`` runs the rest on two pytest workers, then these, each file's tests on one worker (Makefile)."""
    import pytest

    here = Path(__file__).resolve().parent
    for item in items:
        path = Path(item.path).resolve()
        parts = path.relative_to(here).parts if path.is_relative_to(here) else ()
        if parts and parts[0] in _SERIAL_DIRS:
            item.add_marker(pytest.mark.serial)


def pytest_pyfunc_call(pyfuncitem):
    """A ``default_opt`` test, where the suite compiles with :data:`FAST_COMPILE`: run in a subprocess with XLA's
    defaults (its output shown if it fails), in place of the call here."""
    if not (_OPT0 and pyfuncitem.get_closest_marker("default_opt")):
        return None
    import re
    import subprocess
    import sys

    env = dict(os.environ, XFFT_TEST_XLA_OPT="default",
               XLA_FLAGS=" ".join(f for f in os.environ["XLA_FLAGS"].split() if f not in FAST_COMPILE))
    env.pop("XFFT_TEST_COMPILES", None)
    env.pop("PYTEST_ADDOPTS", None)  # (options such as -n that the one test's run does not take)
    root = Path(__file__).resolve().parents[1]
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        pyfuncitem.nodeid], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and re.search(r"^1 passed", p.stdout, re.M), \
        f"{pyfuncitem.nodeid} at XLA's default level:\n{p.stdout[-6000:]}\n{p.stderr[-3000:]}"
    return True


# Opt-in accounting of where the suite's time goes: XFFT_TEST_COMPILES=FILE appends one JSON line per test (its
# node id, wall seconds, XLA programs compiled in this process, their compile seconds and tracing seconds, and
# ``compiled``: each program's name, persistent-cache key and compile seconds, to see which programs recur across
# tests) to FILE (every pytest worker appends to the same file). Subprocesses a test starts are not counted.
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

    import logging
    import re as _re

    _programs: list = []  # [module name, cache key, compile seconds] of each program compiled in this test

    class _Programs(logging.Handler):
        def emit(self, record):
            msg = record.getMessage()
            m = _re.match(r"PERSISTENT COMPILATION CACHE MISS for '(.+?)' with key '(.+?)'", msg)
            if m:
                _programs.append([m.group(1), m.group(2)[-16:], None])
                return
            m = _re.match(r"Finished XLA compilation of (.+) in ([0-9.]+) sec", msg)
            if m and _programs and _programs[-1][2] is None:
                _programs[-1][2] = round(float(m.group(2)), 3)

    for _name in ("jax._src.compiler", "jax._src.dispatch"):
        _lg = logging.getLogger(_name)
        _lg.setLevel(logging.DEBUG)
        _lg.addHandler(_Programs(logging.DEBUG))
        _lg.propagate = False  # (their DEBUG records would otherwise fill the captured log of a failing test)

    monitoring.register_event_duration_secs_listener(_on_duration)
    monitoring.register_event_listener(_on_event)

    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        before, start = dict(_tally), time.perf_counter()
        yield
        row = {k: round(v - before[k], 2) for k, v in _tally.items()}
        row.update(test=item.nodeid, seconds=round(time.perf_counter() - start, 2), compiled=list(_programs))
        _programs.clear()
        with open(_COMPILES, "a") as f:
            f.write(json.dumps(row) + "\n")
