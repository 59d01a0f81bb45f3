"""Page text from hand-built entries: streaks, heatmap, timeline, tasks, links, day pages."""

import dataclasses
import datetime as dt
import json

import markdown
import pytest

from worklog_gen.kit.charts import chart_spec
from worklog_gen.site.heatmap import heatmap_cells, heatmap_chart
from worklog_gen.site.markup import commonmark_lists, md_escape
from worklog_gen.site.old_links import OldSiteLinks
from worklog_gen.site.layout import Layout
from worklog_gen.site.pages import (
    SiteContext,
    day_groups,
    day_page,
    entry_title,
    home_files,
    home_page,
    nav_section,
    reading_list_page,
    summary,
    tasks_page,
    worklog_pages,
    year_pages,
)
from worklog_gen.site.stats import normalise_task, reading_list, streaks, task_report, timeline

D = dt.date.fromisoformat


# --- streaks -------------------------------------------------------------------------


def test_streaks_current_is_the_run_ending_at_the_latest_entry():
    dates = [D("2025-12-01"), D("2025-12-02"), D("2025-12-03"), D("2025-12-04"), D("2025-12-07"), D("2025-12-08")]
    s = streaks(dates)
    assert (s.current, s.longest) == (2, 4)
    assert (s.longest_start, s.longest_end) == (D("2025-12-01"), D("2025-12-04"))


def test_streaks_count_calendar_days_once_and_cross_month_ends():
    dates = [D("2025-12-31"), D("2026-01-01"), D("2026-01-01"), D("2026-01-02"), D("2025-12-30")]
    assert streaks(dates) == streaks(sorted(set(dates)))
    assert (streaks(dates).current, streaks(dates).longest) == (4, 4)


def test_streaks_of_nothing_and_of_one_day():
    assert (streaks([]).current, streaks([]).longest) == (0, 0)
    assert (streaks([D("2025-01-01")]).current, streaks([D("2025-01-01")]).longest) == (1, 1)


# --- heatmap ---------------------------------------------------------------------------


def test_heatmap_covers_first_to_last_day_in_monday_weeks():
    words = {D("2025-12-09"): 95, D("2025-12-10"): 831, D("2025-12-20"): 19, D("2026-01-05"): 400}
    cells = heatmap_cells(words)
    assert [c.date for c in cells] == [D("2025-12-09") + dt.timedelta(days=i) for i in range(28)]
    assert cells[0].week == 0 and cells[0].weekday == 1  # 2025-12-09 is a Tuesday
    assert cells[-1].date == D("2026-01-05") and cells[-1].weekday == 0 and cells[-1].week == 4
    for cell in cells:
        assert 0 <= cell.weekday < 7 and 0 <= cell.week <= 4
        assert cell.words == words.get(cell.date)
        assert (cell.level == 0) == (cell.words is None)


def test_heatmap_levels_follow_word_quartiles():
    words = {D("2025-01-01") + dt.timedelta(days=i): w for i, w in enumerate([10, 20, 30, 40, 50, 60, 70, 80])}
    levels = [c.level for c in heatmap_cells(words)]
    assert levels == sorted(levels)  # more words, never a lighter colour
    assert levels[0] == 1 and levels[-1] == 4
    assert set(levels) == {1, 2, 3, 4}


def test_heatmap_chart_has_a_square_per_day_and_a_legend_of_word_bands():
    cells = heatmap_cells({D("2024-01-01") + dt.timedelta(days=i): 10 + i for i in range(0, 365, 2)})
    spec = chart_spec(heatmap_chart(cells, lambda d: f"{d.isoformat()}/"))
    days, months = spec["layer"]
    assert len(days["data"]["values"]) == len(cells)
    assert sum(1 for r in days["data"]["values"] if r["url"]) == sum(c.words is not None for c in cells)
    bands = days["encoding"]["color"]["scale"]["domain"]
    assert bands[0] == "no words" and len(bands) == 5  # four quartile bands of the days with words
    assert [m["month"] for m in months["data"]["values"]][:3] == ["Jan", "Feb", "Mar"]
    assert spec["width"] == {"step": 14}  # a year of weeks is wider than a phone: the page's box scrolls


