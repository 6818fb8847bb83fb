"""Which run this process belongs to: launcher detection (explicit, ``xfft.launch``, Slurm, Open MPI), no I/O
beyond reading the environment (and ``scontrol`` for a Slurm node address)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_PORT_BASE = 65536 - 4096  # coordinator ports derived from job ids live in [61440, 65535], as in JAX


@dataclass(frozen=True)
class ClusterSpec:
    """How this process takes part in a run, as found by :func:`detect`.

    Attributes:
      method: where the values came from: ``"explicit"`` (arguments or ``XFFT_*``/``JAX_*`` variables),
        ``"slurm"``, ``"ompi"`` or ``"single"``.
      num_processes: number of processes in the run.
      process_id: this process's rank, ``0 <= process_id < num_processes``.
      coordinator_address: ``host:port`` of process 0's coordinator (None for a single process).
      local_device_ids: accelerator ids this process uses, or None for all it can see.
      local_rank: rank among the processes on this node (None if unknown).
      local_size: number of processes on this node (None if unknown).
      cpu_devices: CPU devices to create in this process (None: JAX's default).
    """

    method: str
    num_processes: int
    process_id: int
    coordinator_address: str | None = None
    local_device_ids: tuple[int, ...] | None = None
    local_rank: int | None = None
    local_size: int | None = None
    cpu_devices: int | None = None

    @property
    def multi_process(self) -> bool:
        """True when the run has more than one process (``jax.distributed`` must be initialized)."""
        return self.num_processes > 1




def _int(value: Any, name: str, minimum: int = 0) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _device_ids(value: Any, name: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p for p in value.replace(" ", "").split(",") if p]
        return tuple(_int(p, name) for p in parts) or None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (_int(value, name),)
    if isinstance(value, Sequence):
        return tuple(_int(v, name) for v in value)
    raise TypeError(f"{name} must be an int, a sequence of ints or a comma-separated string, got {value!r}")


def _check_address(address: str, name: str) -> str:
    if not isinstance(address, str):
        raise TypeError(f"{name} must be a 'host:port' string, got {type(address).__name__}")
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{name} must look like 'host:port' (for example '10.0.0.1:12345'), got {address!r}")
    return address


def _first_host(nodelist: str) -> str:
    """First host name of a Slurm host list (``'n[01-04,07],gpu2'`` -> ``'n01'``), without ``scontrol``."""
    depth, item = 0, []
    for ch in nodelist.strip():
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            break
        item.append(ch)
    return re.sub(r"\[([^\]]*)\]", lambda m: re.split(r"[,-]", m.group(1))[0], "".join(item))


def _tasks_on_node(tasks_per_node: str, node_id: int) -> int | None:
    """Entry ``node_id`` of a Slurm tasks-per-node string such as ``'2(x3),1'``."""
    counts: list[int] = []
    for part in tasks_per_node.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            return None
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    return counts[node_id] if 0 <= node_id < len(counts) else None


def _resolvable(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return True


def _slurm_node_addr(node: str) -> str | None:
    """``NodeAddr`` of a Slurm node from ``scontrol`` (node names need not be DNS names)."""
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        return None
    try:
        out = subprocess.run([scontrol, "show", "node", "-o", node], capture_output=True, text=True,
                             timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"\bNodeAddr=(\S+)", out)
    return m.group(1) if m else None


def _coordinator_host(node: str, resolve: bool) -> str:
    """A host name or address for ``node`` that every process can connect to.

    Slurm node names are often DNS names, but one-host test clusters and some sites use names that only
    Slurm knows (``NodeName=n1 NodeAddr=10.1.2.3``); then the ``NodeAddr`` is used.
    """
    if not resolve or _resolvable(node):
        return node
    addr = _slurm_node_addr(node)
    if addr and _resolvable(addr):
        return addr
    raise RuntimeError(
        f"cannot resolve the Slurm node name {node!r} (first node of the step) to an address, and scontrol "
        f"gave no usable NodeAddr ({addr!r}); set XFFT_COORDINATOR_ADDRESS=host:port to an address of {node} "
        "that every process can reach"
    )


def _visible_accelerators(env: Mapping[str, str]) -> int | None:
    for var in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        if var in env:
            return len([d for d in env[var].split(",") if d.strip()])
    gpus = env.get("SLURM_GPUS_ON_NODE", "")
    return int(gpus) if gpus.isdigit() else None


def _auto_local_device_ids(local_rank: int | None, local_size: int | None,
                           env: Mapping[str, str]) -> tuple[int, ...] | None:
    """Accelerators of this process when a cluster launched it and nobody said which.

    JAX's own default is ``[local_rank]`` (one GPU per process). That is wrong in two common cases, which
    this fixes: one process per node (it must use *all* the node's GPUs: None), and Slurm/MPI binding that
    already narrowed ``CUDA_VISIBLE_DEVICES`` to this task's GPUs (ids restart at 0: None). When several
    processes share a node and see ``k`` GPUs, each takes a contiguous block of ``k / local_size`` of them.
    """
    if local_rank is None or local_size is None or local_size <= 1:
        return None
    k = _visible_accelerators(env)
    if k is None:
        return (local_rank,)
    if k <= 1:
        return None
    if k % local_size:
        raise ValueError(
            f"{local_size} processes on this node see {k} accelerators, which they cannot share evenly; "
            "pass local_device_ids=... (or set XFFT_LOCAL_DEVICE_IDS) to say which ones each process uses"
        )
    m = k // local_size
    return tuple(range(local_rank * m, (local_rank + 1) * m))


def _slurm(env: Mapping[str, str], resolve: bool, address: bool) -> dict[str, Any] | None:
    if "SLURM_JOB_ID" not in env or "SLURM_PROCID" not in env:
        return None
    nodelist = env.get("SLURM_STEP_NODELIST")
    tasks = env.get("SLURM_STEP_NUM_TASKS")
    if nodelist is None or tasks is None:
        # The batch script itself (not an srun step): it is one process, whatever --ntasks says.
        return None
    num = _int(tasks, "SLURM_STEP_NUM_TASKS", 1)
    out: dict[str, Any] = {"method": "slurm", "num_processes": num,
                           "process_id": _int(env["SLURM_PROCID"], "SLURM_PROCID")}
    if "SLURM_LOCALID" in env:
        out["local_rank"] = _int(env["SLURM_LOCALID"], "SLURM_LOCALID")
    per_node = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")
    if per_node and env.get("SLURM_NODEID", "").isdigit():
        out["local_size"] = _tasks_on_node(per_node, int(env["SLURM_NODEID"]))
    if num > 1 and address:
        port = env.get("XFFT_COORDINATOR_PORT") or env.get("JAX_COORDINATOR_PORT")
        if port is None:
            # Per job *and* step, so two srun steps of one job running side by side do not collide.
            job, step = int(env["SLURM_JOB_ID"]), int(env.get("SLURM_STEP_ID", "0") or 0)
            port = str(_PORT_BASE + (job + 613 * step) % 4096)
        host = _coordinator_host(_first_host(nodelist), resolve)
        out["coordinator_address"] = f"{host}:{_int(port, 'coordinator port', 1)}"
    return out


def _ompi(env: Mapping[str, str], address: bool) -> dict[str, Any] | None:
    if "OMPI_COMM_WORLD_SIZE" not in env or "OMPI_COMM_WORLD_RANK" not in env:
        return None
    num = _int(env["OMPI_COMM_WORLD_SIZE"], "OMPI_COMM_WORLD_SIZE", 1)
    out: dict[str, Any] = {"method": "ompi", "num_processes": num,
                           "process_id": _int(env["OMPI_COMM_WORLD_RANK"], "OMPI_COMM_WORLD_RANK")}
    if "OMPI_COMM_WORLD_LOCAL_RANK" in env:
        out["local_rank"] = _int(env["OMPI_COMM_WORLD_LOCAL_RANK"], "OMPI_COMM_WORLD_LOCAL_RANK")
    if "OMPI_COMM_WORLD_LOCAL_SIZE" in env:
        out["local_size"] = _int(env["OMPI_COMM_WORLD_LOCAL_SIZE"], "OMPI_COMM_WORLD_LOCAL_SIZE", 1)
    uri = env.get("OMPI_MCA_orte_hnp_uri")
    if num > 1 and uri and address:
        # Open MPI <= 4: the launcher's address is in the HNP URI (as JAX's own detection does).
        m = re.search(r"tcp://(.+?)[,:]|tcp6://\[(.+?)[,\]]", uri)
        if m is None:
            raise RuntimeError(f"cannot parse the coordinator host from OMPI_MCA_orte_hnp_uri={uri!r}")
        host = next(g for g in m.groups() if g is not None)
        port = env.get("XFFT_COORDINATOR_PORT") or env.get("JAX_COORDINATOR_PORT") or str(
            _PORT_BASE + (int(uri.split(".", 1)[0]) // 4096) % 4096)
        out["coordinator_address"] = f"{host}:{port}"
    return out


def detect(env: Mapping[str, str] | None = None, *, coordinator_address: str | None = None,
           num_processes: int | None = None, process_id: int | None = None,
           local_device_ids: int | Sequence[int] | None = None, cpu_devices: int | None = None,
           resolve: bool = True) -> ClusterSpec:
    """Work out this process's place in the run without connecting to anything.

    Args:
      env: environment to read (default ``os.environ``).
      coordinator_address, num_processes, process_id, local_device_ids, cpu_devices: explicit values; each
        one given wins over the environment.
      resolve: check that a Slurm node name resolves and otherwise ask ``scontrol`` for its ``NodeAddr``.

    Returns:
      A :class:`ClusterSpec`.

    Raises:
      TypeError: an argument of the wrong type.
      ValueError: inconsistent or incomplete values (for example a process id without a process count, or
        a multi-process run without a coordinator address), with the variable to set.
      RuntimeError: the coordinator host cannot be resolved.
    """
    env = os.environ if env is None else env
    explicit = {
        "coordinator_address": coordinator_address if coordinator_address is not None else (
            env.get("XFFT_COORDINATOR_ADDRESS") or env.get("JAX_COORDINATOR_ADDRESS") or None),
        "num_processes": num_processes if num_processes is not None else env.get("XFFT_NUM_PROCESSES"),
        "process_id": process_id if process_id is not None else env.get("XFFT_PROCESS_ID"),
    }
    ids = _device_ids(local_device_ids, "local_device_ids") if local_device_ids is not None else (
        _device_ids(env.get("XFFT_LOCAL_DEVICE_IDS") or env.get("JAX_LOCAL_DEVICE_IDS"), "XFFT_LOCAL_DEVICE_IDS"))
    cpus = cpu_devices if cpu_devices is not None else env.get("XFFT_CPU_DEVICES") or None
    cpus = None if cpus is None else _int(cpus, "cpu_devices", 1)

    found: dict[str, Any] = {}
    if explicit["num_processes"] is None or explicit["process_id"] is None:
        want = explicit["coordinator_address"] is None
        found = _slurm(env, resolve, want) or _ompi(env, want) or {}
    method = found.get("method", "explicit")
    vals = {k: (v if v is not None else found.get(k)) for k, v in explicit.items()}
    if vals["num_processes"] is None and vals["process_id"] is None:
        if (coordinator_address is not None or env.get("XFFT_COORDINATOR_ADDRESS")) and not found:
            raise ValueError("a coordinator address is set (argument or XFFT_COORDINATOR_ADDRESS) but not the "
                             "process count and id: pass num_processes= and process_id= or set "
                             "XFFT_NUM_PROCESSES and XFFT_PROCESS_ID")
        return ClusterSpec("single", 1, 0, None, ids, cpu_devices=cpus)
    if vals["num_processes"] is None or vals["process_id"] is None:
        missing = "num_processes (XFFT_NUM_PROCESSES)" if vals["num_processes"] is None else \
            "process_id (XFFT_PROCESS_ID)"
        raise ValueError(f"incomplete multi-process settings: {missing} is not set and no Slurm or Open MPI "
                         "launcher was detected")
    num = _int(vals["num_processes"], "num_processes", 1)
    pid = _int(vals["process_id"], "process_id", 0)
    if pid >= num:
        raise ValueError(f"process_id must be < num_processes, got process_id={pid}, num_processes={num}")
    address = vals["coordinator_address"]
    if num > 1:
        if address is None:
            raise ValueError(
                f"{num} processes need a coordinator address: pass coordinator_address='host:port' or set "
                "XFFT_COORDINATOR_ADDRESS (Open MPI 5 does not publish one; Slurm and Open MPI 4 do)")
        address = _check_address(address, "coordinator_address")
    local_rank, local_size = found.get("local_rank"), found.get("local_size")
    if ids is None and method in ("slurm", "ompi"):
        ids = _auto_local_device_ids(local_rank, local_size, env)
    return ClusterSpec(method, num, pid, address if num > 1 else None, ids, local_rank, local_size, cpus)

