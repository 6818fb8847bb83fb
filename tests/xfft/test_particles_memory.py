"""Bytes per particle of a particle-mesh step (``memory_analysis()`` of the compiled program), both designs.

The step is the one ``benchmarks/pm_step.py`` times: kick-drift-kick with one force per step (paint CIC, r2c,
``i k / -k^2`` per axis, c2r, one readout of the three components), float32, one particle per cell, here at 32^3
on a 2 x 4 mesh of 8 CPU devices. Through the particle exchange the step holds 146 bytes per particle at every size
measured (32^3 to 128^3; 151 before the receive buffer was read in blocks and grouped by a packed key); through
halos of 4 cells it holds 111 at 32^3 and less on larger blocks (80 at 128^3), where the halos weigh less.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh, put
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xfft

N = 32
DT = 0.1


def force(x: jax.Array, halo: int | None) -> jax.Array:
    """``grad(laplacian^-1 (rho - 1))`` at the particles, in cell units."""
    rho = xfft.paint(x, (N, N, N), halo=halo)
    rk = xfft.xrfftn(rho)
    spec = xfft.spectral_sharding(xfft.real_sharding(jax.typeof(x).sharding.mesh, (N, N, N)), (N, N, N), real=True)
    k = xfft.wavenumbers(spec, (N, N, N), real=True, box_length=float(N), dtype=jnp.float32)
    k2 = sum(ki * ki for ki in k)
    phi = rk * jnp.where(k2 > 0, -1 / jnp.where(k2 > 0, k2, 1), 0)
    g = [xfft.ixrfftn(jax.lax.complex(jnp.zeros_like(ki), ki) * phi, s=(N, N, N)) for ki in k]
    return xfft.readout(jnp.stack(g, -1), x, halo=halo)


def kdk(x, v, f, halo):
    v = v + 0.5 * DT * f
    x = x + DT * v
    f = force(x, halo)
    return x, v + 0.5 * DT * f, f


@pytest.mark.default_opt  # compiled as users compile it (the suite's fast-compile options fuse differently)
@pytest.mark.parametrize("halo,bound", [(None, 147.0), (4, 112.0)], ids=["exchange", "halo-4"])
def test_pm_step_bytes_per_particle(halo, bound):
    m = mesh((2, 4), "auto")  # (the spectrum's product of sharded wavenumbers is typed on an Explicit mesh)
    s = NamedSharding(m, P("x", "y"))
    x = put(np.zeros((N, N, N, 3), np.float32), s)
    with jax.set_mesh(m), jax.enable_x64(False):  # as a float32 PM code runs (64-bit indices would add 8 bytes)
        compiled = jax.jit(partial(kdk, halo=halo), donate_argnums=(0, 1, 2)).lower(x, x, x).compile()
    mem = compiled.memory_analysis()
    total = mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes - mem.alias_size_in_bytes
    per_particle = total * m.size / N**3
    assert 36 < per_particle <= bound, per_particle  # the state itself is 36 bytes: positions, velocities, forces
