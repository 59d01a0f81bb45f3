"""Time :func:`worklog_gen.log.parse.parse` on a 2,000-entry log (about five years of days).

The log is built from the entries of a T-minus log (``--log``; by default the tests'
fixture ``tests/fixtures/real_logs/tminus-worklog.md``, 12 days shaped like a real log),
repeated with dates shifted one day per entry and countdowns to match, so its markdown
is as dense as an author's. Prints each run's wall and CPU time, the CPU time other
processes used during it (from ``/proc/stat``: the machine is shared, and wall time
includes waiting for a core), their medians, and the load average before and after.
The goal is a median *wall* time of at most 1.5 s on a 2-core machine. ``--baseline``
also times one plain markdown-it-py parse of each entry body (CommonMark, nothing read
from the tokens), the floor for a parser that reads entries from markdown-it-py's tokens.

    python benchmarks/bench_parse.py [--entries 2000] [--runs 5] [--log PATH] [--baseline]
    python benchmarks/bench_parse.py --links 100000

``--links N`` times instead one entry holding N links, two to a line, in one paragraph (a
hostile or pasted log: a link's line was once found by counting from the paragraph's start, so
the time grew with the square of N); the time per link should not grow with N.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from markdown_it import MarkdownIt

from worklog_gen.log.parse import parse
from worklog_gen.log.shapes import HEADER_RE, format_header

TMINUS_FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real_logs" / "tminus-worklog.md"
"""The default ``--log``: the tests' 12-day T-minus log, shaped like a real one."""


def entry_bodies(log_path: Path) -> list[str]:
    """Entry bodies (text after each header line) of the log at ``log_path``."""
    lines = log_path.read_text(encoding="utf-8").split("\n")
    heads = [i for i, line in enumerate(lines) if HEADER_RE.match(line)]
    if not heads:
        raise SystemExit(f"{log_path}: no entry headers found")
    bounds = heads[1:] + [len(lines)]
    return ["\n".join(lines[a + 1 : b]).rstrip("\n") + "\n" for a, b in zip(heads, bounds)]


def build_log(n_entries: int, bodies: list[str]) -> str:
    """A log of ``n_entries`` entries cycling through ``bodies``, one day apart, 2-digit years."""
    start = dt.date(2000, 1, 1)
    target = start + dt.timedelta(days=n_entries + 10)
    parts = ["# Worklog\n\nT - X Days\n"]
    for k in range(n_entries):
        day = start + dt.timedelta(days=k)
        parts.append(format_header(day, (target - day).days) + "\n" + bodies[k % len(bodies)])
    return "\n".join(parts)


@dataclass
class Runs:
    """Timed runs: per run, wall and CPU seconds, and the CPU seconds the rest of the
    machine used meanwhile."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    others: list[float] = field(default_factory=list)

    def time(self, fn, *args):
        """Run ``fn(*args)`` once, timed; its result."""
        t0, c0, b0 = time.perf_counter(), _cpu_seconds(), _machine_busy_seconds()
        result = fn(*args)
        wall, cpu, busy = time.perf_counter() - t0, _cpu_seconds() - c0, _machine_busy_seconds() - b0
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.others.append(max(busy - cpu, 0.0))
        return result

    def report(self, name: str) -> None:
        print(f"{name}:")
        print("  runs (wall s):  ", " ".join(f"{t:.3f}" for t in self.wall))
        print("  runs (CPU s):   ", " ".join(f"{t:.3f}" for t in self.cpu))
        print("  others (CPU s): ", " ".join(f"{t:.2f}" for t in self.others), "  other processes during the run")
        print(
            f"  median {statistics.median(self.wall):.3f} s wall, {statistics.median(self.cpu):.3f} s CPU "
            f"over {len(self.wall)} runs (min {min(self.wall):.3f} s wall)"
        )


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def _machine_busy_seconds() -> float:
    """CPU seconds all processes have used since boot (``/proc/stat``, Linux, 10 ms
    ticks); ``nan`` where there is no ``/proc/stat``."""
    try:
        with open("/proc/stat") as f:
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    except (OSError, ValueError):
        return math.nan
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def many_links(n_links: int) -> str:
    """A log of one entry whose one paragraph holds ``n_links`` links, two to a line."""
    lines = [f"Read [paper {i}](https://arxiv.org/abs/{i:07d}) and [its code {i}](https://github.com/a/b/blob/main/k{i}.py)"
             for i in range(n_links // 2)]
    return "12/09/25 (T - 154)\n" + "\n".join(lines) + "\n"


def plain_markdown_it(bodies: list[str]) -> int:
    """One stock CommonMark markdown-it-py parse of each body; the number of tokens."""
    md = MarkdownIt("commonmark")
    return sum(len(md.parse(body)) for body in bodies)


GOAL_S = 1.5
"""Median wall time the parse of 2,000 entries must stay within (issue #12)."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=2_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--log", type=Path, default=TMINUS_FIXTURE,
                    help="the log whose entries are repeated (default: the tests' T-minus fixture)")
    ap.add_argument("--baseline", action="store_true", help="also time a plain markdown-it-py parse per entry")
    ap.add_argument("--links", type=int, default=0, help="time one entry with this many links instead")
    args = ap.parse_args()
    if args.links:
        runs = Runs()
        text = many_links(args.links)
        for _ in range(args.runs):
            log = runs.time(parse, text, "links.md")
        assert len(log.entries[0].links) == args.links // 2 * 2
        runs.report(f"parse, one entry with {args.links} links ({len(text.encode()) / 1e6:.1f} MB)")
        print(f"{statistics.median(runs.wall) / args.links * 1e6:.1f} µs per link")
        return
    if not args.log.is_file():
        ap.error(f"--log {args.log}: no such file")

    bodies = entry_bodies(args.log)
    text = build_log(args.entries, bodies)
    n_lines = text.count("\n") + 1
    print(f"log: {args.entries} entries, {n_lines} lines, {len(text.encode()) / 1e6:.1f} MB (bodies from {len(bodies)} entries)")
    print(f"Python {platform.python_version()}, markdown-it-py {version('markdown-it-py')}, {os.cpu_count()} CPUs")

    load_before = os.getloadavg()
    runs, plain = Runs(), Runs()
    entry_texts = [bodies[k % len(bodies)] for k in range(args.entries)]
    for _ in range(args.runs):  # interleaved, so that both see the same load
        log = runs.time(parse, text, "bench.md")
        if args.baseline:
            plain.time(plain_markdown_it, entry_texts)
    load_after = os.getloadavg()
    assert len(log.entries) == args.entries, len(log.entries)
    print(f"{sum(len(e.links) for e in log.entries)} links, {sum(len(e.tasks) for e in log.entries)} tasks")
    runs.report("parse")
    if args.baseline:
        plain.report("plain markdown-it-py, one parse per entry body, for comparison")
    print("load average (1, 5, 15 min): before " + " ".join(f"{x:.2f}" for x in load_before)
          + ", after " + " ".join(f"{x:.2f}" for x in load_after))  # fmt: skip
    print("(when other processes use CPU during a run, they share the cores and its wall time is longer)")
    median = statistics.median(runs.wall)
    print(f"goal, median wall time at most {GOAL_S} s: {'met' if median <= GOAL_S else 'not met'} ({median:.3f} s)")


if __name__ == "__main__":
    main()
