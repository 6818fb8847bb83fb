"""The README's Python example runs as written and computes what its comment says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_example_runs():
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## Ten lines\s+```python\n(.*?)```", text, re.S).group(1)
    code += (
        "\nerr = float(jnp.max(jnp.abs(dudx - jnp.cos(x) * jnp.cos(2 * y))))\n"
        "assert dudx.sharding.is_equivalent_to(s, 3), dudx.sharding\n"
        "assert err < 1e-5, err\nprint('README-OK', err)\n"
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    env.pop("JAX_ENABLE_X64", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "README-OK" in out.stdout
