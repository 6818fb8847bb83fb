"""The browser check finds what it looks for: on a small site with one fault per page (a tutorial without a figure,
a figure that does not load, inherited boilerplate and a summary cut mid-sentence on API pages, a broken link in a
page the browser does not open, a broken anchor, a console error) it reports each, on its page; on the same site
repaired it reports nothing.

The check of the real site is ``make docs-check`` (after ``make docs``; ``.ci/run`` runs both). The browser tests
need Debian's Chromium (``apt-get install chromium``) and playwright (the docs extra); the link tests need neither.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser_check  # noqa: E402

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                    "0000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")

needs_browser = pytest.mark.skipif(
    browser_check.chromium() is None or not importlib.util.find_spec("playwright"),
    reason="no Chromium (apt-get install chromium) or no playwright")


def _figure(src: str) -> str:
    return f'<div class="cell_output"><img src="{src}" alt="a figure"></div>'


def _summary_table(*rows: tuple[str, str]) -> str:
    body = "".join(f'<tr><td><a class="reference internal" href="#here"><code class="xref">{name}</code></a></td>'
                   f"<td><p>{text}</p></td></tr>" for name, text in rows)
    also = '<tr><td><code class="literal">xfft.fused</code></td><td><p><a href="#here">elsewhere</a></p></td></tr>'
    return f"<table><tbody>{body}{also}</tbody></table>"


def _site(root: Path, broken: bool) -> Path:
    """The site: a home page, two tutorials, two API pages, a guide page, and a highlighted source in _modules/."""
    site = root / ("broken" if broken else "good")
    pages = {
        "index.html": '<a href="tutorials/generated/01_waves.html#top">tutorial</a>'
                      + ('<a href="tutorials/generated/01_waves.html#nowhere">gone</a>' if broken else ""),
        "guide/page.html": '<p>guide</p>' + ('<script>console.error("boom")</script>' if broken else ""),
        "tutorials/generated/01_waves.html": _figure("../../_images/fig.png"),
        "tutorials/generated/02_text.html": '<div class="cell_output"><pre>only text</pre></div>'
                                            + ("" if broken else _figure("../../_images/fig.png")),
        "tutorials/generated/03_lost.html": _figure("../../_images/gone.png" if broken else "../../_images/fig.png"),
        "api/generated/xfft.html": _summary_table(
            ("fused", "<code>fn(*args)</code> with its reductions done in one collective."),
            ("SnapshotWriter", "Writes fields: an output of a" if broken else "Writes fields as HDF5 and XDMF."))
                                   + '<dl class="py method"><dt id="xfft.Carry">Carry</dt></dl>',
        "api/generated/solvers.html": '<dl class="py method"><dt id="solvers.Carry.__new__">'
                                      + ("__new__(*args, **kwargs)</dt><dd>The same function as None.object.__new__"
                                         if broken else "Carry(state, t)</dt><dd>The loop carry.") + "</dd></dl>",
        "_modules/index.html": '<a href="xfft.html">xfft</a>'
                               + ('<a href="namedtuple_Carry.html">namedtuple_Carry</a>' if broken else ""),
        "_modules/xfft.html": '<a href="../api/generated/xfft.html#xfft.Carry">[docs]</a>',
    }
    for rel, body in pages.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'<!doctype html><html><head><meta charset="utf-8"><title>{rel}</title></head>'
                        f'<body id="top"><h1 id="here">{rel}</h1>{body}</body></html>')
    (site / "_images").mkdir()
    (site / "_images" / "fig.png").write_bytes(PNG)
    return site


def test_the_pages_visited_are_every_page_but_sources_and_indexes(tmp_path):
    site = _site(tmp_path, broken=False)
    for extra in ("genindex.html", "search.html", "_static/x.html"):
        (site / extra).parent.mkdir(exist_ok=True)
        (site / extra).write_text("<html></html>")
    assert browser_check.pages(site) == [
        "index.html", "api/generated/solvers.html", "api/generated/xfft.html", "guide/page.html",
        "tutorials/generated/01_waves.html", "tutorials/generated/02_text.html", "tutorials/generated/03_lost.html"]


def test_broken_links_anywhere_in_the_tree_are_found_on_disk(tmp_path):
    files, problems = browser_check.link_problems(_site(tmp_path, broken=True))
    assert files == 9
    assert sorted(problems) == [
        "_modules/index.html: broken link: namedtuple_Carry.html",
        "index.html: broken anchor: tutorials/generated/01_waves.html#nowhere",
        "tutorials/generated/03_lost.html: broken link: ../../_images/gone.png"]
    assert browser_check.link_problems(_site(tmp_path, broken=False)) == (9, [])


def test_a_link_out_of_the_site_is_reported(tmp_path):
    site = _site(tmp_path, broken=False)
    (site / "guide" / "page.html").write_text('<a href="../../elsewhere.html">x</a><a href="https://jax.dev">ok</a>')
    assert browser_check.link_problems(site)[1] == ["guide/page.html: link outside the site: ../../elsewhere.html"]


@needs_browser
def test_each_fault_of_a_broken_site_is_reported_on_its_page(tmp_path, capsys):
    assert browser_check.main([str(_site(tmp_path, broken=True)), "--out", str(tmp_path / "shots")]) == 1
    problems = capsys.readouterr().out.splitlines()
    text = "\n".join(problems)
    expected = [
        "_modules/index.html: broken link: namedtuple_Carry.html",
        "index.html: broken anchor: tutorials/generated/01_waves.html#nowhere",
        "guide/page.html: console error: boom",
        "tutorials/generated/02_text.html: tutorial shows no figure",
        "tutorials/generated/03_lost.html: image not loaded: ",
        "tutorials/generated/03_lost.html: tutorial shows no figure",
        "api/generated/solvers.html: inherited boilerplate '__new__'",
        "api/generated/solvers.html: inherited boilerplate 'The same function as'",
        "api/generated/xfft.html: summary of SnapshotWriter is not a whole sentence: 'Writes fields: an output of a'",
    ]
    for what in expected:
        assert what in text, (what, text)
    # nothing else: the figure that loads, the summary that starts with a code name, the sources' links pass
    assert not any(p.startswith(("tutorials/generated/01_waves", "_modules/xfft")) or "fused" in p for p in problems)
    assert len(list((tmp_path / "shots").glob("*.png"))) == 7


@needs_browser
def test_a_good_site_passes(tmp_path, capsys):
    assert browser_check.main([str(_site(tmp_path, broken=False)), "--out", str(tmp_path / "shots")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"browser check: 7 pages visited (3 tutorials, 2 API pages), the links of 9 HTML files checked, 0 problems; "
        f"screenshots in {tmp_path / 'shots'}"]
