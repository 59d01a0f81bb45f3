"""The site for every reader: WCAG 2.1 A and AA, the keyboard, a phone's width, no JavaScript.

Reuses :mod:`test_browser`'s fixtures (a strict build of the project, served on 127.0.0.1, read
by Debian's Chromium) and checks:

* axe-core 4.14.1 (vendored in ``tests/axe/``, MPL-2.0) finds no violation of the rules tagged
  WCAG 2.1 A and AA on every page of the site, in both palettes (Material's ``default`` and
  ``slate``, chosen by the browser's ``prefers-color-scheme`` as a reader's system would), folds
  closed and open, at 1280 x 900 and at a phone's 390 x 844: SC 1.4.3 contrast of 4.5:1, SC 2.1.1
  keyboard (scrollable-region-focusable), names and roles, ...;
* every region that scrolls sideways takes keyboard focus, has a name and shows that it scrolls,
  and no tab stop is out of sight (Material's search results box, 0 px tall while search is
  closed, was one);
* a drawn chart fits its column by layout, its text at least 11 CSS px at 390 px wide, and without
  JavaScript its SVG shows at its natural size (never shrunk): at 390 px the narrow SVG of its
  <picture>, laid out for the column with no text under 11 CSS px, at 1280 px the wide one;
* with JavaScript off every formula is MathML (written at build time), no raw TeX.

Each page is read as a reader would: every chart and formula brought into view so that it draws
(charts.js and katex.js load as things come near), then checked. A reader's visit to a page at one
width and palette is made once in the run and read by every check of that page there
(:func:`read_page`): axe-core's, the sideways scrollers' and the charts' at a phone's width. With
JavaScript off a page is read from its load event: nothing loads later, and each chart image is
waited for as it is decoded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_browser import (_CHARTS_DONE, _CHARTS_SETTLED, _READ_EVERYTHING, PHONE, TIMEOUT_MS, Site,
                          _context, _open, _wait_for_charts, browser, site)  # noqa: F401 (fixtures)

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parent / "axe" / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
"""axe-core's tags for the success criteria of WCAG 2.1 levels A and AA."""
DESKTOP = {"width": 1280, "height": 900}
MIN_CHART_FONT_PX = 11
"""The smallest chart text, in CSS px, at a phone's width (charts.js's MIN_FONT_PX)."""


def every_page(site: Site) -> list[str]:
    """Every page of the build, as a path below the site's URL (``""``, ``"worklog/2026-11-21/"``)."""
    pages = [p.parent.relative_to(site.root).as_posix() for p in site.root.rglob("index.html")]
    return sorted(("" if p == "." else p + "/") for p in pages)


def _read(page, problems: list[str], open_folds: bool) -> None:
    """Open the folds (or not), bring every chart and formula into view so that they draw, and
    wait until they have, until a11y.js has looked at what now scrolls (a frame later), and until
    every transition has ended (scrolling back to the top fades Material's header title in: its
    colours half-way are no colours a reader reads)."""
    page.evaluate(_READ_EVERYTHING, [open_folds, None])
    _wait_for_charts(page, problems, _CHARTS_DONE if open_folds else _CHARTS_SETTLED)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.evaluate(_SETTLED)


# Every running animation and transition has finished (each bounded: page.evaluate has no timeout).
_SETTLED = """async () => {
  const within = (promise, ms) => Promise.race([promise.catch(() => {}), new Promise(r => setTimeout(r, ms))]);
  await within(Promise.all(document.getAnimations().map(a => a.finished)), 5000);
}"""


# --- axe-core, WCAG 2.1 A and AA ----------------------------------------------------------

_AXE_RUN = """async ([tags, context]) => {
  const result = await axe.run(context || document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
  return result.violations.map(v => ({rule: v.id, impact: v.impact, count: v.nodes.length,
    nodes: v.nodes.slice(0, 3).map(n => `${n.target.join(" ")}: ${(n.failureSummary || "").split("\\n").slice(1, 2).join("")}`)}));
}"""


CLOSED_FOLDS_LEFT_OUT = {"exclude": [["details:not([open]) > :not(summary)"]]}
"""The first axe-core run's context: the whole page but what its closed folds hold. That is not
rendered, so the rules that look at what a reader sees pass over it anyway, after axe-core has
walked it (12 to 24 % of that run's time on the topic pages measured); the second run checks it, open
and drawn.
A fold's summary, and a fold open as the page loads, stay in the first run."""

