"""Execute every ``notebooks/*.py`` (jupytext percent format) in a fresh kernel; any cell error fails its test.

Each notebook is converted in memory (jupytext -> nbformat) and run by nbclient as the docs run it
(``docs/_ext/notebook_kernel.py``): a kernel of *this* interpreter declared in a private kernel spec, 8 CPU devices,
no inherited ``JAX_ENABLE_X64`` and no launcher variables (the pytest process's own ``jax_enable_x64`` is an
in-process setting and does not reach the kernel), and matplotlib's inline backend. Every notebook ends with cells
that assert its key results, so "no error" means "the numbers are right"; and every notebook shows at least one
figure as an ``image/png`` output (what the tutorial page displays), with no figure or matplotlib object left as
text.

Adding a notebook is dropping ``notebooks/NN_name.py`` (percent format, ``# %%`` cells); it becomes its own test.
Per-notebook deadline: ``XFFT_NOTEBOOK_TIMEOUT`` seconds (default 300), for the whole notebook and for each cell.
The executions are marked ``notebooks``: ``make test-notebooks`` runs them, ``make test`` leaves them to ``make docs``
(which executes every notebook it finds no executed copy of, with the same recipe, and fails on a notebook that
raises or shows no figure; CI runs it). With ``XFFT_NOTEBOOK_OUTPUTS`` set (``make test-notebooks``), a notebook
that passes is left there executed, with the key of its source, for ``make docs`` to show without executing it
again.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import notebook_kernel  # noqa: E402

NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.glob("*.py") if not p.name.startswith("_"))
TIMEOUT_S = float(os.environ.get("XFFT_NOTEBOOK_TIMEOUT", "300"))
KERNEL_NAME = "xfft-notebook-test"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="session")
def kernel_spec_manager(tmp_path_factory):
    """A kernel spec that runs ``ipykernel`` in this interpreter, found only in a private directory."""
    return notebook_kernel.kernel_spec_manager(tmp_path_factory.mktemp("jupyter"), KERNEL_NAME)


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path, kernel_spec_manager, tmp_path: Path, record_property) -> None:
    nb = notebook_kernel.read(path)
    assert any(c.cell_type == "code" for c in nb.cells), f"{path.name} has no code cells"
    # the suite's optimization level, except for the notebooks that mostly run kernels (their default level)
    env = notebook_kernel.kernel_env(path.stem)
    start, failure = time.perf_counter(), None
    try:
        asyncio.run(notebook_kernel.execute(nb, path, kernel_spec_manager, KERNEL_NAME, env, TIMEOUT_S))
    except notebook_kernel.NotebookTimeout:
        failure = f"{path.name} did not finish within {TIMEOUT_S:g} s (XFFT_NOTEBOOK_TIMEOUT)"
    except CellExecutionError as e:  # a cell raised (or a check failed): its source and traceback
        failure = f"{path.name}: {_ANSI.sub('', str(e))}"
    finally:
        elapsed = time.perf_counter() - start
        record_property("seconds", round(elapsed, 1))
        # The executed notebook with its outputs, to look at what it printed or where it failed.
        nbformat.write(nb, tmp_path / f"{path.stem}.ipynb")
    if failure:
        pytest.fail(f"{failure}\n(executed notebook: {tmp_path / path.stem}.ipynb)", pytrace=False)
    print(f"{path.name}: executed in {elapsed:.1f} s ({tmp_path / path.stem}.ipynb)")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    # what the tutorial page shows: its figures as pictures, not as text
    assert notebook_kernel.figures(nb) >= 1, f"{path.name} shows no figure (no image/png output)"
    assert not notebook_kernel.not_figures(nb), f"{path.name} shows as text: {notebook_kernel.not_figures(nb)}"
    reuse = os.environ.get("XFFT_NOTEBOOK_OUTPUTS")  # make test-notebooks: where make docs takes them
    if reuse:
        nb.metadata.pop("jupytext", None)
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.metadata[notebook_kernel.KEY] = notebook_kernel.source_key(path)
        Path(reuse).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, Path(reuse) / f"{path.stem}.ipynb")


def test_notebooks_are_found_and_listed() -> None:
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"
    readme = (NOTEBOOK_DIR / "README.md").read_text()
    for p in NOTEBOOKS:
        assert f"]({p.name})" in readme, f"notebooks/README.md has no line linking {p.name}"
        assert re.fullmatch(r"\d\d_\w+\.py", p.name), f"{p.name}: name notebooks NN_topic.py"
        head = p.read_text().lstrip()
        assert "format_name: percent" in head[:1000] or head.startswith("# %%"), (
            f"{p.name} is not a jupytext percent-format notebook")


def test_the_figure_checks_see_a_figure_as_a_reader_does() -> None:
    """A figure is an image/png output; a figure or a matplotlib object shown as text is not."""
    cell = nbformat.v4.new_code_cell("plt.plot(x)")
    nb = nbformat.v4.new_notebook(cells=[cell])
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "<Figure size 640x480 with 1 Axes>"})]
    assert notebook_kernel.figures(nb) == 0 and notebook_kernel.not_figures(nb)
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "[<matplotlib.lines.Line2D at 0x1>]"},
                                           execution_count=1),
                    nbformat.v4.new_output("display_data", data={"text/plain": "<Figure size 640x480 with 1 Axes>",
                                                                 "image/png": "iVBORw0KGgo="})]
    assert notebook_kernel.figures(nb) == 1 and len(notebook_kernel.not_figures(nb)) == 1
    cell.outputs = cell.outputs[1:]
    assert notebook_kernel.figures(nb) == 1 and not notebook_kernel.not_figures(nb)


def test_a_notebook_kernel_draws_figures_inline(monkeypatch) -> None:
    """The kernel's environment selects the inline backend (whatever this process's MPLBACKEND is), 8 CPU devices,
    and the recipe is part of an executed notebook's key."""
    env = notebook_kernel.kernel_env("01_sharding_basics")
    assert env["MPLBACKEND"] == "module://matplotlib_inline.backend_inline"
    assert "--xla_force_host_platform_device_count=8" in env["XLA_FLAGS"].split()
    fast = notebook_kernel.kernel_env("01_x", fast_compile=True)["XLA_FLAGS"].split()
    assert set(notebook_kernel.FAST_COMPILE) <= set(fast)
    monkeypatch.setattr(notebook_kernel, "RUN_TIME_BOUND", frozenset({"03_navier_stokes"}))
    slow = notebook_kernel.kernel_env("03_navier_stokes", fast_compile=True)["XLA_FLAGS"]
    assert "optimization_level" not in slow and "fusion_emitters" not in slow
    key = notebook_kernel.source_key(NOTEBOOKS[0])
    monkeypatch.setattr(notebook_kernel, "RECIPE", "figures: Agg")  # notebooks executed otherwise are not reused
    assert notebook_kernel.source_key(NOTEBOOKS[0]) != key
