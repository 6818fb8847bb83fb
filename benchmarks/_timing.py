"""Shared by the benchmark scripts: 8 CPU devices and float64 before JAX starts, round-robin medians.

Import it before ``jax`` (``benchmarks/`` is the running script's directory, so ``import _timing`` works).
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
sys.path.insert(0, str(HERE.parent))  # the checkout's packages, also before `pip install -e .` ran


def round_robin(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each zero-argument callable (which must block until its result is ready): one warm-up
    call each, then ``repeats`` rounds in which the cases take turns, so a change of load hits all of them."""
    return {k: statistics.median(v) for k, v in round_robin_samples(cases, repeats).items()}


def round_robin_samples(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """The seconds of every round of :func:`round_robin` (round ``i`` of every case at index ``i``), for ratios
    taken within a round."""
    for fn in cases.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeats):
        for k, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return times


def paired_ratio(num: list[float], den: list[float]) -> dict[str, float]:
    """Median and quartiles of the per-round ratios ``num[i] / den[i]``: a slow spell of the machine hits both
    halves of a ratio, so these vary less than a ratio of medians."""
    r = sorted(a / b for a, b in zip(num, den, strict=True))
    q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
    return {"median": statistics.median(r), "q1": q[0], "q3": q[2]}


def uptime() -> str:
    """``uptime``'s line (the load averages a result records beside its times), or the load averages alone where
    the command is missing."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux; ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_info(load_before: str) -> dict:
    """What every result records beside its numbers: the date, the machine and its devices, the load before
    (``load_before``, :func:`uptime` taken before the measurements) and now, and JAX's version."""
    import jax

    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()} ({cpu_model()}), {os.cpu_count()} cores, {jax.device_count()} "
                       f"{jax.devices()[0].platform} devices",
            "load": {"before": load_before, "after": uptime()},
            "jax": jax.__version__}
