"""Analyse the entries of a log (links, words, tasks) on several cores.

The per-entry analysis (:func:`worklog_gen.markdown_scan.scan` and
:func:`worklog_gen.tasks.entry_tasks`) gives each entry what it gives the entry read
on its own, so a large log can be cut into contiguous *chunks* of entries, analysed
in separate processes, and the results put back in order. :func:`analyse` does that
for logs of at least :data:`PARALLEL_MIN_ENTRIES` entries when more than one CPU is
available; smaller logs, one-CPU machines, platforms other than Linux (where ``fork``
is missing, or unsafe as on macOS) and daemonic processes (which may not have
children) are analysed serially, in this process, as are all logs when worker
processes cannot be started.

This process and the workers of a :class:`~concurrent.futures.ProcessPoolExecutor`
(one fewer than the CPUs) take chunks one at a time from a shared counter, so that a
process slowed by other work on the machine takes fewer. What crosses process
boundaries is kept small: the workers are forked after the files are put in a
module-level slot, so they inherit the text instead of receiving it pickled (18 MB
for the benchmark's 10,000 entries), and they send back plain tuples (links, words,
tasks), which pickle and load about eight times faster than the dataclasses.

A chunk is analysed on the slice of its file's lines from its first entry's first
body line to its last entry's last, with line numbers counted from the file's start
(``line_offset``), so links, words, tasks and line numbers are those of the serial
path; ``tests/test_parallel.py`` compares both on large generated logs.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import NamedTuple

from worklog_gen.line_index import LineIndex
from worklog_gen.markdown_scan import scan
from worklog_gen.model import Link, Task, TaskStatus
from worklog_gen.tasks import entry_tasks

log = logging.getLogger(__name__)

PARALLEL_MIN_ENTRIES = 2000
"""Logs with fewer entries are analysed serially. Measured on an idle 2-core machine
(median of 7 parses, generated logs as in ``benchmarks/bench_parse.py``): with
entries of 1.8 kB (the real log's) the parallel parse breaks even near 700 entries
and takes 0.74x the serial time at 2,000; with entries of 0.6 kB it breaks even near
1,000 and takes 0.87x at 2,000. Starting the worker costs about 10-20 ms."""
MIN_ENTRIES_ENV = "WORKLOG_GEN_PARALLEL_MIN_ENTRIES"
"""Environment variable that overrides :data:`PARALLEL_MIN_ENTRIES` (an integer; a
large one turns the parallel path off)."""


class FileBodies(NamedTuple):
    """One file's lines, their :class:`~worklog_gen.line_index.LineIndex`, and its entry
    bodies as 0-based ``(first, stop)`` line ranges, in file order, not overlapping."""

    lines: list[str]
    index: LineIndex
    bodies: list[tuple[int, int]]


class Analysis(NamedTuple):
    """What the analysis finds in one file, per entry body in the order given."""

    links: list[list[Link]]
    words: list[int]
    tasks: list[list[Task]]


@dataclass(frozen=True)
class Plan:
    """How :func:`analyse` ran: in ``processes`` processes (this one and
    ``processes - 1`` workers; 1: serially, for the reason given), over ``chunks``
    chunks of entries."""

    processes: int
    chunks: int
    reason: str


last_plan: Plan | None = None
"""The :class:`Plan` of the latest :func:`analyse` in this process (for benchmarks
and debugging; the parse result does not depend on it)."""

CHUNKS_PER_PROCESS = 4
"""Chunks per process, so that the processes share the work out as they go. Measured:
the benchmark's log analysed in 16 chunks takes the same CPU time as in one, within
the spread between runs."""

_WORK: tuple | None = None
"""The files, the chunks, ``fast`` and the shared number of the next chunk of the
analysis under way, set before the workers are forked so that they inherit them."""
_WORK_LOCK = threading.Lock()
"""Held from setting :data:`_WORK` until the workers are done, so that parses in two
threads cannot fork workers with each other's work."""


def analyse(
    files: Sequence[FileBodies], *, fast: bool = True, min_entries: int | None = None, processes: int | None = None
) -> list[Analysis]:
    """Links, words and tasks of every entry body of ``files``, one :class:`Analysis`
    per file, identical to analysing each whole file serially.

    ``min_entries`` (default: the environment variable :data:`MIN_ENTRIES_ENV`, else
    :data:`PARALLEL_MIN_ENTRIES`) is the fewest entries, over all files, analysed in
    parallel; ``processes`` (default: the CPUs this process may use) the most processes
    to analyse them in, this one included. ``fast`` is passed to
    :func:`~worklog_gen.markdown_scan.scan`. Falls back to the serial analysis when
    worker processes cannot be started (logged as a warning).

    Raises:
        ValueError: :data:`MIN_ENTRIES_ENV` is set but not an integer.
    """
    global last_plan
    n_entries = sum(len(f.bodies) for f in files)
    processes, reason = _processes(n_entries, min_entries, processes)
    if processes > 1:
        processes = min(processes, n_entries)
        chunks = _chunks(files, min(processes * CHUNKS_PER_PROCESS, n_entries))
        try:
            results = _analyse_in_pool(files, chunks, fast, processes)
        except (OSError, BrokenProcessPool) as exc:
            log.warning("worklog: analysing entries in worker processes failed (%s); analysing them serially", exc)
            reason = f"worker processes failed: {exc}"
        else:
            last_plan = Plan(processes, len(chunks), "")
            log.debug("worklog: %d entries analysed in %d processes", n_entries, processes)
            return results
    last_plan = Plan(1, 1, reason)
    return [analyse_file(f, fast=fast) for f in files]


def analyse_file(f: FileBodies, *, fast: bool = True) -> Analysis:
    """The serial analysis of one file's entry bodies."""
    found = scan(f.lines, f.bodies, fast=fast, index=f.index)
    return Analysis(found.links, found.words, entry_tasks(f.lines, f.bodies, found.code_lines, f.index))


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where there is one, as in
    containers and under ``taskset``), else all of the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _processes(n_entries: int, min_entries: int | None, processes: int | None) -> tuple[int, str]:
    """How many processes to analyse ``n_entries`` entries with, and why only one."""
    if min_entries is None:
        env = os.environ.get(MIN_ENTRIES_ENV)
        try:
            min_entries = PARALLEL_MIN_ENTRIES if env is None else int(env)
        except ValueError:
            raise ValueError(f"{MIN_ENTRIES_ENV}={env!r}: expected a whole number of entries") from None
    if processes is None:
        processes = usable_cpus()
    least = max(min_entries, 2)
    if n_entries < least:
        return 1, f"{n_entries} entries, fewer than {least}"
    if processes < 2:
        return 1, "one CPU"
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        return 1, f"workers are forked only on Linux, not on {sys.platform}"
    if multiprocessing.current_process().daemon:
        return 1, "a daemonic process may not have children"
    return processes, ""


