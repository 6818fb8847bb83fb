"""How a tutorial notebook is executed: one recipe for the docs build (``tutorials.py``) and the notebook tests.

A notebook runs in a kernel of *this* interpreter (declared in a private kernel spec, so that a user-level
``python3`` kernel of another Python cannot change what runs), with the working directory ``notebooks/``, 8 CPU
devices and JAX's defaults otherwise (no inherited ``JAX_ENABLE_X64``, no launcher variables), and matplotlib's
inline backend: each figure becomes an ``image/png`` output that the docs show (the ``Agg`` backend would draw it and
show nothing). An executed notebook carries :func:`source_key` in its metadata (:data:`KEY`): the hash of its source
and of this recipe, so that the docs reuse a notebook the tests executed and execute again only one whose source,
or the recipe, changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
from pathlib import Path

#: metadata key of an executed notebook: the :func:`source_key` of what it was executed from
KEY = "xfft_source_sha256"
#: what the key covers besides the source: change it when notebooks must run again (a new backend, new devices)
RECIPE = "kernel: this interpreter, 8 CPU devices, JAX defaults; figures: matplotlib-inline image/png"
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
CPU_DEVICES = 8
#: notebooks whose time is mostly running kernels: with XLA's default compile options always (the others with the
#: options the caller chooses: :data:`FAST_COMPILE`, the test suite's, compiles in about half the time). None at
#: present: the longest-running one, ``03_navier_stokes``, executes in 20 s with them against 24-27 s without.
RUN_TIME_BOUND: frozenset[str] = frozenset()
#: XLA:CPU options that compile the same HLO faster and run its kernels slower (tests/conftest.py)
FAST_COMPILE = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
_FAST_NAMES = tuple(f.split("=")[0] for f in FAST_COMPILE)
# Variables that would leak this process's (or a launcher's) JAX setup into the kernel.
_DROP = re.compile(r"^(JAX_ENABLE_X64|JAX_DEFAULT_DTYPE_BITS|JAX_NUM_CPU_DEVICES|XFFT_.*|JAX_COORDINATOR_.*"
                   r"|SLURM_.*|OMPI_.*|PMI_.*|PYTEST_.*|MPLBACKEND)$")
# What a figure shown as text looks like (a backend without PNG output), and stray reprs of matplotlib objects
# (a cell that ends in ``plt.legend()``) that a reader should not see.
_NOT_A_FIGURE = re.compile(r"^\[?<(Figure size|matplotlib\.)|^Text\(")


_LOG = logging.getLogger("xfft.notebooks")  # nbclient's "Executing notebook with kernel" notes: not shown
_LOG.setLevel(logging.WARNING)


class NotebookTimeout(Exception):
    """The whole notebook ran past its deadline."""


def source_key(path: Path) -> str:
    """The key of an executed notebook: SHA-256 of :data:`RECIPE` and the notebook's source."""
    return hashlib.sha256(RECIPE.encode() + b"\0" + Path(path).read_bytes()).hexdigest()


def kernel_env(name: str, *, fast_compile: bool = False) -> dict[str, str]:
    """The environment of the kernel that executes notebook ``name`` (its stem).

    Args:
        name: the notebook's stem (``03_navier_stokes``).
        fast_compile: compile with :data:`FAST_COMPILE`, unless the notebook is in :data:`RUN_TIME_BOUND`;
            False keeps the options of this process's ``XLA_FLAGS`` (the test suite's).

    Returns:
        This process's environment without JAX, launcher and test variables, with 8 CPU devices and the inline
        backend.
    """
    env = {k: v for k, v in os.environ.items() if not _DROP.match(k)}
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    if name in RUN_TIME_BOUND or fast_compile:
        flags = [f for f in flags if not f.startswith(_FAST_NAMES)]
    if fast_compile and name not in RUN_TIME_BOUND:
        flags += FAST_COMPILE
    env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count={CPU_DEVICES}"])
    env.update(JAX_PLATFORMS="cpu", MPLBACKEND=INLINE_BACKEND,
               PYDEVD_DISABLE_FILE_VALIDATION="1",  # quiet debugpy's frozen-modules note in the kernel
               JUPYTER_PLATFORM_DIRS="1")
    return env


def kernel_spec_manager(folder: Path, name: str):
    """A ``KernelSpecManager`` that finds only kernel ``name``: ``ipykernel`` in this interpreter (spec written
    into ``folder``)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec_dir = Path(folder) / "kernels" / name
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python {sys.version_info[0]}.{sys.version_info[1]} (xfft)", "language": "python"}))
    return KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False)


def read(path: Path):
    """The notebook of a jupytext percent-format source, validated by nbformat."""
    import jupytext
    import nbformat

    nb = jupytext.read(path)
    nbformat.validate(nb)
    return nb


async def execute(nb, path: Path, ksm, kernel_name: str, env: dict[str, str], timeout_s: float) -> None:
    """Execute ``nb`` (read from ``path``) in place, in ``notebooks/`` as working directory.

    Raises:
        NotebookTimeout: the whole notebook ran past ``timeout_s`` (each cell has the same deadline).
        nbclient.exceptions.CellExecutionError: a cell raised (one of its checks failed).
    """
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    # The kernel's sockets are files of a private folder (IPC): no TCP port to pick and no "running over TCP
    # without encryption" warning on every start, and no name shared by kernels that start at the same time.
    with tempfile.TemporaryDirectory(prefix="xfft-kernel-") as sockets:
        km = AsyncKernelManager(kernel_name=kernel_name, kernel_spec_manager=ksm, transport="ipc",
                                ip=str(Path(sockets) / "k"))
        client = NotebookClient(nb, km=km, kernel_name=kernel_name, timeout=int(timeout_s), startup_timeout=120,
                                allow_errors=False, record_timing=True, shutdown_kernel="immediate", log=_LOG,
                                resources={"metadata": {"path": str(Path(path).parent)}})
        # cleanup_kc: shut the kernel down afterwards although the client does not own its kernel manager.
        task = asyncio.ensure_future(client.async_execute(env=env, cleanup_kc=True))
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:
            task.cancel()  # nbclient interrupts the cell and shuts the kernel down
            with contextlib.suppress(BaseException):
                await task
            raise NotebookTimeout(f"{Path(path).name} did not finish within {timeout_s:g} s")
        task.result()


def figures(nb) -> int:
    """The number of figures (``image/png`` outputs) of an executed notebook."""
    return sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []))


def not_figures(nb) -> list[str]:
    """Outputs a reader should see as figures and sees as text: ``<Figure size ...>`` (a backend without PNG
    output) and reprs of matplotlib objects left by a cell's last line."""
    found = []
    for c in nb.cells:
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            text = o.get("data", {}).get("text/plain", "") if "image/png" not in o.get("data", {}) else ""
            if _NOT_A_FIGURE.search(text if isinstance(text, str) else "".join(text)):
                found.append(text if isinstance(text, str) else "".join(text))
    return found
