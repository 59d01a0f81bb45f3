"""Time :func:`worklog_gen.worklog.parse` on a 10,000-entry log.

The log is built from the entries of the real T-minus log (or, without it, from a
built-in entry in the same style), repeated with dates shifted one day per entry
and countdowns to match, so its markdown is as dense as the author's. Prints each
run's wall and CPU time, their medians, and the load average before and after
(the machine is shared: wall time includes waiting for a core, CPU time does
not); the goal is a median under 1 s on a 2-core machine. It also checks, on the
first ``--check`` entries, that the fast path gives the same links, tasks and words
as parsing each entry on its own with markdown-it-py.

    python benchmarks/bench_parse.py [--entries 10000] [--runs 5] [--check 200] [--log PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import time
from importlib.metadata import version
from pathlib import Path

from worklog_gen.worklog import HEADER_RE, _parse_texts, format_header, parse

REAL_LOG = Path(__file__).resolve().parents[2] / "shared" / "worklogs" / "tminus-worklog.md"

FALLBACK_BODY = """
[Making Deep Learning Go Brrrr From First Principles](https://horace.io/brrr_intro.html)

Always First Principles thinking and approach;

- The roofline model is a simplified, visual model of performance.
- x-axis: arithmetic intensity (in operations per byte) and y-axis: performance.
- The point where the diagonal and horizontal roof meet is the "ridge point".

Coded Triton MatMul, both tiled GEMM and memory coalesced; the transpose `Y.T.contiguous()` matters.

Slides for the presentation - Done, will practise tomorrow morning.
Make an entry for TA experience, after dinner; -> Tmr;
"""


def entry_bodies(log_path: Path | None) -> list[str]:
    """Entry bodies (text after each header line) of the real log, or the built-in one."""
    if log_path is None or not log_path.exists():
        return [FALLBACK_BODY]
    lines = log_path.read_text(encoding="utf-8").split("\n")
    heads = [i for i, line in enumerate(lines) if HEADER_RE.match(line)]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--check", type=int, default=200, help="entries compared with the full markdown-it-py parse")
    ap.add_argument("--log", type=Path, default=REAL_LOG)
    args = ap.parse_args()

    bodies = entry_bodies(args.log)
    text = build_log(args.entries, bodies)
    n_lines = text.count("\n") + 1
    print(f"log: {args.entries} entries, {n_lines} lines, {len(text.encode()) / 1e6:.1f} MB (bodies from {len(bodies)} entries)")
    print(f"Python {platform.python_version()}, markdown-it-py {version('markdown-it-py')}, {os.cpu_count()} CPUs")

    sample = build_log(args.check, bodies)
    fast = _parse_texts([("sample.md", sample)], date_order="auto", fast=True)
    full = _parse_texts([("sample.md", sample)], date_order="auto", fast=False)
    same = [(e.words, e.links, e.tasks) for e in fast.entries] == [(e.words, e.links, e.tasks) for e in full.entries]
    print(f"fast path equals full markdown-it parse on {args.check} entries: {same}")

    load_before = os.getloadavg()
    times, cpu = [], []
    for _ in range(args.runs):
        t0, c0 = time.perf_counter(), time.process_time()
        log = parse(text, "bench.md")
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    load_after = os.getloadavg()
    assert len(log.entries) == args.entries, len(log.entries)
    links = sum(len(e.links) for e in log.entries)
    print("runs (wall s):", " ".join(f"{t:.3f}" for t in times))
    print("runs (CPU s): ", " ".join(f"{t:.3f}" for t in cpu))
    print(
        f"parse: median {statistics.median(times):.3f} s wall, {statistics.median(cpu):.3f} s CPU "
        f"over {args.runs} runs (min {min(times):.3f} s wall); {links} links"
    )
    print("load average (1, 5, 15 min): before " + " ".join(f"{x:.2f}" for x in load_before)
          + ", after " + " ".join(f"{x:.2f}" for x in load_after))  # fmt: skip
    met = statistics.median(cpu) < 1.0
    print(f"goal, median CPU under 1 s: {'met' if met else 'not met'} ({statistics.median(cpu):.3f} s)")


if __name__ == "__main__":
    main()
