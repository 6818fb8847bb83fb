"""Test configuration: 8 virtual CPU devices and float64 enabled before JAX computes anything.

Tests always pass explicit dtypes; float64 is enabled so the float64 cases are real float64.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flag = "--xla_force_host_platform_device_count=8"
if _flag not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

assert jax.device_count() == 8, f"tests need 8 CPU devices, got {jax.devices()}"
