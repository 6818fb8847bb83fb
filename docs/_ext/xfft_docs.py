"""The documentation's own Sphinx extension: pages generated from the code, and the strict checks.

When the build starts it writes (into git-ignored folders of ``docs/``):

- ``api/generated/MODULE.rst``: one reference page per public module (:mod:`public_api`), with every public name
  documented by autodoc on the page of the most specific module that exports it, and a table of the rest;
- ``tutorials/generated/NN_name.ipynb``: the notebooks with their outputs (:mod:`tutorials`);
- ``examples/generated/NAME.rst``: one gallery page per ``examples/NAME.py``, with what it prints and a picture of
  its final state;
- ``_generated/benchmarks.md``: the benchmarks page's tables and plots, from ``benchmarks/results/*.json``.

Checks that make a strict build (``-W``) fail: a public name without a docstring, and a cross-reference into
``xfft`` or ``solvers`` that resolves to nothing. References to other projects' objects (``jax.Array``) are shown as
text: the build is offline, without intersphinx inventories.
"""

from __future__ import annotations

import builtins
import hashlib
import shutil
from pathlib import Path

import benchmarks_page
import examples_page
import public_api
import tutorials
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)
DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent

#: public names whose docstring is still to be written in the package: the build reports each (not as a
#: failure) until it is removed from here. Remove an entry when its docstring lands; keep this empty.
PENDING_DOCSTRINGS: set[str] = set()
#: cross-references in the package's docstrings that point to nothing, shown as text (not failing the build)
#: until the docstring is fixed; remove each entry when it is. Keep this empty.
PENDING_REFERENCES: set[str] = set()

_TITLES = {
    "xfft": "Distributed transforms, layouts and grids",
    "xfft.fft": "A drop-in for jax.numpy.fft",
    "xfft.distributed": "Multi-process runs",
    "xfft.compat.jaxdecomp": "jaxDecomp's names on xfft",
    "solvers": "Everything a simulation imports",
    "solvers.bases": "One-dimensional bases",
    "solvers.bases.tau": "Chebyshev tau solves",
    "solvers.grids": "Grids",
    "solvers.model": "Equations: the model",
    "solvers.equations": "The equations",
    "solvers.steady": "Steady (Poisson) solvers",
    "solvers.integrators": "Time integrators",
    "solvers.stepping": "The stepping core and step-size controllers",
    "solvers.simulation": "simulate and rollout",
    "solvers.outputs": "Outputs",
    "solvers.job": "The main job",
    "solvers.stability": "Linear stability",
    "solvers.diagnostics": "Diagnostics of periodic flows",
    "solvers.initial_conditions": "Initial conditions of periodic flows",
}