def _chunks(files: Sequence[FileBodies], n: int) -> list[list[tuple[int, int, int]]]:
    """``n`` contiguous chunks of entries (``n`` at most the number of entries), each of
    about the same number of characters and none empty, as lists of ``(file, first
    entry, stop entry)`` segments in order."""
    ends = list(itertools.accumulate(f.index.starts[b] - f.index.starts[a] + 1 for f in files for a, b in f.bodies))
    total, count = ends[-1], len(ends)
    cuts = [0]  # chunk j holds entries cuts[j] to cuts[j + 1] - 1, numbered over all files
    for j in range(1, n):
        cut = bisect.bisect_right(ends, total * j / n)  # entries that end within the first j shares
        cuts.append(min(max(cut, cuts[-1] + 1), count - (n - j)))
    cuts.append(count)
    chunks: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    first = 0  # number of the file's first entry
    for k, f in enumerate(files):
        stop = first + len(f.bodies)
        for j, chunk in enumerate(chunks):
            a, b = max(cuts[j], first), min(cuts[j + 1], stop)
            if a < b:
                chunk.append((k, a - first, b - first))
        first = stop
    return chunks


def _analyse_in_pool(
    files: Sequence[FileBodies], chunks: list[list[tuple[int, int, int]]], fast: bool, processes: int
) -> list[Analysis]:
    """Analyse ``chunks`` in this process and ``processes - 1`` forked workers, each
    taking the next chunk not yet taken until none is left (so that a process slowed
    by other work on the machine takes fewer); merge in order."""
    global _WORK
    context = multiprocessing.get_context("fork")
    next_chunk = context.Value("i", 0)
    parts: dict[int, list[Analysis]] = {}
    with _WORK_LOCK:
        _WORK = (files, chunks, fast, next_chunk)
        try:
            # The context manager shuts the pool down and joins the workers, also on
            # an error, so that repeated builds (mkdocs serve) leave no process behind.
            with ProcessPoolExecutor(processes - 1, mp_context=context) as pool:
                futures = [pool.submit(_work) for _ in range(processes - 1)]
                try:
                    for j in _claim(next_chunk, len(chunks)):
                        parts[j] = [_analyse_segment(files[k], a, b, fast) for k, a, b in chunks[j]]
                except BaseException:  # an error or Ctrl-C here: the workers take no more chunks
                    with next_chunk.get_lock():
                        next_chunk.value = len(chunks)
                    raise
                for future in futures:
                    for j, packed in future.result():
                        parts[j] = [_unpack(segment) for segment in packed]
        finally:
            _WORK = None
    results = [Analysis([], [], []) for _ in files]
    for j, chunk in enumerate(chunks):
        for (k, _, _), part in zip(chunk, parts[j]):
            for mine, theirs in zip(results[k], part):
                mine.extend(theirs)
    return results


