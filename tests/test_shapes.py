"""Every shape of learning log, on the project's own fixtures (no ``../shared/`` needed).

``tests/fixtures/shapes/`` is a folder as a learner keeps one: a progress log counting up
across New Year, dated fragment notes, a T-minus log, a blog post (Hugo front matter, its own
headings, a footnote) and a draft. It builds strictly, and ``check``, ``export`` and the build
agree on it. The golden cases in ``tests/golden`` (``progress_log``, ``dated_notes``, ``posts``,
``mixed``, ``no_entries``) pin the parse of each shape, warnings included; here: the rules one by
one (years, counters, nothing silent), and hypothesis properties for every shape.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from worklog_gen.log.front_matter import front_matter_span
from worklog_gen.log.shapes import SHAPES
from worklog_gen.log.lint import check
from worklog_gen.log.repair import repair_text
from worklog_gen.log import load, parse

FIXTURES = Path(__file__).parent / "fixtures" / "shapes"
TODAY = dt.date(2025, 12, 21)


# --- the rules, one by one -----------------------------------------------------------------------


def test_progress_headings_read_month_day_title_and_day_number():
    log = parse("## Nov 24\n\nDay 25 of ML Systems.\n\n## October 23 - Day 9 of GPU Programming\n\nx\n",
                "p.md", today=TODAY)
    assert [(e.date, e.title, e.day_number, e.shape) for e in log.entries] == [
        (dt.date(2025, 10, 23), "Day 9 of GPU Programming", 9, "progress"),
        (dt.date(2025, 11, 24), "", 25, "progress"),
    ]


@pytest.mark.parametrize("heading, date, title", [
    ("## 24 November - Day 25 of ML Systems", dt.date(2025, 11, 24), "Day 25 of ML Systems"),  # day first
    ("### 24th Nov 2024", dt.date(2024, 11, 24), ""),
    ("## 3rd of March, 2025: warp shuffles", dt.date(2025, 3, 3), "warp shuffles"),
    ("## Monday, November 24", dt.date(2025, 11, 24), ""),  # after a weekday
    ("## Tue 12 Mar 2024 - Day 4", dt.date(2024, 3, 12), "Day 4"),
])
def test_progress_headings_may_put_the_day_first_and_a_weekday_before_the_date(heading, date, title):
    (entry,) = parse(f"---\nyear: {date.year}\n---\n{heading}\n\nTimed the softmax.\n", "p.md", today=TODAY).entries
    assert (entry.date, entry.title, entry.shape, entry.header) == (date, title, "progress", heading)


@pytest.mark.parametrize("text, message", [
    ("---\nyear: 2025\n---\n## Tuesday, 25 November\n", None),  # 25 November 2025 is a Tuesday
    ("---\nyear: 2026\n---\n## Tuesday, 25 November\n", "the heading says Tuesday, but 25 November 2026 is a Wednesday; "
     "read as 2026-11-25"),
    ("## Tue 25 Nov 2026\n", "the heading says Tue, but 25 November 2026 is a Wednesday; read as 2026-11-25"),
    ("## Wed, Nov 26\nx\n## Thurs, Nov 27\n", "the heading says Thurs, but 27 November 2025 is a Thursday"),
    ("## Wed, Nov 26\nx\n## Fri, Nov 27\n", "the heading says Fri, but 27 November 2025 is a Thursday (the year is a "
     "guess: set `year:`); read as 2025-11-27"),  # no year has both: the year is the latest before the build
])
def test_a_heading_s_weekday_that_is_not_its_date_s_is_a_warning(text, message):
    found = [d for d in parse(text + "\nProfiled the naive matmul.\n", "p.md", today=TODAY).diagnostics if d.code == "weekday"]
    if message and message.endswith("is a Thursday"):  # both weekdays are right: no warning
        message = None
    assert [(d.line, d.severity, d.message) for d in found] == ([(text.count("\n"), "warning", message)] if message else [])


@pytest.mark.parametrize("text, dates", [
    ("## Tuesday, 25 November\nx\n## Wednesday, 26 November\ny\n", ["2025-11-25", "2025-11-26"]),
    ("## Thurs, Nov 27\nx\n", ["2025-11-27"]),  # the latest 27 November on a Thursday before the build date
    ("## Sat, Dec 28\nx\n## Fri, Jan 3\ny\n", ["2024-12-28", "2025-01-03"]),  # across New Year
])
def test_a_progress_log_s_weekdays_give_its_year(text, dates):
    """Without ``year:``, the latest year whose weekdays match the headings' is the log's (a note,
    not the ``year`` warning: the author wrote it, in a way)."""
    log = parse(text, "p.md", today=dt.date(2026, 11, 29))
    assert [e.date.isoformat() for e in log.entries] == dates
    (note,) = log.diagnostics
    assert (note.line, note.code, note.severity) == (1, "weekday-year", "info")
    assert f"read from {dates[0][:4]} on, the latest year whose weekdays match the headings'" in note.message


@pytest.mark.parametrize("heading", ["## 5 Mayday", "## November 2025", "## 3 things I learned", "## Wednesday"])
def test_headings_that_name_no_day_are_not_progress_headings(heading):
    log = parse(f"{heading}\n\nText.\n", "p.md", today=TODAY)
    assert log.entries == [] and [d.code for d in log.diagnostics] == ["no-entries"]


@pytest.mark.parametrize("text, years", [
    ("## January 2\nx\n## December 30\ny\n", [2025, 2024]),  # newest first, across New Year
    ("## December 30\nx\n## January 2\ny\n", [2024, 2025]),  # oldest first, across New Year
    ("## December 20\nx\n## December 21\ny\n", [2025, 2025]),  # the latest year with nothing after TODAY
    ("## December 22\nx\n", [2024]),  # 22 Dec 2025 is after TODAY
])
def test_a_year_is_chosen_so_that_no_entry_is_after_the_build_date(text, years):
    log = parse(text, "p.md", today=TODAY)
    assert [e.date.year for e in sorted(log.entries, key=lambda e: e.line)] == years
    (warning,) = [d for d in log.diagnostics if d.code == "year"]
    assert warning.path == "p.md" and str(years[-1] if years[0] > years[-1] else years[0]) in warning.message


def test_a_year_from_front_matter_or_the_option_names_the_oldest_entry_and_silences_the_warning():
    text = "## January 2\nx\n## December 30\ny\n"
    by_option = parse(text, "p.md", year=2019, today=TODAY)
    by_front_matter = parse("---\nyear: 2019\n---\n" + text, "p.md", year=2000, today=TODAY)
    for log in (by_option, by_front_matter):
        assert [e.date for e in log.entries] == [dt.date(2019, 12, 30), dt.date(2020, 1, 2)]
        assert not [d for d in log.diagnostics if d.code == "year"]


def test_counter_mistakes_are_notes_never_errors():
    log = parse("---\nyear: 2025\n---\n## Nov 1 - Day 22\nx\n## Nov 2 - Day 22\ny\n## Nov 3\nz\n", "p.md")
    found = [(d.line, d.severity, d.code) for d in log.diagnostics]
    assert found == [(6, "info", "day-number"), (8, "info", "day-number")]


def test_dated_notes_start_only_at_a_date_alone_on_its_line():
    text = "2025.01.13\nsee slide 2024.11.20\n\n2025/01/20\n\n## 2025-01-21\nok\n2025-01-22 notes\n"
    log = parse(text, "n.md")
    assert [e.date.isoformat() for e in log.entries] == ["2025-01-13", "2025-01-20", "2025-01-21"]
    assert "see slide 2024.11.20" in log.entries[0].body and "2025-01-22 notes" in log.entries[2].body
    assert [d.code for d in log.diagnostics] == ["empty-entry"]  # 2025/01/20 has no text, and is kept


@pytest.mark.parametrize("line, date", [
    ("January 6, 2026", "2026-01-06"), ("Jan 6 2026", "2026-01-06"), ("6th of January, 2026", "2026-01-06"),
    ("Tuesday, January 6, 2026", "2026-01-06"), ("**Tue 6 Jan 2026**", "2026-01-06"), ("### Jan. 6, 2026:", "2026-01-06"),
    ("1/6/2026", "2026-01-06"), ("01-06-26", "2026-01-06"), ("2026-01-06:", "2026-01-06"), ("_2026/1/6_", "2026-01-06"),
])
def test_a_dated_note_s_date_may_name_its_month_or_put_its_year_last(line, date):
    """Dated notes as people write them: the month's name, the year last, a weekday, emphasis."""
    log = parse(f"Scratch notes.\n\n{line}\n- coalescing: 32 loads in few 128-byte lines\n\n2026-01-09\n- cp.async\n", "n.md")
    assert [(e.date.isoformat(), e.header, e.shape) for e in log.entries] == [
        (date, line, "dated-note"), ("2026-01-09", "2026-01-09", "dated-note")]
    assert log.preamble == "Scratch notes.\n" and log.diagnostics == []


