"""The public API the reference documents: which modules, which names, and where each name is documented.

Used by the Sphinx extension (``xfft_docs``) to write the API pages and by ``tests/docs`` to check that every public
name has a docstring and a reference page. A module's public names are its ``__all__``; a module without one
exposes the functions, classes and documented constants it defines itself (names without a leading underscore).
A name exported by several modules (``solvers.Channel`` is ``solvers.equations.Channel``) is documented once, on
the page of the most specific module that exports it; the other spellings resolve to that entry.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import types
from dataclasses import dataclass
from functools import cache
from pathlib import Path

#: the modules with a reference page, in the order of the reference's index (modules that these export as
#: public names, such as ``solvers.stability.orr_sommerfeld``, get pages too)
MODULES = (
    "xfft", "xfft.fft", "xfft.distributed", "xfft.compat.jaxdecomp",
    "solvers", "solvers.bases", "solvers.bases.tau", "solvers.grids", "solvers.model", "solvers.equations",
    "solvers.steady", "solvers.integrators", "solvers.stepping", "solvers.simulation", "solvers.outputs",
    "solvers.job", "solvers.stability", "solvers.diagnostics", "solvers.initial_conditions",
)
#: the packages whose objects are documented here (everything else is another project's)
OWN = ("xfft", "solvers")


@dataclass(frozen=True)
class Entry:
    """One public name of one module."""

    module: str  # the module that exports it
    name: str
    obj: object
    home: str  # the module on whose page it is documented
    kind: str  # "module", "class", "exception", "function", "data"

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def target(self) -> str:
        """The name of the documented entry (``home.name``; a module is its own page)."""
        return self.obj.__name__ if self.kind == "module" else f"{self.home}.{self.name}"


def own(obj: object) -> bool:
    """Whether ``obj`` belongs to xfft or solvers (its docstring is ours to check)."""
    mod = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None) or ""
    return mod.split(".")[0] in OWN


def _kind(obj: object) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj) and (inspect.isfunction(obj) or inspect.isbuiltin(obj) or hasattr(obj, "__wrapped__")
                          or type(obj).__name__ in ("PjitFunction", "function")):
        return "function"
    return "data"


@cache
def _source_tree(modname: str) -> ast.Module | None:
    mod = importlib.import_module(modname)
    path = getattr(mod, "__file__", None)
    return ast.parse(Path(path).read_text()) if path and path.endswith(".py") else None


def defining_module(modname: str, name: str, depth: int = 0) -> str:
    """The module whose source assigns ``name`` (following ``from X import name`` re-exports)."""
    tree = _source_tree(modname)
    if tree is None or depth > 8:
        return modname
    package = modname if Path(importlib.import_module(modname).__file__).name == "__init__.py" else \
        modname.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = package
                    for _ in range(max(node.level - 1, 0)):
                        base = base.rpartition(".")[0]
                    src = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
                    if src.split(".")[0] not in OWN:
                        return src
                    return defining_module(src, alias.name, depth + 1)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return modname
    return modname


def data_doc(modname: str, name: str) -> str:
    """The ``#:`` comment (or the string after the assignment) that documents a constant, found where it is
    assigned; empty if none."""
    from sphinx.pycode import ModuleAnalyzer

    home = defining_module(modname, name)
    # the name it is assigned under in its own module (``from ._layout import KINDS as R2R_KINDS``)
    original = _original_name(modname, name)
    try:
        docs = ModuleAnalyzer.for_module(home).find_attr_docs()
    except Exception:  # noqa: BLE001 - a module without source: no comment to find
        return ""
    lines = docs.get(("", original)) or docs.get(("", name)) or []
    return "\n".join(lines).strip()


def _original_name(modname: str, name: str, depth: int = 0) -> str:
    tree = _source_tree(modname)
    if tree is None or depth > 8:
        return name
    package = modname if Path(importlib.import_module(modname).__file__).name == "__init__.py" else \
        modname.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = package
                    for _ in range(max(node.level - 1, 0)):
                        base = base.rpartition(".")[0]
                    src = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
                    if src.split(".")[0] not in OWN:
                        return alias.name
                    return _original_name(src, alias.name, depth + 1)
    return name


def public_names(modname: str) -> list[str]:
    """The public names of a module (see the module docstring)."""
    mod = importlib.import_module(modname)
    if hasattr(mod, "__all__"):
        return list(mod.__all__)
    names = []
    for name, obj in vars(mod).items():
        if name.startswith("_") or isinstance(obj, types.ModuleType):
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            if getattr(obj, "__module__", None) == modname:
                names.append(name)
        elif defining_module(modname, name) == modname and data_doc(modname, name):
            names.append(name)
    return names


@cache
def modules() -> tuple[str, ...]:
    """Every module with a page: :data:`MODULES` and the public modules they export."""
    out = list(MODULES)
    i = 0
    while i < len(out):
        mod = importlib.import_module(out[i])
        for name in public_names(out[i]):
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType) and own(obj) and obj.__name__ not in out:
                out.append(obj.__name__)
        i += 1
    return tuple(out)


def _home(obj: object, exporters: list[str], modname: str, name: str) -> str:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    origin = getattr(obj, "__module__", None) if _kind(obj) != "data" else defining_module(modname, name)
    origin = origin or ""

    def score(m: str) -> tuple[int, int]:
        common = len([1 for a, b in zip(m.split("."), origin.split(".")) if a == b])
        return common, len(m.split("."))

    return max(exporters, key=score)


@cache
def entries() -> tuple[Entry, ...]:
    """Every public name of every page's module, with the page it is documented on."""
    mods = modules()
    exporters: dict[object, list[str]] = {}
    found = []
    for m in mods:
        mod = importlib.import_module(m)
        for name in public_names(m):
            obj = getattr(mod, name)
            # a constant is the same entry where it is the same assignment (equal small values may be shared)
            key = ("data", defining_module(m, name), _original_name(m, name)) if _kind(obj) == "data" else id(obj)
            found.append((m, name, obj, key))
            exporters.setdefault(key, []).append(m)
    return tuple(Entry(m, name, obj, _home(obj, exporters[key], m, name), _kind(obj)) for m, name, obj, key in found)


def docstring(entry: Entry) -> str:
    """What the reference shows as the entry's description (empty: undocumented)."""
    if entry.kind == "data":
        return data_doc(entry.module, entry.name)
    return inspect.getdoc(entry.obj) or ""


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bcf)(?<!\betc)[.!?](?=\s+[A-Z(`*:]|$)")


def summary(text: str) -> str:
    """The one-sentence summary of a docstring, as the reference's tables show it: the first sentence of its first
    paragraph (which may wrap over several lines), ending with a full stop, starting with a capital letter.

    A first paragraph that introduces a list or a code block (it ends with ``:``) ends with a full stop instead; a
    constant's ``#:`` comment (a phrase: "the integrators by name") becomes a sentence the same way.
    """
    paragraph = " ".join(inspect.cleandoc(text).strip().split("\n\n")[0].split())
    if not paragraph:
        return ""
    end = _SENTENCE_END.search(paragraph)
    sentence = paragraph[:end.end()] if end else paragraph
    sentence = re.sub(r"[:;,]$", "", sentence.rstrip())
    if not re.search(r"[.!?][)\"'`*]*$", sentence):
        sentence += "."
    return sentence[0].upper() + sentence[1:] if sentence[0].islower() else sentence
