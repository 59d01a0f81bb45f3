"""A Logseq graph as the worklog folder, and the markup Logseq writes into its journals.

A Logseq graph (https://docs.logseq.com/#/page/markdown) is a folder with ``journals/`` (a file a
day, ``2025_12_09.md``), ``pages/`` (notes, no dates), ``assets/`` (pasted images, which journals
show as ``![image.png](../assets/image_1733750000000_0.png)``) and ``logseq/`` (its
``config.edn``, and in ``bak/`` copies of files named by their date). Pointed at the graph, the
worklog reads only the journals: :data:`GRAPH_EXCLUDE` leaves the rest out, and the assets the
journals show lie inside the folder, so they are published.

Logseq writes into a journal what only Logseq reads:

* *drawers*, ``:LOGBOOK:`` up to ``:END:`` (the time a task took), which Logseq hides, and so
  does the page;
* *properties*, ``key:: value`` lines under a block. Logseq hides those it keeps for itself,
  :data:`HIDDEN_PROPERTY_RE` (``collapsed:: true`` when a block is folded, ``id:: <uuid>`` when
  another block refers to it), and shows the rest; so does the page (:func:`to_markdown`);
* *block references*, ``((6756a1b2-...))``, which show the text of the block whose ``id::``
  that is; :mod:`~worklog_gen.log.internal_links` writes each as a link to that block's file, its
  text the block's (:func:`block_texts`);
* *macros*: ``{{video URL}}`` (``youtube``, ``tweet``, ``twitter``) shows the video, the page a
  link to it; ``{{embed ((uuid))}}`` and ``{{embed [[page]]}}`` show the block or page, the page
  a link to it. Other macros (``{{query ...}}``) stay as written;
* an image's size, ``![x.png](../assets/x.png){:height 300, :width 420}`` (an EDN map): on the
  page, the width and height as ``attr_list`` attributes;
* a link to a day, by the journal's title (``[[Dec 8th, 2025]]``, as Logseq's date picker writes
  it, in the graph's ``:journal/page-title-format``, "MMM do, yyyy" unless ``config.edn`` sets
  another): a link to that day's journal (:func:`journal_titles`, which
  :class:`~worklog_gen.log.internal_links.Vault` looks in);
* a task keyword starting a list item (``- TODO swizzle``, ``- DONE tiled matmul``), which Logseq
  draws as a checkbox: on the page a task-list checkbox (``- [ ] swizzle``, ``- [x] tiled
  matmul``), the keywords other than ``TODO`` and ``DONE`` (``LATER``, ``NOW``, ``DOING``,
  ``WAITING``, ``WAIT``) kept after it. Org mode's outlines write them so too.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from pathlib import Path

from worklog_gen.log.front_matter import DATE_STEM
from worklog_gen.log.repair import code_span_ranges, in_spans, track_fence
from worklog_gen.log.tasks import KEYWORDS

CONFIG = Path("logseq", "config.edn")
"""The file that makes a folder a Logseq graph."""
GRAPH_EXCLUDE = ("/logseq/", "/pages/", "/whiteboards/", "/draws/")
"""What a Logseq graph holds besides its journals and assets (gitignore patterns from the graph's
root): its settings and backups, its notes, its whiteboards and drawings."""

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
BLOCK_REF_RE = re.compile(rf"\(\((?P<uuid>{UUID})\)\)")
"""A block reference, ``((6756a1b2-1c3d-4e5f-8a9b-0c1d2e3f4a5b))``."""
PROPERTY_RE = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(?P<key>[A-Za-z][\w.\-/?]*)::(?:[ \t]+(?P<value>.*?))?[ \t]*$")
"""A property line, ``key:: value`` (as a block's first line too)."""
HIDDEN_PROPERTY_RE = re.compile(r"^[ \t]*(?:collapsed|id|heading|logseq\.[\w.\-]+|card-[\w\-]+)::(?:[ \t].*)?$",
                                re.MULTILINE)
"""The properties Logseq keeps for itself and does not show: a fold's ``collapsed``, a block's
``id``, ``heading``, ``logseq.order-list-type`` and the like, a flashcard's ``card-*``."""
_ID_RE = re.compile(rf"^[ \t]*id::[ \t]+(?P<uuid>{UUID})[ \t]*$", re.MULTILINE)
DRAWER_RE = re.compile(r"^[ \t]*:(?:LOGBOOK|PROPERTIES):[ \t]*\n(?:.*\n)*?[ \t]*:END:[ \t]*$", re.MULTILINE)
"""A drawer Logseq writes under a task and hides: ``:LOGBOOK:`` (the time tracked: ``CLOCK:`` lines)
up to ``:END:``."""
MACRO_RE = re.compile(r"\{\{(?P<name>video|youtube|tweet|twitter|embed)[ \t]+(?P<arg>[^{}\n]*?)[ \t]*\}\}")
"""The macros :func:`to_markdown` writes as markdown."""
_SIZE = r":(?:height|width)[ \t]+\d+"
_IMAGE_SIZE_RE = re.compile(rf"(?<=\))\{{(?P<edn>{_SIZE}(?:[ \t]*,?[ \t]*{_SIZE})?)\}}")
_KEYWORD_ITEM = re.compile(rf"^(?P<lead>[ \t]*(?:>[ \t]?)*[-*+][ \t]+)(?P<word>{KEYWORDS})(?=[ \t]|$)[ \t]*")
_ANY_KEYWORD_ITEM = re.compile(rf"^[ \t>]*[-*+][ \t]+(?:{KEYWORDS})", re.MULTILINE)
_BLOCK_START = re.compile(rf"^[ \t]*(?:[-*+][ \t]+)?(?:(?:{KEYWORDS})[ \t]+)?")


def is_graph(folder: Path) -> bool:
    """Whether ``folder`` is a Logseq graph's root (it holds :data:`CONFIG`)."""
    return (folder / CONFIG).is_file()


TITLE_FORMAT = "MMM do, yyyy"
"""Logseq's journal title format unless the graph's ``config.edn`` sets ``:journal/page-title-format``."""
_TITLE_FORMAT_RE = re.compile(r':journal/page-title-format\s+"(?P<format>[^"]+)"')
_DATE_TOKEN = re.compile(r"yyyy|yy|MMMM|MMM|MM|M|do|dd|d|EEEE|EEE|E")


def title_format(graph: Path) -> str:
    """The journal title format the graph's ``config.edn`` sets (date-fns tokens), else :data:`TITLE_FORMAT`."""
    try:
        m = _TITLE_FORMAT_RE.search((graph / CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        m = None
    return m["format"] if m else TITLE_FORMAT


def journal_title(day: dt.date, fmt: str = TITLE_FORMAT) -> str:
    """``day``'s journal title in ``fmt``, written with date-fns' tokens as Logseq writes them
    (https://date-fns.org/docs/format): ``yyyy``, ``yy``, ``MMMM``, ``MMM``, ``MM``, ``M``, ``do``
    (``8th``), ``dd``, ``d``, ``EEEE``, ``EEE``, ``E``; ``"Dec 8th, 2025"`` by default."""
    def token(m: re.Match) -> str:
        t = m[0]
        if t == "do":
            suffix = "th" if 10 <= day.day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day.day % 10, "th")
            return f"{day.day}{suffix}"
        return {"yyyy": f"{day.year:04d}", "yy": f"{day.year % 100:02d}", "MMMM": day.strftime("%B"),
                "MMM": day.strftime("%b"), "MM": f"{day.month:02d}", "M": str(day.month), "dd": f"{day.day:02d}",
                "d": str(day.day), "EEEE": day.strftime("%A"), "EEE": day.strftime("%a"), "E": day.strftime("%a")}[t]

    return _DATE_TOKEN.sub(token, fmt)


def journal_titles(graph: Path, files: Iterable[Path]) -> dict[str, Path]:
    """The journal title (lower case) of each of ``files`` named by its date (``2025_12_08.md``),
    in the graph's format (:func:`title_format`) -> the file: what a ``[[Dec 8th, 2025]]`` names."""
    fmt, out = title_format(graph), {}
    for file in files:
        m = DATE_STEM.match(file.name)
        if m and file.suffix.lower() == ".md":
            try:
                out.setdefault(journal_title(dt.date(int(m["y"]), int(m["m"]), int(m["d"])), fmt).lower(), file)
            except ValueError:  # 2025_02_30
                continue
    return out


def exclude_patterns(folder: Path) -> tuple[str, ...]:
    """:data:`GRAPH_EXCLUDE` for a Logseq graph, ``()`` for any other folder."""
    return GRAPH_EXCLUDE if is_graph(folder) else ()


def block_texts(files: Iterable[Path]) -> dict[str, tuple[Path, str]]:
    """Each block id (``id:: <uuid>``) in ``files`` (markdown) -> the file and the block's text: the
    line that starts the block (the nearest line above its ``id::`` that is no property), without
    its list marker or task keyword. Ids Logseq writes in lower case; a file that cannot be read
    holds none."""
    found: dict[str, tuple[Path, str]] = {}
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "id::" not in text:
            continue
        lines = text.split("\n")
        for m in _ID_RE.finditer(text):
            i = text.count("\n", 0, m.start()) - 1
            while i >= 0 and PROPERTY_RE.match(lines[i]):
                i -= 1
            if i >= 0:
                found.setdefault(m["uuid"], (file, _BLOCK_START.sub("", lines[i], count=1).strip()))
    return found


def page_tags(text: str) -> list[str]:
    """The tags a journal's ``tags::`` property names (``tags:: triton, [[warp shuffles]]``), in
    order: Logseq's page tags, written in the page's first block."""
    if "tags::" not in text:
        return []
    for line in text.split("\n"):
        m = PROPERTY_RE.match(line)
        if m and m["key"].lower() == "tags" and m["value"]:
            return [t.strip().removeprefix("#").removeprefix("[[").removesuffix("]]").strip()
                    for t in m["value"].split(",") if t.strip()]
        if line.strip() and not m:
            break  # past the page's properties
    return []


def without_hidden_properties(text: str) -> str:
    """``text`` with each line of a hidden property (:data:`HIDDEN_PROPERTY_RE`) and of a drawer
    (:data:`DRAWER_RE`) empty, every line in its place: what the parser counts the words and finds
    the links of."""
    if "::" in text:
        text = HIDDEN_PROPERTY_RE.sub("", text)
    if ":END:" in text:
        text = DRAWER_RE.sub(lambda m: "\n" * m[0].count("\n"), text)
    return text


def to_markdown(text: str) -> str:
    """``text`` (an entry's, as the page shows it) with Logseq's hidden properties and drawers left
    out (each line whole) and each other property on a line of its own, its video, tweet and embed
    macros as links, an image's EDN size as ``attr_list`` attributes, and a list item's task keyword
    as a checkbox (see the module docstring). Code blocks and code spans are markdown of their own: a
    property, macro or keyword inside one stays."""
    if "::" not in text and "{" not in text and ":END:" not in text and not _ANY_KEYWORD_ITEM.search(text):
        return text
    drawers = {text.count("\n", 0, m.start()) + k for m in DRAWER_RE.finditer(text)
               for k in range(m[0].count("\n") + 1)} if ":END:" in text else set()  # their lines
    out, fence = [], None
    for i, line in enumerate(text.split("\n")):
        fence, marker = track_fence(line, fence)
        if marker or fence is not None:
            out.append(line)
            continue
        if i in drawers:
            continue
        if "::" in line and PROPERTY_RE.match(line):
            if HIDDEN_PROPERTY_RE.match(line):
                continue
            if out and PROPERTY_RE.match(out[-1]):  # as Logseq shows them: one a line
                out[-1] = out[-1].rstrip() + "  "
        if (item := _KEYWORD_ITEM.match(line)) is not None:
            box = {"TODO": "[ ] ", "DONE": "[x] "}.get(item["word"], f"[ ] {item['word']} ")
            line = item["lead"] + box + line[item.end():]
        if "{" in line:
            spans = code_span_ranges(line)
            line = MACRO_RE.sub(lambda m: m[0] if in_spans(m.start(), spans) else _macro(m), line)
            line = _IMAGE_SIZE_RE.sub(lambda m: m[0] if in_spans(m.start(), spans) else _size(m), line)
        out.append(line)
    return "\n".join(out)


def _macro(m: re.Match) -> str:
    arg = m["arg"].strip()
    if m["name"] == "embed":
        return arg  # a block reference or wikilink, already a link (internal_links)
    return f"<{arg}>" if re.match(r"https?://\S+$", arg) else m[0]


def _size(m: re.Match) -> str:
    sizes = dict(re.findall(r":(height|width)[ \t]+(\d+)", m["edn"]))
    return "{ " + " ".join(f'{key}="{value}"' for key, value in sorted(sizes.items(), reverse=True)) + " }"
