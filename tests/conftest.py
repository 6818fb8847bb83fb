"""Test configuration: 8 virtual CPU devices and float64 enabled before JAX computes anything.

Tests always pass explicit dtypes; float64 is enabled so the float64 cases are real float64.
"""

import os
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flag = "--xla_force_host_platform_device_count=8"
if _flag not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

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
