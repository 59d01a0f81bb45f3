"""The site as a reader gets it: headless Chromium (Playwright) against a served build.

The project's site is built once per module with ``mkdocs build --strict`` from the
committed freeze store, served by ``http.server`` on 127.0.0.1, and read by Debian's
Chromium (``/usr/bin/chromium``; Playwright downloads no browser here). Checked:

* the home pages, a day page, every topic page, the Kernels page, the reading list and
  the tasks page load with no console error, page error, failed or 4xx/5xx request,
  and no request leaves the site (no CDN: fonts, KaTeX and scripts are served locally);
* every ``<img>`` has really loaded (``naturalWidth > 0``) and the heatmap is drawn;
* math (arithmatex's output) is rendered by KaTeX, with KaTeX's own fonts;
* search finds a word that only a day page has; the light/dark toggle switches scheme;
* at a phone's 390 px width no page scrolls sideways;
* screenshots of the home pages and the topic pages are saved (desktop width, light
  scheme) under ``WORKLOG_GEN_SCREENSHOTS`` or a temporary folder.

Without Playwright or Chromium the tests skip, saying why, unless ``CI`` is set:
then they fail, so that CI cannot skip them silently. ``WORKLOG_GEN_TEST_PROJECT``
names another folder with a ``mkdocs.yml`` to build instead of this repository.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")  # Debian's package; .ci/run installs it
# No sandbox (CI runs as root in a container); no GPU; and none of the background
# connections Chromium makes on its own, which a closed network refuses.
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}  # CSS pixels of a current mid-size phone (iPhone 12 to 15)
SHOT_HEIGHT = 1200  # screenshots: the top of the page, down to the heatmap on the worklog home
TIMEOUT_MS = 15_000


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the browser tests, so this is a failure there")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    if not CHROMIUM.is_file():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


# --- the served site ---------------------------------------------------------------------


@dataclass
class Site:
    """A strict build of the project, served over HTTP."""

    root: Path
    """The build's folder."""
    url: str
    """Where it is served, ending in ``/``."""
    prefix: str
    """The worklog's ``url_prefix`` without slashes: ``worklog``."""
    topics: list[tuple[str, str | None]]
    """Each topic's ``(id, notebook)``, in configured order."""

    def days(self) -> list[str]:
        """Slugs of the day pages, oldest first: ``["2026-11-21", ...]``."""
        folder = self.root / self.prefix
        return sorted(p.name for p in folder.iterdir() if re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.name))

    def pages(self) -> dict[str, str]:
        """The pages every test reads: name -> path below :attr:`url`."""
        pages = {"home": "", "worklog": f"{self.prefix}/", "day": f"{self.prefix}/{self.days()[-1]}/",
                 "reading list": f"{self.prefix}/reading-list/", "tasks": f"{self.prefix}/tasks/"}
        if any(notebook for _, notebook in self.topics):
            pages["kernels"] = "kernels/"
        pages.update({f"topic {topic_id}": f"topics/{topic_id}/" for topic_id, _ in self.topics})
        return pages


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the stdlib's name)
        pass


