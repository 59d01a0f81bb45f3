"""Real ``mkdocs build`` runs in tmp_path, asserting on the HTML (as mkdocstrings'
test_plugin.py does). Builds are strict unless a test says otherwise."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from mkdocs.exceptions import Abort

from conftest import T_MINUS_LOGS, TMINUS_FIXTURE
from worklog_gen.site import generate as generate_module
from worklog_gen.log import Diagnostic, DiagnosticCode, Worklog

TOPICS = [
    {"id": "vector-add", "title": "Vector add", "notebook": "notebooks/vector_add.py",
     "aliases": ["vector add", "vector addition", "vecadd"]},
    {"id": "tiled-matmul", "title": "Tiled matmul", "notebook": "notebooks/tiled_matmul.py",
     "aliases": ["matmul", "GEMM", "matrix multiplication", "tiled GEMM"]},
    {"id": "online-softmax", "title": "Online softmax", "notebook": "notebooks/online_softmax.py",
     "aliases": ["softmax", "online softmax", "safe softmax"]},
]

SMALL_LOG = """\
<!-- ---
title: Worklog
--- -->

Ruthless work-ethic

11/30/25 (T - 163)

Read [Triton tutorial: vector addition](https://triton-lang.org/main/getting-started/tutorials/01-vector-add.html);
wrote my first vector add kernel.

12/01/25 (T - 162)

Coded the tiled GEMM in Triton.
- GROUP_SIZE_M ordering for L2 reuse
- num_warps 4 against 8

Drafts: [Old draft](/blog/2025/old-draft/)

12/02/25 (T - 161)

Read [Online normalizer calculation for softmax](https://arxiv.org/abs/1805.02867) again.
"""

HEADER = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})\s*\(T\s*-\s*(\d+)\)\s*$", re.MULTILINE)
WORD = re.compile(r"\w+")
MD = MarkdownIt("commonmark")


def html(site, path: str) -> BeautifulSoup:
    return BeautifulSoup((site / path).read_text(encoding="utf-8"), "html.parser")


def article_text(site, path: str) -> str:
    """The article's text; a ``<wbr>`` (a place a long name may break) is not a space."""
    article = html(site, path).find("article")
    for tag in article.find_all("wbr"):
        tag.decompose()
    article.smooth()  # the strings on either side of a removed <wbr> become one again
    return article.get_text(" ")


def split_entries(text: str) -> list[tuple[dt.date, str, str]]:
    """(date, header, body) of each entry, found here without the project's parser."""
    heads = list(HEADER.finditer(text))
    out = []
    for head, nxt in zip(heads, [*heads[1:], None]):
        month, day, year = int(head[1]), int(head[2]), int(head[3])
        body = text[head.end(): nxt.start() if nxt else len(text)]
        out.append((dt.date(year + 2000 if year < 100 else year, month, day), head[0].strip(), body))
    return out


def words(markdown: str) -> set[str]:
    """Words a reader sees in ``markdown`` (rendered by markdown-it-py, HTML stripped)."""
    return set(WORD.findall(BeautifulSoup(MD.render(markdown), "html.parser").get_text(" ")))


# --- the T-minus logs -----------------------------------------------------------------------


def _t_minus_site(build_site, log: Path):
    site = build_site(log.read_text(encoding="utf-8"), plugin={"topics": TOPICS})
    return site, split_entries(log.read_text(encoding="utf-8"))


@pytest.fixture(params=T_MINUS_LOGS)
def t_minus_site(request, build_site, fake_render):
    """The site of the project's own T-minus log, and of the test fixture's."""
    return (*_t_minus_site(build_site, request.param), request.param)


@pytest.fixture
def tminus_fixture_site(build_site, fake_render, caplog):
    caplog.set_level(logging.INFO)
    return _t_minus_site(build_site, TMINUS_FIXTURE)


def test_a_t_minus_log_has_a_page_per_entry_with_every_word(t_minus_site):
    site, entries, _ = t_minus_site
    assert len(entries) >= 3  # the own log has 3 days and more to come, the fixture 12
    for date, header, body in entries:
        page = article_text(site, f"worklog/{date.isoformat()}/index.html")
        missing = words(body) - set(WORD.findall(page))
        assert not missing, f"{date}: words missing from the page: {sorted(missing)}"
        assert header in page  # the author's header, verbatim


def test_a_t_minus_log_reading_list_has_every_distinct_url(t_minus_site):
    site, _, log = t_minus_site
    text = log.read_text(encoding="utf-8")
    urls = {
        child.attrs["href"]
        for token in MD.parse(text) if token.type == "inline"
        for child in token.children if child.type == "link_open"
    }
    assert len(urls) >= 20
    page = html(site, "worklog/reading-list/index.html").find("article")
    hrefs = [a["href"] for a in page.find("table").find_all("a") if not a["href"].startswith("../")]
    assert sorted(hrefs) == sorted(urls)  # each once


BARE_URL_LOG = """\
2025-12-19
Read https://siboehm.com/articles/22/CUDA-MMM before the warp-tiling kernel, then www.thonking.ai
(its matmul post). Not links: example.com, `https://in.code/x`, and [a link](https://x.org/a b)
that CommonMark does not take.
"""


@pytest.mark.parametrize("sanitize", [False, True], ids=["as-written", "sanitized"])
def test_a_bare_url_in_a_sentence_is_a_link_on_the_page_in_the_reading_list_and_in_the_feed(build_site, sanitize):
    """A URL written bare in the text, as GitHub links it (``https://``, ``www.``): a link on the
    day page (``pymdownx.magiclink``), the same URL in the reading list (linkify-it-py) and in the
    feed's content, with the sanitiser on or off."""
    site = build_site(BARE_URL_LOG, plugin={"sanitize": sanitize})
    wanted = ["https://siboehm.com/articles/22/CUDA-MMM", "http://www.thonking.ai"]
    day = html(site, "worklog/2025-12-19/index.html").find("article")
    text = next(p for p in day.find_all("p") if p.get_text().startswith("Read"))
    assert [a["href"] for a in text.find_all("a") if a["href"] in wanted] == wanted
    assert not day.find("a", href=re.compile(r"example\.com|in\.code"))
    listed = html(site, "worklog/reading-list/index.html").find("article").find("table")
    assert sorted(a["href"] for a in listed.find_all("a") if not a["href"].startswith("../")) == sorted(wanted)
    feed = (site / "feed.xml").read_text(encoding="utf-8")
    assert all(f'href="{url}"' in ET.fromstring(feed)[-1].find("{http://www.w3.org/2005/Atom}content").text
               for url in wanted)


IN_DOCS_LOG = """\
# Journal

Kept in the docs folder, as MkDocs keeps content.

12/19/25 (T - 144)

Timed the tiled matmul. <script>alert("from the log")</script>

12/20/25 (T - 143)

Read the wgmma section of the PTX ISA.
"""


@pytest.mark.parametrize("sanitize", [False, True], ids=["as-written", "sanitized"])
def test_a_log_kept_in_the_docs_folder_is_the_worklog_s_source_not_a_page_of_its_own(build_site, sanitize, tmp_path):
    """``worklog_dir: docs/journal``: its files make the worklog's pages, and MkDocs renders
    no page of their own beside them (which would show the log twice, warn about its relative
    links, and pass its text to readers unsanitised); ``generate``'s copy of the docs leaves
    them out too."""
    site = build_site(None, plugin={"worklog_dir": "docs/journal", "sanitize": sanitize},
                      docs={"index.md": "# Home\n", "journal/index.md": IN_DOCS_LOG})
    assert not (site / "journal").exists()
    assert "Timed the tiled matmul" in html(site, "worklog/2025-12-19/index.html").find("article").get_text()
    home = html(site, "worklog/index.html").find("article").get_text()
    assert "Kept in the docs folder" in home
    pages = [p.relative_to(site).as_posix() for p in site.rglob("*.html")]
    assert not [p for p in pages if "journal" in p]
    if sanitize:
        assert not [p for p in site.rglob("*.html") if 'alert("from the log")' in p.read_text(encoding="utf-8")]
    project = site.parent
    from worklog_gen.config import load_plugin_config

    cfg, root = load_plugin_config(project / "mkdocs.yml")
    written = generate_module.write_site(generate_module.generate(cfg, root, site_name="Test log"), tmp_path / "out",
                                         cfg, docs_dir=project / "docs", mkdocs_yml=project / "mkdocs.yml")
    docs = written.parent / "docs"
    assert (docs / "index.md").is_file() and not list(docs.rglob("journal/*.md"))


def test_tminus_fixture_home_shows_target_date_streaks_and_timeline(tminus_fixture_site):
    site, entries = tminus_fixture_site
    home = article_text(site, "worklog/index.html")
    assert "2026-05-12" in home
    assert "Days logged: 12" in " ".join(home.split())
    soup = html(site, "worklog/index.html")
    heatmap = soup.find("img", src="words-per-day.vega.svg")  # the chart's static SVG, which charts.js replaces
    assert heatmap is not None and (site / "worklog/words-per-day.vega.json").is_file()
    timeline = [a["href"] for a in soup.find("article").select("li > a") if re.match(r"\d{4}-\d\d-\d\d/", a["href"])]
    assert timeline == [f"{d.isoformat()}/" for d, _, _ in sorted(entries, reverse=True)]


def test_tminus_fixture_old_site_links_are_kept_and_reported_once(tminus_fixture_site, caplog):
    site, _ = tminus_fixture_site
    page = html(site, "worklog/2025-12-12/index.html")
    assert page.find("a", href="/blog/2025/softmax-by-hand/") is not None
    messages = [r for r in caplog.get_records("setup") if "root-relative" in r.getMessage()]  # built in the fixture
    assert len(messages) == 1 and messages[0].levelno == logging.INFO
    assert "/blog/2025/softmax-by-hand/" in messages[0].getMessage()


def test_tminus_fixture_day_pages_link_the_topics_they_mention(tminus_fixture_site):
    site, _ = tminus_fixture_site
    page = html(site, "worklog/2025-12-15/index.html")  # "Wrote the Triton matmul from memory: the tiled GEMM loop ..."
    assert page.find("a", href="../../topics/tiled-matmul/") is not None
    topic = article_text(site, "topics/tiled-matmul/index.html")
    assert "Rendered tiled-matmul." in topic and "15 Dec 2025 · T-148" in topic


# --- a small log: navigation, topics, feed ----------------------------------------------------


def test_automatic_nav_has_sections_and_years_but_no_day(build_site, fake_render):
    site = build_site(SMALL_LOG, plugin={"topics": TOPICS})
    for page in ["index.html", "worklog/2025-12-01/index.html"]:
        primary = html(site, page).find("nav", class_="md-nav--primary")
        nav = " ".join(primary.get_text(" ").split())
        for label in ["Home", "Worklog", "Reading list", "Tasks", "2025", "Kernels", "Overview", "Tiled matmul"]:
            assert label in nav, label
        assert "T-16" not in nav and "December" not in nav
        assert not [a["href"] for a in primary.find_all("a", href=True) if re.search(r"\d{4}-\d\d-\d\d", a["href"])]


def test_a_day_page_links_its_neighbours_its_year_page_and_the_home(build_site):
    site = build_site(SMALL_LOG)
    links = {a.get_text(" ").strip(): a["href"] for a in html(site, "worklog/2025-12-01/index.html").find("article").find_all("a")}
    assert links["30 Nov 2025 · T-163"] == "../2025-11-30/" and links["2 Dec 2025 · T-161"] == "../2025-12-02/"
    assert links["December 2025"] == "../2025/#2025-12" and links["Worklog"] == "../"
    year = html(site, "worklog/2025/index.html").find("article")
    assert year.find(id="2025-12") is not None and year.find(id="2025-11") is not None  # the months' anchors
    days = [a["href"] for a in year.find_all("a") if re.fullmatch(r"\.\./\d{4}-\d\d-\d\d/", a["href"])]
    assert days == ["../2025-12-02/", "../2025-12-01/", "../2025-11-30/"]


def test_configured_nav_gets_a_worklog_section(build_site, fake_render):
    site = build_site(
        SMALL_LOG,
        plugin={"topics": TOPICS, "nav_title": "Log"},
        config={"nav": [{"Start": "index.md"}, {"About": "about.md"}]},
        docs={"index.md": "# Home\n", "about.md": "# About\n"},
    )
    nav = " ".join(html(site, "about/index.html").find("nav", class_="md-nav--primary").get_text(" ").split())
    assert nav.index("Start") < nav.index("About") < nav.index("Log") < nav.index("Kernels")
    assert "2025" in nav and "December" not in nav


def test_topic_pages_and_kernels_page_from_the_renderer(build_site, fake_render):
    site = build_site(SMALL_LOG, plugin={"topics": TOPICS})
    assert ("topic", "tiled-matmul", Path("notebooks/tiled_matmul.py")) in fake_render.calls
    assert ("kernels", ["vector-add", "tiled-matmul", "online-softmax"]) in fake_render.calls
    page = html(site, "topics/tiled-matmul/index.html")
    assert page.find("img", src="fig.png") is not None  # topics/tiled-matmul/fig.png from topics/tiled-matmul/
    assert (site / "topics/tiled-matmul/fig.png").read_bytes() == b"\x89PNG fake"
    days = [a.get_text() for a in page.find("article").find_all("a") if "worklog" in a["href"]]
    assert days == ["1 Dec 2025 · T-162"]
    vector = article_text(site, "topics/vector-add/index.html")
    assert "30 Nov 2025 · T-163" in vector  # "vector add" and "vector addition"
    assert "Every kernel." in article_text(site, "kernels/index.html")


def test_renderer_warnings_fail_a_strict_build(build_site, fake_render, caplog):
    fake_render.warnings = ["notebook notebooks/vector_add.py is stale"]
    with pytest.raises(Abort):
        build_site(SMALL_LOG, plugin={"topics": TOPICS})
    assert any("is stale" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_feed_is_written_and_advertised(build_site):
    site = build_site(SMALL_LOG, config={"site_url": "https://me.github.io/log/"})
    root = ET.fromstring((site / "feed.xml").read_bytes())
    ns = {"a": "http://www.w3.org/2005/Atom"}
    links = [e.find("a:link", ns).get("href") for e in root.findall("a:entry", ns)]
    assert links == [f"https://me.github.io/log/worklog/2025-12-0{d}/" for d in (2, 1)] + [
        "https://me.github.io/log/worklog/2025-11-30/"
    ]
    head = html(site, "worklog/2025-12-01/index.html").find("link", type="application/atom+xml")
    assert head["href"] == "../../feed.xml"


def test_old_site_url_rewrites_root_relative_links(build_site, caplog):
    caplog.set_level(logging.INFO)
    site = build_site(SMALL_LOG, plugin={"old_site_url": "https://me.github.io"})
    page = html(site, "worklog/2025-12-01/index.html")
    assert page.find("a", href="https://me.github.io/blog/2025/old-draft/") is not None
    assert not any("root-relative" in r.getMessage() for r in caplog.records)


def test_without_directory_urls_the_heatmap_links_html_files(build_site):
    site = build_site(SMALL_LOG, config={"use_directory_urls": False})
    spec = json.loads((site / "worklog/words-per-day.vega.json").read_text())
    urls = {r["url"] for r in spec["layer"][0]["data"]["values"]} - {""}
    assert urls == {"2025-11-30.html", "2025-12-01.html", "2025-12-02.html"}
    assert (site / "worklog/2025-11-30.html").exists()


# --- sanitize: the sanitiser sees each page last ------------------------------------------------

KERNEL_LOG = """\
12/09/25 (T - 154)

Timed the tiled GEMM: $\\frac{2MNK}{t}$ at 4096 is 610 TFLOP/s, against
`torch.nn.functional.scaled_dot_product_attention` for the attention step.

$$\\text{arithmetic intensity} = \\frac{\\text{FLOPs}}{\\text{bytes}}$$
"""


def test_sanitize_keeps_the_math_names_and_charts_the_site_writes(build_site):
    site = build_site(KERNEL_LOG, plugin={"sanitize": True})
    day = html(site, "worklog/2025-12-09/index.html").find("article")
    assert day.find("math", display="inline").find("mfrac") is not None
    assert day.find("math", display="block").find("annotation", encoding="application/x-tex") is not None
    assert day.find("code").find("wbr") is not None  # break points in the long name
    home = html(site, "worklog/index.html").find("article")
    source = home.find("picture").find("source")  # the heatmap's narrow SVG for phones
    assert source["srcset"].endswith(".narrow.svg") and source["media"]


def test_sanitize_runs_after_the_math_is_written(build_site, monkeypatch):
    from worklog_gen.site import math

    def careless(tex, *, display):  # a converter that lets markup through, as latex2mathml's string output did
        return '<math><mtext><img src="x" onerror="alert(1)"></mtext><mrow href="javascript:alert(3)"></mrow></math>'

    monkeypatch.setattr(math, "to_mathml", careless)
    page = (build_site(KERNEL_LOG, plugin={"sanitize": True}) / "worklog/2025-12-09/index.html").read_text()
    assert "<math>" in page and "onerror" not in page and "javascript:" not in page


TASK_LIST_LOG = """\
12/09/25 (T - 154)

~~Port the softmax to CUDA~~ ~3 ms in Triton already :rocket: (at 12:30:45, `:rocket:`).

- [x] Read the wgmma section of the PTX ISA
- [ ] Port `tl.dot` to wgmma
- Timed the tiled GEMM <input type="text" name="pw" onfocus="alert(1)">
"""


@pytest.mark.parametrize("sanitize", [False, True], ids=["as-written", "sanitized"])
def test_a_task_list_item_starts_with_a_checkbox_named_by_its_state(build_site, sanitize):
    """``- [x]`` and ``- [ ]`` are checkboxes on the day page, as GitHub and Obsidian show them, each
    named ``done`` or ``open`` (axe-core's ``label`` rule; tests/test_a11y.py); the sanitiser keeps
    them, and any other input an author writes is a disabled checkbox once sanitised."""
    site = build_site(TASK_LIST_LOG, plugin={"sanitize": sanitize})
    day = html(site, "worklog/2025-12-09/index.html").find("article")
    items = [li for li in day.find_all("li") if "task-list-item" in (li.get("class") or [])]
    boxes = [li.find("input") for li in items]
    assert [(b["type"], b.get("aria-label"), b.has_attr("checked"), b.has_attr("disabled")) for b in boxes] == [
        ("checkbox", "done", True, True), ("checkbox", "open", False, True)]
    assert [li.get_text(" ", strip=True) for li in items] == ["Read the wgmma section of the PTX ISA",
                                                               "Port tl.dot to wgmma"]
    assert "[x]" not in day.get_text() and "[ ]" not in day.get_text()
    assert day.find("del").get_text() == "Port the softmax to CUDA" and "~3 ms" in day.get_text()  # as on GitHub
    assert "already \U0001f680 (at 12:30:45, :rocket:)" in day.get_text()  # GitHub's shortcode, not in code
    if sanitize:
        other = day.find("input", attrs={"name": "pw"}) or [i for i in day.find_all("input") if i not in boxes][0]
        assert other.attrs == {"disabled": "", "type": "checkbox"}


CALLOUT_LOG = """\
12/09/25 (T - 154)

> [!NOTE] Why grouped ordering
> Tiles of B stay in L2 across a group of rows.

> [!TIP]- The tile shape
> wgmma wants 64 rows per warpgroup.

> A plain quote from the [Triton tutorial](https://triton-lang.org/main/getting-started/tutorials/03-matrix-multiplication.html).

```
> [!NOTE] in code, as written
```
"""


@pytest.mark.parametrize("sanitize", [False, True], ids=["as-written", "sanitized"])
def test_github_and_obsidian_callouts_are_admonitions(build_site, sanitize):
    """``> [!NOTE] title`` is a note box with its title, ``[!TIP]-`` a closed fold; a plain quote
    and a callout in code stay as written; the summary on the timeline is the callout's title."""
    site = build_site(CALLOUT_LOG, plugin={"sanitize": sanitize})
    day = html(site, "worklog/2025-12-09/index.html").find("article")
    note = day.find("div", class_="admonition")
    assert note["class"] == ["admonition", "note"]
    assert note.find(class_="admonition-title").get_text() == "Why grouped ordering"
    fold = day.find("details", class_="tip")
    assert fold is not None and not fold.has_attr("open") and fold.find("summary").get_text() == "The tile shape"
    assert day.find("blockquote").get_text(" ", strip=True).startswith("A plain quote")
    assert "[!NOTE] in code, as written" in day.find("code").get_text()
    assert "[!" not in day.get_text().replace("[!NOTE] in code", "")
    home = html(site, "worklog/index.html").find("article").get_text()
    assert "Why grouped ordering" in home and "[!NOTE]" not in home


DETAILS_LOG = """\
12/09/25 (T - 154)

<details>
<summary>Profiler output</summary>

- **softmax**: 1.2 ms, see [Nsight Compute](https://docs.nvidia.com/nsight-compute/)
- `tl.dot`: 0.8 ms

</details>

```html
<details>
- in code, as written
```
"""


@pytest.mark.parametrize("sanitize", [False, True], ids=["as-written", "sanitized"])
def test_the_markdown_in_a_details_section_is_read_as_github_reads_it(build_site, sanitize):
    """A collapsed section as GitHub writes one (``<details>``, its ``<summary>``, a blank line, then
    markdown): its list is a list with its emphasis, code and link, as on GitHub and in the
    reading list, not ``- **softmax**`` as text; a ``<details>`` in code is code."""
    site = build_site(DETAILS_LOG, plugin={"sanitize": sanitize})
    day = html(site, "worklog/2025-12-09/index.html").find("article")
    section = day.find("details")
    assert section.find("summary").get_text() == "Profiler output"
    items = section.find("ul").find_all("li")
    assert [li.find(["strong", "code"]).get_text() for li in items] == ["softmax", "tl.dot"]
    assert section.find("a", href="https://docs.nvidia.com/nsight-compute/") is not None
    assert "**" not in section.get_text() and "markdown=" not in str(section)
    assert "- in code, as written" in day.find("pre").get_text()


# --- a log's own title ----------------------------------------------------------------------------


def test_a_log_title_is_text_in_every_slot_of_the_home(build_site):
    hostile = "</title><script>alert('GEMM')</script> & <b>tiles</b>"
    log = f"---\ntitle: {json.dumps(hostile)}\n---\n\nCounting down to the CUDA talk.\n\n{KERNEL_LOG}"
    site = build_site(log)
    for page in site.rglob("*.html"):  # <title> holds text only (RCDATA) until </title>: nothing may close it
        text = page.read_text(encoding="utf-8")
        assert len(re.findall(r"</title>", text, re.I)) == 1, page
        assert "<script>alert" not in re.sub(r"<title>.*?</title>", "", text, flags=re.S | re.I), page
    home = html(site, "worklog/index.html")
    assert home.title.get_text().replace("\u200b", "").startswith(hostile)  # shown as written
    assert home.find("article").find("h1").get_text().replace("\u200b", "").startswith(hostile)


# --- problems the author must fix -------------------------------------------------------------


def _fake_load(worklog: Worklog):
    return lambda path, date_order="auto", year=None, today=None, relative_to=None, exclude=None, repository=None: \
        worklog


def test_error_diagnostic_stops_the_build_naming_file_and_line(build_site, make_entry, monkeypatch, caplog):
    bad = Worklog(entries=[make_entry("2025-12-09", "x")],
                  diagnostics=[Diagnostic("worklog/log.md", 42, "invalid date 13/45/25", DiagnosticCode.INVALID_DATE)])
    monkeypatch.setattr(generate_module, "load", _fake_load(bad))
    with pytest.raises(Abort):
        build_site(None, strict=False)
    assert any("worklog/log.md:42: error: invalid date 13/45/25" in r.getMessage() for r in caplog.records)


def test_warning_diagnostic_fails_only_strict_builds(build_site, make_entry, monkeypatch, caplog):
    damaged = Worklog(entries=[make_entry("2025-12-09", "x")],
                      diagnostics=[Diagnostic("worklog/log.md", 7, "repaired mojibake", DiagnosticCode.MOJIBAKE)])
    monkeypatch.setattr(generate_module, "load", _fake_load(damaged))
    assert (build_site(None, strict=False) / "worklog/2025-12-09/index.html").exists()
    with pytest.raises(Abort):
        build_site(None, strict=True)
    assert any(r.levelno == logging.WARNING and "log.md:7" in r.getMessage() for r in caplog.records)


def test_two_entries_on_one_day_stop_the_build(build_site, caplog):
    twice = "12/09/25 (T - 10)\nfirst\n\n12/09/25 (T - 10)\nsecond\n"
    with pytest.raises(Abort):
        build_site(twice, strict=False)
    messages = [r.getMessage() for r in caplog.records]
    assert any(":4: error: duplicate day 2025-12-09" in m for m in messages), messages
    assert sum("duplicate day" in m for m in messages) == 1  # reported once, by the parser


def test_a_docs_page_in_the_way_is_an_error(build_site, caplog):
    with pytest.raises(Abort):
        build_site(SMALL_LOG, docs={"index.md": "# Home\n", "worklog/tasks.md": "# Mine\n"}, strict=False)
    assert any("docs/worklog/tasks.md clashes" in r.getMessage() for r in caplog.records)


def test_an_unreadable_frozen_notebook_stops_the_build_naming_it(build_site, fake_render, monkeypatch, caplog):
    def broken(notebook, store_dir, root, *, files_dir, primary=None):
        raise ValueError(f"notebooks/_freeze/{notebook.stem}/{notebook.stem}.ipynb: cannot read the frozen notebook")

    monkeypatch.setattr(generate_module.render, "render_topic", broken)
    with pytest.raises(Abort):
        build_site(SMALL_LOG, plugin={"topics": TOPICS}, strict=False)
    assert any("topic 'vector-add': notebooks/_freeze/vector_add/vector_add.ipynb: cannot read" in r.getMessage()
               for r in caplog.records)


# --- a long log: no page grows with it but the ones that list it -------------------------------


def _long_log(days: int) -> str:
    """A T-minus log of ``days`` consecutive days from 2020-01-01, each a line, a link and a task."""
    start = dt.date(2020, 1, 1)
    target = start + dt.timedelta(days=days)
    entries = [
        f"{day:%m/%d/%y} (T - {(target - day).days})\n\n"
        f"Read [the Triton matmul tutorial](https://triton-lang.org/main/getting-started/tutorials/"
        f"0{i % 3 + 1}-x.html) again; `GROUP_SIZE_M = 8`.\n\nTime tile {i} - Done;\n"
        for i, day in enumerate(start + dt.timedelta(days=i) for i in range(days))
    ]
    return "Ruthless work-ethic\n\n" + "\n".join(entries)


def test_a_2000_day_log_keeps_day_pages_small_and_out_of_the_nav(build_site):
    site = build_site(_long_log(2000))  # strict: no day page is reported as omitted from the nav
    days = sorted((site / "worklog").glob("20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]/index.html"))
    assert len(days) == 2000
    largest = max(days, key=lambda p: p.stat().st_size)
    assert largest.stat().st_size < 60_000, f"{largest} is {largest.stat().st_size:,} bytes"
    primary = html(site, "worklog/2023-06-15/index.html").find("nav", class_="md-nav--primary")
    hrefs = [a["href"] for a in primary.find_all("a", href=True)]
    assert not [h for h in hrefs if re.search(r"\d{4}-\d\d-\d\d", h)]
    assert [a.get_text(strip=True) for a in primary.find_all("a", href=re.compile(r"^\.\./\d{4}/$"))] == [
        str(y) for y in range(2025, 2019, -1)]  # 2020-01-01 to 2025-06-22, newest year first
    year = html(site, "worklog/2021/index.html").find("article")
    listed = [a["href"] for a in year.find_all("a", href=re.compile(r"^\.\./\d{4}-\d\d-\d\d/$"))]
    assert listed == [f"../{dt.date(2021, 12, 31) - dt.timedelta(days=i)}/" for i in range(365)]