def test_heatmap_runs_on_to_the_target_date_as_days_to_come():
    words = {D("2025-12-09"): 40, D("2025-12-11"): 10}
    cells = heatmap_cells(words, until=D("2025-12-20"))
    assert cells[0].date == D("2025-12-09") and cells[-1].date == D("2025-12-20")
    assert [c.date for c in cells if c.ahead] == [D("2025-12-12") + dt.timedelta(days=i) for i in range(9)]
    assert all(c.words is None and c.level == 0 for c in cells if c.ahead)
    rows = {r["date"]: r for r in chart_spec(heatmap_chart(cells, lambda d: f"{d}/"))["layer"][0]["data"]["values"]}
    assert rows["2025-12-20"]["band"] == "target date" and rows["2025-12-15"]["band"] == "to come"
    assert rows["2025-12-15"]["url"] == ""  # nothing to open yet
    # a target date already behind the last entry adds nothing; a far one is capped
    assert heatmap_cells(words, until=D("2025-12-01")) == heatmap_cells(words)
    far = heatmap_cells(words, until=D("2030-01-01"))
    assert far[-1].date == D("2025-12-11") + dt.timedelta(days=366)


def test_heatmap_of_no_entries_is_empty():
    assert heatmap_cells({}) == [] and heatmap_chart([], lambda d: None) is None


# --- timeline, summary, reading list ---------------------------------------------------------


def test_timeline_is_newest_first_grouped_by_month(make_entry):
    entries = [make_entry(d) for d in ["2025-11-30", "2025-12-09", "2026-01-02", "2025-12-20", "2025-11-01"]]
    groups = timeline(entries)
    assert [m for m, _ in groups] == ["January 2026", "December 2025", "November 2025"]
    assert [[e.date.isoformat() for e in es] for _, es in groups] == [
        ["2026-01-02"],
        ["2025-12-20", "2025-12-09"],
        ["2025-11-30", "2025-11-01"],
    ]


def test_summary_is_the_first_sentence_or_link_title(make_entry):
    link_first = make_entry("2025-12-09", "[Making Deep Learning Go Brrrr](https://horace.io/brrr_intro.html)\n\nMore.")
    assert summary(link_first) == "Making Deep Learning Go Brrrr"
    prose_first = make_entry("2025-12-15", "Coded Triton MatMul, both tiled GEMM. Found a bug.\n")
    assert summary(prose_first) == "Coded Triton MatMul, both tiled GEMM."
    semicolon = make_entry("2025-12-17", "Read a page from the blog;\nReview the report;")
    assert summary(semicolon) == "Read a page from the blog"
    assert summary(make_entry("2025-12-20", "")) == "(no text)"


def test_summary_is_cut_at_a_word_boundary(make_entry):
    entry = make_entry("2025-12-09", "word " * 60)
    text = summary(entry, limit=50)
    assert len(text) <= 50 and text.endswith("word…")


@pytest.mark.parametrize("body, expected", [
    ("Tiled matmul (GROUP_SIZE_M = 8; swizzled launch order) hit 610 TFLOP/s; the rest tomorrow.",
     "Tiled matmul (GROUP_SIZE_M = 8; swizzled launch order) hit 610 TFLOP/s"),
    ("Read the FlashAttention-2 paper (Dao et al. 2023) on the train. Then timed it.",
     "Read the FlashAttention-2 paper (Dao et al. 2023) on the train."),
    ("Timed the reduction against torch.sum (bandwidth-bound above 1M elements, launch-bound below them, "
     "on the H100 and on the H200 alike)", "Timed the reduction against torch.sum…"),  # cut inside the parenthesis
])
def test_a_summary_never_leaves_a_parenthesis_open(make_entry, body, expected):
    text = summary(make_entry("2025-12-11", body))
    assert text == expected and text.count("(") == text.count(")")


