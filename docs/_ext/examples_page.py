"""The examples gallery: one page per ``examples/NAME.py``: its docstring, how to run it, what it prints, a picture
(its own ``--plot`` figure where it has one, else its final state) from a run with its defaults
(``example_run.py``, in a process of its own, repeated only when the example changes), its options and its code."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(__file__).resolve().parents[1] / "_build" / "examples"
RUNNER = Path(__file__).resolve().parent / "example_run.py"


def run(path: Path, out: Path) -> str:
    """What ``python examples/NAME.py`` prints; its picture as ``out/NAME.png``. Raises ``RuntimeError`` naming
    the example when it fails."""
    key = hashlib.sha256(path.read_bytes() + RUNNER.read_bytes()).hexdigest()
    CACHE.mkdir(parents=True, exist_ok=True)
    png, txt, stamp = (CACHE / f"{path.stem}{ext}" for ext in (".png", ".txt", ".sha256"))
    if not (stamp.exists() and stamp.read_text() == key and png.exists() and txt.exists()):
        env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu",
                   MPLBACKEND="Agg")
        env.pop("JAX_ENABLE_X64", None)
        done = subprocess.run([sys.executable, str(RUNNER), str(path), str(png)], capture_output=True, text=True,
                              env=env, cwd=CACHE, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"examples/{path.name} failed: {done.stderr[-3000:]}")
        txt.write_text(done.stdout)
        stamp.write_text(key)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / png.name).exists() or (out / png.name).read_bytes() != png.read_bytes():
        shutil.copyfile(png, out / png.name)
    return txt.read_text()


def _help(path: Path) -> str:
    spec = importlib.util.spec_from_file_location(f"_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    buf, argv0 = io.StringIO(), sys.argv[0]
    sys.argv[0] = path.name  # argparse's program name
    try:
        with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
            module.main(["--help"])
    finally:
        sys.argv[0] = argv0
    return buf.getvalue()


def _page(path: Path, printed: str) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    title, _, body = doc.partition("\n\n")  # the first paragraph is the title
    title = " ".join(title.split())
    body = re.sub(r"(?<!:):\n\n(?=    \S)", "::\n\n", body)  # an indented block after "...:" keeps its lines
    usage = _help(path)
    lines = [f".. _example-{path.stem}:", "", f"``{path.name}``", "=" * (len(path.name) + 4), "",
             f"**{title.strip()}**", "", body.strip(), ""]
    lines += ["Run it", "------", "", ".. code-block:: bash", "", f"   python examples/{path.name}", "",
              "prints (with its defaults, on 8 CPU devices):", "", ".. code-block:: text", ""]
    lines += ["   " + line if line else "" for line in printed.rstrip().splitlines()]
    caption = (f"The figure of that run: ``python examples/{path.name} --plot FILE``." if "--plot" in usage else
               "The final state of that run, on the grid's points.")
    lines += ["", f".. figure:: {path.stem}.png", "   :width: 90%", "", f"   {caption}", "",
              "Its options (``--help``):", "", ".. code-block:: text", ""]
    lines += ["   " + line if line else "" for line in usage.rstrip().splitlines()]
    lines += ["", "The code", "--------", "", f".. literalinclude:: ../../../examples/{path.name}",
              "   :language: python", "   :linenos:", ""]
    return "\n".join(lines) + "\n"


def write(out: Path, examples: Path) -> None:
    """``out/NAME.rst`` and its picture for every example (``docs/examples/index.md`` lists them)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = sorted(examples.glob("*.py"))
    for path in paths:
        _update(out / f"{path.stem}.rst", _page(path, run(path, out)))
    for stale in out.glob("*.rst"):
        if stale.stem != "index" and not (examples / f"{stale.stem}.py").exists():
            stale.unlink()


def _update(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
