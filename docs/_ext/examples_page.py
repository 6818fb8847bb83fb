"""The examples gallery: one page per ``examples/NAME.py`` (its docstring, how to run it, its options, its code)."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import sys
from pathlib import Path

#: a picture for an example, where the docs have one that shows what it computes (path relative to docs/)
PICTURES: dict[str, tuple[str, str]] = {}


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


def _page(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    title, _, body = doc.partition("\n\n")  # the first paragraph is the title
    title = " ".join(title.split())
    usage = _help(path)
    lines = [f".. _example-{path.stem}:", "", f"``{path.name}``", "=" * (len(path.name) + 4), "",
             f"**{title.strip()}**", "", body.strip(), ""]
    if path.stem in PICTURES:
        image, caption = PICTURES[path.stem]
        lines += [f".. figure:: /{image}", "   :width: 80%", "", f"   {caption}", ""]
    lines += ["Run it", "------", "", ".. code-block:: bash", "", f"   python examples/{path.name}", "",
              ".. code-block:: text", ""]
    lines += ["   " + line if line else "" for line in usage.rstrip().splitlines()]
    lines += ["", "The code", "--------", "", f".. literalinclude:: ../../../examples/{path.name}",
              "   :language: python", "   :linenos:", ""]
    return "\n".join(lines) + "\n"


def write(out: Path, examples: Path) -> None:
    """``out/NAME.rst`` for every example and ``out/index.rst`` with their list."""
    out.mkdir(parents=True, exist_ok=True)
    paths = sorted(examples.glob("*.py"))
    for path in paths:
        _update(out / f"{path.stem}.rst", _page(path))
    for stale in out.glob("*.rst"):
        if stale.stem != "index" and not (examples / f"{stale.stem}.py").exists():
            stale.unlink()


def _update(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
