"""The built site as a reader sees it: its pages in a real headless browser (Debian's Chromium driven by
Playwright), and every link of the built tree on disk.

In the browser, every page of the site (the home page, the guide, every tutorial, every example, every API page;
not the highlighted sources of ``_modules/``, the index and the search page), it checks:

- no console error and no failed request (every script, stylesheet, font and figure of the page loads, from the site
  itself: nothing outside it is fetched);
- math typeset by MathJax where the page has math (no raw ``\\(`` left, rendered math present);
- every ``<img>`` loaded (``naturalWidth > 0``);
- a tutorial page (``tutorials/generated/``) shows at least one figure among its cells' outputs;
- an API page (``api/generated/``) carries no boilerplate inherited from Python (``__new__``, "The same function
  as", "Alias for field number", "Create new instance of", "Initialize self"), and each summary of its tables is a
  whole sentence (a capital or a code name first, a full stop last: not "an output of a").

On disk, every ``href`` and ``src`` of every HTML file of the tree (``_modules/`` included) that points into the site
must name a file that exists, and an anchor that exists when it names one.

Screenshots of the pages go to ``OUT`` (default ``docs/_build/screenshots``), kept by CI as build artifacts.

Usage: ``python tests/docs/browser_check.py [SITE] [--out DIR]`` (SITE: ``docs/_build/html``); exit status 1 with
one line per problem. Chromium: ``apt-get install chromium`` (``XFFT_CHROMIUM`` names another binary).
"""

from __future__ import annotations

import argparse
import functools
import html.parser
import http.server
import os
import re
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = "tutorials/generated/"
API = "api/generated/"
#: what the browser does not open: highlighted sources (their links are checked on disk), generated indexes
NOT_VISITED = re.compile(r"^(_modules|_static|_sources|_images|_downloads)/|^(genindex|search|py-modindex)\.html$")
#: text a reference page shows only when autodoc documents what a class inherits from Python
BOILERPLATE = ("__new__", "The same function as", "Alias for field number", "Create new instance of",
               "Initialize self")
#: a whole sentence, as a summary shows it: it ends with a full stop (or ! ?), maybe inside a bracket or quote
SENTENCE_END = re.compile(r"[.!?][)\"'\u201d\u2019]*$")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-dev-shm-usage"]
BLANK = "about:blank"


def _mathjax_probe(message) -> bool:
    """MathJax 2's font check: it declares a font at ``about:blank`` (``MathJax_Blank``), which Chromium refuses to
    load from an http page and reports as a console error. Only that is ignored."""
    return (message.location or {}).get("url") == BLANK or f"font at '{BLANK}'" in message.text