AXE_SHARDS = 6
"""Each palette and width's pages are split among this many tests (every sixth page each, so
that the heavy topic pages spread out), each well under a minute on 2 cores."""


def read_page(context, site: Site, reader_visits: Path, path: str, axe: bool = True) -> dict:
    """A reader's visit to ``path`` in ``context`` (:func:`reader`: one width and palette), made once in the run
    and kept in ``reader_visits``: every test that reads a page at that width and palette reads this visit,
    whichever test makes it first (a file lock per page, pytest-xdist's documented pattern).

    The visit: open the page (to its load event; what is read is waited for below), check the
    palette, then with the folds closed as it loads bring every chart and formula into view and
    run axe-core on the whole page but what its closed folds hold (:data:`CLOSED_FOLDS_LEFT_OUT`);
    then open every fold, bring what they hold into view and run axe-core on the folds (opening
    them changes nothing outside them); then, folds open and
    everything drawn, note what scrolls sideways (:data:`_SCROLLERS`) and each drawn chart's size
    and smallest text (:data:`_CHART_TEXT`). Returns ``{"palette", "axe_closed", "axe_open"
    (``None`` without folds), "scrollers", "charts", "problems"}``.

    Without ``axe``, a visit kept already is read; otherwise the page is read the same way without
    axe-core and nothing is kept (a test that needs no axe-core never spends an axe shard's time)."""
    from filelock import FileLock

    key = re.sub(r"[^a-z0-9]+", "-", f"{READERS[context]}-{path or 'home'}".lower()).strip("-")
    with FileLock(str(reader_visits / f"{key}.lock")):
        kept = reader_visits / f"{key}.json"
        if kept.is_file():
            return json.loads(kept.read_text(encoding="utf-8"))
        page, problems = _open(context, site, path, wait_until="load")
        page.evaluate("() => document.fonts.ready.then(() => true)")
        visit = {"palette": page.evaluate("() => document.body.getAttribute('data-md-color-scheme')")}
        if axe:
            page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        _read(page, problems, False)
        visit["axe_closed"] = page.evaluate(_AXE_RUN, [WCAG_21_AA, CLOSED_FOLDS_LEFT_OUT]) if axe else None
        visit["axe_open"] = None
        if page.evaluate("() => document.querySelector('details') !== null"):
            _read(page, problems, True)
            if axe:
                visit["axe_open"] = page.evaluate(_AXE_RUN, [WCAG_21_AA, {"include": [["details"]]}])
        visit["scrollers"] = page.evaluate(_SCROLLERS)
        visit["charts"] = page.evaluate(_CHART_TEXT)
        visit["problems"] = list(problems)
        page.close()
        if axe:  # only a whole visit is kept
            kept.write_text(json.dumps(visit), encoding="utf-8")
        return visit


def reader(browser, site: Site, viewport: dict, scheme: str = "light"):
    """A browser context for :func:`read_page` (``test_browser._context`` at ``viewport`` in
    ``scheme``, its search worker given no documents: axe-core reads the page, not the search
    results), named for the visits it keeps."""
    context = _context(browser, site, viewport, scheme=scheme, search_index=False)
    READERS[context] = f"{viewport['width']}x{viewport['height']}-{scheme}"
    return context


READERS: dict = {}
"""Each context :func:`reader` made, by what it reads as: its width, height and palette."""


@pytest.mark.parametrize("shard", range(AXE_SHARDS), ids=lambda n: f"pages{n + 1}of{AXE_SHARDS}")
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280x900", "390x844"])
def test_axe_finds_no_wcag_21_aa_violation_on_any_page(browser, site, reader_visits, viewport, scheme, shard):
    """Every page of the site (this shard's share of them), in one palette, at one width: no
    violation of a WCAG 2.1 A or AA rule that axe-core checks, first the whole page with the folds
    closed as it loads, then every fold opened, with what it holds drawn, in the same visit
    (:func:`read_page`)."""
    pages = every_page(site)
    mine = pages[shard::AXE_SHARDS]
    assert mine or len(pages) <= shard, "a shard with no page: the check checks nothing"
    context = reader(browser, site, viewport, scheme)
    found = {}
    try:
        for path in mine:
            visit = read_page(context, site, reader_visits, path)
            assert visit["palette"] == ("slate" if scheme == "dark" else "default"), f"/{path}: palette {visit['palette']}"
            if visit["axe_closed"]:
                found[f"/{path}, folds closed"] = visit["axe_closed"]
            if visit["axe_open"]:
                found[f"/{path}, folds open"] = visit["axe_open"]
    finally:
        context.close()
    total = sum(v["count"] for vs in found.values() for v in vs)
    assert not found, f"{total} axe violations ({scheme}, {viewport['width']} px):\n" + json.dumps(found, indent=1)


