"""``xfft.distributed``: launcher detection (fake environments), device choice, helpers, fail-fast hooks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest

import xfft
from xfft import distributed as xd

PORT = 61440  # coordinator ports derived from Slurm job ids start here

SLURM = {"SLURM_JOB_ID": "1234", "SLURM_STEP_ID": "0", "SLURM_PROCID": "2", "SLURM_LOCALID": "2",
         "SLURM_NODEID": "0", "SLURM_STEP_NODELIST": "localhost", "SLURM_STEP_NUM_TASKS": "4",
         "SLURM_STEP_TASKS_PER_NODE": "4", "SLURM_NTASKS": "4"}


def test_nothing_set_is_a_single_process():
    spec = xd.detect({})
    assert spec == xd.ClusterSpec("single", 1, 0)
    assert not spec.multi_process


def test_explicit_environment_as_set_by_the_launcher():
    env = {"XFFT_COORDINATOR_ADDRESS": "10.0.0.1:1234", "XFFT_NUM_PROCESSES": "4", "XFFT_PROCESS_ID": "3",
           "XFFT_CPU_DEVICES": "2", "XFFT_LOCAL_DEVICE_IDS": "6, 7"}
    spec = xd.detect(env)
    assert (spec.method, spec.num_processes, spec.process_id) == ("explicit", 4, 3)
    assert spec.coordinator_address == "10.0.0.1:1234"
    assert spec.cpu_devices == 2 and spec.local_device_ids == (6, 7)
    # Arguments win over the environment, field by field.
    spec = xd.detect(env, process_id=0, local_device_ids=1, cpu_devices=4)
    assert (spec.process_id, spec.local_device_ids, spec.cpu_devices) == (0, (1,), 4)


def test_slurm_one_node_four_tasks():
    spec = xd.detect(SLURM)
    assert (spec.method, spec.num_processes, spec.process_id) == ("slurm", 4, 2)
    assert spec.coordinator_address == f"localhost:{PORT + 1234}"
    assert (spec.local_rank, spec.local_size) == (2, 4)
    assert spec.local_device_ids == (2,)  # one GPU per process, as JAX does
    # Another step of the same job gets another port; JAX_COORDINATOR_PORT overrides.
    assert xd.detect({**SLURM, "SLURM_STEP_ID": "1"}).coordinator_address != spec.coordinator_address
    assert xd.detect({**SLURM, "JAX_COORDINATOR_PORT": "5555"}).coordinator_address == "localhost:5555"


def test_slurm_batch_script_itself_is_one_process():
    env = {k: v for k, v in SLURM.items() if not k.startswith("SLURM_STEP")}
    assert xd.detect(env).method == "single"


@pytest.mark.parametrize("extra,per_node,local_rank,want", [
    ({"SLURM_GPUS_ON_NODE": "4"}, "1(x2)", 0, None),           # one process per node: all its GPUs
    ({"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, "1(x2)", 0, None),
    ({"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, "4(x2)", 3, (3,)),   # one process per GPU
    ({"SLURM_GPUS_ON_NODE": "4"}, "4(x2)", 1, (1,)),
    ({"CUDA_VISIBLE_DEVICES": "5"}, "4(x2)", 3, None),         # Slurm bound one GPU per task: use it
    ({"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}, "4(x2)", 2, (4, 5)),
])
def test_slurm_gpu_choice(extra, per_node, local_rank, want):
    env = {**SLURM, **extra, "SLURM_STEP_TASKS_PER_NODE": per_node, "SLURM_LOCALID": str(local_rank),
           "SLURM_NODEID": "1", "SLURM_STEP_NODELIST": "localhost,localhost"}
    assert xd.detect(env).local_device_ids == want


def test_slurm_gpus_that_cannot_be_shared_evenly():
    env = {**SLURM, "CUDA_VISIBLE_DEVICES": "0,1,2"}
    with pytest.raises(ValueError, match="cannot share evenly.*local_device_ids"):
        xd.detect(env)


@pytest.mark.parametrize("nodelist,first", [
    ("node001", "node001"), ("node001,host2", "node001"), ("gpu[003-010,020],cpu1", "gpu003"),
    ("n[7,9]", "n7"), ("rack[1-2]-n[05-06]", "rack1-n05"),
])
def test_first_host_of_a_slurm_node_list(nodelist, first):
    assert xd._detect._first_host(nodelist) == first
    spec = xd.detect({**SLURM, "SLURM_STEP_NODELIST": nodelist}, resolve=False)
    assert spec.coordinator_address == f"{first}:{PORT + 1234}"


def test_unresolvable_node_name_uses_slurm_node_addr(monkeypatch):
    env = {**SLURM, "SLURM_STEP_NODELIST": "xfft-no-such-node[1-2]"}
    monkeypatch.setattr(xd._detect, "_slurm_node_addr",
                        lambda node: "127.0.0.1" if node == "xfft-no-such-node1" else None)
    assert xd.detect(env).coordinator_address == f"127.0.0.1:{PORT + 1234}"
    monkeypatch.setattr(xd._detect, "_slurm_node_addr", lambda node: None)
    with pytest.raises(RuntimeError, match="cannot resolve the Slurm node name 'xfft-no-such-node1'.*"
                                           "XFFT_COORDINATOR_ADDRESS"):
        xd.detect(env)
    # An explicit address needs no resolution.
    assert xd.detect(env, coordinator_address="10.1.1.1:99").coordinator_address == "10.1.1.1:99"


def test_open_mpi():
    env = {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
           "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_MCA_orte_hnp_uri": "1531576320.0;tcp://10.96.0.1,10.1.0.1:34911"}
    spec = xd.detect(env)
    assert (spec.method, spec.num_processes, spec.process_id) == ("ompi", 2, 1)
    assert spec.coordinator_address == f"10.96.0.1:{PORT + (1531576320 // 4096) % 4096}"
    assert spec.local_device_ids == (1,)
    del env["OMPI_MCA_orte_hnp_uri"]  # Open MPI 5 publishes no address
    with pytest.raises(ValueError, match="XFFT_COORDINATOR_ADDRESS"):
        xd.detect(env)
    assert xd.detect({**env, "XFFT_COORDINATOR_ADDRESS": "h:1"}).coordinator_address == "h:1"


@pytest.mark.parametrize("kwargs,env,exc,match", [
    ({"num_processes": 2, "process_id": 2, "coordinator_address": "h:1"}, {}, ValueError, "process_id must be <"),
    ({"num_processes": "abc", "process_id": 0}, {}, ValueError, "num_processes must be an integer"),
    ({"num_processes": True, "process_id": 0}, {}, TypeError, "num_processes must be an int"),
    ({"num_processes": 2, "process_id": 0, "coordinator_address": "nohost"}, {}, ValueError, "host:port"),
    ({"num_processes": 2, "process_id": 0}, {}, ValueError, "coordinator address"),
    ({"num_processes": 2}, {}, ValueError, "process_id \\(XFFT_PROCESS_ID\\) is not set"),
    ({}, {"XFFT_COORDINATOR_ADDRESS": "h:1"}, ValueError, "not the process count"),
    ({"local_device_ids": 1.5}, {}, TypeError, "local_device_ids"),
    ({"cpu_devices": 0}, {}, ValueError, "cpu_devices must be >= 1"),
])
def test_bad_settings_are_explained(kwargs, env, exc, match):
    with pytest.raises(exc, match=match):
        xd.detect(env, **kwargs)


def test_initialize_single_process_is_a_no_op(monkeypatch):
    monkeypatch.setattr(xd._init, "_SPEC", None)
    for k in ("XFFT_NUM_PROCESSES", "XFFT_PROCESS_ID", "XFFT_COORDINATOR_ADDRESS", "SLURM_JOB_ID",
              "OMPI_COMM_WORLD_SIZE", "XFFT_CPU_DEVICES"):
        monkeypatch.delenv(k, raising=False)
    spec = xd.initialize()
    assert spec.method == "single" and xd.initialize() is spec
    assert jax.process_count() == 1 and not jax.distributed.is_initialized()


def test_initialize_after_jax_started_is_refused(monkeypatch):
    monkeypatch.setattr(xd._init, "_SPEC", None)
    with pytest.raises(RuntimeError, match="must run before any JAX computation"):
        xd.initialize("127.0.0.1:1", 2, 0)
    with pytest.raises(RuntimeError, match="CPU device count"):
        xd.initialize(cpu_devices=3)


def _python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})


def test_initialize_sets_cpu_devices_in_a_fresh_process():
    r = _python("""
        from xfft import distributed as xd
        spec = xd.initialize(cpu_devices=3)
        import jax
        print(spec.method, jax.device_count(), jax.process_count())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["single", "3", "1"]


