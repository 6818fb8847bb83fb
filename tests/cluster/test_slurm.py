"""Real Slurm: Debian's slurmctld + slurmd + munge as a one-host, two-"node" cluster, running xfft jobs.

The cluster (see ``_slurmci.py``) has two nodes ``xfftci1``/``xfftci2`` on this host, 8 CPUs and 4 fake GPUs
each; the node names are not host names, so the coordinator address must come from Slurm's ``NodeAddr``.
Jobs run the real ``slurm/*.sbatch`` templates with ``JAX_PLATFORMS=cpu``, and the scripts call
``xfft.distributed.initialize()`` with no arguments. Under ``CI=true`` this test installs the packages with
apt and must run; elsewhere it skips with the reason when packages, apt or root are missing.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _slurmci import PACKAGES, SlurmCluster, install, missing_binaries  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

pytestmark = pytest.mark.timeout(420)


def _need(reason: str) -> None:
    if CI:
        pytest.fail(f"CI=true requires the real Slurm test to run, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def cluster():
    t0 = time.monotonic()
    # Not pytest's tmp_path: its parents are private to root, and munged runs as user munge.
    root = Path(tempfile.mkdtemp(prefix="xfft-slurm-"))
    root.chmod(0o755)
    if missing_binaries():
        if os.geteuid() != 0:
            _need(f"Slurm is not installed ({missing_binaries()} missing) and installing it needs root")
        if not Path("/usr/bin/apt-get").exists():
            _need(f"Slurm is not installed ({missing_binaries()} missing) and apt-get is not available")
        try:
            install(root / "apt.log")
        except Exception as e:  # network, mirror or dpkg trouble
            log = (root / "apt.log").read_text(errors="replace")[-3000:] if (root / "apt.log").exists() else ""
            _need(f"apt-get install {' '.join(PACKAGES)} failed: {e}\n{log}")
        assert not missing_binaries(), missing_binaries()
    elif os.geteuid() != 0:
        _need("the test cluster runs slurmd and munged as root/munge; run as root")
    installed = time.monotonic()
    c = SlurmCluster(root, nodes=2, cpus_per_node=8, gpus_per_node=4)
    try:
        c.start(timeout_s=60)
        c.timings = {"install_s": installed - t0, "start_s": time.monotonic() - installed}
        yield c
    finally:
        c.stop()
        alive = {n: p.pid for n, p in c.procs.items() if p.poll() is None}
        if not alive:
            shutil.rmtree(root, ignore_errors=True)
        assert not alive, f"daemons still running after stop(): {alive}"


def _submit(c: SlurmCluster, template: str, *opts: str, export: dict[str, str] | None = None,
            args: tuple[str, ...] = (), timeout_s: float = 180) -> tuple[dict[str, str], str, float]:
    out = c.root / f"{Path(template).stem}-%j.out"
    exports = {"PYTHON": sys.executable, "JAX_PLATFORMS": "cpu", **(export or {})}
    t0 = time.monotonic()
    job = c.sbatch(f"--output={out}", f"--export=ALL,{','.join(f'{k}={v}' for k, v in exports.items())}",
                   *opts, template, *args, cwd=str(ROOT))
    info = c.wait_job(job, timeout_s)
    wall = time.monotonic() - t0
    text = Path(str(out).replace("%j", job)).read_text(errors="replace")
    return info, text, wall


def test_cpu_job_two_nodes_no_argument_initialize(cluster):
    """4 tasks over 2 "nodes" of one host: slab and pencil transforms equal the exact spectrum and numpy."""
    info, out, wall = _submit(cluster, "slurm/cpu.sbatch", "--nodes=2", "--ntasks-per-node=2")
    assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", (info, out, cluster.logs())
    # Every rank found Slurm by itself, with 2 CPU devices of 8.
    for rank in range(4):
        assert re.search(rf"^{rank}: process {rank}/4 \(slurm\): 2 local of 8 devices \(cpu\)", out, re.M), out
    for decomp in ("slab", "pencil"):
        for check in ("xfft3d exact", "xfft3d numpy", "xrfft3d exact", "xrfft3d numpy", "xrfft3d d/dx"):
            m = re.search(rf"^0: xfft-check {decomp} {check}: max error (\S+) \(ok", out, re.M)
            assert m and float(m.group(1)) < 1e-8, (decomp, check, out)
    assert "0: xfft-check PASSED: 4 processes x 2 devices (cpu)" in out, out
    print(f"slurm cpu job: {wall:.1f} s wall; cluster install {cluster.timings['install_s']:.1f} s, "
          f"start {cluster.timings['start_s']:.1f} s")


def test_gpu_templates_schedule_and_pick_devices(cluster):
    """The GPU templates run (on CPU, with fake GPUs): one process per node keeps all local GPUs."""
    info, out, _ = _submit(cluster, "slurm/gpu_per_node.sbatch", "--cpus-per-task=4",
                           export={"XFFT_CPU_DEVICES": "4"}, args=("--decompositions", "slab"))
    assert info["JobState"] == "COMPLETED", (info, out)
    for rank in range(2):
        assert re.search(rf"^{rank}: process {rank}/2 \(slurm\): 4 local of 8 devices .*local_device_ids=None$",
                         out, re.M), out
    assert "0: xfft-check PASSED: 2 processes x 4 devices" in out, out

    info, out, _ = _submit(cluster, "slurm/gpu_per_process.sbatch", "--ntasks-per-node=2", "--gpus-per-node=2",
                           "--cpus-per-task=2", export={"XFFT_CPU_DEVICES": "2"},
                           args=("--decompositions", "slab"))
    assert info["JobState"] == "COMPLETED", (info, out)
    # Two tasks per node sharing the node's 2 GPUs: one each, by local rank.
    ids = dict(re.findall(r"^\d+: process (\d)/4 \(slurm\).*local_device_ids=(\(\d+,\))$", out, re.M))
    assert ids == {"0": "(0,)", "1": "(1,)", "2": "(0,)", "3": "(1,)"}, out
    assert "0: xfft-check PASSED: 4 processes x 2 devices" in out, out


def test_failing_rank_ends_the_job(cluster):
    """A rank that raises under srun: the job FAILS within seconds and the log names the rank."""
    info, out, wall = _submit(cluster, "slurm/cpu.sbatch", "--ntasks=4",
                              export={"XFFT_SCRIPT": "tests/multiprocess/_fault.py"}, args=("raise", "2"),
                              timeout_s=90)
    assert info["JobState"] == "FAILED", (info, out)
    assert "2: [xfft rank 2/4] uncaught RuntimeError" in out, out
    assert "injected failure on rank 2" in out, out
    m = re.search(r"FAULT-AT (\d+\.\d+)", out)
    end = time.time()
    assert m and end - float(m.group(1)) < 30, (wall, out)
    print(f"slurm failing job: {wall:.1f} s wall (fault to job end <= {end - float(m.group(1)):.1f} s)")
