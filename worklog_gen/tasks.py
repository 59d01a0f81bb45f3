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

Markers are case-insensitive. When a line has several, the last one wins
(``First learn, and then finish this. - Next; - Done;`` is done). :attr:`Task.text`
is the line without its list marker or checkbox and without the chain of markers
at its end (``Finish Einsum today; - Done`` gives ``Finish Einsum today``).
"""

from __future__ import annotations

import bisect
import re

from worklog_gen.model import Task, TaskStatus
from worklog_gen.line_index import LineIndex

_MARKER_STATUS = {
    "done": TaskStatus.DONE,
    "next": TaskStatus.CARRIED,
    "tmr": TaskStatus.CARRIED,
    "tomorrow": TaskStatus.CARRIED,
}
_MARKER_WORDS = tuple(word.encode() for word in _MARKER_STATUS)
_AFTER_MARKER = frozenset(b";.,!)\n")
"""What follows a marker word (after spaces and tabs) unless the text ends there."""
_LIST_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)?")
_CHECKBOX = re.compile(r"^\[(?P<mark>[ xX])\](?:[ \t]+|$)")


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
    box = _CHECKBOX.match(rest) if prefix and prefix.group().strip() else None
    if box:
        status = TaskStatus.OPEN if box["mark"] == " " else TaskStatus.DONE
        rest = rest[box.end() :]
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


def entry_tasks(
    lines: list[str], bodies: list[tuple[int, int]], skip: set[int], index: LineIndex, *, line_offset: int = 0
) -> list[list[Task]]:
    """The tasks of each entry body ``lines[first:stop]``, ``(first, stop)`` in ``bodies``
    (0-based, sorted, not overlapping), in line order; lines in ``skip`` (code) are not
    tasks. ``index`` is a :class:`worklog_gen.line_index.LineIndex` of ``lines``; when
    ``lines`` is a slice of a file that starts ``line_offset`` lines into it,
    :attr:`Task.line` still counts from the file's start."""
    found: list[list[Task]] = [[] for _ in bodies]
    starts = [first for first, _ in bodies]
    for i in task_lines(index):
        k = bisect.bisect_right(starts, i) - 1
        if k < 0 or i >= bodies[k][1] or i in skip:
            continue
        task = parse_task(lines[i], i + 1 + line_offset)
        if task is not None:
            found[k].append(task)
    return found


def task_lines(index: LineIndex) -> list[int]:
    """Sorted indices of the lines that may hold a task: a checkbox (``[ ]``, ``[x]``),
    or a marker word (any case) followed, after spaces and tabs, by the end of the
    line or one of ``;.,!)`` (:func:`parse_task` decides). Every line for which
    :func:`parse_task` gives a task is among them. ``index`` indexes the lines.
    """
    low = index.ascii_lower()
    data, end = low.text, len(low.text)
    found = set()
    p = data.find(b"]")  # one byte: found at memchr speed, and rarer than a checkbox's "[" and " "
    while p != -1:
        if p >= 2 and data[p - 2] == 0x5B and data[p - 1] in b" x":  # "[ ]", "[x]"
            found.add(low.line_of(p))
        p = data.find(b"]", p + 1)
    for word in _MARKER_WORDS:
        p = data.find(word)
        while p != -1:
            q = p + len(word)
            while q < end and data[q] in b" \t":
                q += 1
            if q == end or data[q] in _AFTER_MARKER:
                found.add(low.line_of(p))
            p = data.find(word, p + 1)
    return sorted(found)
