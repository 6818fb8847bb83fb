"""The shape of the house, read from the code (every import, module-level or inside a function): no import cycle
between modules of xfft or solvers, no private module imported outside its own package (and none at all from
notebooks, benchmarks and examples), solvers built only on xfft's public API, and no module over 400 lines."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("xfft", "solvers")
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def _imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that ``path`` (module ``name``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # import a.b.c of a package a.b: the deepest known module
                t = t.rpartition(".")[0]
            if t:
                out.add(t)
    return out


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {m: _imports(p, m, known) - {m} for m, p in known.items()}


def _private(module: str) -> str | None:
    """The package a private module belongs to (``a.b._c`` -> ``a.b``), or None for a public module."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    cycles = []

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if n.startswith(m + ".") or m.startswith(n + "."):  # a package and its own modules
                continue
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not cycles, cycles


def test_private_modules_stay_in_their_package():
    bad = [(m, n) for m, deps in _graph().items() for n in deps
           if (owner := _private(n)) is not None and not (m == owner or m.startswith(owner + "."))]
    assert not bad, bad


def test_solvers_uses_only_the_public_xfft():
    bad = [(m, n) for m, deps in _graph().items() if m.startswith("solvers") for n in deps
           if n.startswith("xfft") and _private(n) is not None]
    assert not bad, bad


@pytest.mark.parametrize("folder", ["notebooks", "benchmarks", "examples"])
def test_scripts_import_public_names_only(folder):
    known = _modules()
    bad = []
    for path in sorted((ROOT / folder).glob("*.py")):
        for n in _imports(path, f"{folder}.{path.stem}", known):
            if _private(n) is not None:
                bad.append((path.name, n))
        text = path.read_text()  # a private name spelled out (xfft._plan); dunders (xfft.__version__) are public
        bad += [(path.name, tok) for tok in ("solvers._", "xfft._") if re.search(rf"\b{re.escape(tok)}(?!_)", text)]
    assert not bad, bad


def test_no_module_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in _modules().values() if (n := len(p.read_text().splitlines()))
            > MAX_LINES}
    assert not long, long


def test_import_leaves_the_heavy_libraries_for_later():
    """``import xfft, solvers`` loads none of orbax, matplotlib, h5py, xarray, tqdm: each is imported where it is
    first used (a checkpoint, a plot, a snapshot, a progress bar), so that ``python -m solvers list``, ``--help``,
    a notebook and a run without them start without paying for them."""
    import subprocess
    import sys

    heavy = ("orbax", "matplotlib", "h5py", "xarray", "tqdm")
    code = f"import sys, xfft, solvers; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]", p.stdout