def test_reading_list_dedupes_by_url_and_keeps_days_in_order(make_entry):
    a = make_entry("2025-12-10", links=[("Lecture 14", "https://c.org/l14"), ("Brrr", "https://www.horace.io/b")])
    b = make_entry("2025-12-09", links=[("Lecture 14 (first)", "https://c.org/l14")])
    c = make_entry("2025-12-11", links=[("Lecture 14 again", "https://c.org/l14"), ("again", "https://c.org/l14")])
    items = reading_list([a, b, c])
    assert [i.url for i in items] == ["https://c.org/l14", "https://www.horace.io/b"]
    assert items[0].title == "Lecture 14 (first)"
    assert [e.date.isoformat() for e in items[0].entries] == ["2025-12-09", "2025-12-10", "2025-12-11"]
    assert items[1].domain == "horace.io"


# --- tasks ---------------------------------------------------------------------------------


def test_normalise_task_drops_status_words_case_and_punctuation():
    assert normalise_task("Finish Einsum today; - Done") == "finish einsum today"
    assert normalise_task("Make an entry for TA experience, after dinner; -> Tmr;") == (
        "make an entry for ta experience after dinner"
    )
    assert normalise_task("First learn, and then finish this. - Next; - Done;") == "first learn and then finish this"
    assert normalise_task("Read the paper -> Tmr") == normalise_task("read the PAPER - done.")


def test_task_report_matches_carried_to_later_done(make_entry):
    e1 = make_entry("2025-12-15", tasks=[("Make an entry for TA experience -> Tmr;", "carried"),
                                         ("Write the report -> Tmr", "carried"), ("Proctor exam - Done", "done")])
    e2 = make_entry("2025-12-16", tasks=[("Write the report -> Tmr", "carried"), ("Hive slides", "open")])
    e3 = make_entry("2025-12-17", tasks=[("Make an entry for TA experience - Done;", "done")])
    report = task_report([e3, e1, e2])
    assert [(a.date.day, b.date.day) for a, _, b in report.carried_then_done] == [(15, 17)]
    assert [([e.date.day for e in es], t.text) for es, t in report.outstanding] == [
        ([15, 16], "Write the report -> Tmr")
    ]
    assert [t.text for _, t in report.done] == ["Proctor exam - Done", "Make an entry for TA experience - Done;"]


def test_an_open_task_is_listed_until_a_later_day_marks_it_done(make_entry, make_log):
    """A checkbox ``- [ ]`` or an outliner's ``- TODO``: open until a later entry marks the same
    task done; its wikilinks show as their text."""
    e1 = make_entry("2025-12-15", tasks=[("Profile with Nsight", "open"),
                                         ("From [[2025-12-14|Sunday]]: the swizzle", "open")])
    e2 = make_entry("2025-12-16", tasks=[("profile with nsight - Done", "done")])
    report = task_report([e2, e1])
    assert [(e.date.day, t.text) for e, t in report.open] == [(15, "From [[2025-12-14|Sunday]]: the swizzle")]
    assert report.outstanding == [] and report.carried_then_done == []
    page = tasks_page(make_log([e1, e2]), SiteContext())
    assert "## Open, not marked done since (1)\n\n- From Sunday: the swizzle — open on [2025-12-15](2025-12-15.md)" in page
    assert "Open, not marked done" not in tasks_page(make_log([e2]), SiteContext())  # no open task: no section


def test_a_task_done_before_it_was_carried_does_not_close_it(make_entry):
    e1 = make_entry("2025-12-15", tasks=[("Read the paper - Done", "done")])
    e2 = make_entry("2025-12-16", tasks=[("Read the paper -> Tmr", "carried")])
    report = task_report([e1, e2])
    assert report.carried_then_done == [] and len(report.outstanding) == 1


def test_tasks_page_lists_outstanding_and_done_with_day_links(make_entry, make_log):
    e1 = make_entry("2025-12-15", tasks=[("Write the report -> Tmr", "carried"), ("Proctor exam - Done", "done")])
    page = tasks_page(make_log([e1]), SiteContext())
    assert "## Carried over, never marked done (1)" in page
    assert "Write the report -> Tmr — carried on [2025-12-15](2025-12-15.md)" in page
    assert "## Done (1)" in page and "    - Proctor exam - Done" in page


