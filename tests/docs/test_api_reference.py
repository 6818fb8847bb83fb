"""Every public name has a docstring and a reference page.

The public names are those of ``docs/_ext/public_api.py`` (the modules the reference documents, and each module's
``__all__``); the reference pages are the ones the docs build writes (``docs/_ext/xfft_docs.py``), generated here
into a temporary folder without building the site. ``make docs`` fails on the same gaps (and on broken references);
this test finds them in seconds.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

public_api = pytest.importorskip("public_api")
xfft_docs = pytest.importorskip("xfft_docs")  # needs Sphinx (the docs extra)

ENTRIES = public_api.entries()


@pytest.fixture(scope="module")
def pages(tmp_path_factory, monkeypatch_module) -> dict[str, str]:
    """The generated reference pages, by module."""
    out = tmp_path_factory.mktemp("api")
    monkeypatch_module.setattr(xfft_docs, "DOCS", out.parent / out.name)
    (out / "api").mkdir()
    xfft_docs.api_pages(None)
    return {p.stem: p.read_text() for p in (out / "api" / "generated").glob("*.rst")}


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_reference_covers_the_required_modules():
    required = {"xfft", "xfft.fft", "xfft.distributed", "solvers", "solvers.bases", "solvers.bases.tau",
                "solvers.grids", "solvers.model", "solvers.equations", "solvers.steady", "solvers.integrators",
                "solvers.stepping", "solvers.simulation", "solvers.outputs", "solvers.job", "solvers.stability",
                "solvers.diagnostics", "solvers.initial_conditions"}
    assert required <= set(public_api.modules())
    assert len(ENTRIES) > 250, len(ENTRIES)  # the lists are found (a test cannot pass on nothing)


@pytest.mark.parametrize("module", public_api.modules())
def test_every_public_name_has_a_docstring(module):
    """A public name of the module (its own, not a re-export documented elsewhere) without a docstring fails,
    except the names listed as pending in docs/_ext/xfft_docs.py, which must still be undocumented (a fixed
    name leaves the list)."""
    assert importlib.import_module(module).__doc__, f"module {module} has no docstring"
    missing = [e.qualname for e in ENTRIES if e.module == module and e.home == module
               and not public_api.docstring(e).strip()]
    assert set(missing) <= xfft_docs.PENDING_DOCSTRINGS, f"public names without a docstring: {missing}"
    fixed = [q for q in xfft_docs.PENDING_DOCSTRINGS if q.rpartition(".")[0] == module and q not in missing]
    assert not fixed, f"documented now: remove {fixed} from PENDING_DOCSTRINGS in docs/_ext/xfft_docs.py"


def test_every_public_name_has_a_reference_entry(pages):
    """Each name is documented on its home page and listed on the page of every module that exports it."""
    assert set(pages) >= set(public_api.modules())
    for e in ENTRIES:
        if e.kind == "module":
            assert f":doc:`{e.obj.__name__}`" in pages[e.module], e.qualname
            continue
        home = pages[e.home]
        directive = {"class": "autoclass", "exception": "autoexception", "function": "autofunction",
                     "data": "py:data"}[e.kind]
        name = e.target if e.kind != "data" else e.name
        assert re.search(rf"^\.\. {directive}:: {re.escape(name)}$", home, re.M), f"{e.qualname}: no entry"
        if e.module != e.home:
            assert f"``{e.qualname}``" in pages[e.module], f"{e.qualname}: not listed on its module's page"


def test_every_summary_in_the_reference_is_a_whole_sentence(pages):
    """The summary the tables show for a name is the first sentence of its docstring's first paragraph, however many
    lines it wraps over: a capital (or a code name) first, a full stop last, never a line cut mid-sentence."""
    rows = [re.match(r"     - (.*)$", line) for text in pages.values() for line in text.splitlines()]
    shown = [m.group(1) for m in rows if m and not m.group(1).startswith(":")]  # (not "Also exported here" rows)
    assert len(shown) > 200, len(shown)
    for summary in shown:
        assert re.search(r"[.!?][)\"'`*]*$", summary) and not summary[0].islower(), summary
    snapshot = next(e for e in ENTRIES if e.qualname == "solvers.outputs.SnapshotWriter")
    first_line = public_api.docstring(snapshot).splitlines()[0]
    assert not re.search(r"[.!?]$", first_line)  # the docstring wraps its first sentence: the summary joins it
    assert public_api.summary(public_api.docstring(snapshot)).startswith(first_line)
    assert public_api.summary(public_api.docstring(snapshot)).endswith(".")


@pytest.mark.parametrize("doc, summary", [
    ("Writes fields as HDF5: an output of a\nrun, or called directly.\n\nArgs:\n    x: y.",
     "Writes fields as HDF5: an output of a run, or called directly."),
    ("One step. Then more, e.g. two.", "One step."),
    ("Compare with e.g. numpy. Then.", "Compare with e.g. numpy."),
    ("the integrators by name (``rk4``, ``imex``)", "The integrators by name (``rk4``, ``imex``)."),
    ("``fn(x)`` with its reductions:\n\n    code", "``fn(x)`` with its reductions."),
    ("Sine series, by a DST-II:\nfixed-value walls.", "Sine series, by a DST-II: fixed-value walls."),
    ("", ""),
])
def test_a_summary_is_the_first_sentence_made_whole(doc, summary):
    assert public_api.summary(doc) == summary


def test_what_a_class_inherits_from_python_is_not_documented():
    """autodoc would show a named tuple's generated ``__new__`` ("Create new instance of"), ``object.__init__``
    ("Initialize self") and the fields' "Alias for field number 0" on the page of every such class."""
    from solvers.model import Equation
    from solvers.outputs import SnapshotWriter
    from solvers.stepping import Carry

    skip = xfft_docs.inherited_boilerplate  # (autodoc-skip-member: the member's own name)
    assert skip(None, "method", "__new__", Carry.__new__, False, {}) is True
    assert skip(None, "method", "state", Carry.__dict__["state"], False, {}) is True
    assert skip(None, "method", "__init__", object.__init__, False, {}) is True
    # a constructor of the package's own is documented (its signature, and its docstring where it has one)
    assert skip(None, "method", "__init__", Equation.__init__, False, {}) is None
    assert skip(None, "method", "__init__", SnapshotWriter.__init__, False, {}) is None
    assert skip(None, "method", "nonlinear", Equation.nonlinear, False, {}) is None


