"""Bytes per particle of ``benchmarks/pm_step.py``'s particle-mesh step (``memory_analysis()`` of the compiled
program), both designs, at 32^3 particles on a 32^3 mesh of a 2 x 4 mesh of 8 CPU devices.

The step as the benchmark builds it (its own functions, imported): kick-drift-kick with one force per step (paint
CIC, r2c, ``i k / -k^2`` per axis, c2r, one readout of the three components), float32, one particle per cell.
Through the particle exchange it holds 126 to 127 bytes per particle at every size measured (32^3 to 128^3; 151
before the receive buffer was read in blocks, 135 before the exchange's zero buffers waited for their data): under
the 128 it is held to; through halos of 4 cells 111 at 32^3, and less on larger blocks (80 at 128^3), where the
halos weigh less.
"""

import sys
from functools import partial
from pathlib import Path

import jax
import numpy as np
import pytest
from helpers import mesh, put
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import pm_step  # noqa: E402

N = 32


@pytest.mark.default_opt  # compiled as users compile it (the suite's fast-compile options fuse differently)
@pytest.mark.parametrize("halo,bound", [(None, 128.0), (4, 112.0)], ids=["exchange", "halo-4"])
def test_pm_step_bytes_per_particle(halo, bound):
    m = mesh((2, 4), "auto")  # the benchmark's mesh (Auto axes)
    x = put(np.zeros((N, N, N, 3), np.float32), NamedSharding(m, P("x", "y")))
    with jax.set_mesh(m), jax.enable_x64(False):  # as a float32 PM code runs (64-bit indices would add 8 bytes)
        step = jax.jit(partial(pm_step.kdk, partial(pm_step.xfft_force, n=N, halo=halo)), donate_argnums=(0, 1, 2))
        per_particle = pm_step.bytes_per_particle(step, (x, x, x), N**3)
    assert 36 < per_particle < bound, per_particle  # the state itself is 36 bytes: positions, velocities, forces