def test_a_task_keeps_its_code_and_shows_its_links_as_text(make_entry, make_log):
    e1 = make_entry("2025-12-15", tasks=[("Port `tl.dot` to [wgmma](notes/wgmma.md), *fp16* <b>x</b> - Done", "done")])
    page = tasks_page(make_log([e1]), SiteContext())
    # a code span stays code, emphasis stays, a link (relative to the entry's file) is its text,
    # HTML and stray markup are literal
    assert "    - Port `tl.dot` to wgmma, *fp16* &lt;b>x&lt;/b> - Done" in page


# --- old-site links ---------------------------------------------------------------------------


BODY = (
    "Drafts: [MLP Standard Derivatives](/blog/2025/mlp-derivatives/) and "
    '[Simple MLP [draft]](/blog/2025/mlp-fw-bwd/ "title"), '
    "![fig](/assets/fig.png), [external](https://x.org/a) and [local](other.md).\n"
)


def _links(make_entry):
    return make_entry(
        "2025-12-12",
        BODY,
        links=[("MLP Standard Derivatives", "/blog/2025/mlp-derivatives/"), ("Simple MLP [draft]", "/blog/2025/mlp-fw-bwd/"),
               ("fig", "/assets/fig.png"), ("external", "https://x.org/a"), ("local", "other.md")],
    ).links


def test_old_site_links_are_rewritten_to_old_site_url(make_entry):
    old = OldSiteLinks("https://me.github.io/")
    out = old.rewrite(BODY, _links(make_entry), "log.md")
    assert "[MLP Standard Derivatives](https://me.github.io/blog/2025/mlp-derivatives/)" in out
    assert '[Simple MLP [draft]](https://me.github.io/blog/2025/mlp-fw-bwd/ "title")' in out
    assert "![fig](https://me.github.io/assets/fig.png)" in out
    assert "[external](https://x.org/a)" in out and "[local](other.md)" in out
    assert old.kept == [] and old.message() is None


def test_old_site_links_are_kept_as_html_and_reported_once(make_entry):
    old = OldSiteLinks(None)
    out = old.rewrite(BODY, _links(make_entry), "log.md")
    html = markdown.markdown(out)
    assert '<a href="/blog/2025/mlp-derivatives/">MLP Standard Derivatives</a>' in html
    assert '<a href="/blog/2025/mlp-fw-bwd/">Simple MLP [draft]</a>' in html
    assert '<img alt="fig" src="/assets/fig.png"' in html or '<img src="/assets/fig.png" alt="fig">' in html
    assert '<a href="https://x.org/a">external</a>' in html
    message = old.message()
    assert message.count("\n") == 3  # one message: a header line and one line per link
    assert "log.md:2: /blog/2025/mlp-derivatives/" in message and "old_site_url" in message


# --- page text ---------------------------------------------------------------------------------


def test_commonmark_lists_mean_the_same_to_python_markdown():
    text = "notes from above;\n- first\n- second with\n  - a nested item\n\nthen;\n1. one\n   1. sub\n"
    out = commonmark_lists(text)
    html = markdown.markdown(out)
    assert html.count("<ul>") == 2 and html.count("<ol>") == 2
    assert "<p>notes from above;</p>" in html and "<p>then;</p>" in html
    assert out.split() == text.split()  # only whitespace changed


def test_md_escape_keeps_text_literal():
    text = "a *b* _c_ [d](e) <f> & `g` | h"
    assert markdown.markdown(md_escape(text)) == "<p>a *b* _c_ [d](e) &lt;f&gt; &amp; `g` | h</p>"


