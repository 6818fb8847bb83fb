"""Execute every ``notebooks/*.py`` (jupytext percent format) in a fresh kernel; any cell error fails its test.

Each notebook is converted in memory (jupytext -> nbformat) and run by nbclient in a kernel of *this*
interpreter (``sys.executable``), declared in a temporary kernel spec so that a fresh venv, or a user-level
``python3`` kernel pointing at another Python, cannot change what runs. The kernel gets a clean JAX
environment: 8 CPU devices, no inherited ``JAX_ENABLE_X64`` and no launcher variables (the pytest process's own
``jax_enable_x64`` is an in-process setting and does not reach the kernel). Every notebook ends with cells that
assert its key results, so "no error" means "the numbers are right".

Adding a notebook is dropping ``notebooks/NN_name.py`` (percent format, ``# %%`` cells); it becomes its own test.
Per-notebook deadline: ``XFFT_NOTEBOOK_TIMEOUT`` seconds (default 300), for the whole notebook and for each cell.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.glob("*.py") if not p.name.startswith("_"))
TIMEOUT_S = float(os.environ.get("XFFT_NOTEBOOK_TIMEOUT", "300"))
KERNEL_NAME = "xfft-notebook-test"
CPU_DEVICES = 8
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Variables that would leak this process's (or a launcher's) JAX setup into the kernel.
_DROP = re.compile(r"^(JAX_ENABLE_X64|JAX_DEFAULT_DTYPE_BITS|JAX_NUM_CPU_DEVICES|XFFT_.*|JAX_COORDINATOR_.*"
                   r"|SLURM_.*|OMPI_.*|PMI_.*|PYTEST_.*)$")


#: notebooks whose time is mostly running kernels: they run at XLA's default optimization level where the suite
#: compiles at level 0 (tests/conftest.py; the others share the suite's cached programs at its level)
RUN_TIME_BOUND = {"03_navier_stokes", "06_phase_field_and_2d"}


def kernel_env(default_opt: bool = False) -> dict[str, str]:
    """Environment of a notebook kernel: 8 CPU devices, JAX defaults otherwise (the suite's optimization level
    unless ``default_opt``)."""
    env = {k: v for k, v in os.environ.items() if not _DROP.match(k)}
    drop = "force_host_platform_device_count|backend_optimization_level" if default_opt else \
        "force_host_platform_device_count"
    flags = re.sub(rf"--xla_({drop})=\S*", "", env.get("XLA_FLAGS", "")).split()
    env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count={CPU_DEVICES}"])
    env["JAX_PLATFORMS"] = "cpu"
    env["MPLBACKEND"] = "Agg"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # quiet debugpy's frozen-modules note in the kernel
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    return env


@pytest.fixture(scope="session")
def kernel_spec_manager(tmp_path_factory) -> KernelSpecManager:
    """A kernel spec that runs ``ipykernel`` in this interpreter, found only in a private directory."""
    kernels = tmp_path_factory.mktemp("jupyter") / "kernels"
    spec_dir = kernels / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python {sys.version_info[0]}.{sys.version_info[1]} (xfft tests)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    return KernelSpecManager(kernel_dirs=[str(kernels)], ensure_native_kernel=False)


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook of a jupytext text source, validated by nbformat."""
    nb = jupytext.read(path)
    nbformat.validate(nb)
    assert any(c.cell_type == "code" for c in nb.cells), f"{path.name} has no code cells"
    return nb


class NotebookTimeout(Exception):
    """The whole notebook ran past ``TIMEOUT_S``."""


async def _execute(client: NotebookClient, env: dict[str, str]) -> None:
    # cleanup_kc: shut the kernel down afterwards although the client does not own its kernel manager.
    task = asyncio.ensure_future(client.async_execute(env=env, cleanup_kc=True))
    done, _ = await asyncio.wait({task}, timeout=TIMEOUT_S)
    if not done:
        task.cancel()  # nbclient interrupts the cell and shuts the kernel down
        with contextlib.suppress(BaseException):
            await task
        raise NotebookTimeout
    task.result()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path, kernel_spec_manager: KernelSpecManager, tmp_path: Path,
                           record_property) -> None:
    nb = read_notebook(path)
    km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=kernel_spec_manager)
    client = NotebookClient(nb, km=km, kernel_name=KERNEL_NAME, timeout=int(TIMEOUT_S), startup_timeout=120,
                            allow_errors=False, record_timing=True, shutdown_kernel="immediate",
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    start, failure = time.perf_counter(), None
    try:
        asyncio.run(_execute(client, kernel_env(path.stem in RUN_TIME_BOUND)))
    except NotebookTimeout:
        failure = f"{path.name} did not finish within {TIMEOUT_S:g} s (XFFT_NOTEBOOK_TIMEOUT)"
    except CellExecutionError as e:  # a cell raised (or a check failed): its source and traceback
        failure = f"{path.name}: {_ANSI.sub('', str(e))}"
    finally:
        elapsed = time.perf_counter() - start
        record_property("seconds", round(elapsed, 1))
        # The executed notebook with its outputs, to look at what it printed or where it failed.
        nbformat.write(nb, tmp_path / f"{path.stem}.ipynb")
        reuse = os.environ.get("XFFT_NOTEBOOK_OUTPUTS")  # make test: where make docs takes the executed notebooks
        if reuse and failure is None:
            nb.metadata["xfft_source_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
            Path(reuse).mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, Path(reuse) / f"{path.stem}.ipynb")
    if failure:
        pytest.fail(f"{failure}\n(executed notebook: {tmp_path / path.stem}.ipynb)", pytrace=False)
    print(f"{path.name}: executed in {elapsed:.1f} s ({tmp_path / path.stem}.ipynb)")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors


def test_notebooks_are_found_and_listed() -> None:
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"
    readme = (NOTEBOOK_DIR / "README.md").read_text()
    for p in NOTEBOOKS:
        assert f"]({p.name})" in readme, f"notebooks/README.md has no line linking {p.name}"
        assert re.fullmatch(r"\d\d_\w+\.py", p.name), f"{p.name}: name notebooks NN_topic.py"
        head = p.read_text().lstrip()
        assert "format_name: percent" in head[:1000] or head.startswith("# %%"), (
            f"{p.name} is not a jupytext percent-format notebook")