def test_a_dated_note_s_numeric_date_is_read_in_the_log_s_month_day_order():
    """``1/8/2026`` is 8 January month-first; a line such as ``13/01/2026`` makes the log day-first."""
    text = "1/8/2026\nbank conflicts\n\n13/01/2026\ncp.async\n"
    assert [e.date for e in parse(text, "n.md").entries] == [dt.date(2026, 1, 13), dt.date(2026, 8, 1)]
    assert [e.date for e in parse(text, "n.md", date_order="mdy").entries] == [dt.date(2026, 1, 8)]


def test_a_dated_note_s_weekday_that_is_not_its_date_s_is_a_warning():
    log = parse("Mon, January 6, 2026\nwgmma.\n", "n.md")
    assert [(d.line, d.code, d.message) for d in log.diagnostics] == [
        (1, "weekday", "the date line says Mon, but 06 January 2026 is a Tuesday; read as 2026-01-06")]


@pytest.mark.parametrize("line, hint", [
    ("Jan 7", "a date line starts an entry when it holds the date with its year"),
    ("**7/1**", "a date line starts an entry when it holds the date with its year"),
    ("- January 7, 26:", "a date line starts an entry when it holds the date with its year"),
])
def test_a_line_of_only_a_date_without_its_year_is_text_with_a_warning(line, hint):
    """A dated note's header needs its year; a line of only a day is read as text, and said so."""
    text = f"Notes.\n{line}\n\n2026-01-06\nwgmma.\n{line}\n```\n{line}\n```\nsee Jan 7 and 7/1\n"
    log = parse(text, "n.md")
    (entry,) = log.entries
    assert log.preamble == f"Notes.\n{line}\n" and entry.body == f"wgmma.\n{line}\n```\n{line}\n```\nsee Jan 7 and 7/1\n"
    near = [(d.line, d.code) for d in log.diagnostics]
    assert near == [(2, "not-a-header"), (6, "not-a-header")]
    assert "text of the preamble" in log.diagnostics[0].message and hint in log.diagnostics[0].message
    assert "text of the entry of 2026-01-06 (line 4)" in log.diagnostics[1].message