# --- the keyboard ---------------------------------------------------------------------------

# Each element of the article that scrolls sideways: whether it takes focus, its role and name,
# and whether it shows that it scrolls (the shadows of worklog.css: a background image).
_SCROLLERS = """() => Array.from(document.querySelectorAll("article *")).filter(el => {
    if (el.closest("svg, math")) return false;
    const style = getComputedStyle(el);
    return /(auto|scroll)/.test(style.overflowX) && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1;
  }).map(el => ({what: el.tagName.toLowerCase() + (el.className ? "." + String(el.className).trim().replace(/\\s+/g, ".") : ""),
                 tabindex: el.tabIndex, role: el.getAttribute("role"), name: el.getAttribute("aria-label"),
                 hint: getComputedStyle(el).backgroundImage !== "none"}))"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280x900", "390x844"])
def test_every_region_that_scrolls_sideways_takes_focus_and_is_named(browser, site, reader_visits, viewport):
    """WCAG 2.1 SC 2.1.1: a table, code block, formula or chart that scrolls sideways can be
    scrolled from the keyboard (tabindex 0), says what it is (role region, a name that says it
    scrolls) and shows an edge shadow. Topic pages (the widest content), folds open, light palette
    (the reader's visit of :func:`read_page`)."""
    context = reader(browser, site, viewport)
    bad, seen = {}, 0
    try:
        for topic_id, notebook in site.topics:
            if not notebook:
                continue
            visit = read_page(context, site, reader_visits, f"topics/{topic_id}/", axe=False)
            scrollers = visit["scrollers"]
            seen += len(scrollers)
            wrong = [s for s in scrollers if s["tabindex"] < 0 or s["role"] != "region" or not s["name"]
                     or "scrolls sideways" not in s["name"] or not s["hint"]]
            if wrong:
                bad[topic_id] = wrong
            assert not visit["problems"], visit["problems"]
    finally:
        context.close()
    assert not bad, json.dumps(bad, indent=1)
    if viewport["width"] == PHONE["width"]:
        assert seen > 0, "nothing scrolls sideways on a phone: the check checked nothing"


def test_every_tab_stop_is_in_sight(browser, site):
    """Tab through the first 40 stops of a topic page and of the home: each focused element has a
    box (Material's search results box had a 0 px tall tab stop while search was closed) and a
    visible focus indicator (SC 2.4.7)."""
    topic = next(t for t, notebook in site.topics if notebook)
    context = _context(browser, site, DESKTOP)
    unseen = {}
    try:
        for path in ["", f"topics/{topic}/"]:
            page, problems = _open(context, site, path)
            for stop in range(40):
                page.keyboard.press("Tab")
                # a visually hidden radio (Material's palette toggle) shows its focus on the label after it
                focused = page.evaluate("""() => { let el = document.activeElement;
                  if (!el || el === document.body) return null;
                  if (el.matches(".md-option") && el.nextElementSibling) el = el.nextElementSibling;
                  const box = el.getBoundingClientRect(), style = getComputedStyle(el);
                  return {what: el.outerHTML.slice(0, 120), width: box.width, height: box.height,
                          visible: style.visibility === "visible",
                          ring: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0
                                || style.boxShadow !== "none" || style.textDecorationLine !== "none"}; }""")
                if focused is None:
                    continue
                if not (focused["width"] > 0 and focused["height"] > 0 and focused["visible"] and focused["ring"]):
                    unseen.setdefault(f"/{path}", []).append({"stop": stop + 1, **focused})
            assert not problems, problems
            page.close()
    finally:
        context.close()
    assert not unseen, json.dumps(unseen, indent=1)


# --- charts at a phone's width --------------------------------------------------------------

# Each drawn chart: its box, its column, its SVG's drawn width against its own width (a scaled
# chart would differ), and the smallest text in it in CSS px.
_CHART_TEXT = """() => Array.from(document.querySelectorAll(".worklog-chart"), box => {
  const svg = box.querySelector("svg.marks");
  const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
  const sizes = Array.from(svg.querySelectorAll("text"))
    .filter(t => t.textContent.trim() && t.getBoundingClientRect().height > 0)
    .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
  return {kind: box.dataset.kind, scale, width: svg.getBoundingClientRect().width, column: box.clientWidth,
          smallest: Math.min(...sizes), texts: sizes.length};
})"""


def _chart_paths(site: Site) -> list[str]:
    return [f"{site.prefix}/", *(["kernels/"] if any(n for _, n in site.topics) else []),
            *(f"topics/{t}/" for t, n in site.topics if n)]


def test_charts_fit_a_phone_by_layout_with_no_text_under_11_px(browser, site, reader_visits):
    """Every drawn chart at 390 px, folds open, light palette (the reader's visit of
    :func:`read_page`): it fits its column by layout (the calendar heatmap scrolls instead), its
    SVG drawn at its own size, no text in it under 11 CSS px."""
    context = reader(browser, site, PHONE)
    bad, seen = {}, 0
    try:
        for path in _chart_paths(site):
            visit = read_page(context, site, reader_visits, path, axe=False)
            for chart in visit["charts"]:
                seen += 1
                fits = chart["kind"] == "heatmap" or chart["width"] <= chart["column"] + 1  # the calendar scrolls
                if chart["texts"] == 0 or chart["smallest"] < MIN_CHART_FONT_PX or abs(chart["scale"] - 1) > 0.01 \
                        or not fits:
                    bad.setdefault(f"/{path}", []).append(chart)
            assert not visit["problems"], visit["problems"]
    finally:
        context.close()
    assert seen and not bad, json.dumps(bad, indent=1)


def test_without_javascript_a_chart_shows_at_its_natural_size_and_scrolls_on_a_phone(browser, site):
    context = _context(browser, site, PHONE, javascript=False)
    try:
        for path in _chart_paths(site)[:2]:
            page = context.new_page()
            page.goto(site.url + path, wait_until="load")
            shown = page.evaluate("""async () => Promise.all(Array.from(
                document.querySelectorAll('img[src$=".vega.svg"]'), async img => {
                  img.scrollIntoView();
                  try { await img.decode(); } catch (e) {}
                  const p = img.closest("p") || img.parentElement;  // the image may be in a <picture>
                  return {width: img.getBoundingClientRect().width, declared: img.width, column: p.clientWidth,
                          scrolls: p.scrollWidth > p.clientWidth, overflow: getComputedStyle(p).overflowX};
                }))""")
            assert shown, f"{path}: no chart image"
            for img in shown:
                assert abs(img["width"] - img["declared"]) < 1, f"{path}: a chart image drawn at another size: {img}"
                if img["width"] > img["column"]:
                    assert img["scrolls"] and img["overflow"] == "auto", f"{path}: a wide chart does not scroll: {img}"
            page.close()
    finally:
        context.close()


# Without JavaScript: each chart's image as the browser chose it from its <picture>, its drawn
# width and its column's.
_STATIC_CHARTS = """async () => Promise.all(Array.from(document.querySelectorAll('img[src$=".vega.svg"]'), async img => {
  img.scrollIntoView();
  try { await img.decode(); } catch (e) {}
  const p = img.closest("p") || img.parentElement;
  return {src: img.currentSrc, width: img.getBoundingClientRect().width, column: p.clientWidth,
          picture: img.parentElement.tagName === "PICTURE"};
}))"""

# An SVG opened on its own: its width, each text's font size in px, and the texts that run out of
# it (a roof's label clipped to the plot aside).
_SVG_TEXT = """() => {
  const svg = document.documentElement, width = svg.width.baseVal.value;
  const texts = Array.from(svg.querySelectorAll("text")).filter(t => t.textContent.trim());
  return {width, sizes: texts.map(t => parseFloat(getComputedStyle(t).fontSize)),
          outside: texts.filter(t => !t.closest("[clip-path]")).filter(t => {
            const box = t.getBoundingClientRect(); return box.left < -1 || box.right > width + 1;
          }).map(t => t.textContent)};
}"""


def _static_charts(context, site: Site, path: str) -> list[dict]:
    """The chart images of ``path`` with JavaScript off, folds open, each with what its SVG holds:
    ``kind`` (from its spec), ``svg`` (:data:`_SVG_TEXT`) and ``smallest``, its smallest text in
    CSS px as drawn on the page (the SVG's font size times its drawn scale)."""
    page = context.new_page()
    page.goto(site.url + path, wait_until="load")
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    images = page.evaluate(_STATIC_CHARTS)
    for img in images:  # each SVG opened on its own, one after another in the same tab
        page.goto(img["src"])
        img["svg"] = page.evaluate(_SVG_TEXT)
    page.close()
    for img in images:
        stem = re.sub(r"\.vega(\.narrow)?\.svg$", "", img["src"][len(site.url):])
        img["kind"] = json.loads((site.root / f"{stem}.vega.json").read_text()).get("usermeta", {}).get(
            "worklog", {}).get("kind")
        img["smallest"] = min(img["svg"]["sizes"]) * img["width"] / img["svg"]["width"]
    return images


def test_without_javascript_a_phone_gets_each_chart_laid_out_for_its_column_no_text_under_11_px(browser, site):
    """Issue #32: the static SVG fits its column by layout, not by scaling, its text never under
    11 CSS px at 390 px: each chart's <picture> gives a phone its narrow SVG."""
    context = _context(browser, site, PHONE, javascript=False)
    bad, seen = {}, 0
    try:
        for path in _chart_paths(site):
            images = _static_charts(context, site, path)
            assert images, f"/{path}: no chart image"
            for img in images:
                seen += 1
                fits = img["kind"] == "heatmap" or img["width"] <= img["column"] + 1  # the calendar scrolls
                if not (img["picture"] and img["src"].endswith(".vega.narrow.svg")) or not fits \
                        or img["smallest"] < MIN_CHART_FONT_PX - 0.01 or abs(img["width"] - img["svg"]["width"]) > 1 \
                        or img["svg"]["outside"]:
                    bad.setdefault(f"/{path}", []).append(img)
    finally:
        context.close()
    assert seen and not bad, json.dumps(bad, indent=1)


def test_without_javascript_a_desktop_gets_the_wide_svgs(browser, site):
    context = _context(browser, site, DESKTOP, javascript=False)
    try:
        for path in _chart_paths(site):
            images = _static_charts(context, site, path)
            assert images, f"/{path}: no chart image"
            for img in images:
                assert img["src"].endswith(".vega.svg") and ".narrow." not in img["src"], (path, img)
                assert img["width"] <= img["column"] + 1 and abs(img["width"] - img["svg"]["width"]) <= 1, (path, img)
    finally:
        context.close()


# --- math without JavaScript ------------------------------------------------------------------

def test_math_reads_without_javascript(browser, site):
    """Every formula is MathML in the HTML (``worklog_gen.site.math``), drawn by the browser with
    no script: a box of its own, its TeX only in the annotation, no raw ``\\(`` in the text (code aside)."""
    with_math = [p for p in every_page(site) if "arithmatex" in (site.root / p / "index.html").read_text(encoding="utf-8")]
    assert with_math, "no page has math; the check checks nothing"
    context = _context(browser, site, DESKTOP, javascript=False)
    try:
        for path in with_math:
            page = context.new_page()
            page.goto(site.url + path, wait_until="load")
            page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
            math = page.evaluate(r"""() => {
              const formulas = Array.from(document.querySelectorAll(".arithmatex"));
              return {count: formulas.length,
                      mathml: formulas.filter(f => f.querySelector('math annotation[encoding="application/x-tex"]')).length,
                      drawn: formulas.filter(f => { const m = f.querySelector("math");
                                                    return m && m.getBoundingClientRect().width > 0; }).length,
                      raw: Array.from(document.querySelectorAll("article p, article li, article td, article .arithmatex"))
                        .filter(el => !el.closest("pre, code")).some(el => /\\\(|\\\[/.test(el.innerText))};
            }""")
            assert math["count"] > 0 and math["mathml"] == math["count"] == math["drawn"], f"/{path}: {math}"
            assert not math["raw"], f"/{path}: raw TeX shows"
            page.close()
    finally:
        context.close()
