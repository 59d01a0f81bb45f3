"""Time :func:`worklog_gen.worklog.parse` on a 10,000-entry log.

The log is built from the entries of the real T-minus log (or, without it, from a
built-in entry in the same style), repeated with dates shifted one day per entry
and countdowns to match, so its markdown is as dense as the author's. Prints each
run's wall and CPU time (this process plus the worker processes), the CPU time
other processes used during it (from ``/proc/stat``: the machine is shared, and wall
time includes waiting for a core), their medians, whether the parse ran in parallel
and in how many processes, and the load average before and after. The goal is a
median *wall* time under 1 s on a 2-core machine: the parallel path spends more CPU
time than the serial one to finish sooner. The serial path is timed too, run for
run in turn with the default one so that both see the same load (``--no-serial``
skips it), and compared with it on every entry. It also checks, on the first
``--check`` entries, that the fast path gives the same links, tasks and words as
parsing each entry on its own with markdown-it-py.

    python benchmarks/bench_parse.py [--entries 10000] [--runs 5] [--check 200] [--log PATH] [--no-serial]
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

from worklog_gen import parallel
from worklog_gen.parallel import Plan
from worklog_gen.worklog import HEADER_RE, _parse_texts, format_header

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


@dataclass
class Runs:
    """Timed parses of one path: per run, wall and CPU seconds, the CPU seconds the
    rest of the machine used meanwhile, and how the parse ran."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    others: list[float] = field(default_factory=list)
    plans: list[Plan | None] = field(default_factory=list)

    def time(self, text: str, **options):
        """Parse ``text`` once, timed. CPU time counts this process and its worker
        processes (joined by the pool, so in :func:`os.times`, when a parse returns)."""
        t0, c0, b0 = time.perf_counter(), _cpu_seconds(), _machine_busy_seconds()
        log = _parse_texts([("bench.md", text)], date_order="auto", **options)
        wall, cpu, busy = time.perf_counter() - t0, _cpu_seconds() - c0, _machine_busy_seconds() - b0
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.others.append(max(busy - cpu, 0.0))
        self.plans.append(parallel.last_plan)
        return log

    def report(self, name: str) -> None:
        used = sorted({(p.processes, p.chunks, p.reason) for p in self.plans if p is not None})
        how = "; ".join(
            f"parallel, {n} processes (this one and {n - 1} workers), {c} chunks" if n > 1 else f"serial ({r})"
            for n, c, r in used
        )
        print(f"{name}: {how}")
        print("  runs (wall s):  ", " ".join(f"{t:.3f}" for t in self.wall))
        print("  runs (CPU s):   ", " ".join(f"{t:.3f}" for t in self.cpu), " this process + workers")
        print("  others (CPU s): ", " ".join(f"{t:.2f}" for t in self.others), "  other processes during the run")
        print(
            f"  median {statistics.median(self.wall):.3f} s wall, {statistics.median(self.cpu):.3f} s CPU "
            f"over {len(self.wall)} runs (min {min(self.wall):.3f} s wall)"
        )


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _machine_busy_seconds() -> float:
    """CPU seconds all processes have used since boot (``/proc/stat``, Linux, 10 ms
    ticks); ``nan`` where there is no ``/proc/stat``."""
    try:
        with open("/proc/stat") as f:
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    except (OSError, ValueError):
        return math.nan
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--check", type=int, default=200, help="entries compared with the full markdown-it-py parse")
    ap.add_argument("--log", type=Path, default=REAL_LOG)
    ap.add_argument("--no-serial", action="store_true", help="skip the runs of the serial path, for comparison")
    args = ap.parse_args()

    bodies = entry_bodies(args.log)
    text = build_log(args.entries, bodies)
    n_lines = text.count("\n") + 1
    cpus = parallel.usable_cpus()
    print(f"log: {args.entries} entries, {n_lines} lines, {len(text.encode()) / 1e6:.1f} MB (bodies from {len(bodies)} entries)")
    print(
        f"Python {platform.python_version()}, markdown-it-py {version('markdown-it-py')}, {os.cpu_count()} CPUs "
        f"({cpus} usable); parallel from {parallel.PARALLEL_MIN_ENTRIES} entries "
        f"({parallel.MIN_ENTRIES_ENV}={os.environ.get(parallel.MIN_ENTRIES_ENV, 'unset')})"
    )

    sample = build_log(args.check, bodies)
    fast = _parse_texts([("sample.md", sample)], date_order="auto", fast=True)
    full = _parse_texts([("sample.md", sample)], date_order="auto", fast=False)
    same = [(e.words, e.links, e.tasks) for e in fast.entries] == [(e.words, e.links, e.tasks) for e in full.entries]
    print(f"fast path equals full markdown-it parse on {args.check} entries: {same}")

    load_before = os.getloadavg()
    runs, serial = Runs(), Runs()
    for _ in range(args.runs):  # interleaved, so that both paths see the same load
        log = runs.time(text)
        if not args.no_serial:
            serial_log = serial.time(text, parallel_min_entries=10**12)
    load_after = os.getloadavg()
    assert len(log.entries) == args.entries, len(log.entries)
    print(f"{sum(len(e.links) for e in log.entries)} links, {sum(len(e.tasks) for e in log.entries)} tasks")
    runs.report("parse (as parse() and load() run it)")
    if not args.no_serial:
        serial.report("serial path, for comparison")
        print(f"  parse equals the serial path on all {args.entries} entries: {log == serial_log}")
    print("load average (1, 5, 15 min): before " + " ".join(f"{x:.2f}" for x in load_before)
          + ", after " + " ".join(f"{x:.2f}" for x in load_after))  # fmt: skip
    print("(when other processes use CPU during a run, they share the cores and its wall time is longer)")
    wall = runs.wall
    median = statistics.median(wall)
    print(f"goal, median wall time under 1 s: {'met' if median < 1.0 else 'not met'} ({median:.3f} s)")


if __name__ == "__main__":
    main()
