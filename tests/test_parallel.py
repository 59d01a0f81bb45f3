"""The parallel analysis (:mod:`worklog_gen.parallel`) gives exactly the serial parse.

Large generated logs are parsed both ways (the parallel path forced with a small
threshold) and compared field by field: every entry's body, lines, links, tasks and
words, every file's parts, every diagnostic. Also: the chunks tile the entries in
order, the pool leaves no process behind, and the serial fallbacks (a daemonic
process, workers that cannot start) give the same result.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import multiprocessing
import random
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worklog_gen import parallel
from worklog_gen.line_index import LineIndex
from worklog_gen.parallel import MIN_ENTRIES_ENV, FileBodies, _chunks
from worklog_gen.worklog import _parse_texts, format_header, load

SERIAL = 10**9
"""A threshold no test log reaches: the serial path."""
forks = pytest.mark.skipif(sys.platform != "linux", reason="workers are forked only on Linux")

PIECES = [
    "Read [Making Deep Learning Go Brrrr](https://horace.io/brrr_intro.html) twice.",
    "- The roofline model: x-axis arithmetic intensity, y-axis TFLOP/s; the ridge point.",
    "- [ ] BLOCK_SIZE sweep with num_warps=4, num_stages=3",
    "- [x] GROUP_SIZE_M=8 for the tiled matmul",
    "Slides for the presentation - Done, will practise tomorrow.",
    "Make an entry for TA experience; -> Tmr",
    "Finish Einsum today; - Done",
    "See [the paper][p] and <https://arxiv.org/abs/2205.14135>.",
    "[p]: https://arxiv.org/abs/1706.03762",
    "https://triton-lang.org/main/getting-started/tutorials/index.html",
    "[https://www.youtube.com/watch?v=s1ILGG0TyYM](Intro to Triton (updated))",
    "Caf\u00c3\u00a9 and E\u00ef\u00ac\u0192cient kernels",  # mojibake, repaired with a warning
    "caf\u00e9 \u2192 \u4e2d\u6587 \u00a0 \ufb03",
    "`x_ptr + offsets` and ``a ` b`` in code spans, *emphasis*, **bold**, ~~struck~~",
    "| kernel | GB/s |\n|---|---|\n| copy | 4020 |\n| [add](https://a.org) | 3900 |",
    "> quoted [link](https://q.org) - Done;",
    "1. first\n2. second [two](https://two.org)\n   continued",
    "    indented code [not](https://not.org) - Done",
    "```python\nx = [1](https://in.fence)  # Done\n```",
    "<div>\n[html](https://h.org) Done.\n</div>",
    "# A heading with [a link](https://head.org)",
    "AT&T &amp; x_ptr \\* <b>raw</b> 12/09/25 is a date in prose",
    "",
    "",
]
UNCLOSED_FENCE = "```\nthe fence runs to the next header [x](https://x.org)"


def generated_log(n_entries: int, seed: int, *, path_tag: str = "") -> str:
    """A log of ``n_entries`` entries of varied markdown, with invalid dates, duplicate
    days, countdowns that disagree, damage to repair and unclosed fences."""
    rng = random.Random(seed)
    day = 0
    parts = [f"# Worklog {path_tag}\n\nT - X Days\n"]
    base = dt.date(2024, 1, 1)
    for k in range(n_entries):
        day += rng.choice([0, 1, 1, 1, 2]) if k else 0  # 0: a duplicate day
        date = base + dt.timedelta(days=day)
        countdown = 800 - day + (1 if rng.random() < 0.02 else 0)  # some disagree with the target date
        parts.append(format_header(date, countdown))
        if rng.random() < 0.01:
            parts.append("02/30/25 (T - 5)")  # invalid date: kept as text, an error
        body = [rng.choice(PIECES) for _ in range(rng.randint(0, 9))]
        if rng.random() < 0.03:
            body.append(UNCLOSED_FENCE)
        parts.append("\n".join(body))
    return "\n".join(parts) + "\n"


def both_ways(texts: list[tuple[str, str]], *, processes: int = 2):
    serial = _parse_texts(texts, date_order="auto", parallel_min_entries=SERIAL)
    assert parallel.last_plan.processes == 1
    forced = _parse_texts(texts, date_order="auto", parallel_min_entries=0, parallel_processes=processes)
    assert parallel.last_plan.processes == processes and parallel.last_plan.chunks > processes
    return serial, forced


def assert_same(serial, forced) -> None:
    assert forced.diagnostics == serial.diagnostics
    assert len(forced.entries) == len(serial.entries)
    for a, b in zip(forced.entries, serial.entries):
        assert dataclasses.astuple(a) == dataclasses.astuple(b), a.source
    assert forced == serial  # every field of the log, its files and entries


@forks
@pytest.mark.parametrize("processes", [2, 3])
def test_large_generated_log_parses_the_same_both_ways(processes):
    text = generated_log(3000, seed=processes)
    serial, forced = both_ways([("big.md", text)], processes=processes)
    assert len(serial.entries) >= 3000
    assert sum(len(e.links) for e in serial.entries) > 3000
    assert sum(len(e.tasks) for e in serial.entries) > 1000
    codes = {d.code for d in serial.diagnostics}
    assert {"invalid-date", "duplicate-day", "target-date", "mojibake", "backwards-link", "bare-url"} <= codes
    assert_same(serial, forced)


@forks
@pytest.mark.parametrize(
    "tail",
    [
        UNCLOSED_FENCE,
        "<!-- a comment left open [c](https://c.org)",
        "<div>\nan HTML block left open - Done",
        "- a list item\n\n      indented code in it [i](https://i.org)",
        "> a quote\nlazy continuation [q](https://q.org); Done.",
        "[next]: https://defined-in-the-entry-before.org",
    ],
)
def test_blocks_left_open_at_every_chunk_boundary(tail):
    """Every entry ends in a block left open (or defines a reference the next one uses),
    so every chunk boundary falls after one: each entry is still read on its own."""
    entries = [
        format_header(dt.date(2025, 1, 1) + dt.timedelta(days=k), 300 - k)
        + f"\nUses [next] and [x](https://e{k}.org) - Done\n{tail}"
        for k in range(120)
    ]
    serial, forced = both_ways([("open.md", "\n".join(entries) + "\n")])
    assert_same(serial, forced)


@forks
@pytest.mark.parametrize("end", ["", "\n"])
def test_chunks_of_empty_entries(end):
    """Headers with nothing under them (a chunk's slice of lines may be empty)."""
    heads = [format_header(dt.date(2025, 1, 1) + dt.timedelta(days=k), 50 - k) for k in range(40)]
    heads[::7] = [h + "\nx [a](https://a.org) - Done" for h in heads[::7]]
    serial, forced = both_ways([("empty.md", "\n".join(heads) + end)])
    assert sum(not e.body for e in serial.entries) > 30
    assert_same(serial, forced)


@forks
def test_several_files_parse_the_same_both_ways():
    texts = [(f"log{k}.md", generated_log(n, seed=10 + k, path_tag=str(k))) for k, n in enumerate([1, 0, 40, 7, 300])]
    texts.append(("2025-12-09.md", "---\ncountdown: 3\n---\nOne entry [per file](https://p.org) - Done\n"))
    texts.append(("notes.md", "No entries here, just [a link](https://n.org).\n"))
    serial, forced = both_ways(texts, processes=3)
    assert {e.path for e in serial.entries} == {"log0.md", "log2.md", "log3.md", "log4.md", "2025-12-09.md"}
    assert_same(serial, forced)


@forks
def test_load_takes_the_threshold_from_the_environment(tmp_path, monkeypatch):
    if parallel.usable_cpus() < 2:
        pytest.skip("one CPU: load() analyses serially")
    for k in range(3):
        (tmp_path / f"part{k}.md").write_text(generated_log(200, seed=20 + k), encoding="utf-8")
    monkeypatch.setenv(MIN_ENTRIES_ENV, str(SERIAL))
    serial = load(tmp_path)
    assert parallel.last_plan.processes == 1
    monkeypatch.setenv(MIN_ENTRIES_ENV, "100")
    forced = load(tmp_path)
    assert parallel.last_plan.processes >= 2
    assert_same(serial, forced)


def test_a_bad_threshold_in_the_environment_is_an_error(monkeypatch):
    monkeypatch.setenv(MIN_ENTRIES_ENV, "many")
    with pytest.raises(ValueError, match=MIN_ENTRIES_ENV):
        _parse_texts([("x.md", "12/09/25 (T - 154)\nbody\n")], date_order="auto")


def test_small_logs_are_analysed_serially():
    _parse_texts([("x.md", generated_log(50, seed=1))], date_order="auto")
    assert parallel.last_plan.processes == 1 and "fewer than" in parallel.last_plan.reason


def test_workers_are_forked_only_on_linux(monkeypatch):
    monkeypatch.setattr(parallel.sys, "platform", "darwin")
    _parse_texts([("x.md", generated_log(50, seed=1))], date_order="auto", parallel_min_entries=0, parallel_processes=2)
    assert parallel.last_plan.processes == 1 and "darwin" in parallel.last_plan.reason


@forks
def test_the_pool_leaves_no_process_or_thread_behind():
    threads = threading.active_count()
    for _ in range(3):
        both_ways([("x.md", generated_log(100, seed=3))])
    assert multiprocessing.active_children() == []
    assert threading.active_count() == threads


@forks
def test_workers_that_cannot_start_fall_back_to_the_serial_analysis(monkeypatch):
    class NoPool:
        def __init__(self, *args, **kwargs):
            raise OSError("fork: Resource temporarily unavailable")

    text = generated_log(200, seed=4)
    serial = _parse_texts([("x.md", text)], date_order="auto", parallel_min_entries=SERIAL)
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", NoPool)
    fallback = _parse_texts([("x.md", text)], date_order="auto", parallel_min_entries=0, parallel_processes=2)
    assert parallel.last_plan.processes == 1 and "Resource temporarily unavailable" in parallel.last_plan.reason
    assert_same(serial, fallback)


@forks
def test_an_error_in_this_process_propagates_after_the_pool_is_shut_down(monkeypatch):
    """An error in this process's share (here, on its first chunk) reaches the caller,
    with no worker left running and the module's slot cleared."""
    segment = parallel._analyse_segment

    def fails_here(f, a, b, fast):
        if parallel.os.getpid() == parent:
            raise RuntimeError("boom")
        return segment(f, a, b, fast)

    parent = parallel.os.getpid()
    monkeypatch.setattr(parallel, "_analyse_segment", fails_here)
    with pytest.raises(RuntimeError, match="boom"):
        _parse_texts([("x.md", generated_log(400, seed=6))], date_order="auto", parallel_min_entries=0)
    assert multiprocessing.active_children() == []
    assert parallel._WORK is None


def _parse_in_daemon(text: str, queue) -> None:
    log = _parse_texts([("x.md", text)], date_order="auto", parallel_min_entries=0, parallel_processes=2)
    queue.put((parallel.last_plan, [dataclasses.astuple(e) for e in log.entries]))


@forks
def test_a_daemonic_process_analyses_serially():
    text = generated_log(100, seed=5)
    serial = _parse_texts([("x.md", text)], date_order="auto", parallel_min_entries=SERIAL)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_parse_in_daemon, args=(text, queue), daemon=True)
    child.start()
    plan, entries = queue.get(timeout=60)
    child.join(timeout=60)
    assert plan.processes == 1 and "daemonic" in plan.reason
    assert entries == [dataclasses.astuple(e) for e in serial.entries]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(1, 50), max_size=30), min_size=1, max_size=5), st.integers(1, 12))
