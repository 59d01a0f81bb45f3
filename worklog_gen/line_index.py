"""Find the lines of a text that hold something, at C speed.

The parser's passes (repairs, syntax, tasks, headers) each need the few lines of a
large log that hold a character or a word; testing every line in Python costs more
than the rest of the pass. :class:`LineIndex` joins the lines once, finds matches
with ``str.find``, ``re`` or ``bytes.translate`` over the whole text, and maps each
offset back to its line.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Sequence


class LineIndex:
    """``lines`` joined, with each line's start offset, to find lines with ``str.find``
    and ``re`` at C speed instead of testing each line in Python.

    ``text`` (``"\\n".join(lines)``) and ``starts`` may be given when the caller has them.
    """

    def __init__(
        self, lines: list[str], *, text: str | bytes | None = None, starts: list[int] | None = None
    ) -> None:
        self.lines = lines
        self.text = "\n".join(lines) if text is None else text
        self.starts = [0, *itertools.accumulate(map((1).__add__, map(len, lines)))] if starts is None else starts
        self._one_byte: bytes | None = None

    def lower(self) -> LineIndex:
        """The same index over the lower-cased lines."""
        low = self.text.lower()
        if len(low) != len(self.text):
            # Lower-casing a few characters (such as "İ") changes the length; keep
            # those lines as they are, so that offsets line up.
            low = "\n".join(line.lower() if len(line.lower()) == len(line) else line for line in self.lines)
        return LineIndex(self.lines, text=low, starts=self.starts)

    def ascii_lower(self) -> LineIndex:
        """The same index over the lines as bytes with the ASCII letters lower-cased, for
        ``bytes`` needles and patterns of ASCII characters; offsets are unchanged.

        Each character becomes one byte (:meth:`one_byte_text`), so a match of an ASCII
        needle is a match in the text. Much faster than :meth:`lower` on text that is
        not all ASCII, and exact for ASCII letters: no other character lower-cases to
        one of ``a``-``z`` but ``K`` (U+212A KELVIN SIGN, to ``k``) and ``İ`` (U+0130,
        to ``i`` and a combining dot), which are left as they are.
        """
        return LineIndex(self.lines, text=self.one_byte_text().lower(), starts=self.starts)

    def one_byte_text(self) -> bytes:
        """The text with one byte a character: Latin-1, ``?`` for the characters beyond
        it (so a ``?`` may stand for another character). Computed once."""
        if isinstance(self.text, bytes):
            return self.text
        if self._one_byte is None:
            self._one_byte = self.text.encode("latin-1", "replace")
        return self._one_byte

    def holding(self, chars: str) -> list[int]:
        """Sorted indices of the lines holding any of ``chars`` (Latin-1 characters).

        Found without a search per line: one ``bytes.translate`` of
        :meth:`one_byte_text` keeps only those characters and the line breaks, and
        each run of kept characters names its line.

        Raises:
            ValueError: ``chars`` holds ``?`` (it stands for characters beyond Latin-1)
                or a character beyond Latin-1.
        """
        if "?" in chars or max(chars, default="\0") > "\xff":
            raise ValueError(f"holding() finds Latin-1 characters other than '?', not {chars!r}")
        kept = self.one_byte_text().translate(None, _all_bytes_but(chars + "\n"))
        found = []
        others = 0  # kept characters before the run, so that start - others counts the line breaks
        for run in _RUN.finditer(kept):
            found.append(run.start() - others)
            others += run.end() - run.start()
        return found

    def line_of(self, pos: int) -> int:
        """0-based index of the line holding offset ``pos``."""
        return bisect.bisect_right(self.starts, pos) - 1

    def containing(self, needles: Sequence[str] | Sequence[bytes]) -> list[int]:
        """Sorted indices of the lines holding any of ``needles``."""
        found: set[int] = set()
        for needle in needles:
            pos = self.text.find(needle)
            while pos != -1:
                i = self.line_of(pos)
                found.add(i)
                pos = self.text.find(needle, self.starts[i + 1])
        return sorted(found)

    def matching(self, pattern: re.Pattern) -> list[int]:
        """Sorted indices of the lines where ``pattern`` matches (anywhere in the line)."""
        found = []
        pos = 0
        while (m := pattern.search(self.text, pos)) is not None:
            i = self.line_of(m.start())
            found.append(i)
            pos = self.starts[i + 1]
        return found


@functools.cache
def _all_bytes_but(chars: str) -> bytes:
    """Every byte value except those of the Latin-1 ``chars`` (a ``delete`` argument)."""
    return bytes(b for b in range(256) if chr(b) not in chars)


_RUN = re.compile(rb"[^\n]+")


def lines_containing(lines: list[str], needles: Sequence[str], *, lower: bool = False) -> list[int]:
    """Sorted indices of the lines holding any of ``needles`` (compared in lower case with ``lower``)."""
    index = LineIndex(lines)
    return (index.lower() if lower else index).containing(needles)