def test_a_score_in_a_list_is_no_near_header():
    log = parse("2026-01-06\nTests passing:\n- 3/4\n> 7/8\n", "n.md")
    assert log.diagnostics == [] and log.entries[0].body == "Tests passing:\n- 3/4\n> 7/8\n"


def test_a_date_line_in_a_progress_log_is_text_with_a_warning():
    """A file is read in one shape: a date line among progress headings is not an entry, and says so."""
    log = parse("---\nyear: 2025\n---\n## November 24 - Day 25\nx\n\nNovember 25, 2025\ny\n", "p.md")
    assert [e.date for e in log.entries] == [dt.date(2025, 11, 24)] and log.entries[0].body == "x\n\nNovember 25, 2025\ny\n"
    (d,) = log.diagnostics
    assert (d.line, d.code) == (7, "not-a-header")
    assert ("it is a date line, which starts an entry of dated notes, but this file's entries start with progress-log "
            "headers (`## November 24 - Day 25 of ML Systems`)") in d.message


def test_a_post_s_date_line_is_its_text():
    """A file whose front matter gives its date is one entry, even with a line of only a date (a
    post signed with its day): before, that line made it dated notes, and the post's title was lost."""
    text = "---\ntitle: Warp shuffles\ndate: 2025-01-05\n---\nA tree of shuffles.\n\nJanuary 8, 2025\n\nUpdate: 1.3x.\n"
    log = parse(text, "posts/shuffles.md")
    (entry,) = log.entries
    assert (entry.date, entry.shape, entry.title) == (dt.date(2025, 1, 5), "post", "Warp shuffles")
    assert entry.body == "A tree of shuffles.\n\nJanuary 8, 2025\n\nUpdate: 1.3x.\n" and log.diagnostics == []


