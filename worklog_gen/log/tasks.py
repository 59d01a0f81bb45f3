"""Tasks: lines of an entry that report work, with a status marker.

A line (outside code blocks) is a task when it carries a *status marker*:

* ``Done`` is a marker when it stands as its own clause: after `` - `` (a dash with
  a space before it), ``;``, ``.``, ``!``, ``(`` or ``->``, and followed by the end
  of the line or by ``;`` ``.`` ``,`` ``!`` ``)``. So ``... advice - Done``,
  ``Finish Einsum today; - Done``, ``mid-term; Done.``, ``format. Done;``,
  ``Kafka. (Done, edits pending)`` are done, while ``Done two dry runs, ...``,
  ``Done with pre-midterm``, ``Presentation done and did well`` and ``I have done
  two dry runs`` are prose.
* ``Next`` is a *carried* marker in the same positions, but not before a comma
  (``Next, MatMul in Triton`` and ``Next:`` start sentences; ``- Next;`` is a marker).
* ``-> Tmr``, ``->Tmr`` (also ``→``, ``Tomorrow``) is carried.
* A GitHub checkbox ``- [ ]`` is open, ``- [x]`` done.
* A list item that starts with an outliner's keyword, in capitals, as Logseq and Org mode write
  them (https://docs.logseq.com/#/page/tasks): ``- TODO swizzle the program ids`` (``DOING``,
  ``NOW``, ``LATER``, ``WAITING``, ``WAIT``) is open, ``- DONE tiled matmul`` done.

Markers are case-insensitive. When a line has several, the last one wins
(``First learn, and then finish this. - Next; - Done;`` is done). :attr:`Task.text`
is the line without its list marker or checkbox and without the chain of markers
at its end (``Finish Einsum today; - Done`` gives ``Finish Einsum today``).
"""

from __future__ import annotations

import re

from worklog_gen.log.model import Task, TaskStatus

_MARKER_STATUS = {
    "done": TaskStatus.DONE,
    "next": TaskStatus.CARRIED,
    "tmr": TaskStatus.CARRIED,
    "tomorrow": TaskStatus.CARRIED,
}
_LIST_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)?")
_CHECKBOX = re.compile(r"^\[(?P<mark>[ xX])\](?:[ \t]+|$)")
KEYWORDS = "TODO|DOING|NOW|LATER|WAITING|WAIT|DONE"
"""An outliner's task keywords (Logseq's, Org mode's), as a pattern's alternatives: ``DONE`` is done."""
_KEYWORD = re.compile(rf"^(?P<word>{KEYWORDS})(?:[ \t]+|$)")


def status_markers(text: str) -> list[tuple[int, int, TaskStatus]]:
    """The status markers in ``text`` as ``(start, end, status)``, in order.

    ``start`` includes the separator before the marker word (`` - ``, ``;``, ``(``,
    ``->``), ``end`` is the end of the word. The rules are in the module docstring.
    """
    low = text.lower()
    if len(low) != len(text):  # "İ".lower() is two characters: keep offsets aligned
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    found = []
    for word, status in _MARKER_STATUS.items():
        p = low.find(word)
        while p != -1:
            start = _marker_start(text, p, word)
            if start is not None:
                found.append((start, p + len(word), status))
            p = low.find(word, p + 1)
    found.sort()
    return found


def _marker_start(text: str, p: int, word: str) -> int | None:
    """Start of the marker whose word ``word`` is at ``text[p:]``, with its separator; ``None`` if it is prose."""
    q = p + len(word)
    while q < len(text) and text[q] in " \t":
        q += 1
    if q < len(text) and text[q] not in (";.!)" if word == "next" else ";.,!)"):
        return None
    s = p
    while s > 0 and text[s - 1] in " \t":
        s -= 1
    if s == 0:
        return None
    c = text[s - 1]
    if c == "\u2192":
        return s - 1
    if c == ">" and text[s - 2 : s] == "->":
        return s - 2
    if word in ("tmr", "tomorrow"):
        return None
    if c in ";.!(":
        return s - 1
    if c in "-\u2013\u2014" and s >= 2 and text[s - 2].isspace():
        return s - 1
    return None


def parse_task(line: str, lineno: int = 0) -> Task | None:
    """The task a line reports, or ``None`` when it has no status marker or checkbox.

    See the module docstring for the markers. ``lineno`` is stored as :attr:`Task.line`.
    """
    prefix = _LIST_PREFIX.match(line)
    rest = line[prefix.end() :] if prefix else line
    status = None
    item = bool(prefix and prefix.group().strip())
    box = _CHECKBOX.match(rest) if item else None
    if box:
        status = TaskStatus.OPEN if box["mark"] == " " else TaskStatus.DONE
        rest = rest[box.end() :]
    elif item and (keyword := _KEYWORD.match(rest)):
        status = TaskStatus.DONE if keyword["word"] == "DONE" else TaskStatus.OPEN
        rest = rest[keyword.end() :]
    markers = status_markers(rest)
    if markers:
        status = markers[-1][2]
    if status is None:
        return None
    text = _strip(rest, markers)
    if not text.strip():
        return None
    return Task(text.strip(), status, lineno)


def strip_markers(text: str) -> str:
    """``text`` without the chain of status markers that ends it, nor the separators
    before them: ``"Finish Einsum today; - Done"`` -> ``"Finish Einsum today"``.
    Markers inside the text stay. The rule :func:`parse_task` uses for :attr:`Task.text`."""
    return _strip(text, status_markers(text))


def _strip(text: str, markers: list[tuple[int, int, TaskStatus]]) -> str:
    markers = list(markers)
    while markers and not text[markers[-1][1] :].strip(" \t;.,!)"):
        text = text[: markers[-1][0]]
        markers.pop()
    return text.rstrip(" \t;,-\u2013\u2014")


def entry_tasks(lines: list[str], first_line: int, code_lines: set[int]) -> list[Task]:
    """The tasks of one entry body ``lines`` whose first line is line ``first_line``
    (1-based) of its file, in line order; the lines in ``code_lines`` (0-based within
    ``lines``: code and HTML blocks) are not tasks."""
    found = []
    for i, line in enumerate(lines):
        if (_HINT.search(line.lower()) or _KEYWORD_ITEM.match(line)) and i not in code_lines \
                and (task := parse_task(line, first_line + i)):
            found.append(task)
    return found


_HINT = re.compile(r"(?:done|next|tmr|tomorrow)[ \t]*(?:[;.,!)]|$)|\[[ x]\]")
_KEYWORD_ITEM = re.compile(r"[ \t>]*(?:[-+*]|\d{1,9}[.)])[ \t]+(?:TODO|DOING|NOW|LATER|WAIT|DONE)")
"""What every line :func:`parse_task` reads as a task holds, lower-cased: a checkbox,
or a marker word followed by the end of the line or one of ``;.,!)``; else, as written, it is a
list item that starts with an outliner's keyword (:data:`_KEYWORD_ITEM`). A cheap test
that skips most lines (searched without ``re.IGNORECASE``, which is twice as slow)."""