@pytest.fixture(scope="module")
def site(browser, tmp_path_factory):
    """Build (strict, from the committed store) and serve the project's site."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    project = Path(os.environ.get("WORKLOG_GEN_TEST_PROJECT") or REPO).resolve()
    root = tmp_path_factory.mktemp("browser") / "site"
    config = load_config(str(project / "mkdocs.yml"), strict=True, site_dir=str(root))
    build(config)  # raises mkdocs' Abort when the strict build warns
    plugin = config.plugins["worklog"].config
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # port 0: any free port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(root=root, url=f"http://127.0.0.1:{server.server_port}/", prefix=plugin.url_prefix.strip("/"),
                   topics=[(t.id, t.notebook) for t in plugin.topics])
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _context(browser, site: Site, viewport: dict):
    """A fresh browser context (light scheme) that lets no request leave the site."""
    context = browser.new_context(viewport=viewport, color_scheme="light")
    context.set_default_timeout(TIMEOUT_MS)
    context.route(lambda url: not url.startswith(site.url), lambda route: route.abort("blockedbyclient"))
    return context


def _open(context, site: Site, path: str):
    """Open ``path`` and wait for the network to settle. Returns ``(page, problems)``,
    ``problems`` being a live list of every console error, uncaught exception,
    failed or 4xx/5xx request and request that leaves the site."""
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda msg: msg.type == "error" and problems.append(
        f"console error: {msg.text} ({msg.location.get('url', '')})"))
    page.on("pageerror", lambda exc: problems.append(f"uncaught exception: {exc}"))
    page.on("request", lambda req: req.url.startswith(site.url) or problems.append(
        f"request leaves the site: {req.url}"))
    page.on("requestfailed", lambda req: req.url.startswith(site.url) and problems.append(
        f"request failed: {req.url} ({req.failure})"))
    page.on("response", lambda resp: resp.status >= 400 and problems.append(f"HTTP {resp.status}: {resp.url}"))
    page.goto(site.url + path, wait_until="networkidle")
    return page, problems


# --- one visit to each page, at desktop width ---------------------------------------------

# Scroll each image into view (so that lazy ones load too) and wait until it is decoded
# or has failed; then every font, KaTeX's included.
_LOAD_IMAGES = """async () => {
  for (const img of document.images) {
    img.scrollIntoView();
    try { await img.decode(); } catch (e) { /* a broken image: naturalWidth stays 0 */ }
  }
  window.scrollTo(0, 0);
  await document.fonts.ready;
  return Array.from(document.images, img => [img.getAttribute("src"), img.naturalWidth]);
}"""

_MATH = """() => ({
  arithmatex: document.querySelectorAll(".arithmatex").length,
  rendered: document.querySelectorAll(".arithmatex .katex").length,
  errors: Array.from(document.querySelectorAll(".katex-error"), e => e.title || e.textContent),
  katexFonts: Array.from(document.fonts).filter(f => f.family.replace(/"/g, "").startsWith("KaTeX")
                                                    && f.status === "loaded").length,
})"""

_HEATMAP = """() => {
  const svg = document.querySelector(".worklog-heatmap svg");
  if (!svg) return null;
  const box = svg.getBoundingClientRect();
  return {width: box.width, height: box.height, cells: svg.querySelectorAll("rect").length};
}"""


@dataclass
class Visit:
    path: str
    problems: list[str]
    images: list[tuple[str, int]]
    math: dict
    heatmap: dict | None
    screenshot: Path | None = None


@pytest.fixture(scope="module")
def screenshot_dir(tmp_path_factory) -> Path:
    folder = os.environ.get("WORKLOG_GEN_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def visits(browser, site, screenshot_dir) -> dict[str, Visit]:
    """Each of :meth:`Site.pages` opened once at desktop width; the home pages and the
    topic pages photographed (light scheme, the top :data:`SHOT_HEIGHT` pixels)."""
    shots = {"home": "index.png", "worklog": "worklog.png"}
    shots.update({f"topic {topic_id}": f"topic-{topic_id}.png" for topic_id, _ in site.topics})
    context = _context(browser, site, DESKTOP)
    result = {}
    try:
        for name, path in site.pages().items():
            page, problems = _open(context, site, path)
            images = [tuple(item) for item in page.evaluate(_LOAD_IMAGES)]
            visit = Visit(path, problems, images, page.evaluate(_MATH), page.evaluate(_HEATMAP))
            if name in shots:
                visit.screenshot = screenshot_dir / shots[name]
                height = min(SHOT_HEIGHT, page.evaluate("document.documentElement.scrollHeight"))
                page.screenshot(path=str(visit.screenshot), full_page=True,
                                clip={"x": 0, "y": 0, "width": DESKTOP["width"], "height": height})
            visit.problems = list(problems)  # late errors (image decoding) included
            page.close()
            result[name] = visit
    finally:
        context.close()
    return result


def test_pages_load_with_no_console_errors_and_nothing_from_outside(visits):
    bad = {name: v.problems for name, v in visits.items() if v.problems}
    assert not bad, "problems while loading pages:\n" + json.dumps(bad, indent=2)


def test_every_image_has_loaded(visits, site):
    broken = {name: [src for src, width in v.images if width <= 0] for name, v in visits.items()}
    assert not {k: v for k, v in broken.items() if v}, f"images that did not load: {broken}"
    # Pages that must have figures: each notebook's plots, the Kernels roofline.
    for topic_id, notebook in site.topics:
        if notebook:
            assert visits[f"topic {topic_id}"].images, f"topic {topic_id}: no image on the page"
    if "kernels" in visits:
        assert any(src.endswith(".svg") for src, _ in visits["kernels"].images), "Kernels page: no roofline"


def test_heatmap_is_drawn_on_the_worklog_home(visits, site):
    heatmap = visits["worklog"].heatmap
    assert heatmap is not None, "no .worklog-heatmap svg on the worklog home"
    assert heatmap["width"] > 0 and heatmap["height"] > 0
    assert heatmap["cells"] >= len(site.days()), "fewer heatmap cells than entries"


def test_math_is_rendered_by_katex_served_from_the_site(visits, site):
    with_math = {name: v.math for name, v in visits.items() if v.math["arithmatex"]}
    assert with_math, "no page read here has math ($...$); the KaTeX wiring is untested"
    for name, math in with_math.items():
        assert math["rendered"] == math["arithmatex"], f"{name}: unrendered formulas: {math}"
        assert not math["errors"], f"{name}: KaTeX could not parse: {math['errors']}"
        assert math["katexFonts"] > 0, f"{name}: no KaTeX font loaded"
    html = (site.root / "index.html").read_text(encoding="utf-8")
    assert 'src="assets/katex/katex.min.js"' in html and "assets/katex/katex.min.css" in html


def test_screenshots_are_saved_at_desktop_width(visits):
    shots = [v.screenshot for v in visits.values() if v.screenshot]
    assert len(shots) >= 3  # both home pages and at least one topic page
    for path in shots:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", path
        width, height = struct.unpack(">II", data[16:24])  # IHDR: width, height (PNG spec 11.2.2)
        assert width == DESKTOP["width"] and DESKTOP["height"] <= height <= SHOT_HEIGHT, (path, width, height)


# --- search, palette, phone width ------------------------------------------------------


def _distinctive_word(site: Site, slug: str) -> str | None:
    """A word of 7+ letters that the day page ``slug`` has and no other page, read from
    Material's search index (``search/search_index.json``)."""
    index = json.loads((site.root / "search" / "search_index.json").read_text(encoding="utf-8"))
    pages: dict[str, set[str]] = {}
    for doc in index["docs"]:
        location = doc["location"].split("#")[0]
        pages.setdefault(location, set()).update(re.findall(r"[a-z]{7,}", f"{doc['title']} {doc['text']}".lower()))
    own = pages.get(f"{site.prefix}/{slug}/", set())
    others = set().union(*(words for loc, words in pages.items() if loc != f"{site.prefix}/{slug}/"))
    unique = sorted(own - others, key=lambda w: (-len(w), w))
    return unique[0] if unique else None


def test_search_finds_a_word_from_a_day_page(browser, site):
    slug, word = next(((s, w) for s in site.days() if (w := _distinctive_word(site, s))), (None, None))
    assert word, "no day page has a word that no other page has"
    context = _context(browser, site, DESKTOP)
    try:
        page, problems = _open(context, site, "")
        page.locator("input.md-search__input").click()
        page.keyboard.type(word)
        result = page.locator(f'.md-search-result__list a[href*="{site.prefix}/{slug}/"]')
        result.first.wait_for(state="visible")
        assert word in result.first.inner_text().lower()
        assert not problems, problems
    finally:
        context.close()


def test_palette_toggle_switches_between_light_and_dark(browser, site):
    context = _context(browser, site, DESKTOP)
    try:
        page, problems = _open(context, site, f"{site.prefix}/")
        scheme = "() => document.body.getAttribute('data-md-color-scheme')"
        background = "() => getComputedStyle(document.body).backgroundColor"
        toggle = page.locator('form[data-md-component="palette"] label:visible')
        assert page.evaluate(scheme) == "default"
        light = page.evaluate(background)
        toggle.click()
        page.wait_for_function(f"({scheme})() === 'slate'")
        assert page.evaluate(background) != light, "the dark scheme did not change the background"
        toggle.click()
        page.wait_for_function(f"({scheme})() === 'default'")
        assert page.evaluate(background) == light
        assert not problems, problems
    finally:
        context.close()


def test_no_page_scrolls_sideways_on_a_phone(browser, site):
    context = _context(browser, site, PHONE)
    wide = {}
    try:
        for name, path in site.pages().items():
            page, _ = _open(context, site, path)
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > PHONE["width"]:
                wide[name] = width
            if name == "worklog":  # the heatmap scrolls inside its own box, if at all
                box = page.evaluate("document.querySelector('.worklog-heatmap').getBoundingClientRect().right")
                assert box <= PHONE["width"], f"heatmap box ends at {box}px"
            page.close()
    finally:
        context.close()
    assert not wide, f"pages wider than {PHONE['width']}px (scrollWidth): {wide}"
