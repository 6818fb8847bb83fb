"""The tutorials: ``notebooks/NN_name.py`` (jupytext percent format) as executed notebooks with their outputs and
figures.

A notebook is executed once per version of its source (:mod:`notebook_kernel`: the same recipe as the notebook
tests, figures as ``image/png`` outputs). The executed notebook keeps the key of its source in its metadata; it is
looked for in the folder ``XFFT_NOTEBOOK_OUTPUTS`` when the environment names it (``make test-notebooks`` leaves
there the notebooks its tests executed, so that ``make docs`` after it executes none) and in
``docs/_build/notebooks/`` (this build's own cache). The notebooks still to execute run ``XFFT_NOTEBOOK_JOBS`` at a
time (default: 2, or 1 on one core), compiling at XLA's optimization level 0 except those that mostly run kernels.
One that raises (each ends with cells that assert its results), that shows no figure or that shows a figure as
text fails the (strict) build: this build is where CI executes the tutorials (``make test`` leaves them out).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

import notebook_kernel
from sphinx.util import logging

logger = logging.getLogger(__name__)
DOCS = Path(__file__).resolve().parents[1]
CACHE = DOCS / "_build" / "notebooks"
TIMEOUT_S = float(os.environ.get("XFFT_NOTEBOOK_TIMEOUT", "600"))
KERNEL = "xfft-docs"


def _places() -> list[Path]:
    reuse = os.environ.get("XFFT_NOTEBOOK_OUTPUTS")
    return ([Path(reuse)] if reuse else []) + [CACHE]


def cached(path: Path, key: str):
    """The executed notebook of ``path`` whose key is ``key``, from a previous build or the tests; None if none."""
    import nbformat

    for place in _places():
        f = place / f"{path.stem}.ipynb"
        if f.exists():
            try:
                nb = nbformat.read(f, as_version=4)
            except Exception:  # noqa: BLE001 - a broken file is executed again
                continue
            if nb.metadata.get(notebook_kernel.KEY) == key:
                return nb
    return None


def jobs() -> int:
    """How many notebooks execute at once (``XFFT_NOTEBOOK_JOBS``; default 2, 1 on a single core)."""
    return max(1, int(os.environ.get("XFFT_NOTEBOOK_JOBS", min(2, os.cpu_count() or 1))))


async def _execute_all(paths: list[Path], ksm) -> dict[Path, object]:
    gate = asyncio.Semaphore(jobs())
    results: dict[Path, object] = {}

    async def one(path: Path) -> None:
        async with gate:
            start = time.perf_counter()
            logger.info(f"executing {path.name} ...")
            nb = notebook_kernel.read(path)
            try:
                await notebook_kernel.execute(nb, path, ksm, KERNEL, notebook_kernel.kernel_env(
                    path.stem, fast_compile=True), TIMEOUT_S)
            except Exception as e:  # noqa: BLE001 - a failing notebook fails the (strict) build, named
                results[path] = e
                return
            nb.metadata.pop("jupytext", None)
            nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
            results[path] = nb
            logger.info(f"executed {path.name} in {time.perf_counter() - start:.0f} s")

    await asyncio.gather(*(one(p) for p in paths))
    return results


def write(out: Path, notebook_dir: Path) -> None:
    """Every notebook, executed, as ``out/NN_name.ipynb`` (rewritten only when its outputs change)."""
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    sources = sorted(p for p in notebook_dir.glob("*.py") if not p.name.startswith("_"))
    keys = {p: notebook_kernel.source_key(p) for p in sources}
    done = {p: cached(p, keys[p]) for p in sources}
    todo = [p for p in sources if done[p] is None]
    if todo:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            results = asyncio.run(_execute_all(todo, notebook_kernel.kernel_spec_manager(Path(tmp), KERNEL)))
        for path in todo:
            nb = results[path]
            if isinstance(nb, BaseException):
                logger.warning(f"notebook {path.name} failed: {str(nb)[-3000:]}", location=str(path))
                continue
            nb.metadata[notebook_kernel.KEY] = keys[path]
            nbformat.write(nb, CACHE / f"{path.stem}.ipynb")
            done[path] = nb
        logger.info(f"executed {len(todo)} notebooks in {time.perf_counter() - start:.0f} s "
                    f"({len(sources) - len(todo)} reused)")
    for path in sources:
        nb = done[path]
        if nb is None:
            continue
        if not notebook_kernel.figures(nb):
            logger.warning(f"tutorial {path.name} shows no figure (no image/png output)", location=str(path))
        if notebook_kernel.not_figures(nb):
            logger.warning(f"tutorial {path.name} shows as text: {notebook_kernel.not_figures(nb)}",
                           location=str(path))
        text = nbformat.writes(nb)
        target = out / f"{path.stem}.ipynb"
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    for stale in out.glob("*.ipynb"):
        if not (notebook_dir / f"{stale.stem}.py").exists():
            stale.unlink()
