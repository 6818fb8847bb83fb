"""xfft.autotune: every decomposition the devices allow, the fastest chosen, the timings cached per machine kind."""

import json

import jax
import numpy as np
import pytest

import xfft
from xfft._autotune import Candidate, mesh_shapes


def test_candidates_and_the_choice_with_injected_timings(tmp_path):
    assert mesh_shapes(8) == [(8,), (2, 4), (4, 2)] and mesh_shapes(6) == [(6,), (2, 3), (3, 2)]
    cache = tmp_path / "cache.json"
    seen = []

    def timer(c: Candidate) -> float:
        seen.append(c)
        return 1.0 if c.mesh_shape != (4, 2) or c.order != "transposed" else 0.25

    t = xfft.autotune((32, 32, 32), "float32", backends=("native",), cache=cache, timer=timer)
    assert len(seen) == 6 and not t.cached
    assert t.best == Candidate((4, 2), "transposed", "native") and t.order == "transposed"
    assert tuple(t.mesh.axis_sizes) == (4, 2)
    stored = json.loads(cache.read_text())[t.key]
    assert stored["choice"] == {"mesh": [4, 2], "order": "transposed", "backend": "native"}
    assert sorted(e["seconds"] for e in stored["timings"]) == [0.25] + [1.0] * 5
    again = xfft.autotune((32, 32, 32), "float32", backends=("native",), cache=cache, timer=lambda c: 1 / 0)
    assert again.cached and again.best == t.best  # the cache answers: nothing is timed
    assert t.key.startswith(f"{jax.devices()[0].device_kind}|8|32x32x32|float32|rfft3")


def test_real_timings_on_this_machine(tmp_path):
    """Runs every candidate of the native backend for real (a small grid): each is timed, the fastest is returned.
    (The enumeration over backends is the injected-timings test's.)"""
    t = xfft.autotune((16, 16, 16), "float32", backends=("native",), cache=False, repeats=2)
    ran = [e for e in t.timings if e["seconds"] is not None]
    assert len(ran) >= 6 and all(np.isfinite(e["seconds"]) and e["seconds"] > 0 for e in ran)
    assert min(ran, key=lambda e: e["seconds"])["mesh"] == list(t.best.mesh_shape)
    x = jax.jit(lambda: jax.numpy.ones((16, 16, 16)), out_shardings=xfft.real_sharding(t.mesh, (16, 16, 16)))()
    k = xfft.xrfftn(x, order=t.order)
    np.testing.assert_allclose(np.asarray(xfft.ixrfftn(k, s=(16, 16, 16), order=t.order)), 1.0, rtol=1e-6)


@pytest.mark.parametrize("kw, message", [
    (dict(shape=()), "shape"), (dict(ndim=4), "ndim"), (dict(repeats=0), "repeats"),
    (dict(orders=("sideways",)), "orders"), (dict(step=lambda m, c: None), "name"),
])
def test_bad_arguments_name_themselves(kw, message):
    args = {"shape": (16, 16, 16), **kw}
    with pytest.raises(ValueError, match=message):
        xfft.autotune(args.pop("shape"), cache=False, **args)