def test_day_page_has_title_iso_date_verbatim_body_and_neighbours(make_entry, make_log):
    entries = [
        make_entry("2025-12-09", "First day.", countdown=154),
        make_entry("2025-12-10", "Read [Lecture 14](https://c.org/l14) on GEMM.\n\nPing Sohan - Done", countdown=153,
                   links=[("Lecture 14", "https://c.org/l14")], tasks=[("Ping Sohan - Done", "done")]),
        make_entry("2025-12-11", "Third.", countdown=152),
    ]
    ctx = SiteContext(topic_titles={"tiled-matmul": "Tiled matmul"}, entry_topics={"2025-12-10": ["tiled-matmul"]})
    page = day_page(make_log(entries), 1, ctx, before=entries[0], after=entries[2])
    assert page.startswith("# 10 Dec 2025 · T-153\n")
    assert "Wednesday 2025-12-10" in page and "153 days to the target date 2026-05-12" in page
    assert "Read [Lecture 14](https://c.org/l14) on GEMM.\n\nPing Sohan - Done" in page
    assert "- [Tiled matmul](../topics/tiled-matmul.md)" in page
    assert "- [Lecture 14](<https://c.org/l14>) — c.org" in page
    assert "- ✓ done: Ping Sohan - Done" in page
    assert page.endswith("← [9 Dec 2025 · T-154](2025-12-09.md) · [December 2025](2025.md#2025-12) · "
                         "[Worklog](index.md) · [11 Dec 2025 · T-152](2025-12-11.md) →\n")
    first = day_page(make_log(entries), 0, ctx, after=entries[1])
    assert "←" not in first and "## Topics" not in first


def test_home_page_countdown_streaks_and_timeline(make_entry, make_log):
    entries = [make_entry("2025-12-09", "One two.", 154), make_entry("2025-12-10", "Three.", 153),
               make_entry("2025-12-12", "Four five six.", 151)]
    ctx = SiteContext(build_date=D("2025-12-21"), feed=True)
    page = home_page(make_log(entries, preamble="Ruthless work-ethic\n"), ctx)
    assert "Ruthless work-ethic" in page
    assert "**Target date:** Tuesday 2026-05-12" in page
    assert "**Days left, as of the build date 2025-12-21:** 142" in page
    assert "**Days left, as of the last entry 2025-12-12:** 151" in page
    assert "**Days logged:** 3" in page
    assert "**Current streak (run ending at the latest entry):** 1 day" in page
    assert "**Longest streak:** 2 days (2025-12-09 to 2025-12-10)" in page
    assert page.index("### December 2025") < page.index("[12 Dec 2025 · T-151](2025-12-12.md) — Four five six.")
    assert page.index("2025-12-12.md") < page.index("2025-12-09.md")  # newest first
    assert "](words-per-day.vega.svg)" in page and "[Atom feed](../feed.xml)" in page
    same_day = home_page(make_log(entries), SiteContext(build_date=D("2025-12-12")))
    assert "**Days left, as of the build date and the last entry 2025-12-12:** 151" in same_day
    assert same_day.count("Days left") == 1  # the build date is the last entry's: one row
    files = home_files(make_log(entries, preamble=""), ctx)
    assert set(files) == {"worklog/words-per-day.vega.json", "worklog/words-per-day.vega.svg"}
    rows = json.loads(files["worklog/words-per-day.vega.json"])["layer"][0]["data"]["values"]
    day = next(r for r in rows if r["date"] == "2025-12-09")
    assert day["url"] == "2025-12-09/" and day["counter"] == "T-154" and day["words"] == 2


def test_reading_list_page_links_every_url_once(make_entry, make_log):
    entries = [make_entry("2025-12-09", links=[("A | pipe", "https://a.org/x")]),
               make_entry("2025-12-10", links=[("A again", "https://a.org/x"), ("Old", "/blog/old/")])]
    page = reading_list_page(make_log(entries), SiteContext())
    assert page.count("https://a.org/x") == 1
    assert r"A \| pipe" in page and "[2025-12-09](2025-12-09.md), [2025-12-10](2025-12-10.md)" in page
    assert '<a href="/blog/old/">Old</a>' in page


def test_entry_url_and_nav_section_of_years_without_day_pages(make_entry, make_log):
    entries = [make_entry("2024-12-31", countdown=11), make_entry("2025-11-30", countdown=10),
               make_entry("2025-12-01", countdown=9)]
    assert Layout("/log/").entry_url(entries[0].slug) == "log/2024-12-31/"
    assert Layout("/log/", use_directory_urls=False).entry_url(entries[0].slug) == "log/2024-12-31.html"
    assert Layout("/log/").year_page(2025) == "log/2025.md"
    assert entry_title(make_entry("2025-12-01")) == "1 Dec 2025"
    nav = nav_section(make_log(entries), SiteContext())
    assert nav == [
        "worklog/index.md",
        {"Reading list": "worklog/reading-list.md"},
        {"Tasks": "worklog/tasks.md"},
        {"2025": "worklog/2025.md"},  # newest year first, as the home's timeline
        {"2024": "worklog/2024.md"},
    ]


