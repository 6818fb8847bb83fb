"""Snapshot script for the multi-process tests (run by ``xfft.launch``, never by pytest).

``python _snapshot_writer.py DIR``: every rank builds the same float32 Navier-Stokes state (random isotropic,
16^3, slab mesh over all devices), writes it as snapshot 0 of ``DIR``; then snapshot 1 with rank 1's block
file name taken by a directory (its write fails): every rank must report the same ``SnapshotError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from xfft import distributed as xd

xd.initialize()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import xfft  # noqa: E402
from solvers import NavierStokes, SpectralGrid  # noqa: E402
from solvers.io import SnapshotError, SnapshotWriter, load_snapshot  # noqa: E402

out = Path(sys.argv[1])
me = jax.process_index()
eq = NavierStokes(SpectralGrid(16, xfft.make_mesh("slab"), dtype=jnp.float32), nu=0.01)
state = eq.initial_state("random-isotropic", seed=5)
w = SnapshotWriter(out, eq, every=1)
w.after_step(state, 0, 0.0)
back = load_snapshot(out, "u", xfft.make_mesh("pencil"))  # each process reads only its blocks
ok = bool(jnp.array_equal(back, jax.sharding.reshard(eq.physical_fields(state)["u"], back.sharding)))
print(f"LOADED {ok} {back.sharding.spec}", flush=True)
if jax.process_count() > 1:
    if me == 1:
        (out / "snap_00001.p0001.h5").mkdir()
    xd.assert_same(True, "directory in place")
    try:
        w.after_step(state, 1, 0.5)
        print("NO-ERROR", flush=True)
    except SnapshotError as e:
        print(f"SNAPSHOT-ERROR {e}", flush=True)
print("DONE", flush=True)