def _write(path: Path, text: str) -> None:
    """Write only what changed, so that Sphinx rebuilds only the pages whose source changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _directive(e: public_api.Entry) -> str:
    if e.kind == "class":
        return f".. autoclass:: {e.target}\n   :members:\n   :show-inheritance:\n"
    if e.kind == "exception":
        return f".. autoexception:: {e.target}\n   :members:\n   :show-inheritance:\n"
    if e.kind == "function":
        return f".. autofunction:: {e.target}\n"
    doc = public_api.docstring(e) or "(undocumented)"
    value = repr(e.obj)
    shown = f"   :value: {value}\n" if len(value) <= 80 and "\n" not in value else \
        f"   :type: {type(e.obj).__name__}\n"
    body = "\n".join("   " + line if line else "" for line in doc.splitlines())
    return f".. py:data:: {e.name}\n{shown}\n{body}\n"


def api_pages(app: Sphinx) -> None:
    """The reference: an index and one page per public module."""
    out = DOCS / "api" / "generated"
    entries = public_api.entries()
    mods = public_api.modules()
    for m in mods:
        own = [e for e in entries if e.module == m and e.home == m and e.kind != "module"]
        elsewhere = [e for e in entries if e.module == m and (e.home != m or e.kind == "module")]
        title = f"``{m}``" + (f": {_TITLES[m]}" if m in _TITLES else "")
        lines = [f".. _api-{m}:", "", title, "=" * len(title), "", f".. automodule:: {m}", "   :no-members:", ""]
        if own:
            lines += ["", ".. list-table::", "   :widths: 30 70", ""]
            for e in own:
                summary = public_api.summary(public_api.docstring(e))
                lines += [f"   * - :py:{_role(e)}:`~{e.target}`", f"     - {summary}"]
            lines.append("")
        if elsewhere:
            lines += ["", "Also exported here", "-" * 18, "", ".. list-table::", "   :widths: 30 70", ""]
            for e in elsewhere:
                where = f":doc:`{e.obj.__name__}`" if e.kind == "module" else f":py:{_role(e)}:`{e.target}`"
                lines += [f"   * - ``{m}.{e.name}``", f"     - {where}"]
            lines.append("")
        lines += ["", f".. currentmodule:: {m}", ""]
        lines += [_directive(e) for e in own]
        _write(out / f"{m}.rst", "\n".join(lines) + "\n")
    index = ["API reference", "=============", "",
             "Every public name of ``xfft``, ``xfft.fft``, ``xfft.distributed``, ``xfft.compat.jaxdecomp``, "
             "``solvers`` and its public subpackages, generated from the docstrings. A name that several modules "
             "export (``solvers.Channel`` is ``solvers.equations.Channel``) is documented once, on the page of its "
             "most specific module.", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {m}" for m in mods]
    _write(out / "index.rst", "\n".join(index) + "\n")
    for stale in out.glob("*.rst"):
        if stale.stem not in mods and stale.stem != "index":
            stale.unlink()


def _role(e: public_api.Entry) -> str:
    return {"class": "class", "exception": "exc", "function": "func", "data": "data", "module": "mod"}[e.kind]


def check_docstrings(app: Sphinx) -> None:
    """A public name without a docstring fails the strict build."""
    for e in public_api.entries():
        if e.home == e.module and not public_api.docstring(e).strip():
            if e.qualname in PENDING_DOCSTRINGS:
                logger.info(f"public name without a docstring (pending): {e.qualname}")
            else:
                logger.warning(f"public name without a docstring: {e.qualname} ({e.kind})",
                               location=str(DOCS / "api" / "generated" / f"{e.module}.rst"))


def builder_inited(app: Sphinx) -> None:
    api_pages(app)
    check_docstrings(app)
    try:
        examples_page.write(DOCS / "examples" / "generated", ROOT / "examples")
    except RuntimeError as e:  # an example that fails fails the (strict) build
        logger.warning(str(e))
    benchmarks_page.write(DOCS / "_generated", ROOT / "benchmarks" / "results")
    tutorials.write(DOCS / "tutorials" / "generated", ROOT / "notebooks")


def foreign_docstring(app, what, name, obj, options, lines) -> None:
    """Another project's function re-exported as ours (``xfft.fft.fftfreq``): point to it instead of rendering its
    docstring, which is written for its own site."""
    if what == "function" and obj is not None and not public_api.own(obj) and name.split(".")[0] in public_api.OWN:
        origin = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', name.rsplit('.', 1)[-1])}"
        first = next((line for line in lines if line.strip()), "")
        lines[:] = [first, "", f"``{origin.replace('._src', '')}``, re-exported unchanged: it returns a small "
                    "unsharded array that broadcasts against any sharded spectrum."]


def inherited_boilerplate(app, what, name, obj, skip, options):
    """Skip the members a class inherits from Python rather than declares: a constructor it does not define
    (``object.__init__``, the ``__new__`` that ``typing.NamedTuple`` generates: "Initialize self", "Create new
    instance of") and a named tuple's fields ("Alias for field number 0", documented in the class's docstring)."""
    if name in ("__init__", "__new__"):
        func = getattr(obj, "__func__", obj)  # (a classmethod's function)
        generated = (getattr(func, "__doc__", None) or "").startswith("Create new instance of")
        return True if generated or not public_api.own(func) else None
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    return None


# -- cross-references ------------------------------------------------------------------------------------------

_ALIASES: dict[str, str] = {}
_BUILTINS = set(dir(builtins)) | {"None", "Ellipsis", "optional", "callable", "array-like", "array_like",
                                  "iterable", "sequence", "mapping", "pytree", "PyTree"}


def _aliases() -> dict[str, str]:
    if not _ALIASES:
        for e in public_api.entries():
            if e.qualname != e.target:
                _ALIASES[e.qualname] = e.target
    return _ALIASES


def _external(target: str) -> bool:
    head = target.split(".")[0].lstrip("~")
    if head in public_api.OWN:
        return False
    if "." in target:
        return True  # jax.Array, np.ndarray, typing.Any, ...
    if head in _BUILTINS or head[:1].islower():
        return True
    # a bare capitalised name that no public module exports is another project's type (Array, NamedSharding, Mesh)
    return not any(e.name == head for e in public_api.entries())


def missing_reference(app: Sphinx, env, node, contnode):
    """Resolve the other spellings of a documented name; show other projects' names as text."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"]
    context = [node.get("py:module"), node.get("py:class")]
    candidates = [target]
    if context[0]:
        candidates.append(f"{context[0]}.{target}")
        if context[1]:
            candidates.append(f"{context[0]}.{context[1]}.{target}")
    aliases = _aliases()
    for cand in candidates:
        parts = cand.split(".")
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if head in aliases:
                resolved = ".".join([aliases[head], *parts[i:]])
                if resolved in domain.objects:
                    obj = domain.objects[resolved]
                    return _refnode(app, node, contnode, obj.docname, obj.node_id, resolved)
    # a name documented once, written without its module (``Grid``, ``SpectralGrid.grad``)
    matches = [name for name in domain.objects if name.endswith("." + target)]
    if len(matches) == 1:
        obj = domain.objects[matches[0]]
        return _refnode(app, node, contnode, obj.docname, obj.node_id, matches[0])
    if target in PENDING_REFERENCES or any(p.endswith(".") and target.startswith(p) for p in PENDING_REFERENCES):
        logger.info(f"reference to nothing (pending a docstring fix): {target}")
        return contnode
    if _external(target) or _importable(target, context[0]):
        # another project's name, or one of ours that exists but has no entry of its own (a private base class,
        # a type in a signature, a method without a docstring): text, not a link
        return contnode
    return None


def _importable(target: str, module: str | None) -> bool:
    """Whether ``target`` (or ``module.target``) names an existing object of xfft or solvers."""
    import importlib

    for name in (target, f"{module}.{target}" if module else None):
        if not name or name.split(".")[0] not in public_api.OWN:
            continue
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            try:
                for attr in parts[i:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                break
            return True
    return False


def public_bases(app, name, obj, options, bases) -> None:
    """Show only public base classes (a grid's private mixins are how it is built, not what it is)."""
    bases[:] = [b for b in bases if not any(p.startswith("_") for p in
                                            f"{getattr(b, '__module__', '')}.{b.__qualname__}".split("."))]


def _refnode(app, node, contnode, docname, node_id, title):
    from sphinx.util.nodes import make_refnode

    return make_refnode(app.builder, node["refdoc"], docname, node_id, contnode, title)


def copy_mathjax(app: Sphinx, exception) -> None:
    """MathJax from the jupyter-server-mathjax wheel into the site, so that math renders offline."""
    if exception is not None or app.builder.format != "html":
        return
    import jupyter_server_mathjax

    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    dest = Path(app.outdir) / "_static" / "mathjax"
    stamp = dest / ".source"
    key = hashlib.sha256(str(sorted(p.name for p in src.iterdir())).encode() + str(src).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == key:
        return
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("localization"))
    stamp.write_text(key)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", builder_inited)
    app.connect("autodoc-process-docstring", foreign_docstring)
    app.connect("autodoc-skip-member", inherited_boilerplate)
    app.connect("missing-reference", missing_reference)
    app.connect("autodoc-process-bases", public_bases)
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

