"""The built site in a real headless browser (Debian's Chromium driven by Playwright): pages render as a reader sees
them.

For the home page, one tutorial and one API page it checks: no console error and no failed request (every script,
stylesheet, font and figure of the page loads, from the site itself: nothing outside it is fetched), math typeset by
MathJax (no raw ``\\(`` left, rendered math present), every figure loaded (``naturalWidth > 0``), and every internal
link of the page pointing to a page and anchor that exist. Screenshots go to ``OUT`` (default
``docs/_build/screenshots``), kept by CI as build artifacts.

Usage: ``python tests/docs/browser_check.py [SITE] [--out DIR]`` (SITE: ``docs/_build/html``); exit status 1 with
one line per problem. Chromium: ``apt-get install chromium`` (``XFFT_CHROMIUM`` names another binary).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

ROOT = Path(__file__).resolve().parents[2]
#: the pages checked: the home page, one tutorial (a notebook with its figures), one API page, and a guide page
#: with equations
PAGES = ("index.html", "tutorials/generated/03_navier_stokes.html", "api/generated/solvers.html",
         "guide/own-equation.html")
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


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log on stderr
        pass


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """The site on a local port (127.0.0.1), as a web server would serve it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def _anchors_of(site: Path, rel: str, cache: dict) -> set[str] | None:
    """The ids of a built page (None: no such page)."""
    if rel not in cache:
        path = site / rel
        if path.is_dir():
            path = path / "index.html"
        if not path.exists():
            cache[rel] = None
        else:
            import re

            cache[rel] = set(re.findall(r'\sid="([^"]+)"', path.read_text(errors="replace")))
    return cache[rel]


def check_page(page, base: str, site: Path, rel: str, shot: Path, anchors: dict) -> list[str]:
    """Problems of one page (empty: it renders)."""
    problems, errors, failed = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and not _mathjax_probe(m) else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: failed.append(f"{r.url} ({r.failure})") if r.url != BLANK else None)
    page.on("response", lambda r: failed.append(f"{r.url} (HTTP {r.status})") if r.status >= 400 else None)
    page.goto(urljoin(base, rel), wait_until="networkidle")
    math = page.locator(".math.notranslate").count()
    if math:
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
        if raw or not typeset:
            problems.append(f"{rel}: math not typeset ({raw} of {math} math elements raw, {typeset} rendered)")
    images = page.evaluate("[...document.images].map(i => [i.currentSrc || i.src, i.complete && i.naturalWidth])")
    for src, width in images:
        if not width:
            problems.append(f"{rel}: image not loaded: {src}")
    for href in page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)"):
        url, frag = urldefrag(href)
        if not url.startswith(base):
            if urlparse(url).scheme in ("http", "https") and urlparse(url).hostname in ("127.0.0.1", "localhost"):
                problems.append(f"{rel}: link outside the site: {href}")
            continue
        target = unquote(url[len(base):]) or "index.html"
        ids = _anchors_of(site, target, anchors)
        if ids is None:
            problems.append(f"{rel}: broken link: {href}")
        elif frag and frag not in ids:
            problems.append(f"{rel}: broken anchor: {href}")
    page.screenshot(path=str(shot), full_page=False)
    problems += [f"{rel}: console error: {e}" for e in errors]
    problems += [f"{rel}: request failed: {f}" for f in failed]
    return problems


def check(site: Path, out: Path) -> list[str]:
    """Problems of every page of :data:`PAGES` (screenshots in ``out``)."""
    from playwright.sync_api import sync_playwright

    binary = chromium()
    if binary is None:
        return ["no Chromium found (apt-get install chromium, or set XFFT_CHROMIUM)"]
    out.mkdir(parents=True, exist_ok=True)
    server, base = serve(site)
    problems, anchors = [], {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=binary, args=CHROMIUM_FLAGS, headless=True)
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            # nothing but the site: any other request is a failure the page should not have made
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
                          else route.abort())
            for rel in PAGES:
                if not (site / rel).exists():
                    problems.append(f"{rel}: not built")
                    continue
                page = context.new_page()
                problems += check_page(page, base, site, rel, out / (rel.replace("/", "_")[:-5] + ".png"), anchors)
                page.close()
            browser.close()
    finally:
        server.shutdown()
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("site", nargs="?", type=Path, default=ROOT / "docs" / "_build" / "html")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "_build" / "screenshots")
    args = p.parse_args(argv)
    problems = check(args.site, args.out)
    for line in problems:
        print(line)
    print(f"browser check: {len(PAGES)} pages, {len(problems)} problems; screenshots in {args.out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
