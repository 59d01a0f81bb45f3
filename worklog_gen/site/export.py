"""Export the parsed log: JSON for programs, one clean markdown file for people.

``worklog-gen export`` prints these (see :mod:`worklog_gen.cli`).
"""

from __future__ import annotations

from worklog_gen.site.markup import shift_headings
from worklog_gen.site.layout import Layout
from worklog_gen.site.topics import match_topics
from worklog_gen.log.model import Entry, TaskStatus, Worklog


def to_json(log: Worklog, cfg) -> dict:
    """The log as a JSON-ready dict::

        {"target_date": "2026-05-12",
         "entries": [{"date": "2025-12-09", "countdown": 154,
                      "url": "worklog/2025-12-09/", "source": "worklog/log.md:21",
                      "links": [{"title": "...", "url": "..."}],
                      "tasks": [{"text": "...", "status": "done"}],
                      "topics": ["tiled-matmul"], "words": 312}]}

    ``target_date`` and ``countdown`` are ``null`` when unknown; ``url`` is the page
    path relative to the site root with directory URLs (:meth:`Layout.entry_url`);
    ``status`` is ``done``, ``carried`` or ``open``; ``topics`` are the ids of the
    configured topics the entry's prose mentions (:func:`topics.match_topics`).
    ``cfg`` is the plugin config (``url_prefix``, ``topics``).
    """
    layout = Layout(cfg.url_prefix)
    return {
        "target_date": log.target_date.isoformat() if log.target_date else None,
        "entries": [
            {
                "date": e.date.isoformat(),
                "countdown": e.countdown,
                "url": layout.entry_url(e.slug),
                "source": e.source,
                "links": [{"title": link.title, "url": link.url} for link in e.links],
                "tasks": [{"text": t.text, "status": TaskStatus(t.status).value} for t in e.tasks],
                "topics": match_topics(e.body, cfg.topics),
                "words": e.words,
                "kind": e.kind,
                "title": e.title or None,
                "tags": list(e.tags),
                "day_number": e.day_number,
                "draft": e.draft,
            }
            for e in log.entries
        ],
    }


def _heading(entry: Entry) -> str:
    countdown = f" (T-{entry.countdown})" if entry.countdown is not None else ""
    return f"## {entry.date.isoformat()}{countdown}"


def to_markdown(log: Worklog) -> str:
    """The whole log as one markdown file, like jrnl's markdown export: a title, the
    preamble, then ``## YYYY-MM-DD (T-n)`` per entry in date order with its text as
    parsed (repaired, see :attr:`Worklog.diagnostics`) and its own headings moved
    two levels down. Ends with exactly one newline."""
    title = str(log.front_matter.get("title") or "Worklog")
    parts = [f"# {title}"]
    if log.target_date is not None:
        parts.append(f"Target date: {log.target_date.isoformat()}")
    if log.preamble.strip():
        parts.append(shift_headings(log.preamble.strip("\n"), 1))
    for entry in log.entries:
        parts.append(_heading(entry))
        body = entry.body.strip("\n")
        if body.strip():
            parts.append(shift_headings(body, 2))
    return "\n\n".join(parts) + "\n"