def test_a_date_that_does_not_exist_stays_text_with_an_error():
    log = parse("2025-01-13\na\n2025-02-30\nb\n", "n.md")
    assert [e.date.isoformat() for e in log.entries] == ["2025-01-13"]
    assert log.entries[0].body == "a\n2025-02-30\nb\n" and log.reassemble() == "2025-01-13\na\n2025-02-30\nb\n"
    assert [(d.line, d.severity) for d in log.diagnostics] == [(3, "error")]


def test_a_post_is_one_titled_entry_with_its_tags():
    text = ("---\ntitle: Warp shuffles\ndate: 2025-01-05T18:30:00+01:00\ntags: [cuda]\ncategories: learning-log\n"
            "draft: false\n---\n# Why\nx\n")
    (entry,) = parse(text, "posts/a.md").entries
    assert (entry.kind, entry.title, entry.tags, entry.draft, entry.date) == (
        "post", "Warp shuffles", ["cuda", "learning-log"], False, dt.date(2025, 1, 5))
    assert entry.slug == "2025-01-05-warp-shuffles"


@pytest.mark.parametrize("text", [
    "# Notes\n\nNov. 24th: finished the softmax notebook\n",
    "",
    "---\ntitle: no date\n---\ntext\n",
])
def test_a_file_with_no_entry_is_an_error_naming_the_shapes_and_the_nearest_lines(text):
    log = parse(text, "notes.md")
    (error,) = [d for d in log.diagnostics if d.code == "no-entries"]
    assert error.severity == "error" and error.path == "notes.md" and error.line == 1
    for shape in ("t-minus", "progress", "dated-note", "post"):
        assert shape in error.message
    if "Nov." in text:
        assert "line 3: “Nov. 24th: finished the softmax notebook”" in error.message


@pytest.mark.parametrize("name, date", [("2025-12-09.md", "2025-12-09"), ("2025_12_09.md", "2025-12-09"),
                                        ("2025.12.09.md", "2025-12-09"), ("2025-12-09-warp-shuffles.md", "2025-12-09")])
def test_a_file_named_by_its_date_is_that_day_as_logseq_and_jekyll_name_them(tmp_path, name, date):
    (tmp_path / name).write_text("- Read the PTX ISA.\n  - wgmma reads B from shared memory\n", encoding="utf-8")
    (entry,) = load(tmp_path).entries
    assert (entry.date.isoformat(), entry.shape) == (date, "file")


def test_a_file_named_by_a_date_that_does_not_exist_is_an_error(tmp_path):
    (tmp_path / "2025_02_30.md").write_text("- Read the PTX ISA.\n", encoding="utf-8")
    assert [(d.code, d.message) for d in load(tmp_path).diagnostics][0] == (
        "invalid-date", "file name date 2025_02_30 is not a date")


def test_an_index_file_may_hold_only_the_preamble(tmp_path):
    (tmp_path / "index.md").write_text("---\ntarget_date: 2025-05-12\n---\nMy rules.\n", encoding="utf-8")
    (tmp_path / "2025-01-05.md").write_text("A day.\n", encoding="utf-8")
    log = load(tmp_path)
    assert log.preamble == "My rules.\n" and [d for d in log.diagnostics if d.severity == "error"] == []
    (tmp_path / "2025-01-05.md").unlink()
    assert [d.code for d in load(tmp_path).diagnostics] == ["no-entries"]  # a folder with no entries at all


# --- the folder of every shape: check, export and the build agree ---------------------------------


def _project(tmp_path: Path, worklog: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(worklog, root / "worklog")
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    config = {"site_name": "Shapes", "theme": {"name": "material"},
              "markdown_extensions": ["attr_list", {"toc": {"permalink": True}}],
              "validation": {"omitted_files": "warn", "absolute_links": "warn", "unrecognized_links": "warn",
                             "anchors": "warn"},
              "plugins": [{"worklog": {"feed": False}}]}
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "worklog_gen", *args], cwd=root, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def shapes_site(tmp_path_factory):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    root = _project(tmp_path_factory.mktemp("shapes"), FIXTURES)
    build(load_config(str(root / "mkdocs.yml"), strict=True))  # raises on any warning
    return root