def test_day_groups_find_the_pages_around_each_page_in_one_walk(make_entry, make_log):
    a = make_entry("2025-12-09", "First.", countdown=154)
    b = make_entry("2025-12-10", "From the log.", countdown=153)
    b2 = make_entry("2025-12-10", "From the notes file.", countdown=153, path="notes.md")
    post = dataclasses.replace(make_entry("2025-12-10", "A post."), shape="post", title="Warp shuffles")
    c = make_entry("2025-12-11", "Third.", countdown=152)
    log = make_log([a, b, post, b2, c])  # the parser keeps file order within a day
    groups = day_groups(log, SiteContext())
    assert [(g.src, g.indices) for g in groups] == [
        ("worklog/2025-12-09.md", (0,)), ("worklog/2025-12-10.md", (1, 3)),
        ("worklog/2025-12-10-warp-shuffles.md", (2,)), ("worklog/2025-12-11.md", (4,))]
    assert [(g.before and g.before.slug, g.after and g.after.slug) for g in groups] == [
        (None, "2025-12-10"), ("2025-12-09", "2025-12-10-warp-shuffles"),
        ("2025-12-10", "2025-12-10"), ("2025-12-10", None)]  # as the pages' first entries were scanned for


def test_year_page_lists_exactly_its_days_by_month(make_entry, make_log):
    entries = [make_entry(d, f"Day {d}.", countdown=i) for i, d in
               enumerate(["2024-12-30", "2025-01-02", "2025-01-03", "2025-03-01", "2026-01-01"])]
    ctx = SiteContext()
    pages = year_pages(make_log(entries), day_groups(make_log(entries), ctx), ctx)
    assert list(pages) == ["worklog/2026.md", "worklog/2025.md", "worklog/2024.md"]
    page = pages["worklog/2025.md"]
    linked = [line.split("](")[1].split(")")[0] for line in page.splitlines() if line.startswith("- [")]
    assert linked == ["2025-03-01.md", "2025-01-03.md", "2025-01-02.md"]  # newest first
    assert page.index("## March { #2025-03 }") < page.index("## January { #2025-01 }")
    assert "- [3 Jan 2025 · T-2](2025-01-03.md) — Day 2025-01-03." in page
    assert page.endswith("← [2024](2024.md) · [Worklog](index.md) · [2026](2026.md) →\n")


def test_a_day_page_links_its_neighbours_its_month_and_the_home(make_entry, make_log):
    entries = [make_entry(f"2025-0{m}-1{d}", countdown=100 - 10 * m - d) for m in (1, 2) for d in (1, 2)]
    pages = worklog_pages(make_log(entries), SiteContext(layout=Layout("notes/log")))
    page = pages["notes/log/2025-02-11.md"]
    assert "← [12 Jan 2025 · T-88](2025-01-12.md)" in page
    assert "[February 2025](2025.md#2025-02)" in page and "[Worklog](index.md)" in page
    assert "[12 Feb 2025 · T-78](2025-02-12.md) →" in page
    assert "notes/log/2025.md" in pages


@pytest.mark.parametrize("prefix", ["worklog", "notes/log"])
def test_pages_link_relative_to_their_own_folder(make_entry, make_log, prefix):
    entries = [make_entry("2025-12-09", "GEMM", 1)]
    ctx = SiteContext(layout=Layout(prefix), topic_titles={"t": "T"}, entry_topics={"2025-12-09": ["t"]})
    pages = worklog_pages(make_log(entries), ctx)
    assert set(pages) == {f"{prefix}/{n}" for n in ["index.md", "reading-list.md", "tasks.md", "2025.md",
                                                      "2025-12-09.md"]}
    depth = prefix.count("/") + 1
    assert f"]({'../' * depth}topics/t.md)" in pages[f"{prefix}/2025-12-09.md"]
