"""The browser check finds what it looks for: on a small site with a broken link, a broken anchor, a missing figure
and a console error it reports each, and on the same site repaired it reports nothing.

The check of the real site is ``make docs-check`` (after ``make docs``; ``.ci/run`` runs both). Needs Debian's
Chromium (``apt-get install chromium``) and playwright (the docs extra); skipped without them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser_check  # noqa: E402

pytest.importorskip("playwright")
if browser_check.chromium() is None:
    pytest.skip("no Chromium (apt-get install chromium)", allow_module_level=True)

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                    "0000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")


def _site(tmp_path: Path, broken: bool) -> Path:
    site = tmp_path / ("broken" if broken else "good")
    (site / "a").mkdir(parents=True)
    (site / "fig.png").write_bytes(PNG)
    bad = ('<a href="missing.html">x</a><a href="index.html#nowhere">y</a><img src="gone.png">'
           '<script>console.error("boom")</script>') if broken else ""
    for rel in browser_check.PAGES:
        page = site / rel
        page.parent.mkdir(parents=True, exist_ok=True)
        up = "../" * rel.count("/")
        page.write_text(f'<!doctype html><html><body id="top"><h1 id="here">page</h1>'
                        f'<a href="{up}index.html#here">ok</a><img src="{up}fig.png">{bad}</body></html>')
    return site


def test_a_broken_site_is_reported(tmp_path):
    problems = browser_check.check(_site(tmp_path, broken=True), tmp_path / "shots")
    text = "\n".join(problems)
    for what in ("broken link", "broken anchor", "image not loaded", "console error: boom"):
        assert what in text, (what, text)
    assert len(list((tmp_path / "shots").glob("*.png"))) == len(browser_check.PAGES)


def test_a_good_site_passes(tmp_path):
    assert browser_check.check(_site(tmp_path, broken=False), tmp_path / "shots") == []