def _html(root: Path, page: str) -> BeautifulSoup:
    return BeautifulSoup((root / "site" / page).read_text(encoding="utf-8"), "html.parser")


def test_every_shape_builds_strictly_into_one_timeline(shapes_site):
    exported = json.loads(_cli(shapes_site, "export").stdout)["entries"]
    kinds = {(e["date"], e["kind"]) for e in exported}
    assert ("2025-01-05", "post") in kinds and ("2024-12-29", "day") in kinds and ("2025-01-27", "day") in kinds
    published = [e for e in exported if not e["draft"]]
    for e in published:  # every entry check and export see has its page, and no other page exists
        assert (shapes_site / "site" / e["url"] / "index.html").is_file(), e["url"]
    folders = {p.name for p in (shapes_site / "site" / "worklog").iterdir() if p.name[:4].isdigit()}
    years = {str(int(e["date"][:4])) for e in published}  # the year pages that list the days
    assert folders - years == {e["url"].split("/")[1] for e in published}
    assert years <= folders
    assert _cli(shapes_site, "check").returncode == 0


def test_a_post_page_has_its_title_its_headings_below_it_tags_and_footnotes(shapes_site):
    page = _html(shapes_site, "worklog/2025-01-05-warp-shuffles-or-how-to-reduce-without-shared/index.html")
    article = page.find("article")
    assert article.find("h1").get_text(strip=True).startswith("Warp shuffles, or how to reduce without shared memory")
    assert "Warp shuffles, or how to reduce" in page.find("title").get_text()
    # the post's own "# Why shuffles" and "## What I measured", one level under its title
    assert article.find("h2").get_text(strip=True).rstrip("¶") == "Why shuffles"
    assert article.find("h3").get_text(strip=True).rstrip("¶") == "What I measured"
    footnotes = article.find("div", class_="footnote")
    assert footnotes is not None  # [^1] rendered as a footnote
    # under the post's text, above the links to the previous and next pages (not at the page's end)
    day_bar = next(p for p in article.find_all("p") if "←" in p.get_text() or "→" in p.get_text())
    assert footnotes.sourceline < day_bar.sourceline and "Footnotes Go Here" not in article.get_text()
    tags = [a.get_text() for a in article.find_all("a") if "tags/" in a.get("href", "")]
    assert tags == ["cuda", "reductions", "learning-log"]
    tag_page = _html(shapes_site, "worklog/tags/index.html").find("article").get_text()
    assert "cuda" in tag_page and "Warp shuffles" in tag_page


def test_hugo_shortcodes_become_markdown_on_the_page(shapes_site):
    folder = shapes_site / "site" / "worklog" / "2025-01-05-warp-shuffles-or-how-to-reduce-without-shared"
    article = _html(shapes_site, str((folder / "index.html").relative_to(shapes_site / "site"))).find("article")
    image = article.find("img", alt="The five steps of a warp reduction")
    assert image is not None and (folder / image["src"]).resolve().is_file()  # published beside the pages
    assert "Each step halves the active lanes." in article.get_text()
    assert "__shfl_down_sync(0xffffffff, v, offset)" in article.find("pre").get_text()  # a fenced block
    hrefs = [a["href"] for a in article.find_all("a")]
    assert "https://www.youtube.com/watch?v=example1234" in hrefs and "https://x.com/gpu_mode/status/1234567890" in hrefs
    assert "{{<" not in article.get_text()


def test_an_unknown_shortcode_stays_as_text_and_a_missing_image_keeps_its_caption(tmp_path):
    from worklog_gen.site.pages import SiteContext, day_page

    post = tmp_path / "post.md"
    post.write_text('---\ntitle: T\ndate: 2025-01-05\n---\nintro\n{{< gist user 123 >}}\n'
                    '{{< figure src="/img/gone.png" caption="The missing one." >}}\n', encoding="utf-8")
    log = load(post)
    found = [(d.line, d.severity, d.code) for d in log.diagnostics]
    assert found == [(6, "warning", "shortcode"), (7, "warning", "missing-image")]
    page = day_page(log, 0, SiteContext())
    assert "{{< gist user 123 >}}" in page and "*The missing one.*" in page and "gone.png" not in page