def test_excepthook_exits_at_once_despite_running_threads():
    t0 = time.monotonic()
    r = _python("""
        import threading, time
        from xfft import distributed as xd
        threading.Thread(target=time.sleep, args=(60,)).start()  # would keep a normal exit waiting
        xd.install_excepthook()
        raise KeyError("boom")
    """)
    assert r.returncode == 1, r.stderr
    assert time.monotonic() - t0 < 30
    assert "uncaught KeyError; exiting with code 1" in r.stderr and "KeyError: 'boom'" in r.stderr


def test_watchdog_ends_a_stuck_process_and_spares_a_busy_one():
    t0 = time.monotonic()
    r = _python("""
        import time
        from xfft.distributed import Watchdog
        with Watchdog(0.6) as dog:
            for _ in range(8):
                time.sleep(0.2)
                dog.kick()
        print("kicked", dog.kicks)
        dog = Watchdog(0.5, exit_code=42).start()
        time.sleep(30)
    """)
    assert r.returncode == 42, (r.stdout, r.stderr)
    assert time.monotonic() - t0 < 20
    assert "kicked 8" in r.stdout
    assert "watchdog: no progress for" in r.stderr and "limit 0.5 s, 0 kicks" in r.stderr
    assert 'File "<string>", line 10 in <module>' in r.stderr  # every thread's stack, pointing at the sleep


