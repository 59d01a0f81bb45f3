"""An Obsidian vault as the worklog folder: its daily notes are the log.

A vault (https://help.obsidian.md/) is a folder with Obsidian's settings in ``.obsidian/``. Its
Daily notes plugin keeps a note a day, named by its date, in the folder its settings name
(``.obsidian/daily-notes.json``: ``{"folder": "Daily", "format": "YYYY-MM-DD", "template":
"Templates/Daily"}``; no file, or no ``folder``, is the vault's root). Pointed at the vault, the
worklog reads the daily notes only (:func:`exclude_patterns`): its other notes and its templates
are no part of the log, as if the plugin's ``exclude`` named them, while its attachments (images,
PDFs) stay in the folder, published where a day shows or links one.

Obsidian hides a comment, ``%%not for the page%%`` within a line or ``%%`` lines around a block
(https://help.obsidian.md/syntax#Comments); in a vault's notes the site hides it too
(:func:`without_comments`): not on the page, in the feed, the summary, the reading list or the
tasks. A ``%%`` in code is text, and one never closed hides nothing. So is a block's id, the
``^swizzle-1`` that ends a paragraph or list item (or stands on a line after it) for
``[[2025-12-08#^swizzle-1]]`` to link (https://help.obsidian.md/links#Link+to+a+block+in+a+note).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from worklog_gen.log.repair import code_span_ranges, edit_outside_code, in_spans, track_fence

SETTINGS = Path(".obsidian")
"""The folder that makes a folder an Obsidian vault."""
DAILY_NOTES = SETTINGS / "daily-notes.json"
"""The Daily notes plugin's settings in a vault."""
HASHTAG_RE = re.compile(r"(?<![^\s(])#(?:\[\[(?P<page>[^\[\]\n]+)\]\]|(?P<tag>(?=[\w/-]*[^\W\d])[\w/-]+))")
"""A tag in a note's text, as Obsidian and Logseq read one: ``#`` at the start of a line or after a
space, then letters, digits, ``_``, ``-`` and ``/`` (nested: ``#cuda/memory``), not digits alone
(``#3`` is no tag); Logseq's ``#[[warp shuffles]]`` too (https://help.obsidian.md/tags,
https://docs.logseq.com/#/page/tags). A heading's ``# `` has a space; ``page#part`` no space before."""
DATED_NOTE = "[0-9][0-9][0-9][0-9][-_.][0-9][0-9][-_.][0-9][0-9]*.md"
"""A note named by its date, year first (``2025-12-09.md``), as a gitignore pattern."""


def is_vault(folder: Path) -> bool:
    """Whether ``folder`` is an Obsidian vault's root (it holds :data:`SETTINGS`)."""
    return (folder / SETTINGS).is_dir()


def daily_folder(folder: Path) -> str:
    """The folder of the vault ``folder`` that holds its daily notes, relative to the vault, as its
    settings name it (``"Daily"``); ``""`` for the vault's root, also when the settings are
    missing or cannot be read."""
    try:
        settings = json.loads((folder / DAILY_NOTES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    name = settings.get("folder") if isinstance(settings, dict) else None
    return name.strip().strip("/") if isinstance(name, str) else ""


def exclude_patterns(folder: Path) -> tuple[str, ...]:
    """For a vault, gitignore patterns (from its root) that leave out every note but the daily
    notes: all of the daily folder's notes, or, when that is the vault's root, those named by a
    date (:data:`DATED_NOTE`) in any of its folders (where other plugins keep them). Files that are
    not notes (attachments) are left in. ``()`` for a folder that is no vault."""
    if not is_vault(folder):
        return ()
    daily = daily_folder(folder)
    return ("*.md", f"!/{daily}/**/*.md") if daily else ("*.md", f"!{DATED_NOTE}")


_BLOCK_ID_RE = re.compile(r"(?:(?<=[ \t])|^)\^[A-Za-z0-9-]+[ \t]*$")
"""A block id, ``^swizzle-1``, at the end of a line (after a space) or alone on it."""


def without_block_ids(text: str) -> str:
    """``text`` with each block id (:data:`_BLOCK_ID_RE`) outside code left out, every line in its place."""
    def drop(line: str, spans: list[tuple[int, int]]) -> str:
        m = _BLOCK_ID_RE.search(line)
        return line[:m.start()].rstrip(" \t") if m and not in_spans(m.start(), spans) else line

    return edit_outside_code(text, drop, "^")


def without_comments(text: str) -> str:
    """``text`` (a note's) with the inside of each Obsidian comment (``%%...%%``) left out and its
    ``%%`` too, every line kept in its place (a comment's lines are empty), so that line numbers
    hold. Outside comments, fenced code and code spans are text: a ``%%`` there opens nothing. A
    ``%%`` never closed hides nothing."""
    if "%%" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    fence = None
    start: tuple[int, int] | None = None  # (line, column) of an open comment's %%
    for i, line in enumerate(lines):
        kept, col = [], 0
        if start is None:
            fence, marker = track_fence(line, fence)
            if marker or fence is not None:
                out.append(line)
                continue
        spans = code_span_ranges(line) if start is None else []
        while True:
            at = line.find("%%", col)
            while start is None and at != -1 and in_spans(at, spans):
                at = line.find("%%", at + 2)
            if at == -1:
                if start is None:
                    kept.append(line[col:])
                break
            if start is None:
                kept.append(line[col:at])
                start = (i, at)
            else:
                start = None
            col = at + 2
        out.append("".join(kept))
    if start is not None:  # never closed: as written from its %% on
        i, at = start
        out[i:] = [out[i] + lines[i][at:], *lines[i + 1:]]
    return "\n".join(out)


def hashtags(text: str) -> list[str]:
    """The tags (:data:`HASHTAG_RE`) of ``text`` outside code, in order, each once, as written."""
    found: list[str] = []

    def collect(line: str, spans: list[tuple[int, int]]) -> str:
        found.extend(m["tag"] or m["page"].strip() for m in HASHTAG_RE.finditer(line) if not in_spans(m.start(), spans))
        return line

    edit_outside_code(text, collect, "#")
    return list(dict.fromkeys(t for t in found if t))