def test_two_posts_images_of_one_name_are_two_files(tmp_path):
    from worklog_gen.site.pages import SiteContext, worklog_pages

    for name, day in (("first", 5), ("second", 6)):  # Hugo page bundles: each post's folder holds its cover
        (tmp_path / "log" / name).mkdir(parents=True)
        (tmp_path / "log" / name / "index.md").write_text(
            f'---\ntitle: {name}\ndate: 2025-01-0{day}\n---\n{{{{< figure src="cover.svg" alt="{name} cover" >}}}}\n',
            encoding="utf-8")
        (tmp_path / "log" / name / "cover.svg").write_text(f"<svg>{name}</svg>", encoding="utf-8")
    log = load(tmp_path / "log")
    for e in log.entries:
        e.path = str(Path(e.path).relative_to(tmp_path))  # relative to the site's root, as the plugin gives them
    ctx = SiteContext(root=tmp_path)
    pages = worklog_pages(log, ctx)
    published = {dest: path.read_text(encoding="utf-8") for dest, path in ctx.assets.items()}
    assert sorted(published.values()) == ["<svg>first</svg>", "<svg>second</svg>"]
    for name in ("first", "second"):  # each page links its own cover, in its own folder
        dest = next(d for d, svg in published.items() if svg == f"<svg>{name}</svg>")
        page = next(text for src, text in pages.items() if src.startswith(f"worklog/2025-01-0") and name in src)
        assert f"]({dest.split('/')[-2]}/cover.svg)" in page
    home = pages["worklog/index.md"]  # the timeline's summary reads the figure as the page shows it
    assert "figure src" not in home and "— first cover" in home


def test_a_draft_is_left_out_of_the_site(shapes_site):
    assert not list((shapes_site / "site" / "worklog").glob("2025-02-01*"))
    exported = json.loads(_cli(shapes_site, "export").stdout)["entries"]
    assert [e["title"] for e in exported if e["draft"]] == ["Notes on tensor cores (unfinished)"]


def test_progress_days_show_their_counter(shapes_site):
    page = _html(shapes_site, "worklog/2025-01-02/index.html")
    assert page.find("article").find("h1").get_text(strip=True).startswith("2 Jan 2025 · Day 5")
    exported = {e["date"]: e for e in json.loads(_cli(shapes_site, "export").stdout)["entries"]}
    assert [exported[f"2024-12-{d}"]["day_number"] for d in (29, 30, 31)] == [1, 2, 3]
    assert exported["2025-01-02"]["title"] == "Day 5 of Triton" and exported["2025-01-13"]["day_number"] is None
    # the heatmap's tooltips give the day number as they give a T-minus day's countdown
    spec = json.loads((shapes_site / "site" / "worklog" / "words-per-day.vega.json").read_text(encoding="utf-8"))
    (days,) = [layer for layer in spec["layer"] if layer.get("name") == "days"]
    cells = {row["date"]: row["counter"] for row in days["data"]["values"]}
    assert (cells["2025-01-02"], cells["2025-01-07"]) == ("Day 5", "T-125")


def test_a_file_with_no_entries_fails_check_and_the_build(tmp_path):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort, PluginError

    worklog = tmp_path / "log"
    shutil.copytree(FIXTURES, worklog)
    (worklog / "scratch.md").write_text("# This week\n\nNov. 24th: softmax done.\n", encoding="utf-8")
    root = _project(tmp_path, worklog)
    result = _cli(root, "check")
    assert result.returncode == 1
    assert "scratch.md:1: error: no entry recognised in this file" in result.stdout and "Nov. 24th" in result.stdout
    with pytest.raises((Abort, PluginError)):
        build(load_config(str(root / "mkdocs.yml"), strict=False))


