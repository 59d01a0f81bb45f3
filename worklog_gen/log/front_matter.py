"""Front matter of a worklog file: where it is, its YAML, and what the parser reads
from it.

Recognised forms: ``---`` ... ``---`` (or ``...``) at the top of the file, the HTML
comment forms that Jekyll/al-folio exports leave, ``<!-- ---`` ... ``--- -->`` and
``<!--``/``---`` ... ``---``/``-->``, and Hugo's TOML between ``+++`` lines
(https://gohugo.io/content-management/front-matter/). Keys the parser reads: ``target_date`` or
``target`` (the log's target date, YYYY-MM-DD), and in a one-entry file without
header lines ``date`` and ``countdown``.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

import yaml
from dateutil import parser as dateparser

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode

_FM_COMMENT_OPEN = re.compile(r"^<!--[ \t]*(?:---[ \t]*)?$")
_FM_COMMENT_CLOSE = re.compile(r"^(?:---[ \t]*)?-->[ \t]*$")
DATE_STEM = re.compile(r"^(?P<y>\d{4})(?P<sep>[-_.])(?P<m>\d{2})(?P=sep)(?P<d>\d{2})(?!\d)")
"""A file named by its date, year first: ``2025-12-09.md``, ``2025-12-09-warp-shuffles.md`` (Jekyll),
``2025_12_09.md`` (Logseq's journals), ``2025.12.09.md``."""

class AliasRefused(yaml.composer.ComposerError):
    """A YAML alias (``*name``) in front matter: the file is refused (see :class:`_FrontMatterLoader`)."""


class _FrontMatterLoader(yaml.SafeLoader):
    """PyYAML's safe loader (no Python objects from tags such as ``!!python/object``) without
    aliases: ``*name`` can make a few lines expand to billions of values ("billion laughs"), and
    front matter never needs one."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise AliasRefused(None, None, f"an alias (*{event.anchor}) is not allowed in front matter",
                               event.start_mark)
        return super().compose_node(parent, index)

    def construct_yaml_timestamp(self, node):
        """A date or time as PyYAML reads it; one that does not exist (``2026-02-30``,
        ``0000-01-01``), where PyYAML raises a bare ``ValueError``, stays the text written, so
        that the key that holds it reports an invalid date at its line."""
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError):
            return self.construct_scalar(node)


_FrontMatterLoader.add_constructor("tag:yaml.org,2002:timestamp", _FrontMatterLoader.construct_yaml_timestamp)


Span = tuple[int, int, int]
"""``(end, yaml_start, yaml_end)``: see :func:`front_matter_span`."""


def front_matter_span(lines: list[str]) -> Span:
    """``(end, yaml_start, yaml_end)`` of the front matter in ``lines``; ``(0, 0, 0)`` if none.

    ``end`` is the number of front matter lines; ``lines[yaml_start:yaml_end]`` is
    the YAML (or TOML). Recognises ``---``/``---`` (or ``...``) at the top, the HTML
    comment forms ``<!-- ---`` ... ``--- -->`` and ``<!--``/``---`` ... ``---``/``-->``, and
    Hugo's ``+++``/``+++`` around TOML.
    """
    if not lines:
        return 0, 0, 0
    first = lines[0].rstrip(" \t")
    if first in ("---", "+++"):
        ends = ("---", "...") if first == "---" else ("+++",)
        for i in range(1, len(lines)):
            if lines[i].rstrip(" \t") in ends:
                return i + 1, 1, i
        return 0, 0, 0
    if not _FM_COMMENT_OPEN.match(first):
        return 0, 0, 0
    yaml_start = 1
    if not first.rstrip().endswith("---"):
        if len(lines) < 2 or lines[1].rstrip(" \t") != "---":
            return 0, 0, 0
        yaml_start = 2
    for i in range(yaml_start, len(lines)):
        line = lines[i].rstrip(" \t")
        if _FM_COMMENT_CLOSE.match(line) and line.startswith("---"):
            return i + 1, yaml_start, i
        if line == "---" and i + 1 < len(lines) and _FM_COMMENT_CLOSE.match(lines[i + 1].rstrip(" \t")):
            return i + 2, yaml_start, i
        if "-->" in line:
            break
    return 0, 0, 0


def read_front_matter(lines: list[str], span: Span, path: str) -> tuple[dict, list[Diagnostic]]:
    """The YAML mapping of the front matter at ``span`` in ``lines`` of the file ``path``.

    ``{}`` without front matter or when it is empty. Invalid YAML, YAML nested too deep to read,
    or YAML that is not a mapping, gives ``{}`` and an error naming the line. A YAML alias gives
    ``{}`` and a ``file-refused`` warning at its line: the caller leaves the whole file out. A date
    that does not exist (``2026-02-30``) is kept as its text, for the reader of its key to report.
    Never raises on content.
    """
    end, a, b = span
    if not end:
        return {}, []
    if lines[0].rstrip(" \t") == "+++":
        return _read_toml(lines, span, path)
    try:
        data = yaml.load("\n".join(lines[a:b]), Loader=_FrontMatterLoader) if b > a else None
    except AliasRefused as exc:
        msg = f"{exc.problem} (aliases can make a few lines expand to billions of values): refused, left out of the site"
        return {}, [Diagnostic(path, a + exc.problem_mark.line + 1, msg, DiagnosticCode.FILE_REFUSED)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = a + (mark.line if mark else 0) + 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return {}, [Diagnostic(path, line, f"front matter is not valid YAML: {problem}", DiagnosticCode.FRONT_MATTER)]
    except RecursionError:  # PyYAML composes nested collections recursively
        msg = "front matter nested too deep to read (lists or mappings inside each other)"
        return {}, [Diagnostic(path, a + 1, msg, DiagnosticCode.FRONT_MATTER)]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        msg = "front matter is not a mapping of keys to values"
        return {}, [Diagnostic(path, a + 1, msg, DiagnosticCode.FRONT_MATTER)]
    return data, []


def _read_toml(lines: list[str], span: Span, path: str) -> tuple[dict, list[Diagnostic]]:
    """:func:`read_front_matter` of Hugo's TOML front matter (``+++``): its table, or ``{}`` and an
    error naming the line where it is not valid TOML."""
    _, a, b = span
    try:
        return tomllib.loads("\n".join(lines[a:b])), []
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+)", str(exc))
        line = a + (int(where[1]) if where else 1)
        problem = str(exc).split(" (at ")[0]
        return {}, [Diagnostic(path, line, f"front matter is not valid TOML: {problem}", DiagnosticCode.FRONT_MATTER)]


def _key_line(lines: list[str], a: int, b: int, key: str) -> int | None:
    """1-based line of ``key:`` (YAML) or ``key =`` (TOML) in ``lines[a:b]``, if any."""
    for i in range(a, b):
        if re.match(rf"^{key}\s*[:=]", lines[i]):
            return i + 1
    return None


def per_file_date(
    lines: list[str], span: Span, path: str, fm: dict, order: str
) -> tuple[dt.date | None, int | None, list[Diagnostic]]:
    """Date and countdown of a one-entry file without header lines: the front matter's
    ``date`` (``fm``, read from ``span`` of ``lines``; of a mapping, as Material's blog writes
    ``date: {created: 2025-02-01, updated: 2025-02-03}``, its ``created``), else a year-first date
    starting the file name of ``path`` (:data:`DATE_STEM`); the countdown from ``countdown``. ``None`` date if neither
    gives one. Bad values are errors naming their line. Never raises on content.
    """
    diagnostics = []
    date = None
    if "date" in fm:
        value = fm["date"]
        if isinstance(value, dict) and "created" in value:  # Material's blog: date: {created: ..., updated: ...}
            value = value["created"]
        if isinstance(value, dt.datetime):
            date = value.date()
        elif isinstance(value, dt.date):
            date = value
        else:
            try:
                if isinstance(value, (dict, list)):
                    raise ValueError("not a scalar")
                try:
                    date = dateparser.isoparse(str(value)).date()
                except ValueError:
                    date = dateparser.parse(str(value), dayfirst=order == "dmy").date()
            except (ValueError, OverflowError):
                line = _key_line(lines, span[1], span[2], "date") or max(span[1], 1)
                msg = (f"front matter date {value!r} is not a date" if not isinstance(value, dict) else
                       "front matter date is a mapping without `created` (Material's blog writes "
                       "`date: {created: 2025-02-01}`), not a date")
                diagnostics.append(Diagnostic(path, line, msg, DiagnosticCode.INVALID_DATE))
    if date is None:
        m = DATE_STEM.match(Path(path).name)
        if m:
            try:
                date = dt.date(int(m["y"]), int(m["m"]), int(m["d"]))
            except ValueError:
                msg = f"file name date {m[0]} is not a date"
                diagnostics.append(Diagnostic(path, 1, msg, DiagnosticCode.INVALID_DATE))
    countdown = None
    if date is not None and "countdown" in fm:
        value = fm["countdown"]
        if isinstance(value, int) and not isinstance(value, bool):
            countdown = value
        elif isinstance(value, str) and re.fullmatch(r"[ \t]*[-+]?\d{1,9}[ \t]*", value):
            countdown = int(value)
        try:  # the target date, date + countdown, must be a date too
            if countdown is not None:
                date + dt.timedelta(days=countdown)
        except OverflowError:
            countdown = None
        if countdown is None:
            line = _key_line(lines, span[1], span[2], "countdown") or max(span[1], 1)
            msg = f"front matter countdown {value!r} is not a whole number of days that gives a target date"
            diagnostics.append(Diagnostic(path, line, msg, DiagnosticCode.FRONT_MATTER))
    return date, countdown, diagnostics


def front_matter_target(fm: dict, fm_text: str, path: str) -> tuple[dt.date | None, list[Diagnostic]]:
    """The target date that the front matter ``fm`` (whose text is ``fm_text``, in the
    file ``path``) gives: ``target_date:`` or ``target:``, a date or YYYY-MM-DD text.
    A value that is not a date is an error naming its line. Never raises on content.
    """
    diagnostics = []
    for key in ("target_date", "target"):
        if key not in fm:
            continue
        value = fm[key]
        if isinstance(value, dt.datetime):
            return value.date(), diagnostics
        if isinstance(value, dt.date):
            return value, diagnostics
        try:
            return dateparser.isoparse(str(value)).date(), diagnostics
        except ValueError:
            lines = fm_text.split("\n")
            line = _key_line(lines, 0, len(lines), key) or 1
            msg = f"front matter {key} {value!r} is not a date (YYYY-MM-DD)"
            diagnostics.append(Diagnostic(path, line, msg, DiagnosticCode.FRONT_MATTER))
    return None, diagnostics


_TITLE_HEADING = re.compile(r"^[ ]{0,3}#[ \t]+(?P<title>.*?)(?:[ \t]+#+)?[ \t]*$")


def title_heading(lines: list[str]) -> tuple[int, str] | None:
    """The index and text of ``lines``' first line when it is a level-one ATX heading (blank
    lines before it skipped): ``# Tensor cores on Hopper``, the title of a post written for
    Material's blog, which takes a post's title from it when the front matter has none
    (https://squidfunk.github.io/mkdocs-material/plugins/blog/). ``None`` otherwise."""
    for i, line in enumerate(lines):
        if line.strip():
            m = _TITLE_HEADING.match(line)
            return (i, m["title"]) if m and m["title"] else None
    return None