def test_chunks_tile_the_entries_in_order(body_lengths, n):
    files = []
    for lengths in body_lengths:
        lines = ["x" * (k % 7) for k in range(sum(lengths) + len(lengths))]
        bodies, first = [], 0
        for length in lengths:
            bodies.append((first + 1, first + 1 + length))  # a header line, then the body
            first += 1 + length
        files.append(FileBodies(lines, LineIndex(lines), bodies))
    total = sum(len(f.bodies) for f in files)
    if total == 0:
        return
    n = min(n, total)
    chunks = _chunks(files, n)
    assert len(chunks) == n and all(chunks)
    flat = [(k, e) for chunk in chunks for k, a, b in chunk for e in range(a, b)]
    assert flat == [(k, e) for k, f in enumerate(files) for e in range(len(f.bodies))]


@forks
def test_the_mkdocs_plugin_builds_the_same_site_in_parallel(build_site, monkeypatch):
    """The plugin's ``load`` takes the parallel path (threshold from the environment)
    and the pages are byte for byte those of the serial build."""
    if parallel.usable_cpus() < 2:
        pytest.skip("one CPU: load() analyses serially")
    entries = [
        format_header(dt.date(2025, 11, 1) + dt.timedelta(days=k), 60 - k)
        + f"\nRead [part {k}](https://example.org/{k}) - Done\n\n- [ ] BLOCK_SIZE sweep {k}\n"
        for k in range(30)
    ]
    text = "# Worklog\n\n" + "\n".join(entries)
    monkeypatch.setenv(MIN_ENTRIES_ENV, str(SERIAL))
    serial = build_site(text)
    assert parallel.last_plan.processes == 1
    monkeypatch.setenv(MIN_ENTRIES_ENV, "10")
    forced = build_site(text)
    assert parallel.last_plan.processes >= 2
    pages = sorted(p.relative_to(serial) for p in serial.rglob("*.html"))
    assert len(pages) > 30 and pages == sorted(p.relative_to(forced) for p in forced.rglob("*.html"))
    for page in pages:
        assert (forced / page).read_bytes() == (serial / page).read_bytes(), page
