"""A throwaway one-host Slurm cluster (munged + slurmctld + slurmd) under a temporary directory.

Used by ``test_slurm.py``; also runnable by hand (``python tests/cluster/_slurmci.py``) to get a shell-ready
cluster for trying the ``slurm/`` templates. Every daemon is started here as a child process (no systemd)
and stopped by its PID; nothing is written outside the temporary directory except what ``apt-get`` installs.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("slurmctld", "slurmd", "sbatch", "srun", "scontrol", "sinfo", "munged")
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE"}
NEVER = {"PartitionTimeLimit", "PartitionNodeLimit", "PartitionConfig", "BadConstraints", "ReqNodeNotAvail",
         "InvalidQOS", "InvalidAccount", "Licenses"}


def which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if which(b) is None]


def install(log: Path, timeout_s: float = 240.0) -> None:
    """``apt-get update`` then install Debian's Slurm and munge packages, without starting any service."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    policy = Path("/usr/sbin/policy-rc.d")
    created = False
    if not policy.exists():
        # Package scripts must not start system-wide daemons: this test starts its own and stops them.
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        created = True
    deadline = time.monotonic() + timeout_s
    try:
        with open(log, "ab") as f:
            for cmd in (["apt-get", "update", "-q"],
                        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]):
                subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, check=True,
                               timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if created:
            policy.unlink()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    """Start with :meth:`start`, use :meth:`env` for clients, stop with :meth:`stop` (always)."""

    def __init__(self, root: Path, nodes: int = 1, cpus_per_node: int = 8, gpus_per_node: int = 0) -> None:
        self.root = Path(root)
        self.nodes = [f"xfftci{i + 1}" for i in range(nodes)]
        self.cpus = cpus_per_node
        self.gpus = gpus_per_node
        self.procs: dict[str, subprocess.Popen] = {}
        self.conf = self.root / "slurm.conf"

    # ------------------------------------------------------------------------------------------ setup
    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra)
        return env

    def _write_config(self) -> None:
        host = socket.gethostname().split(".")[0]
        r = self.root
        for d in ("state", "log", *(f"spool/{n}" for n in self.nodes)):
            (r / d).mkdir(parents=True, exist_ok=True)
        ctld, slurmd = _free_port(), _free_port()
        lines = [
            "ClusterName=xfftci",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={ctld}",
            f"SlurmdPort={slurmd}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={r / 'munge' / 'munge.socket'}",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool'}/%n",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'spool'}/slurmd-%n.pid",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'log'}/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/builtin",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "KillWait=5",
            "MinJobAge=600",
            "InactiveLimit=0",
            "SlurmdTimeout=60",
        ]
        gres = ""
        if self.gpus:
            # Fake GPUs (empty files as devices): enough for --gpus-per-node in the templates to schedule.
            lines += ["GresTypes=gpu"]
            (r / "dev").mkdir(exist_ok=True)
            for i in range(self.gpus):
                (r / "dev" / f"fakegpu{i}").touch()
            (r / "gres.conf").write_text(f"AutoDetect=off\nName=gpu File={r / 'dev'}/fakegpu[0-{self.gpus - 1}]\n")
            gres = f" Gres=gpu:{self.gpus}"
        # Node names are not host names: the coordinator address must come from NodeAddr (scontrol).
        for i, name in enumerate(self.nodes):
            port = f" Port={slurmd + i}" if len(self.nodes) > 1 else ""
            lines.append(f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1{port} CPUs={self.cpus} "
                         f"RealMemory=2000{gres} State=UNKNOWN")
        lines.append("PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO")
        self.conf.write_text("\n".join(lines) + "\n")

    def _start_munge(self) -> None:
        d = self.root / "munge"
        d.mkdir(exist_ok=True)
        d.chmod(0o755)  # clients (root, job steps) must reach the socket
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for p in (d, key):
            shutil.chown(p, "munge", "munge")
        self.root.chmod(0o755)
        cmd = [which("munged"), "-F", "--force", f"--socket={d / 'munge.socket'}", f"--key-file={key}",
               f"--pid-file={d / 'munged.pid'}", f"--log-file={d / 'munged.log'}", f"--seed-file={d / 'seed'}"]
        self._spawn("munged", cmd, user="munge")
        self._wait(lambda: (d / "munge.socket").exists(), 20, "munged socket")

    def _spawn(self, name: str, cmd: list, user: str | None = None) -> None:
        log = open(self.root / "log" / f"{name}.stdout", "ab")
        self.procs[name] = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.env(), user=user,
                                            start_new_session=True)
        log.close()

    def _wait(self, cond, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited with code {p.returncode} while waiting for {what}:\n"
                                       f"{self.logs()}")
            if cond():
                return
            time.sleep(0.2)
        raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}:\n{self.logs()}")

    def run(self, *cmd: str, timeout_s: float = 30, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([which(cmd[0]) or cmd[0], *cmd[1:]], env=self.env(), capture_output=True,
                              text=True, timeout=timeout_s, check=check)

    def idle_nodes(self) -> int:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %T", check=False).stdout
        return sum(1 for line in out.splitlines() if line.split()[-1:] == ["idle"])

    def start(self, timeout_s: float = 60.0) -> SlurmCluster:
        self._write_config()
        self._start_munge()
        self._spawn("slurmctld", [which("slurmctld"), "-D", "-i", "-f", self.conf])
        for name in self.nodes:
            self._spawn(f"slurmd-{name}", [which("slurmd"), "-D", "-f", self.conf, "-N", name])
        self._wait(lambda: self.idle_nodes() == len(self.nodes), timeout_s, f"{len(self.nodes)} idle node(s)")
        return self

    # ------------------------------------------------------------------------------------------ jobs
    def sbatch(self, *args: str, cwd: str | None = None, env: dict[str, str] | None = None) -> str:
        out = subprocess.run([which("sbatch"), "--parsable", *args], env=env or self.env(), cwd=cwd,
                             capture_output=True, text=True, timeout=30, check=False)
        if out.returncode:
            raise RuntimeError(f"sbatch failed ({out.returncode}): {out.stderr}\n{self.logs()}")
        return out.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        out = self.run("scontrol", "show", "job", "-o", job_id, check=False).stdout
        return dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", out))

    def wait_job(self, job_id: str, timeout_s: float) -> dict[str, str]:
        deadline = time.monotonic() + timeout_s
        info: dict[str, str] = {}
        while time.monotonic() < deadline:
            info = self.job(job_id)
            if info.get("JobState") in TERMINAL:
                return info
            if info.get("JobState") == "PENDING" and info.get("Reason", "") in NEVER:
                self.run("scancel", job_id, check=False)
                raise RuntimeError(f"job {job_id} can never run here (Reason={info['Reason']}): {info}")
            time.sleep(0.5)
        self.run("scancel", job_id, check=False)
        raise TimeoutError(f"job {job_id} not finished after {timeout_s} s: {info}\n{self.logs()}")

    # ------------------------------------------------------------------------------------------ teardown
    def logs(self, tail: int = 30) -> str:
        out = []
        for f in sorted((self.root / "log").glob("*")) + [self.root / "munge" / "munged.log"]:
            with contextlib.suppress(OSError):
                out.append(f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-tail:]))
        return "\n".join(out)

    def stop(self) -> None:
        """Cancel jobs, then stop slurmd(s), slurmctld and munged by PID (SIGTERM, then SIGKILL)."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(Exception):
                self.run("scancel", "--full", "-u", "root", timeout_s=10, check=False)
        order = [n for n in self.procs if n.startswith("slurmd")] + ["slurmctld", "munged"]
        for name in order:
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


if __name__ == "__main__":
    import sys
    import tempfile

    if missing_binaries():
        sys.exit(f"missing {missing_binaries()}; install {' '.join(PACKAGES)}")
    c = SlurmCluster(Path(tempfile.mkdtemp(prefix="xfft-slurm-")), nodes=int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    c.start()
    print(f"export SLURM_CONF={c.conf}  # Ctrl-C to stop the cluster", flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()
