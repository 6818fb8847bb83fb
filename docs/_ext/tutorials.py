"""The tutorials: ``notebooks/NN_name.py`` (jupytext percent format) as executed notebooks with their outputs.

Each notebook is executed once per version of its source: the executed notebook is kept with the SHA-256 of its
source in its metadata, in ``docs/_build/notebooks/`` or, when the environment names it, in the folder
``XFFT_NOTEBOOK_OUTPUTS`` (where a run of the notebook tests can leave the notebooks it executed, so that the docs
build after it executes none). A notebook whose source changed is executed again; one that raises fails the build.
Execution is as in ``tests/notebooks``: a kernel of this interpreter, 8 CPU devices, JAX's defaults otherwise, the
working directory ``notebooks/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)
DOCS = Path(__file__).resolve().parents[1]
CACHE = DOCS / "_build" / "notebooks"
TIMEOUT_S = float(os.environ.get("XFFT_NOTEBOOK_TIMEOUT", "600"))
_DROP = re.compile(r"^(JAX_ENABLE_X64|JAX_DEFAULT_DTYPE_BITS|JAX_NUM_CPU_DEVICES|XFFT_.*|JAX_COORDINATOR_.*"
                   r"|SLURM_.*|OMPI_.*|PMI_.*|PYTEST_.*)$")
KEY = "xfft_source_sha256"


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _DROP.match(k)}
    flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "", env.get("XLA_FLAGS", "")).split()
    env["XLA_FLAGS"] = " ".join(flags + ["--xla_force_host_platform_device_count=8"])
    env.update(JAX_PLATFORMS="cpu", MPLBACKEND="Agg", PYDEVD_DISABLE_FILE_VALIDATION="1", JUPYTER_PLATFORM_DIRS="1")
    return env


def _cached(path: Path, digest: str):
    import nbformat

    places = [CACHE]
    if os.environ.get("XFFT_NOTEBOOK_OUTPUTS"):
        places.insert(0, Path(os.environ["XFFT_NOTEBOOK_OUTPUTS"]))
    for place in places:
        f = place / f"{path.stem}.ipynb"
        if f.exists():
            try:
                nb = nbformat.read(f, as_version=4)
            except Exception:  # noqa: BLE001 - a broken file is executed again
                continue
            if nb.metadata.get(KEY) == digest:
                return nb
    return None


def execute(path: Path):
    """The executed notebook of ``path`` (raises ``CellExecutionError`` when a cell raises)."""
    import jupytext
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    nb = jupytext.read(path)
    with tempfile.TemporaryDirectory() as tmp:
        spec_dir = Path(tmp) / "kernels" / "xfft-docs"
        spec_dir.mkdir(parents=True)
        (spec_dir / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python (xfft docs)", "language": "python"}))
        ksm = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False)
        from jupyter_client.manager import KernelManager

        km = KernelManager(kernel_name="xfft-docs", kernel_spec_manager=ksm)
        client = NotebookClient(nb, km=km, timeout=int(TIMEOUT_S), startup_timeout=120, allow_errors=False,
                                shutdown_kernel="immediate", resources={"metadata": {"path": str(path.parent)}})
        old = dict(os.environ)
        try:
            os.environ.clear()
            os.environ.update(_env())
            client.execute()
        finally:
            os.environ.clear()
            os.environ.update(old)
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def write(out: Path, notebook_dir: Path) -> None:
    """Every notebook, executed, as ``out/NN_name.ipynb`` (rewritten only when its outputs change)."""
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    sources = sorted(p for p in notebook_dir.glob("*.py") if not p.name.startswith("_"))
    for path in sources:
        digest = source_hash(path)
        nb = _cached(path, digest)
        if nb is None:
            start = time.perf_counter()
            logger.info(f"executing {path.name} ...")
            try:
                nb = execute(path)
            except Exception as e:  # noqa: BLE001 - a failing notebook fails the (strict) build, named
                logger.warning(f"notebook {path.name} failed: {str(e)[-3000:]}", location=str(path))
                continue
            nb.metadata[KEY] = digest
            nbformat.write(nb, CACHE / f"{path.stem}.ipynb")
            logger.info(f"executed {path.name} in {time.perf_counter() - start:.0f} s")
        text = nbformat.writes(nb)
        target = out / f"{path.stem}.ipynb"
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    for stale in out.glob("*.ipynb"):
        if not (notebook_dir / f"{stale.stem}.py").exists():
            stale.unlink()