@pytest.mark.parametrize("timeout,exc", [(0, ValueError), (-1, ValueError), (float("inf"), ValueError),
                                         ("5", TypeError), (True, TypeError)])
def test_watchdog_rejects_bad_timeouts(timeout, exc):
    with pytest.raises(exc):
        xd.Watchdog(timeout)


def test_global_array_gather_and_process_local_on_one_process():
    mesh = xfft.make_mesh("pencil")
    shape = (8, 8, 4)
    rs = xfft.real_sharding(mesh, shape)
    full = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    calls = []

    def fn(idx):
        calls.append(idx)
        assert all(isinstance(s.start, int) and isinstance(s.stop, int) for s in idx)
        return full[idx]

    a = xd.global_array(shape, rs, fn, np.float64)
    assert a.sharding == rs and a.dtype == np.float64
    assert len(calls) == 8 and all(c[0].stop - c[0].start == 4 and c[1].stop - c[1].start == 2 for c in calls)
    np.testing.assert_array_equal(xd.gather(a), full)
    # Broadcastable blocks (open grids) are enough.
    b = xd.global_array(shape, rs, lambda idx: np.ogrid[idx][0] * 100 + np.ogrid[idx][2], np.float32)
    ref = np.arange(8)[:, None, None] * 100 + np.arange(4)[None, None, :] + np.zeros(shape)
    np.testing.assert_array_equal(xd.gather(b), ref.astype(np.float32))
    np.testing.assert_array_equal(xd.gather(xd.from_process_local(full, rs, shape)), full)
    xd.assert_same(shape, "shape")  # one process: nothing to compare


def test_global_array_errors():
    rs = xfft.real_sharding(xfft.make_mesh("slab"), (8, 8))
    with pytest.raises(ValueError, match="fn returned a block of shape"):
        xd.global_array((8, 8), rs, lambda idx: np.zeros(3))
    with pytest.raises(TypeError, match="sharding"):
        xd.global_array((8, 8), "P('x')", lambda idx: 0.0)
    with pytest.raises(TypeError, match="callable"):
        xd.global_array((8, 8), rs, 3.0)
    with pytest.raises(ValueError, match="max_bytes"):
        xd.gather(xd.global_array((8, 8), rs, lambda idx: 0.0, np.float32), max_bytes=100)


def test_print0_prints_once(capsys):
    xd.print0("hello", 3)
    assert capsys.readouterr().out == "hello 3\n"


def test_initialize_rejects_bad_timeouts(monkeypatch):
    monkeypatch.setattr(xd._init, "_SPEC", None)
    monkeypatch.setenv("XFFT_SHUTDOWN_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="XFFT_SHUTDOWN_TIMEOUT must be an integer"):
        xd.initialize()
    with pytest.raises(ValueError, match="heartbeat_timeout_s must be >= 1"):
        xd.initialize(heartbeat_timeout_s=0)