def test_a_day_from_two_sources_is_one_page_with_both_texts(tmp_path):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    worklog = tmp_path / "log"
    shutil.copytree(FIXTURES, worklog)
    (worklog / "more-notes.md").write_text("2025-01-08\nflash attention: the N x N scores never reach HBM\n",
                                           encoding="utf-8")
    root = _project(tmp_path, worklog)
    diagnostics = check(root / "worklog", today=TODAY)
    (same,) = [d for d in diagnostics if d.code == "same-day"]
    assert same.severity == "info"
    build(load_config(str(root / "mkdocs.yml"), strict=False))
    text = _html(root, "worklog/2025-01-08/index.html").find("article").get_text()
    assert "Timed naive attention" in text and "never reach HBM" in text
    assert "From worklog/more-notes.md:1" in text and "From worklog/tminus.md:" in text


# --- properties: every shape, no crash, no line lost or duplicated ---------------------------------

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
months = st.sampled_from(["January", "Feb", "March", "Apr", "May", "June", "Jul", "August", "Sept", "Oct", "Nov",
                          "December", "dec"])
progress = st.one_of(
    st.builds(lambda h, m, d, tail: f"{h} {m} {d}{tail}", st.sampled_from(["#", "##", "###", "## Monday,"]), months,
              st.integers(0, 35), st.sampled_from(["", " - Day 3 of CUDA", ", 2024", ": Day 9", " ##", "th"])),
    st.builds(lambda h, d, m, tail: f"{h} {d} {m}{tail}", st.sampled_from(["#", "## Tue", "###"]), st.integers(0, 35),
              months, st.sampled_from(["", " 2024 - Day 3", ": Day 9", " ##"])),  # day first
)
dated = st.builds(lambda pre, y, sep, m, d: f"{pre}{y}{sep}{m:02d}{sep}{d:02d}", st.sampled_from(["", "## "]),
                  st.sampled_from([2024, 2025]), st.sampled_from(["-", ".", "/"]), st.integers(0, 13), st.integers(0, 32))
body = st.sampled_from(["", "", "Day 4 of Triton.", "see slide 2024.11.20", "- Done", "-> Tmr", "```", "2025-01-02",
                        "[a](https://a.org)", "[https://b.org](B)", "Eï¬ƒcient", "# heading", "{{< x id=1 >}}", "x[^1]",
                        "[^1]: note", "---", "title: t", "date: 2025-01-05"])


@st.composite
def shaped_text(draw) -> str:
    heads = draw(st.sampled_from([progress, dated]))
    lines = draw(st.lists(st.one_of(heads, body, body), max_size=30))
    if draw(st.booleans()):
        lines = draw(st.sampled_from([["---", "year: 2023", "---"], ["---", "title: t", "date: 2025-01-05", "---"],
                                      ["---", "year: x", "---"]])) + lines
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


def _header_lines(text: str) -> list[int]:
    """0-based indices of the lines of the first shape (after T-minus, which this text never has)
    that matches outside fenced code blocks: where the parser's entries (or invalid-date lines) start."""
    lines = text.split("\n")
    start = 0
    if lines[0] == "---" and "---" in lines[1:]:
        start = lines.index("---", 1) + 1
    for shape in SHAPES[1:3]:
        found, fence = [], None
        for i, line in enumerate(lines[start:], start):
            if line.startswith(("```", "~~~")):
                fence = None if fence and line.startswith(fence) else fence or line[:3]
            elif fence is None and shape.pattern.match(line):
                found.append(i)
        if found:
            return found
    return []


@SETTINGS
@given(shaped_text(), st.dates(dt.date(2020, 1, 1), dt.date(2030, 12, 31)))
@example("---\n# January 0\n[https://b.org](B)\n# January 0\n---", dt.date(2020, 1, 1))  # all front matter
def test_every_shape_parses_without_losing_or_duplicating_a_line(text, today):
    log = parse(text, "p.md", today=today)
    fixed, _ = repair_text(text, "p.md", boundaries=_header_lines(text),
                           prose_start=lambda lines: front_matter_span(lines)[0])  # no repair in the front matter
    assert log.reassemble() == fixed
    (f,) = log.files
    start = f.front_matter_lines + f.preamble_lines + 1
    for e in f.entries:  # the entries tile the file after the preamble
        assert e.line == start
        start = e.end_line + 1
    assert start == f.line_count + 1 or not f.entries
    assert all(e.date <= today for e in log.entries if e.shape == "progress") or \
        any(d.code == "front-matter" for d in log.diagnostics) or "year: 2023" in text or " 2024" in text
