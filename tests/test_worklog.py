"""The worklog parser: golden cases, a T-minus log shaped like a real one, and the rules one by one.

Golden cases live in ``tests/golden``: ``<case>.md`` (or a folder ``<case>/``) is the
input, ``<case>.json`` holds the options and the expected parse. After a deliberate
change, rewrite the expectations with ``WORKLOG_UPDATE_GOLDEN=1 pytest tests/test_worklog.py``
and read the diff before committing it.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import os
import shutil
from pathlib import Path

import pytest

from worklog_gen.log.authoring import append_entry
from worklog_gen.log import Diagnostic, DiagnosticCode, Entry, Link, TaskStatus, Worklog, load, parse
from worklog_gen.log.shapes import HeaderStyle, format_header, header_style
from worklog_gen.log.tasks import parse_task
from worklog_gen.log.words import count_words

from conftest import T_MINUS_LOGS, TMINUS_FIXTURE

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))


def snapshot(log: Worklog) -> dict:
    """The parts of a parse that golden files pin down, JSON-ready."""
    return {
        "date_order": log.date_order,
        "target_date": log.target_date.isoformat() if log.target_date else None,
        "front_matter": json.loads(json.dumps(log.front_matter, default=str)),
        "preamble": log.preamble,
        "paths": log.paths,
        "entries": [
            {
                "date": e.date.isoformat(),
                "countdown": e.countdown,
                "header": e.header,
                "path": e.path,
                "line": e.line,
                "end_line": e.end_line,
                "slug": e.slug,
                "shape": e.shape,
                "kind": e.kind,
                "title": e.title,
                "tags": e.tags,
                "day_number": e.day_number,
                "draft": e.draft,
                "words": e.words,
                "links": [[link.title, link.url, link.line] for link in e.links],
                "tasks": [[t.text, t.status.value, t.line] for t in e.tasks],
                "body": e.body,
            }
            for e in log.entries
        ],
        "diagnostics": [str(d) for d in log.diagnostics],
    }


def load_case(case: str, tmp_path: Path, monkeypatch) -> tuple[Worklog, dict]:
    spec = json.loads((GOLDEN / f"{case}.json").read_text(encoding="utf-8"))
    options = spec.get("options", {})
    src = GOLDEN / case if (GOLDEN / case).is_dir() else GOLDEN / f"{case}.md"
    dst = tmp_path / src.name
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        data = src.read_bytes()
        if "crlf" in options.get("transform", []):
            data = data.replace(b"\n", b"\r\n")
        if "bom" in options.get("transform", []):
            data = b"\xef\xbb\xbf" + data
        dst.write_bytes(data)
    monkeypatch.chdir(tmp_path)  # paths in the parse read as in the golden file
    today = dt.date.fromisoformat(options["today"]) if "today" in options else None
    return load(src.name, date_order=options.get("date_order", "auto"), year=options.get("year"), today=today), spec


@pytest.mark.parametrize("case", CASES)
def test_golden(case, tmp_path, monkeypatch):
    log, spec = load_case(case, tmp_path, monkeypatch)
    got = snapshot(log)
    if os.environ.get("WORKLOG_UPDATE_GOLDEN"):
        spec["expected"] = got
        text = json.dumps(spec, indent=2, ensure_ascii=False) + "\n"
        (GOLDEN / f"{case}.json").write_text(text, encoding="utf-8")
    assert got == spec["expected"]
    # Never drop or duplicate a line: each file comes back from its parts, changed
    # only on the lines that a repair names.
    repaired = {(d.path, d.line) for d in log.diagnostics if d.code in ("mojibake", "backwards-link", "bare-url")}
    for f in log.files:
        raw = Path(f.path).read_bytes().decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
        back = f.reassemble().split("\n")
        assert len(back) == len(raw)
        assert [i + 1 for i, (a, b) in enumerate(zip(raw, back)) if a != b] == sorted(n for p, n in repaired if p == f.path)


def test_golden_cases_cover_the_brief():
    wanted = {
        "header_variants", "front_matter_comment", "backwards_links", "mojibake", "crlf_bom",
        "bare_urls", "tasks", "dmy", "per_file", "invalid_dates", "contradictory_order", "duplicates",
        "progress_log", "dated_notes", "posts", "mixed", "no_entries",
    }  # fmt: skip
    assert wanted <= set(CASES)


# ---------------------------------------------------------------------------
# A T-minus log shaped like a real one (tests/fixtures/real_logs/tminus-worklog.md)


@pytest.fixture(scope="module")
def tminus_log() -> Worklog:
    return load(TMINUS_FIXTURE)


def test_tminus_log_entries(tminus_log):
    assert [e.date for e in tminus_log.entries] == [dt.date(2025, 12, d) for d in range(9, 21)]
    assert [e.countdown for e in tminus_log.entries] == list(range(154, 142, -1))
    assert tminus_log.target_date == dt.date(2026, 5, 12)
    assert all(e.target_date == dt.date(2026, 5, 12) for e in tminus_log.entries)
    assert tminus_log.date_order == "mdy"


def test_tminus_log_links(tminus_log):
    links = [link for e in tminus_log.entries for link in e.links]
    assert len(links) == 24
    lines = TMINUS_FIXTURE.read_text(encoding="utf-8").split("\n")
    for link in links:  # each link is on the line it names
        assert link.url in lines[link.line - 1]
    urls = [link.url for link in links]
    lecture = "https://github.com/gpu-mode/lectures"
    matmul = "https://siboehm.com/articles/22/CUDA-MMM"
    assert urls.count(lecture) == 2  # twice in one entry
    assert urls.count(matmul) == 3  # on three days
    by_day = {e.date.day: [link.url for link in e.links] for e in tminus_log.entries}
    assert by_day[10].count(lecture) == 2
    assert [d for d, u in by_day.items() if matmul in u] == [15, 18, 20]
    roots = [link for link in links if link.url.startswith("/blog/")]
    assert [(r.title, r.domain) for r in roots] == [
        ("Softmax by Hand: Three Passes to One", ""),
        ("Online Softmax \u2013 Why the Rescaling Works", ""),
    ]


def test_tminus_log_keeps_the_authors_characters(tminus_log):
    paper = next(link for e in tminus_log.entries for link in e.links if "IO-Awareness" in link.title)
    assert paper.title == "FlashAttention: Fast and Memory-E\ufb03cient Exact Attention with IO-Awareness"  # the ligature stays


@pytest.mark.parametrize("path", T_MINUS_LOGS)
def test_a_t_minus_log_reassembles_to_its_text(path):
    log = load(path)
    assert log.entries and log.diagnostics == []
    assert log.reassemble() == path.read_text(encoding="utf-8")


def test_tminus_log_front_matter_and_preamble(tminus_log):
    assert tminus_log.front_matter["title"] == "Worklog"
    assert tminus_log.front_matter["permalink"] == "/worklog/"
    assert "T - X Days" in tminus_log.preamble
    assert tminus_log.entries[0].line == 27


def test_tminus_log_tasks(tminus_log):
    tasks = {(t.line, t.status) for e in tminus_log.entries for t in e.tasks}
    assert (190, TaskStatus.CARRIED) in tasks  # "Write up the missing K mask for the log after dinner; -> Tmr;"
    assert (134, TaskStatus.DONE) in tasks  # "... - Next; - Done;": the last marker wins
    lines = TMINUS_FIXTURE.read_text(encoding="utf-8").split("\n")
    prose = [i + 1 for i, line in enumerate(lines) if line.startswith(("Done rehearsing", "Done with the comparison"))]
    assert len(prose) == 2 and not any(line in prose for line, _ in tasks)


# ---------------------------------------------------------------------------
# Headers and dates


@pytest.mark.parametrize(
    "header, date, countdown",
    [
        ("12/09/25 (T - 154)", dt.date(2025, 12, 9), 154),
        ("12/10/2025 (T - 153)", dt.date(2025, 12, 10), 153),
        ("12/11/2025 (T-152)", dt.date(2025, 12, 11), 152),
        ("12/12/2025 (T \u2013 151)", dt.date(2025, 12, 12), 151),
        ("12/18/2025 (T - 145) ", dt.date(2025, 12, 18), 145),
        ("## 12/19/2025 (T - 144)", dt.date(2025, 12, 19), 144),
        ("2025-12-20 (T - 143)", dt.date(2025, 12, 20), 143),
        ("5/13/2026 (T + 1)", dt.date(2026, 5, 13), -1),
        ("**12/21/2025 (T - 142)**", dt.date(2025, 12, 21), 142),
        ("## _12/22/2025 (T-141)_", dt.date(2025, 12, 22), 141),
        ("12/23/2025 (T - 140) - CUDA graphs", dt.date(2025, 12, 23), 140),
    ],
)
def test_header_forms(header, date, countdown):
    log = parse(f"{header}\n\nText.\n")
    (entry,) = log.entries
    assert (entry.date, entry.countdown, entry.header, entry.line) == (date, countdown, header, 1)


@pytest.mark.parametrize("line", ["T - X Days", "Mail scheduled for 12/15/25 (T - 2) at 8AM", "12/09/25 (154)"])
def test_not_headers(line):
    assert parse(f"{line}\n").entries == []


def test_a_date_without_its_countdown_is_no_t_minus_header():
    """``12/09/25`` alone is a dated note's header in a file of dated notes (tests/test_shapes.py),
    and text with a warning in a T-minus log."""
    log = parse("12/08/25 (T - 155)\nRead the PTX ISA.\n12/09/25\nwgmma.\n", "log.md")
    (entry,) = log.entries
    assert entry.body == "Read the PTX ISA.\n12/09/25\nwgmma.\n"
    (near,) = log.diagnostics
    assert (near.code, near.line) == ("not-a-header", 3)
    assert "this file's entries start with T-minus headers (`12/09/25 (T - 154)`)" in near.message


def test_day_first_inferred_and_forced():
    text = "13/12/2025 (T - 150)\n\n05/01/2026 (T - 127)\n"
    log = parse(text)
    assert log.date_order == "dmy"
    assert [e.date for e in log.entries] == [dt.date(2025, 12, 13), dt.date(2026, 1, 5)]
    forced = parse("05/01/2026 (T - 127)\n", date_order="dmy")
    assert forced.entries[0].date == dt.date(2026, 1, 5)
    assert parse("05/01/2026 (T - 127)\n").entries[0].date == dt.date(2026, 5, 1)  # month-first by default


def test_invalid_date_stays_as_text_and_is_reported():
    log = parse("12/09/25 (T - 154)\nbody\n02/30/2025 (T - 100)\n", "x.md")
    (entry,) = log.entries
    assert entry.body == "body\n02/30/2025 (T - 100)\n"
    (diag,) = log.diagnostics
    assert (diag.path, diag.line, diag.severity, diag.code) == ("x.md", 3, "error", "invalid-date")


def test_date_order_option_checked():
    with pytest.raises(ValueError, match="date_order"):
        parse("", date_order="ymd")
    assert gc.isenabled()  # the parse pauses the cycle collector and restores it, even on error


def test_parse_leaves_a_paused_cycle_collector_paused():
    gc.disable()
    try:
        assert parse("12/09/25 (T - 154)\n\nText.\n").entries
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_format_header_and_style_round_trip():
    assert format_header(dt.date(2025, 12, 9), 154) == "12/09/25 (T - 154)"
    assert format_header(dt.date(2026, 5, 14), -2) == "05/14/26 (T + 2)"
    headers = ["12/10/2025 (T - 153)", "12/11/2025 (T-152)", "13/12/2025 (T \u2013 151)", "## 2025-12-09 (T - 154)", "1/5/26 (T - 127)"]
    for header in headers:
        order = "dmy" if header.startswith("13") else "mdy"
        style = header_style(header, order)
        log = parse(header + "\n", date_order=order)
        e = log.entries[0]
        assert format_header(e.date, e.countdown, style=style) == header
    assert header_style("13/12/2025 (T - 151)", "dmy") == HeaderStyle("dmy", 4, True, "/", " - ", "")
    # emphasis is the log's style and is written again; a title belongs to its own day and is not
    assert header_style("**12/10/25 (T - 153)** - warp shuffles").emphasis == "**"
    style = header_style("**12/10/25 (T - 153)** - warp shuffles")
    assert format_header(dt.date(2025, 12, 11), 152, style=style) == "**12/11/25 (T - 152)**"


@pytest.mark.parametrize("header, title", [
    ("12/09/25 (T - 154) - CUDA graphs", "CUDA graphs"),
    ("12/09/25 (T-154): warp shuffles, part 2", "warp shuffles, part 2"),
    ("## 12/09/25 (T \u2013 154) \u2014 Hopper's TMA ##", "Hopper's TMA"),
    ("**12/09/25 (T - 154)** | rest day", "rest day"),
    ("12/09/25 (T - 154)", ""),
])
def test_a_tminus_header_may_end_with_a_title(header, title):
    (entry,) = parse(f"{header}\nRead the PTX ISA.\n").entries
    assert (entry.date, entry.countdown, entry.title, entry.header) == (dt.date(2025, 12, 9), 154, title, header)
    assert entry.body == "Read the PTX ISA.\n"


@pytest.mark.parametrize("line", [
    "Tue 12/09/25 (T - 154)", "Tuesday, 12/09/25 (T-154)", "- 12/09/25 (T - 154)", "> 12/09/25 (T - 154)",
    "1. 12/09/25 (T - 154)", "12/9 (T - 154)", "Dec 9, 2025 (T - 154)", "**12/09/25 (T - 154) CUDA graphs**",
    "12/09/25 (T - 154)graphs",
])
def test_a_line_that_starts_like_a_header_but_is_not_one_is_text_with_a_warning(line):
    text = f"Routine.\n{line}\n\n12/08/25 (T - 155)\nRead the PTX ISA.\n{line}\n```text\n{line}\n```\n"
    log = parse(text, "log.md")
    (entry,) = log.entries
    assert log.preamble == f"Routine.\n{line}\n" and entry.body == f"Read the PTX ISA.\n{line}\n```text\n{line}\n```\n"
    near = [d for d in log.diagnostics if d.code is DiagnosticCode.NOT_A_HEADER]
    assert [(d.path, d.line, d.severity) for d in near] == [("log.md", 2, "warning"), ("log.md", 6, "warning")]
    assert "text of the preamble" in near[0].message and "text of the entry of 2025-12-08 (line 4)" in near[1].message
    assert line.strip()[:60] in near[1].message


def test_a_sentence_that_mentions_a_day_and_its_countdown_is_not_a_near_header():
    log = parse("12/08/25 (T - 155)\nMail scheduled for 12/15/25 (T - 2) at 8AM, see 12/09/25 (T - 154).\n")
    assert len(log.entries) == 1 and not [d for d in log.diagnostics if d.code is DiagnosticCode.NOT_A_HEADER]


# ---------------------------------------------------------------------------
# Links


def test_link_lines_in_a_multiline_paragraph():
    text = "12/09/25 (T - 154)\n\nFirst line\nsecond line has [a\nlink](https://a.org) and\n<https://b.org> here.\n"
    (e,) = parse(text).entries
    assert e.links == [Link("a link", "https://a.org", 4), Link("https://b.org", "https://b.org", 6)]


def test_links_in_code_are_not_links():
    text = "12/09/25 (T - 154)\n\n`[x](https://a.org)` and\n\n```\n[y](https://b.org)\n```\n\n    [z](https://c.org)\n"
    assert parse(text).entries[0].links == []


def test_reference_links_resolve_within_their_entry_only():
    text = (
        "12/09/25 (T - 154)\n\nRead [the post][p].\n\n[p]: https://a.org/post\n\n"
        "12/10/25 (T - 153)\n\nAgain [the post][p].\n"
    )
    first, second = parse(text).entries
    assert first.links == [Link("the post", "https://a.org/post", 3)]
    assert second.links == []


def test_link_keeps_the_authors_url_and_domain():
    (e,) = parse("12/09/25 (T - 154)\n[Gordić](https://www.aleksagordic.com/a b?q=ć)\n[x](<https://x.org/a b>)\n").entries
    assert [link.url for link in e.links] == ["https://x.org/a b"]  # a destination with a space needs <...>
    (e,) = parse("12/09/25 (T - 154)\n[Gordić](https://www.aleksagordic.com/ć?q=1)\n").entries
    assert e.links[0].url == "https://www.aleksagordic.com/ć?q=1"
    assert e.links[0].domain == "aleksagordic.com"


# ---------------------------------------------------------------------------
# Tasks and words


@pytest.mark.parametrize(
    "line, text, status",
    [
        ("Finish Einsum today; - Done", "Finish Einsum today", TaskStatus.DONE),
        ("Email BDML prof for ML Systems work - Done;", "Email BDML prof for ML Systems work", TaskStatus.DONE),
        ("Adding RBDA notes for concepts prior to mid-term; Done.", "Adding RBDA notes for concepts prior to mid-term", TaskStatus.DONE),
        ("Make an entry for TA experience, after dinner; -> Tmr;", "Make an entry for TA experience, after dinner", TaskStatus.CARRIED),
        ("Write the kernel ->Tmr", "Write the kernel", TaskStatus.CARRIED),
        (
            "Check the page. - First learn, and then finish this. - Next; - Done;",
            "Check the page. - First learn, and then finish this.",
            TaskStatus.DONE,
        ),
        ("Swizzling - Done; - Next;", "Swizzling", TaskStatus.CARRIED),
        (
            "Starting with Kafka. (Done, edits pending for publishing)",
            "Starting with Kafka. (Done, edits pending for publishing)",  # the marker does not end the line
            TaskStatus.DONE,
        ),
        ("- [ ] Profile with Nsight", "Profile with Nsight", TaskStatus.OPEN),
        ("- [x] Tiled GEMM", "Tiled GEMM", TaskStatus.DONE),
        ("- [ ] Tiled GEMM - Done", "Tiled GEMM", TaskStatus.DONE),
        ("\u0130stanbul talk slides - DONE", "\u0130stanbul talk slides", TaskStatus.DONE),  # "İ".lower() is 2 chars
        ("- [X] Tiled GEMM", "Tiled GEMM", TaskStatus.DONE),
        ("- TODO swizzle the program ids", "swizzle the program ids", TaskStatus.OPEN),  # Logseq's, Org mode's
        ("- DONE tiled matmul", "tiled matmul", TaskStatus.DONE),
        ("  - LATER read the FA3 paper", "read the FA3 paper", TaskStatus.OPEN),
        ("1. NOW profile the softmax -> Tmr", "profile the softmax", TaskStatus.CARRIED),
    ],
)
def test_task_markers(line, text, status):
    task = parse_task(line, 7)
    assert (task.text, task.status, task.line) == (text, status, 7)
    (entry,) = parse(f"12/09/25 (T - 154)\n\nCaf\u00e9 \u2192 notes.\n{line}\n").entries
    assert [(t.text, t.status, t.line) for t in entry.tasks] == [(text, status, 4)]


@pytest.mark.parametrize(
    "line",
    [
        "Done two dry runs, got a descent flow of what and how i want to present.",
        "Done with pre-midterm, made notes till kafka",
        "Presentation done and did well, kudos. Next focus on the custom kernel",
        "I have done two dry runs",
        "Next, MatMul in Triton and (Swizzling) Concept.",
        "Next:",
        "Will code the triton matmul tmr;",
        "Do, Triton implementation of this next. ",
        "It is undone; nothing left.",
        "- Now I know why the tail needs a mask",
        "TODO: not a list item",
        "- TODOs are for later",
    ],
)
def test_prose_is_not_a_task(line):
    assert parse_task(line) is None


def test_count_words_rule():
    assert count_words("Hello, world - see https://a.org and www.b.org -> ok 3.14") == 6
    assert count_words("") == 0
    assert count_words("\u2013 | -> ==") == 0


def test_entry_words_skip_markup_code_and_urls():
    text = (
        "12/09/25 (T - 154)\n\n# Notes on **tiled** GEMM\n\n- read [the post](https://a.org/x) `tl.dot(a, b)`\n\n"
        "```\nnot counted here\n```\n<https://b.org>\n"
    )
    (e,) = parse(text).entries
    assert e.words == 7  # "Notes on tiled GEMM", "read the post"; not the code, the URLs or the autolink


# ---------------------------------------------------------------------------
# Files, duplicates and the target date


def test_load_folder_merges_and_sorts(tmp_path):
    (tmp_path / "b.md").write_text("12/11/2025 (T - 152)\nthree\n", encoding="utf-8")
    (tmp_path / "a.md").write_text("12/09/25 (T - 154)\none\n\n12/10/25 (T - 153)\ntwo\n", encoding="utf-8")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.md").write_text("12/12/2025 (T - 151)\n", encoding="utf-8")
    log = load(tmp_path)
    assert [e.body.strip() for e in log.entries] == ["one", "two", "three"]
    assert [Path(p).name for p in log.paths] == ["a.md", "b.md"]


def test_load_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load(tmp_path / "nope.md")


def test_duplicate_days_keep_both(tmp_path):
    log = parse("12/09/25 (T - 154)\nfirst\n12/09/25 (T - 154)\nsecond\n", "x.md")
    assert [(e.body, e.slug, e.duplicate_index) for e in log.entries] == [
        ("first", "2025-12-09", 0),
        ("second\n", "2025-12-09-2", 1),
    ]
    (diag,) = log.diagnostics
    assert (diag.line, diag.severity, diag.code) == (3, "error", "duplicate-day")
    assert "x.md:1" in diag.message


def test_target_date_is_the_majority_and_disagreements_are_warnings():
    log = parse("12/09/25 (T - 154)\n\n12/10/25 (T - 153)\n\n12/11/25 (T - 150)\n", "x.md")
    assert log.target_date == dt.date(2026, 5, 12)
    (diag,) = [d for d in log.diagnostics if d.code != "empty-entry"]  # three empty entries: notes
    assert diag == Diagnostic(
        "x.md", 5, "countdown T - 150 gives target date 2026-05-10, but most entries give 2026-05-12 (expected T - 152)",
        DiagnosticCode.TARGET_DATE,
    )  # fmt: skip
    assert diag.severity == "warning"


def test_front_matter_target_date_wins():
    text = "---\ntarget: 2026-05-12\n---\n12/09/25 (T - 150)\n\n12/10/25 (T - 149)\n"
    log = parse(text, "x.md")
    assert log.target_date == dt.date(2026, 5, 12)
    assert [(d.line, d.code) for d in log.diagnostics if d.severity != "info"] == [(4, "target-date"), (6, "target-date")]
    assert "the front matter of x.md gives 2026-05-12" in log.diagnostics[0].message
    bad = parse("---\ntarget_date: soon\n---\n12/09/25 (T - 154)\n", "y.md")
    assert bad.target_date == dt.date(2026, 5, 12)  # from the entries
    assert [(d.line, d.severity, d.code) for d in bad.diagnostics if d.severity != "info"] == [(2, "error", "front-matter")]


def test_append_entry_to_a_log_with_only_a_front_matter_target(tmp_path):
    path = tmp_path / "log.md"
    path.write_text("---\ntarget: 2026-05-12\n---\n\nRules.\n", encoding="utf-8")
    assert append_entry(path, dt.date(2025, 12, 9)) == (path, "12/09/25 (T - 154)")


def test_non_utf8_bytes_are_decoded_with_a_warning(tmp_path):
    path = tmp_path / "log.md"
    path.write_bytes("12/09/25 (T - 154)\nCaf\u00e9 notes\n".encode("cp1252"))
    log = load(path)
    assert log.entries[0].body == "Caf\u00e9 notes\n"
    (diag,) = log.diagnostics
    assert (diag.line, diag.code) == (2, "encoding")


def test_diagnostic_str():
    assert str(Diagnostic("log.md", 3, "bad", DiagnosticCode.INVALID_DATE)) == "log.md:3: error: bad"


def test_entry_without_countdown_has_no_target():
    e = Entry(dt.date(2025, 12, 9), None, "", "", "x.md", 1)
    assert e.target_date is None and e.slug == "2025-12-09"


# ---------------------------------------------------------------------------
# append_entry


def test_append_entry_matches_the_last_header(tmp_path):
    path = tmp_path / "log.md"
    path.write_text("12/09/25 (T - 154)\n\ntext\n\n12/10/2025 (T-153)\n\nmore", encoding="utf-8")
    file, header = append_entry(path, dt.date(2025, 12, 12))
    assert (file, header) == (path, "12/12/2025 (T-151)")
    assert path.read_text(encoding="utf-8").endswith("more\n\n12/12/2025 (T-151)\n")
    log = load(path)
    assert log.entries[-1].date == dt.date(2025, 12, 12)
    assert [d.code for d in log.diagnostics] == ["empty-entry"]  # the new header, not yet written under


def test_append_entry_keeps_crlf_and_one_blank_line(tmp_path):
    path = tmp_path / "log.md"
    path.write_bytes(b"12/09/25 (T - 154)\r\n\r\ntext\r\n\r\n")
    append_entry(path, dt.date(2025, 12, 10))
    assert path.read_bytes() == b"12/09/25 (T - 154)\r\n\r\ntext\r\n\r\n12/10/25 (T - 153)\r\n"


def test_append_entry_in_a_folder_uses_the_newest_file(tmp_path):
    (tmp_path / "a.md").write_text("13/12/2025 (T - 150)\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("14/12/2025 (T - 149)\nx\n", encoding="utf-8")
    file, header = append_entry(tmp_path, dt.date(2025, 12, 16))
    assert (file.name, header) == ("b.md", "16/12/2025 (T - 147)")


@pytest.mark.parametrize("last, day, header", [
    ("## November 24 - Day 25 of ML Systems: warp shuffles", dt.date(2025, 11, 25), "## November 25 - Day 26 of ML Systems"),
    ("### 24th Nov 2025", dt.date(2025, 12, 1), "### 1st Dec 2025"),
    ("## Monday, November 24", dt.date(2025, 11, 27), "## Thursday, November 27"),
    ("## 3rd of Sept, 2025: warps", dt.date(2025, 9, 22), "## 22nd of Sept, 2025"),
    ("## NOV 05 - day 9", dt.date(2026, 1, 2), "## JAN 02 - day 10"),
    ("2025-01-20", dt.date(2025, 2, 3), "2025-02-03"),
    ("## 2025.1.20", dt.date(2025, 2, 3), "## 2025.2.3"),
    ("January 20, 2025", dt.date(2025, 2, 3), "February 3, 2025"),
    ("**Mon, 20th Jan 2025:**", dt.date(2025, 2, 4), "**Tue, 4th Feb 2025:**"),
    ("20/01/2025", dt.date(2025, 2, 3), "03/02/2025"),  # day-first: 20 is no month
    ("1/20/25", dt.date(2025, 2, 3), "2/3/25"),
])
def test_append_entry_writes_the_next_progress_heading_or_date_line_as_the_last_is_written(tmp_path, last, day, header):
    """``new`` in a progress log or dated notes: no target date needed, the next ``Day N``."""
    path = tmp_path / "log.md"
    path.write_text(f"---\nyear: 2025\n---\n{last}\n\nTimed the softmax.\n", encoding="utf-8")
    assert append_entry(path, day) == (path, header)
    log = load(path, today=dt.date(2026, 1, 5))
    assert [e.date for e in log.entries][-1] == day and log.entries[-1].header == header
    assert path.read_text(encoding="utf-8").endswith(f"Timed the softmax.\n\n{header}\n")


def test_append_entry_in_a_folder_of_day_files_writes_a_new_file(tmp_path):
    (tmp_path / "2025-12-09.md").write_text("---\ncountdown: 154\n---\ntext\n", encoding="utf-8")
    file, header = append_entry(tmp_path, dt.date(2025, 12, 10))
    assert (file.name, header) == ("2025-12-10.md", "12/10/25 (T - 153)")
    assert [e.date.day for e in load(tmp_path).entries] == [9, 10]


@pytest.mark.parametrize(
    "text, day, message",
    [
        ("12/09/25 (T - 154)\n", dt.date(2025, 12, 9), "already has an entry"),
        ("12/09/25 (T - 154)\n", dt.date(2025, 12, 1), "before the newest entry"),
        ("Just a preamble.\n", dt.date(2025, 12, 1), "no target date"),
    ],
)
def test_append_entry_refuses(tmp_path, text, day, message):
    path = tmp_path / "log.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        append_entry(path, day)
    assert path.read_text(encoding="utf-8") == text
