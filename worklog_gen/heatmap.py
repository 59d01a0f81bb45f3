"""The words-per-day calendar heatmap of the worklog home, as inline SVG.

Cells come from :func:`worklog_gen.stats.words_by_date`; the page that shows the
heatmap is :func:`worklog_gen.pages.home_page`. The heatmap is raw HTML, so its
links are final URLs (see :func:`heatmap_html`).
"""

from __future__ import annotations

import bisect
import datetime as dt
import html
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

CELL, STEP = 11, 14  # px: square side and column pitch, as GitHub's contribution graph
LEFT, TOP = 30, 18  # px: room for weekday and month labels
LEVEL_FILLS = (
    "var(--md-default-fg-color--lightest, #ebedf0)",
    "#9be9a8",
    "#40c463",
    "#30a14e",
    "#216e39",
)  # GitHub's contribution-graph greens; level 0 follows the Material light/dark scheme


@dataclass(frozen=True)
class HeatmapCell:
    """One day of the heatmap: column ``week`` (0 = the week of the first entry,
    weeks start on Monday), row ``weekday`` (0 = Monday), words written and colour
    level (0 = none, 1-4 = quartiles of the words of days with words)."""

    date: dt.date
    week: int
    weekday: int
    words: int | None
    level: int
    ahead: bool = False
    """A day after the last entry, up to the target date: still to come."""


MAX_DAYS_AHEAD = 366
"""The heatmap shows at most this many days past the last entry (a far target date
would otherwise draw years of empty weeks)."""


def heatmap_cells(words: dict[dt.date, int], until: dt.date | None = None) -> list[HeatmapCell]:
    """A cell for every day from the first to the last date in ``words`` (days
    without an entry have ``words=None``), then, when ``until`` (the target date) is
    later, every day up to it marked ``ahead`` (at most :data:`MAX_DAYS_AHEAD`), so
    that the calendar shows the countdown still to go. Levels split the days with
    words at the quartiles of their word counts (one level per distinct count when few)."""
    if not words:
        return []
    first, last = min(words), max(words)
    end = last if until is None else max(last, min(until, last + dt.timedelta(days=MAX_DAYS_AHEAD)))
    monday = first - dt.timedelta(days=first.weekday())
    counts = sorted(w for w in words.values() if w > 0)
    if len(counts) >= 4:
        thresholds = statistics.quantiles(counts, n=4, method="inclusive")
    else:
        thresholds = counts[:-1]
    cells = []
    for offset in range((end - first).days + 1):
        day = first + dt.timedelta(days=offset)
        count = words.get(day)
        level = 0 if not count else min(4, 1 + bisect.bisect_left(thresholds, count))
        cells.append(HeatmapCell(day, (day - monday).days // 7, day.weekday(), count, level, ahead=day > last))
    return cells


def heatmap_html(cells: Sequence[HeatmapCell], href: Callable[[dt.date], str | None]) -> str:
    """The heatmap as an inline SVG in a horizontally scrollable ``<div>`` (so that a
    year of weeks does not widen a 390 px phone screen), with month and weekday
    labels and a legend. ``href(date)`` is the final URL of the day's page (or
    ``None``); it is written as-is, since MkDocs does not rewrite raw HTML.
    One line per element and no blank lines, so Python-Markdown passes it through.
    """
    if not cells:
        return ""
    weeks = cells[-1].week + 1
    ahead = any(c.ahead for c in cells)
    legend_end = LEFT + 28 + 5 * STEP + 30 + (58 if ahead else 0)  # "Less", five swatches, "More", "to come"
    width = max(LEFT + weeks * STEP + 16, legend_end)  # 16: room for a last month label
    height = TOP + 7 * STEP + 26
    out = [
        '<div class="worklog-heatmap" style="overflow-x:auto;max-width:100%">',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Words written per day, {cells[0].date} to {cells[-1].date}" '
        'style="font-size:9px;fill:currentColor">',
    ]
    for row, name in ((0, "Mon"), (2, "Wed"), (4, "Fri")):
        out.append(f'<text x="0" y="{TOP + row * STEP + CELL - 2}">{name}</text>')
    months = [(c.week, f"{c.date:%b}") for c in cells if c.date.day == 1 or c is cells[0]]
    for (week, name), after in zip(months, [*months[1:], (weeks + 3, "")]):
        if after[0] - week >= 3:  # a label needs three columns; a month's first days win
            out.append(f'<text x="{LEFT + week * STEP}" y="{TOP - 6}">{name}</text>')
    for cell in cells:
        if cell.ahead:  # still to come: an outline, the target date a darker one
            words = "target date" if cell is cells[-1] else "to come"
            style = f"fill:none;stroke:{LEVEL_FILLS[4] if cell is cells[-1] else LEVEL_FILLS[0]}"
        else:
            words = "no entry" if cell.words is None else f"{cell.words} words"
            style = f"fill:{LEVEL_FILLS[cell.level]}"
        rect = (
            f'<rect x="{LEFT + cell.week * STEP}" y="{TOP + cell.weekday * STEP}" '
            f'width="{CELL}" height="{CELL}" rx="2" style="{style}">'
            f"<title>{cell.date.isoformat()}: {words}</title></rect>"
        )
        url = href(cell.date) if cell.words is not None else None
        out.append(f'<a href="{html.escape(url)}">{rect}</a>' if url else rect)
    legend_y = TOP + 7 * STEP + 8
    out.append(f'<text x="{LEFT}" y="{legend_y + CELL - 2}">Less</text>')
    for level, fill in enumerate(LEVEL_FILLS):
        x = LEFT + 28 + level * STEP
        out.append(f'<rect x="{x}" y="{legend_y}" width="{CELL}" height="{CELL}" rx="2" style="fill:{fill}"/>')
    out.append(f'<text x="{LEFT + 28 + 5 * STEP + 2}" y="{legend_y + CELL - 2}">More</text>')
    if ahead:
        x = LEFT + 28 + 5 * STEP + 30
        out.append(f'<rect x="{x}" y="{legend_y}" width="{CELL}" height="{CELL}" rx="2" '
                   f'style="fill:none;stroke:{LEVEL_FILLS[0]}"/>')
        out.append(f'<text x="{x + STEP}" y="{legend_y + CELL - 2}">to come</text>')
    out += ["</svg>", "</div>"]
    return "\n".join(out)
