"""Statistics derived from worklog entries: streaks, words per day, the timeline
by month, the reading list and the task report.

Plain data from :class:`~worklog_gen.log.parse.Entry` lists; the pages
(:mod:`worklog_gen.site.pages`) and the heatmap (:mod:`worklog_gen.site.heatmap`) turn it
into text.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from worklog_gen.log.tasks import strip_markers
from worklog_gen.log.model import Entry, Task, TaskStatus


def month_title(date: dt.date) -> str:
    """``December 2025``."""
    return f"{date:%B %Y}"


# --- streaks and the timeline ------------------------------------------------------------


@dataclass(frozen=True)
class Streaks:
    """Runs of consecutive calendar days with an entry."""

    current: int
    """Length of the run that ends at the latest entry (days)."""
    longest: int
    """Length of the longest run (days); the earliest one on ties."""
    longest_start: dt.date | None = None
    longest_end: dt.date | None = None


def streaks(dates: Iterable[dt.date]) -> Streaks:
    """Current and longest streak of ``dates`` (duplicates count once)."""
    days = sorted(set(dates))
    if not days:
        return Streaks(0, 0)
    run, start = 1, days[0]
    best = (1, days[0], days[0])
    for prev, day in zip(days, days[1:]):
        if day - prev == dt.timedelta(days=1):
            run += 1
        else:
            run, start = 1, day
        if run > best[0]:
            best = (run, start, day)
    return Streaks(current=run, longest=best[0], longest_start=best[1], longest_end=best[2])


def words_by_date(entries: Iterable[Entry]) -> dict[dt.date, int]:
    """Words written per calendar day (entries of one day summed)."""
    out: dict[dt.date, int] = defaultdict(int)
    for entry in entries:
        out[entry.date] += entry.words
    return dict(out)


def timeline(entries: Iterable[Entry]) -> list[tuple[str, list[Entry]]]:
    """Entries newest first, grouped by month: ``[("December 2025", [...]), ...]``."""
    groups: dict[tuple[int, int], list[Entry]] = defaultdict(list)
    for entry in sorted(entries, key=lambda e: e.date, reverse=True):
        groups[(entry.date.year, entry.date.month)].append(entry)
    return [(month_title(dt.date(y, m, 1)), items) for (y, m), items in groups.items()]


# --- reading list and tasks -------------------------------------------------------------


@dataclass
class ReadingItem:
    """One distinct URL of the log, with the title it was first given."""

    url: str
    title: str
    domain: str
    entries: list[Entry] = field(default_factory=list)
    """Entries it appears on, in date order, each once."""
    source: tuple[str, int] | None = None
    """``(path, line)`` of its first occurrence."""


def reading_list(entries: Iterable[Entry]) -> list[ReadingItem]:
    """Every link of the log, deduplicated by exact URL, in order of first appearance."""
    items: dict[str, ReadingItem] = {}
    for entry in sorted(entries, key=lambda e: e.date):
        for link in entry.links:
            item = items.get(link.url)
            if item is None:
                title = link.title.strip() or link.url
                item = items[link.url] = ReadingItem(link.url, title, link.domain, source=(entry.path, link.line))
            if not item.entries or item.entries[-1] is not entry:
                item.entries.append(entry)
    return list(items.values())


def normalise_task(text: str) -> str:
    """The text a carried task and its later done task share: status markers at the
    end (``- Done;``, ``-> Tmr``, ``Next``) removed, case folded, everything but
    letters and digits turned to single spaces.
    ``"Finish Einsum today; - Done"`` -> ``"finish einsum today"``. The markers are
    the parser's (:func:`worklog_gen.log.tasks.strip_markers`)."""
    text = strip_markers(text.strip())
    return " ".join(re.sub(r"[^\w]+|_", " ", text.casefold()).split())


@dataclass
class TaskReport:
    """The tasks view's content. Rule: a carried task counts as done later when a
    task marked done on a later entry has the same :func:`normalise_task` text."""

    done: list[tuple[Entry, Task]] = field(default_factory=list)
    """Tasks marked done, in date order."""
    carried_then_done: list[tuple[Entry, Task, Entry]] = field(default_factory=list)
    """``(entry carried on, task, entry done on)``."""
    outstanding: list[tuple[list[Entry], Task]] = field(default_factory=list)
    """Carried and never marked done later: the entries it was carried on, and
    its last wording."""
    open: list[tuple[Entry, Task]] = field(default_factory=list)
    """Open (``- [ ]``, ``- TODO``) and never marked done later, in date order."""


def task_report(entries: Iterable[Entry]) -> TaskReport:
    """Sort the log's tasks into done, carried-then-done, outstanding and open (see
    :class:`TaskReport` for the matching rule, which closes an open task as it does a carried one)."""
    ordered = sorted(entries, key=lambda e: e.date)
    report = TaskReport()
    done_on: dict[str, list[Entry]] = defaultdict(list)  # in date order
    for entry in ordered:
        for task in entry.tasks:
            if task.status == TaskStatus.DONE:
                report.done.append((entry, task))
                done_on[normalise_task(task.text)].append(entry)
    done_dates = {key: [e.date for e in done] for key, done in done_on.items()}
    outstanding: dict[str, tuple[list[Entry], Task]] = {}
    for entry in ordered:
        for task in entry.tasks:
            if task.status == TaskStatus.DONE:
                continue
            key = normalise_task(task.text)
            # the first done after the entry's day, by binary search: a task carried and done
            # again and again (a daily habit) is not scanned from its first done every time
            dates = done_dates.get(key, [])
            k = bisect.bisect_right(dates, entry.date)
            later = done_on[key][k] if k < len(dates) else None
            if task.status == TaskStatus.OPEN:
                if later is None:
                    report.open.append((entry, task))
            elif later is not None:
                report.carried_then_done.append((entry, task, later))
            elif key in outstanding:
                outstanding[key][0].append(entry)
                outstanding[key] = (outstanding[key][0], task)
            else:
                outstanding[key] = ([entry], task)
    report.outstanding = list(outstanding.values())
    return report