def _claim(next_chunk, n: int) -> Iterator[int]:
    """Numbers of the chunks this process takes, one at a time, from the shared counter."""
    while True:
        with next_chunk.get_lock():
            j = next_chunk.value
            next_chunk.value = j + 1
        if j >= n:
            return
        yield j


def _work() -> list[tuple[int, list[tuple]]]:
    """Run in a worker: analyse chunks of :data:`_WORK` until none is left; each as
    its number and its segments packed as tuples (for pickling)."""
    assert _WORK is not None, "the analysis runs in processes forked by _analyse_in_pool"
    files, chunks, fast, next_chunk = _WORK
    done = []
    for j in _claim(next_chunk, len(chunks)):
        packed = []
        for k, a, b in chunks[j]:
            links, words, tasks = _analyse_segment(files[k], a, b, fast)
            packed.append((
                [[(x.title, x.url, x.line) for x in found] for found in links],
                words,
                [[(t.text, t.status.value, t.line) for t in found] for found in tasks],
            ))  # fmt: skip
        done.append((j, packed))
    return done


def _analyse_segment(f: FileBodies, a: int, b: int, fast: bool) -> Analysis:
    """The analysis of entry bodies ``a`` to ``b`` of ``f``, on the slice of lines they cover."""
    bodies = f.bodies[a:b]
    lo, hi = bodies[0][0], bodies[-1][1]
    if lo == 0 and hi == len(f.lines):
        return analyse_file(FileBodies(f.lines, f.index, bodies), fast=fast)
    starts = f.index.starts
    s0 = starts[lo]
    lines = f.lines[lo:hi]
    index = LineIndex(lines, text=f.index.text[s0 : starts[hi] - 1], starts=[s - s0 for s in starts[lo : hi + 1]])
    bodies = [(first - lo, stop - lo) for first, stop in bodies]
    found = scan(lines, bodies, fast=fast, index=index, line_offset=lo)
    tasks = entry_tasks(lines, bodies, found.code_lines, index, line_offset=lo)
    return Analysis(found.links, found.words, tasks)


def _unpack(packed: tuple) -> Analysis:
    links, words, tasks = packed
    return Analysis(
        [[Link(*x) for x in found] for found in links],
        words,
        [[Task(text, TaskStatus(status), line) for text, status, line in found] for found in tasks],
    )