def test_a_reexported_function_points_to_its_origin_and_nothing_else_is_rewritten():
    import jax

    lines = ["Return sample frequencies for the discrete Fourier transform.", "", "jax's own text"]
    xfft_docs.foreign_docstring(None, "function", "xfft.fft.fftfreq", jax.numpy.fft.fftfreq, {}, lines)
    assert lines[2].startswith("``jax.numpy.fft.fftfreq``, re-exported unchanged") and len(lines) == 3
    lines = ["Initialize self.  See help(type(self)) for accurate signature."]
    xfft_docs.foreign_docstring(None, "method", "solvers.outputs.Row.__init__", object.__init__, {}, lines)
    assert lines == ["Initialize self.  See help(type(self)) for accurate signature."]


#: a date or an issue number in the package's sources (docstrings and comments say what is, not when or why-then)
HISTORY = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b|\bissues? #?\d+\b", re.I)
#: the notes still to be rewritten (file, the text found): the test fails on a new one, and on one of these once it
#: is gone (so that this list only shrinks); keep it empty
PENDING_HISTORY: set[tuple[str, str]] = set()


def test_no_dates_or_issue_numbers_in_the_package():
    root = DOCS.parent
    found = {(p.relative_to(root).as_posix(), m.group(0))
             for pkg in ("xfft", "solvers", "examples") for p in sorted((root / pkg).rglob("*.py"))
             for m in HISTORY.finditer(p.read_text())}
    assert found <= PENDING_HISTORY, f"dated or issue-numbered notes: {sorted(found - PENDING_HISTORY)}"
    assert found == PENDING_HISTORY, f"rewritten now: remove {sorted(PENDING_HISTORY - found)} from PENDING_HISTORY"
