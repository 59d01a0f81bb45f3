"""``worklog-gen check --fix``: the parser's repairs, written back into the author's files.

The parser repairs damaged text as it reads it (:mod:`worklog_gen.log.repair`: mojibake,
backwards links, CRLF line ends and a byte-order mark, bytes that are not UTF-8) and reports
each repair (:data:`~worklog_gen.log.diagnostics.REPAIRS`; a bare URL it links is kept as written). :func:`plan` turns them into one :class:`FileFix` per damaged file:
the file as it is, and as the parser read it (:meth:`worklog_gen.log.model.SourceFile.reassemble`).
:func:`apply` writes it, as ruff and eslint do with ``--fix``, atomically (a temporary file in
the same folder, then one rename), in UTF-8 with LF line ends.

A fix is written only when it is lossless: the same number of lines, changed only on the lines
a repair names (line ends, a byte-order mark and the encoding aside). A file that does not pass,
that is a symbolic link, in which no entry is recognised (it may not be a log at all: random
bytes named ``.md`` decode as some encoding and would grow at each fix), or that this user may
not write (the file, or its folder, which the atomic rename needs) is never touched; its
:attr:`FileFix.refused` says why.

Nor is a file that changed after :func:`plan` read it (a line typed in an editor, a day that
``worklog-gen new`` appended): :func:`apply` reads it again just before the rename and raises
:class:`FileChanged` when its bytes differ, leaving it as it is. ``check --fix`` also holds the
lock ``new`` takes (:func:`worklog_gen.log.authoring.log_lock`) meanwhile, so a ``new`` waits.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode
from worklog_gen.log.model import Worklog
from worklog_gen.log.repair import decode_bytes

LINE_REPAIRS = frozenset({DiagnosticCode.MOJIBAKE, DiagnosticCode.BACKWARDS_LINK})
"""Repairs that change the text of the line they name."""
FILE_REPAIRS = frozenset({DiagnosticCode.LINE_ENDS, DiagnosticCode.ENCODING})
"""Repairs of the whole file's bytes (line ends, byte-order mark, encoding), not of its text."""


@dataclass
class FileFix:
    """The repairs of one file: ``before`` is its text as decoded (original line ends kept),
    ``after`` the repaired text; ``refused`` is non-empty when it must not be written."""

    path: Path
    name: str
    before: str
    after: str
    repairs: list[Diagnostic] = field(default_factory=list)
    refused: str = ""
    digest: str = ""
    """The SHA-256 of the file's bytes as :func:`plan` read them; :func:`apply` writes only over
    the same bytes (``""``: not checked)."""

    def diff(self) -> str:
        """A unified diff of the fix (``a/<name>`` to ``b/<name>``); line-end-only changes show as
        the changed lines without their ``\\r``."""
        before = self.before.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
        lines = difflib.unified_diff(before.splitlines(keepends=True), self.after.splitlines(keepends=True),
                                     f"a/{self.name}", f"b/{self.name}")
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        notes = [f"# {self.name}: {d.message}" for d in self.repairs if d.code in FILE_REPAIRS]
        return "\n".join(notes) + ("\n" if notes else "") + text


def _lines(text: str) -> list[str]:
    """Lines as CommonMark counts them: LF, CRLF and a lone CR end a line."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def plan(log: Worklog) -> list[FileFix]:
    """One :class:`FileFix` per file of ``log`` (read by :func:`worklog_gen.log.parse.load`) that a
    repair changed; each file is read again, as it is on disk now.

    Raises:
        OSError: a file cannot be read.
    """
    fixes = []
    for src in log.files:
        repairs = [d for d in log.diagnostics if d.path == src.path and d.code.repair]
        if not repairs or src.file is None:
            continue
        path = src.file
        data = path.read_bytes()
        before, _ = decode_bytes(data, src.path)
        old, new = _lines(before), src.reassemble().split("\n")
        named = {d.line for d in repairs if d.code in LINE_REPAIRS}
        for d in log.diagnostics:  # a bare URL stays as the author wrote it (only the page links it)
            if d.path == src.path and d.code is DiagnosticCode.BARE_URL and d.line not in named and d.line <= len(old):
                new[d.line - 1] = old[d.line - 1]
        after = "\n".join(new)
        fix = FileFix(path, src.path, before, after, repairs, digest=hashlib.sha256(data).hexdigest())
        changed = {i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b}
        if path.is_symlink():
            fix.refused = "a symbolic link: fix the file it points to"
        elif not src.entries:
            fix.refused = "no entry is recognised in it, so it may not be a log: fix it by hand"
        elif not _writable(path):
            fix.refused = "the file is read-only"
        elif not _writable(path.parent):
            fix.refused = f"its folder {path.parent} is read-only (the fix is written beside the file, then renamed)"
        elif len(old) != len(new):
            fix.refused = f"the repaired text has {len(new)} lines, the file {len(old)}"
        elif changed - named:
            fix.refused = f"line(s) {', '.join(map(str, sorted(changed - named)))} would change without a repair naming them"
        fixes.append(fix)
    return fixes


def _writable(path: Path) -> bool:
    """Whether this user may write ``path`` and it is not marked read-only: a file or folder with no
    write permission bit counts as read-only even for root, whom ``os.access`` lets write anything."""
    return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)


class FileChanged(Exception):
    """The file is no longer what :func:`plan` read: the fix, made from the old text, would lose
    what was written since."""


def apply(fix: FileFix) -> None:
    """Write ``fix.after`` over ``fix.path`` atomically, keeping the file's permissions, if the
    file still holds the bytes :func:`plan` read (:attr:`FileFix.digest`), compared just before
    the rename.

    Raises:
        ValueError: the fix is refused (:attr:`FileFix.refused`).
        FileChanged: the file changed since :func:`plan` read it; it is left as it is.
        OSError: the folder cannot be written; the file is then left as it was.
    """
    if fix.refused:
        raise ValueError(f"{fix.name}: not fixed: {fix.refused}")
    folder = fix.path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{fix.path.name}.", suffix=".fix", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(fix.after)
            fh.flush()
            os.fsync(fh.fileno())
        shutil.copymode(fix.path, tmp)
        if fix.digest and hashlib.sha256(fix.path.read_bytes()).hexdigest() != fix.digest:
            raise FileChanged(f"{fix.name}: not fixed: it changed while check --fix ran (nothing was "
                              "written; run check --fix again)")
        os.replace(tmp, fix.path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
