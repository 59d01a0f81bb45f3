"""The words-per-day calendar heatmap of the worklog home, as a Vega-Lite chart.

Cells come from :func:`worklog_gen.site.stats.words_by_date`; the page that shows the
heatmap is :func:`worklog_gen.site.pages.home_page`, which serves it as the chart files of
:func:`worklog_gen.kit.charts.chart_files`. Its links are final URLs (see :func:`heatmap_chart`).
"""

from __future__ import annotations

import bisect
import datetime as dt
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

STEP = 14  # px: column pitch (an 11 px square and a 3 px gap), as GitHub's contribution graph
LEVEL_FILLS = (
    "rgba(136, 136, 136, 0.22)",
    "#9be9a8",
    "#40c463",
    "#30a14e",
    "#216e39",
)  # GitHub's contribution-graph greens; level 0 a translucent grey that reads on
# Material's light (default) and dark (slate) backgrounds


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
    ahead = 0 if until is None else max(0, min((until - last).days, MAX_DAYS_AHEAD))
    end = last + dt.timedelta(days=ahead)  # never past ``until``: no date past 9999-12-31 is reached
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


def heatmap_chart(cells: Sequence[HeatmapCell], href: Callable[[dt.date], str | None],
                  counter: Callable[[dt.date], str | None] = lambda day: None):
    """The heatmap as a Vega-Lite chart (Altair): a square per day, weeks across and weekdays
    down, months labelled above. Each day's tooltip gives its date, words and ``counter(date)``
    (the countdown, ``"T - 38"``, or the count-up ``"Day 25"``), and a click opens ``href(date)``,
    the final URL of the day's page relative to the page that shows the chart (or ``None``).
    Days after the last entry, up to the target date, are outlined: still to come. The legend
    names the word-count band of each colour level.

    Returns:
        An Altair layer chart (``None`` when there are no cells).
    """
    import altair as alt

    if not cells:
        return None
    counts = sorted(c.words for c in cells if c.words)
    bands = _level_bands(cells)
    rows = []
    for cell in cells:
        band = ("target date" if cell is cells[-1] else "to come") if cell.ahead else bands[cell.level]
        rows.append({"date": cell.date.isoformat(), "weekday": _WEEKDAYS[cell.weekday], "week": cell.week,
                     "words": cell.words if cell.words is not None else 0,
                     "entry": "to come" if cell.ahead else ("yes" if cell.words is not None else "no entry"),
                     "counter": counter(cell.date) or "", "band": band,
                     "url": (href(cell.date) or "") if cell.words is not None else ""})
    domain = [b for b in [*bands, "to come", "target date"] if any(r["band"] == b for r in rows)]
    fills = dict(zip(bands, LEVEL_FILLS)) | {"to come": "transparent", "target date": "transparent"}
    strokes = {b: "transparent" for b in bands} | {"to come": LEVEL_FILLS[0], "target date": LEVEL_FILLS[4]}
    x = alt.X("week:O", axis=None, scale=alt.Scale(paddingInner=3 / STEP))
    y = alt.Y("weekday:O", sort=_WEEKDAYS, scale=alt.Scale(domain=_WEEKDAYS, paddingInner=3 / STEP),
              axis=alt.Axis(title=None, domain=False, ticks=False, labelExpr="indexof(['Mon','Wed','Fri'], datum.value) >= 0 ? datum.value : ''"))
    days = alt.Chart(alt.Data(values=rows), name="days").mark_rect(cornerRadius=2, strokeWidth=1, cursor="pointer").encode(
        x=x, y=y,
        color=alt.Color("band:N", scale=alt.Scale(domain=domain, range=[fills[b] for b in domain]),
                        legend=alt.Legend(title="words", orient="bottom", direction="horizontal", symbolType="square",
                                          symbolStrokeColor=OUTLINE)),
        stroke=alt.Stroke("band:N", scale=alt.Scale(domain=domain, range=[strokes[b] for b in domain]), legend=None),
        href="url:N",
        tooltip=[alt.Tooltip("date:N"), alt.Tooltip("words:Q"), alt.Tooltip("counter:N", title="counter"),
                 alt.Tooltip("entry:N")],
    )
    months = [{"week": c.week, "month": f"{c.date:%b}"} for c in cells if c.date.day == 1 or c is cells[0]]
    months = [m for m, after in zip(months, [*months[1:], {"week": cells[-1].week + 3}]) if after["week"] - m["week"] >= 3]
    labels = alt.Chart(alt.Data(values=months)).mark_text(align="left", baseline="bottom", fontSize=9, dy=-2).encode(
        x=alt.X("week:O", axis=None), text="month:N", y=alt.value(0))
    return alt.layer(days, labels).properties(
        width=alt.Step(STEP), height=alt.Step(STEP),
        title=alt.Title(f"Words per day, {cells[0].date} to {cells[-1].date}", fontSize=11, anchor="start"),
        usermeta={"worklog": {"kind": "heatmap", "days": len(counts)}})


_WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
OUTLINE = "#888888"


def _level_bands(cells: Sequence[HeatmapCell]) -> list[str]:
    """The legend label of each colour level: ``no words``, then the word-count range of each
    level among the days with words (``"1-40"``, ...; empty levels named by their number)."""
    ranges: dict[int, list[int]] = {}
    for cell in cells:
        if cell.words and not cell.ahead:
            ranges.setdefault(cell.level, []).append(cell.words)
    bands = ["no words"]
    for level in range(1, len(LEVEL_FILLS)):
        words = ranges.get(level)
        if not words:
            bands.append(f"level {level}")
        else:
            lo, hi = min(words), max(words)
            bands.append(f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}")
    return bands