def chromium() -> str | None:
    """The Chromium binary, or None."""
    for candidate in (os.environ.get("XFFT_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def pages(site: Path) -> list[str]:
    """The pages the browser opens (paths relative to ``site``), the home page first."""
    found = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    return sorted((p for p in found if not NOT_VISITED.search(p)), key=lambda p: (p != "index.html", p))


# -- links on disk ----------------------------------------------------------------------------------------------

class _Links(html.parser.HTMLParser):
    """The ids and the link targets (``href``, ``src``) of one HTML file."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.targets: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value and (name == "id" or tag == "a"):
                self.ids.add(value)
            elif name in ("href", "src") and value is not None and tag != "base":
                self.targets.append(value)


def _parse(path: Path, parsed: dict[Path, _Links]) -> _Links:
    if path not in parsed:
        parsed[path] = _Links()
        parsed[path].feed(path.read_text(errors="replace"))
    return parsed[path]


def link_problems(site: Path) -> tuple[int, list[str]]:
    """The links of every HTML file under ``site`` that point into the site at nothing: a missing file, or an
    anchor that the target page does not have. Returns the number of files read and one line per broken link."""
    site = site.resolve()
    files = sorted(site.rglob("*.html"))
    problems, parsed = [], {}
    for path in files:
        rel = path.relative_to(site).as_posix()
        for raw in dict.fromkeys(_parse(path, parsed).targets):
            value = raw.strip()
            if not value or urlparse(value).scheme or value.startswith("//"):
                continue  # another site (http:, mailto:, data:, javascript:): not the site's to keep
            url, frag = urldefrag(value)
            target = (path.parent / unquote(url.split("?")[0])).resolve() if url else path
            if url and not target.is_relative_to(site):
                problems.append(f"{rel}: link outside the site: {raw}")
                continue
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{rel}: broken link: {raw}")
            elif frag and target.suffix == ".html" and unquote(frag) not in _parse(target, parsed).ids:
                problems.append(f"{rel}: broken anchor: {raw}")
    return len(files), problems


# -- pages in the browser ---------------------------------------------------------------------------------------

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log on stderr
        pass


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """The site on a local port (127.0.0.1), as a web server would serve it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def _math(page, rel: str) -> list[str]:
    math = page.locator(".math.notranslate").count()
    if not math:
        return []
    try:  # MathJax 2 typesets asynchronously: wait for its queue to finish
        page.wait_for_function("window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0 && "
                               "document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_SVG').length > 0",
                               timeout=30000)
    except Exception:  # noqa: BLE001 - reported below as untypeset math
        pass
    # typeset math keeps its TeX in a script element, without the \\( \\) delimiters the build wrote
    raw = page.evaluate("[...document.querySelectorAll('.math.notranslate')].filter(e => "
                        "/\\\\[(\\[]/.test(e.textContent)).length")
    typeset = page.locator("script[type^='math/tex']").count()
    return [f"{rel}: math not typeset ({raw} of {math} math elements raw, {typeset} rendered)"] if raw or not typeset \
        else []


def _reference(page, rel: str) -> list[str]:
    """An API page: inherited boilerplate, summaries that are not whole sentences."""
    problems = []
    text = page.inner_text("body")
    for phrase in BOILERPLATE:
        if phrase in text:
            at = text.index(phrase)
            context = " ".join(text[max(0, at - 60):at + 60].split())
            problems.append(f"{rel}: inherited boilerplate {phrase!r}: ...{context}...")
    # the rows of the summary tables (a link to the name, its summary): [name, summary, whether the summary starts
    # with an element (a code name) rather than text]
    rows = page.evaluate("""[...document.querySelectorAll('table tr')].map(r => {
        const c = r.querySelectorAll('td');
        if (c.length < 2 || !c[0].querySelector('.xref')) return null;
        const p = c[1].querySelector('p') || c[1];
        let first = p.firstChild;
        while (first && first.nodeType === 3 && !first.textContent.trim()) first = first.nextSibling;
        return [c[0].innerText.trim(), c[1].innerText.trim(), !!first && first.nodeType === 1];
    }).filter(x => x)""")
    for name, summary, code_first in rows:
        if not summary or not SENTENCE_END.search(summary) or (summary[0].islower() and not code_first):
            problems.append(f"{rel}: summary of {name} is not a whole sentence: {summary!r}")
    return problems


def check_page(page, base: str, rel: str, shot: Path) -> list[str]:
    """Problems of one page seen in the browser (empty: it renders as it should)."""
    problems, errors, failed = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and not _mathjax_probe(m) else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: failed.append(f"{r.url} ({r.failure})") if r.url != BLANK else None)
    page.on("response", lambda r: failed.append(f"{r.url} (HTTP {r.status})") if r.status >= 400 else None)
    page.goto(urljoin(base, rel), wait_until="networkidle")
    problems += _math(page, rel)
    images = page.evaluate("[...document.images].map(i => [i.currentSrc || i.src, i.complete && i.naturalWidth, "
                           "!!i.closest('.cell_output, .output')])")
    for src, width, _ in images:
        if not width:
            problems.append(f"{rel}: image not loaded: {src}")
    if rel.startswith(TUTORIALS):
        if any(width and in_output for _, width, in_output in images):  # the screenshot shows the first figure
            page.locator(".cell_output img, .output img").first.scroll_into_view_if_needed()
        else:
            problems.append(f"{rel}: tutorial shows no figure (no image among its cells' outputs)")
    if rel.startswith(API):
        problems += _reference(page, rel)
    page.screenshot(path=str(shot), full_page=False)
    problems += [f"{rel}: console error: {e}" for e in errors]
    problems += [f"{rel}: request failed: {f}" for f in failed]
    return problems


def check(site: Path, out: Path) -> tuple[list[str], list[str]]:
    """The pages visited and the problems found: links of the whole tree on disk, then every page of :func:`pages`
    in Chromium (screenshots in ``out``)."""
    from playwright.sync_api import sync_playwright

    visited = pages(site)
    _, problems = link_problems(site)
    binary = chromium()
    if binary is None:
        return visited, problems + ["no Chromium found (apt-get install chromium, or set XFFT_CHROMIUM)"]
    for must in ("index.html", TUTORIALS, API):
        if not any(p.startswith(must) for p in visited):
            problems.append(f"{must}: not built")
    out.mkdir(parents=True, exist_ok=True)
    server, base = serve(site)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=binary, args=CHROMIUM_FLAGS, headless=True)
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            # nothing but the site: any other request is a failure the page should not have made
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
                          else route.abort())
            for rel in visited:
                page = context.new_page()
                problems += check_page(page, base, rel, out / (rel.replace("/", "_")[:-5] + ".png"))
                page.close()
            browser.close()
    finally:
        server.shutdown()
    return visited, problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("site", nargs="?", type=Path, default=ROOT / "docs" / "_build" / "html")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "_build" / "screenshots")
    args = p.parse_args(argv)
    if not (args.site / "index.html").exists():
        print(f"browser check: no site at {args.site} (make docs)")
        return 1
    visited, problems = check(args.site, args.out)
    for line in problems:
        print(line)
    files = sum(1 for _ in args.site.rglob("*.html"))
    print(f"browser check: {len(visited)} pages visited ({sum(p.startswith(TUTORIALS) for p in visited)} tutorials, "
          f"{sum(p.startswith(API) for p in visited)} API pages), the links of {files} HTML files checked, "
          f"{len(problems)} problems; screenshots in {args.out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
