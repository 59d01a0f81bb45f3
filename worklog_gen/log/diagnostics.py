"""What the parser and the linter say about the author's text: severities, codes, diagnostics.

Every problem has a :class:`DiagnosticCode`, listed once here with its severity:

- **error**: the log cannot be read as written (``worklog-gen check`` exits 1, the build stops);
- **warning**: something the author must act on (``mkdocs build --strict`` fails on it): a date
  that cannot be read, a missing image, a year-less heading with no year set, text repaired from
  damage (``worklog-gen check --fix`` writes the repair back), a file or path refused;
- **info**: a note about style or habits that nobody need change (a bare URL made a link, a missing
  or repeated ``Day N``, an empty entry): listed by ``check`` under its own heading and in MkDocs'
  INFO log, never failing a build.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(str, enum.Enum):
    """How much a diagnostic matters (see the module docstring)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """0 for an error, 1 for a warning, 2 for a note: the order diagnostics of one line are listed in."""
        return list(Severity).index(self)


class DiagnosticCode(str, enum.Enum):
    """Every kind of diagnostic, with its severity and what it means; the README's table is this one."""

    def __new__(cls, value: str, severity: Severity, meaning: str):
        member = str.__new__(cls, value)
        member._value_ = value
        member.severity = severity
        member.meaning = meaning
        return member

    def __str__(self) -> str:
        return self.value

    # errors: the log cannot be read as written
    INVALID_DATE = ("invalid-date", Severity.ERROR, "a header's or front matter's date does not exist (02/30/2025)")
    DATE_ORDER = ("date-order", Severity.ERROR, "month-first and day-first dates in one log")
    DUPLICATE_DAY = ("duplicate-day", Severity.ERROR, "the same day twice in one file")
    FRONT_MATTER = ("front-matter", Severity.ERROR, "front matter that is not a YAML mapping, or a bad value in it")
    NO_ENTRIES = ("no-entries", Severity.ERROR, "a file, or a whole log, in which no entry is recognised")
    # warnings: the author must act
    TARGET_DATE = ("target-date", Severity.WARNING,
                   "a countdown that disagrees with the target date (an error in `check`)")
    TARGETS = ("targets", Severity.WARNING, "two files that name different target dates")
    YEAR = ("year", Severity.WARNING, "progress-log headings without a year, and no `year` set")
    WEEKDAY = ("weekday", Severity.WARNING, "a heading's weekday that is not its date's (`## Tuesday, 25 November` of 2026)")
    OUT_OF_ORDER = ("out-of-order", Severity.WARNING, "a day written before one it follows (`check` only)")
    ENCODING = ("encoding", Severity.WARNING, "bytes that are not UTF-8, decoded as another encoding")
    MOJIBAKE = ("mojibake", Severity.WARNING, "UTF-8 text once decoded as Windows-1252 (`Eï¬ƒcient`), repaired")
    BACKWARDS_LINK = ("backwards-link", Severity.WARNING, "a link written `[url](title)`, repaired")
    SHORTCODE = ("shortcode", Severity.WARNING,
                 "a Hugo shortcode or Jekyll Liquid (`{% twitter %}`) this tool does not know, left as text")
    MISSING_IMAGE = ("missing-image", Severity.WARNING, "a figure or image whose file is not found")
    MISSING_FILE = ("missing-file", Severity.WARNING, "a link to a file (`[notes](notes.pdf)`) that is not found")
    UNSAFE_PATH = ("unsafe-path", Severity.WARNING,
                   "a path that leads outside its folder (`..`, an absolute path, a symlink), refused")
    FILE_REFUSED = ("file-refused", Severity.WARNING,
                    "a file that is not text, too large or too deeply nested to read, or whose front matter holds a "
                    "YAML alias, refused")
    NOT_A_HEADER = ("not-a-header", Severity.WARNING,
                    "a line that starts like an entry header (`Tue 12/09/25 (T - 154)`), or holds only a date, but is "
                    "not a header of its file (`Jan 7` without its year, `2025-01-20` in a T-minus log), read as text")
    UNSAFE_LINK = ("unsafe-link", Severity.WARNING,
                   "a link that runs script (`javascript:`, in any spelling), dropped from the page")
    # info: notes about style and habits
    LINE_ENDS = ("line-ends", Severity.INFO, "CRLF or CR line ends, or a byte-order mark, read as LF")
    BARE_URL = ("bare-url", Severity.INFO, "a URL alone on its line, made a link")
    WEEKDAY_YEAR = ("weekday-year", Severity.INFO,
                    "progress-log headings without a year, and no `year` set, whose weekdays give it "
                    "(`## Tuesday, 25 November`: 2025)")
    EMPTY_ENTRY = ("empty-entry", Severity.INFO, "an entry with no text, kept as an empty entry")
    WIKILINK = ("wikilink", Severity.INFO,
                "an Obsidian wikilink (`[[Triton notes]]`) that finds no file in the worklog folder (a note not "
                "written yet, or one left out as no part of the log), shown as its text; a Logseq block reference "
                "(`((uuid))`) that names no block, shown as written")
    DAY_NUMBER = ("day-number", Severity.INFO, "a progress log's `Day N` missing or repeated")
    SAME_DAY = ("same-day", Severity.INFO, "a day written in two files, shown on one page")

    @property
    def repair(self) -> bool:
        """A repair of damaged text that ``worklog-gen check --fix`` writes back to the file."""
        return self in REPAIRS


REPAIRS = frozenset({DiagnosticCode.MOJIBAKE, DiagnosticCode.BACKWARDS_LINK, DiagnosticCode.ENCODING,
                     DiagnosticCode.LINE_ENDS})
"""The codes of repairs of damage that ``check --fix`` writes back. A bare URL made a link is the
author's style, not damage: the site links it, and the file keeps it as written."""


@dataclass(frozen=True)
class Diagnostic:
    """A problem found in the author's text, located at ``path:line`` (1-based). ``severity``
    defaults to the code's."""

    path: str
    line: int
    message: str
    code: DiagnosticCode
    severity: Severity | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.code, DiagnosticCode):
            object.__setattr__(self, "code", DiagnosticCode(self.code))
        severity = self.code.severity if self.severity is None else Severity(self.severity)
        object.__setattr__(self, "severity", severity)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.severity.value}: {self.message}"
