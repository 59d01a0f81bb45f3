"""Add an entry to a worklog: append a header line in the log's own style.

With ``check --fix`` (:mod:`worklog_gen.log.fix`), the one place that writes to the author's
files; everything else only reads them. Two ``worklog-gen new`` run at once on one log (a shell
alias and an editor hook, say) take turns: each holds a lock on the log's folder while it reads
the log and appends, so the second sees the first's entry (and refuses the same day twice, or a
day before it). ``check --fix`` holds the same lock (:func:`log_lock`) from reading the log to
writing its repairs, so a ``new`` waits for it rather than append to a file about to be replaced.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from worklog_gen.log.shapes import SHAPES, HeaderStyle, format_header, header_style
from worklog_gen.log.model import DateOrder
from worklog_gen.log.files import Exclusion
from worklog_gen.log.front_matter import DATE_STEM
from worklog_gen.log.parse import load


LOCK_TIMEOUT_S = 30
"""How long ``new`` waits for another ``new`` on the same log, in seconds: appending takes well
under one."""


def _lock(path: Path) -> FileLock:
    """The lock of the log at ``path`` (a file or folder): one per folder, kept in the temporary
    folder rather than beside the author's files (where it would show in their repository)."""
    folder = (path if path.is_dir() else path.parent).resolve()
    key = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return FileLock(Path(tempfile.gettempdir()) / f"worklog-gen-new-{key}.lock", timeout=LOCK_TIMEOUT_S, mode=0o666)


@contextmanager
def log_lock(paths: Iterable[str | Path]) -> Iterator[None]:
    """Hold the lock of each log at ``paths`` (files or folders; see :func:`_lock`), each folder's
    once, taken in one order so that two holders of several never wait on each other.

    Raises:
        filelock.Timeout: another ``new`` or ``check --fix`` held one for :data:`LOCK_TIMEOUT_S` s.
    """
    locks = {lock.lock_file: lock for lock in (_lock(Path(p)) for p in paths)}
    with ExitStack() as stack:
        for name in sorted(locks):
            stack.enter_context(locks[name])
        yield


def append_entry(path: str | Path, date: dt.date, *, date_order: DateOrder = "auto",
                 exclude: Exclusion | None = None) -> tuple[Path, str]:
    """Append the header line of a new entry for ``date`` to the log at ``path``, in the shape
    and style of the file's last header.

    A T-minus header's countdown is ``target_date - date`` in days (the log's
    :attr:`~worklog_gen.log.model.Worklog.target_date`), written in the style of the file's last
    header (2- or 4-digit year, month/day order, spacing). After a progress heading, the next
    one (``## November 25 - Day 26 of ML Systems``), and after a date line, the next date
    (:meth:`~worklog_gen.log.shapes.HeaderShape.next_header`): neither needs a target date.
    ``path`` is a log file, or a folder: then the file holding the newest entry. In a folder of
    one-entry files (no header lines), a new file ``<date>.md`` (its date written as the newest
    file's name writes one: ``2025_12_10.md`` after ``2025_12_09.md``) holding the header line is
    written next to the newest one; in a log with no target date (Obsidian's daily notes), an empty one,
    its name its date (the header returned is ``""``). A blank line separates the header from the
    text before it; the file's line ends (LF or CRLF) are kept and nothing before the end of the
    file is rewritten.

    The log is read and written under a lock on its folder (see the module docstring); the files
    ``exclude`` (the plugin's option) leaves out are no part of it.

    Returns the file written and the header line.

    Raises:
        ValueError: ``date`` already has an entry, is before the newest entry, no
            target date is known for a T-minus header (no countdown, no front matter ``target``), ``path``
            is a folder without entries, or another ``new`` held the log's lock for
            :data:`LOCK_TIMEOUT_S` seconds.
        FileNotFoundError: ``path`` does not exist.
        OSError: the file cannot be written.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    try:
        with _lock(path):
            return _append(path, date, date_order, exclude)
    except Timeout as exc:
        raise ValueError(f"{path}: another worklog-gen new held the log for {LOCK_TIMEOUT_S} s; try again") from exc


def _append(path: Path, date: dt.date, date_order: DateOrder, exclude: Exclusion | None) -> tuple[Path, str]:
    """:func:`append_entry` once its lock is held."""
    log = load(path, date_order=date_order, exclude=exclude)
    for e in log.entries:
        if e.date == date:
            raise ValueError(f"{e.source}: {date} already has an entry{f' ({e.header})' if e.header else ''}: "
                             "write that day's notes under it; new adds a day that has none (tomorrow's, or "
                             "--date YYYY-MM-DD)")
    newest = log.entries[-1] if log.entries else None
    if newest is not None and date < newest.date:
        raise ValueError(
            f"{date} is before the newest entry {newest.date} ({newest.source}); add it by hand where it belongs"
        )
    if path.is_file():
        file = path
    elif newest is not None:
        file = Path(newest.path)
    else:
        raise ValueError(f"{path}: no entry yet to find the log file by; name the file")
    in_file = [e for f in log.files if f.path == str(file) for e in f.entries if e.header]
    shape = next((s for s in SHAPES if in_file and s.name == in_file[-1].shape), None)
    if shape is not None and shape is not SHAPES[0]:  # a progress heading or a date line, after the file's last
        header = shape.next_header(in_file[-1].header, date, log.date_order)
    elif newest is not None and not newest.header and not path.is_file() and log.target_date is None:
        header = ""  # a folder of day files without headers (Obsidian's daily notes): the file's name is its date
    else:
        if log.target_date is None:
            raise ValueError(f"{path}: no target date known: no entry has a countdown")
        style = header_style(in_file[-1].header, log.date_order) if in_file else HeaderStyle(order=log.date_order)
        header = format_header(date, (log.target_date - date).days, style=style)
    if newest is not None and not newest.header and not path.is_file():
        named = DATE_STEM.match(file.name)  # the newest file's date separator: 2025_12_09.md in Logseq's journals
        file = file.parent / f"{date:%Y-%m-%d}.md".replace("-", named["sep"] if named else "-")
        if file.exists():
            raise ValueError(f"{file}: already exists")
        file.write_text(header + "\n" if header else "", encoding="utf-8")
        return file, header
    data = file.read_bytes()
    try:
        data.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        encoding = "cp1252"
    nl = b"\r\n" if b"\r\n" in data else b"\n"
    body = data.rstrip(b"\r\n")
    trailing = data[len(body) :].replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n")
    prefix = b"" if not body.strip() else nl * max(0, 2 - trailing)
    with file.open("ab") as fh:
        fh.write(prefix + header.encode(encoding, errors="replace") + nl)
    return file, header
