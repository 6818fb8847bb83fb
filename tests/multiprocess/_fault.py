"""Fault-injection script for the multi-process tests (run by ``xfft.launch`` or directly, never by pytest).

``python _fault.py MODE RANK``: every rank initializes, runs one slab ``xfft3d``, then rank ``RANK`` misbehaves
while the others keep transforming (so they wait on it inside collectives):

* ``raise``: raises ``RuntimeError``;
* ``kill``: sends itself SIGKILL;
* ``kill-idle``: sends itself SIGKILL while the others sleep outside any collective (only the heartbeat
  can tell them);
* ``shape``: builds its field with a different global shape than the other ranks;
* ``stuck``: sleeps, alive but making no progress (every rank runs a 4 s :class:`Watchdog`, unless
  ``--no-watchdog`` is given);
* ``late:SECONDS``: finishes normally, but only after SECONDS of extra work after the last collective;
* ``ok``: nothing goes wrong.

Each rank prints ``FAULT-AT <unix time>`` just before its fault, so the test can time the shutdown.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

from xfft import distributed as xd

mode, bad = sys.argv[1], int(sys.argv[2])
watchdog = "--no-watchdog" not in sys.argv
spec = xd.initialize()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import xfft  # noqa: E402

me = jax.process_index()
mesh = xfft.make_mesh("slab")
shape = (16, 16, 16)
rs = xfft.real_sharding(mesh, shape)
dog = xd.Watchdog(4.0).start() if mode == "stuck" and watchdog else None
u = xd.global_array(shape, rs, lambda idx: np.ones([s.stop - s.start for s in idx]), np.float32)
xfft.xfft3d(u).block_until_ready()
print(f"rank {me} warm", flush=True)

if mode.startswith("late:"):
    if me == bad:
        time.sleep(float(mode.split(":")[1]))
    print(f"rank {me} done", flush=True)
    sys.exit(0)
if me == bad:
    print(f"FAULT-AT {time.time():.3f}", flush=True)
    if mode == "raise":
        raise RuntimeError(f"injected failure on rank {me}")
    if mode in ("kill", "kill-idle"):
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "stuck":
        time.sleep(3600)
    if mode == "shape":
        shape = (16, 16, 8)
if mode == "kill-idle":
    time.sleep(120)
for _step in range(100):
    v = xd.global_array(shape, rs, lambda idx: np.ones([s.stop - s.start for s in idx]), np.float32) \
        if mode == "shape" else u
    k = xfft.xfft3d(v)
    total = float(jnp.max(jnp.abs(k)))
    assert total == np.prod(shape), total
    if dog is not None:
        dog.kick()
    time.sleep(0.05)
print(f"rank {me} done", flush=True)
