"""The author's files: which ones make the log, and which are refused before they are read.

A worklog is a file or a folder of ``*.md`` files (hidden files and folders left out). Before
a file is parsed it must be a text file the site can render in reasonable time, inside the
worklog folder; otherwise it is *refused*: a warning names it and says why, and the site leaves
it out (the file itself is untouched). The limits, and why:

- :data:`MAX_FILE_BYTES`: a decade of daily entries is a few megabytes; a 50 MB log took over a
  minute and half a gigabyte to generate;
- NUL bytes: not a text file (an image or an archive named ``.md``);
- :data:`MAX_NESTING` lists or quotes inside each other: Python-Markdown, which MkDocs renders
  with, takes time that grows with the square of the depth (0.3 s for 200 levels on 200 kB;
  a 5,000-deep file kept a build busy for over 10 CPU-minutes);
- a symbolic link that leads outside the worklog folder (:mod:`worklog_gen.paths`), a loop of
  symbolic links, or one that leads to nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pathspec
from markdown_it import MarkdownIt

from worklog_gen.log import repair
from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode
from worklog_gen.paths import OutsideFolder, SymlinkLoop, inside

MAX_FILE_BYTES = 16 * 2**20
"""The largest worklog file read, 16 MiB."""
MAX_NESTING = 32
"""The deepest nesting of lists and quotes read."""
_CONTAINER_PREFIX = re.compile(r"(?:[ \t>]|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t]))*")
"""What can open a list or quote at the start of a line: indentation, ``>``, list markers."""
_CONTAINERS = frozenset({"bullet_list_open", "ordered_list_open", "blockquote_open"})


class Exclusion:
    """The files of a worklog folder that the plugin's ``exclude`` option leaves out: gitignore-style
    patterns relative to the folder, as MkDocs' ``exclude_docs`` (``templates/``, ``private/**``,
    ``*.draft.md``). An excluded file is no file of the log, is never published (linked or shown
    as an image, it is a file not found), and no wikilink finds it."""

    def __init__(self, folder: str | Path, spec: pathspec.PathSpec | None = None):
        self.folder = Path(folder).resolve()
        self.spec = spec

    def __call__(self, path: str | Path) -> bool:
        """Whether ``path`` (a file in the folder, or below it once resolved) is left out."""
        if self.spec is None:
            return False
        for candidate in (Path(os.path.abspath(path)), Path(path).resolve()):
            try:
                rel = candidate.relative_to(self.folder)
            except ValueError:
                continue
            return self.spec.match_file(rel.as_posix())
        return False


def worklog_files(paths: list[str | Path] | str | Path, exclude: Exclusion | None = None) -> list[Path]:
    """The ``*.md`` files named by ``paths``: files as given, folders searched
    recursively (sorted, skipping hidden files and folders, and those ``exclude`` leaves out), each
    file once. A symbolic link in a folder that is no file (a loop, or a link to nothing) is listed
    too, so that :func:`read_log_file` refuses it with a warning rather than leave it out without a word.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(
                q
                for q in p.rglob("*.md")
                if (q.is_file() or q.is_symlink()) and not any(part.startswith(".") for part in q.relative_to(p).parts)
                and not (exclude and exclude(q))
            )
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    seen: set[Path] = set()
    unique = []
    for q in found:
        try:
            key = q.resolve()
        except (RuntimeError, OSError):  # a loop of symbolic links (RuntimeError before Python 3.13)
            key = q.absolute()
        if key not in seen:
            seen.add(key)
            unique.append(q)
    return unique


def display_name(path: Path, root: str | Path | None) -> str:
    """``path`` relative to ``root`` when it lies below it (as written: a link keeps its own name),
    else as given."""
    if root is not None:
        try:
            return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
        except ValueError:
            pass
    return str(path)


def nesting(text: str) -> tuple[int, int]:
    """The deepest nesting of lists and block quotes in ``text`` (markdown-it-py's block parse)
    and the 1-based line where it first passes :data:`MAX_NESTING` (else where it is reached);
    ``(0, 0)`` without any. A quick look at the lines first: only text with a line whose
    container prefix (indentation, ``>`` and list markers such as ``- - -`` or ``1. 1.``, which
    nest on one line) is :data:`MAX_NESTING` characters or more is parsed."""
    if not any(_CONTAINER_PREFIX.match(line).end() >= MAX_NESTING for line in text.split("\n")):
        return 0, 0
    md = MarkdownIt("commonmark", {"maxNesting": 4 * MAX_NESTING + 8}).disable(["inline"], ignoreInvalid=True)
    depth, deepest, where = 0, 0, 0
    for token in md.parse(text):
        if token.type in _CONTAINERS:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest <= MAX_NESTING + 1:
                    where = token.map[0] + 1 if token.map else 0
        elif token.type.replace("_close", "_open") in _CONTAINERS and token.nesting == -1:
            depth -= 1
    return deepest, where


def read_log_file(path: Path, name: str, folder: Path | None) -> tuple[str | None, list[Diagnostic]]:
    """The text of one worklog file (decoded, :func:`worklog_gen.log.repair.decode_bytes`) and the
    diagnostics of reading it; ``None`` and a warning naming the file when it is refused (see
    the module docstring). ``folder`` is the worklog folder the file must stay in (``None``: a
    file named on its own).

    Raises:
        OSError: the file cannot be read.
    """
    if folder is not None:
        try:  # absolute: ``path`` is relative to the current folder, not to ``folder``
            inside(path.absolute(), folder)
        except OutsideFolder as exc:
            where = ("a loop of symbolic links" if isinstance(exc, SymlinkLoop)
                     else f"a link to {path.resolve()}, outside the worklog folder {folder}")
            return None, [Diagnostic(name, 1, f"{where}: refused, left out of the site", DiagnosticCode.UNSAFE_PATH)]
    if path.is_symlink() and not path.exists():
        msg = f"a symbolic link to {os.readlink(path)}, which does not exist: left out of the site"
        return None, [Diagnostic(name, 1, msg, DiagnosticCode.FILE_REFUSED)]
    if not path.is_file():
        msg = f"a symbolic link to {os.readlink(path)}, which is no file: left out of the site"
        return None, [Diagnostic(name, 1, msg, DiagnosticCode.FILE_REFUSED)]
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        msg = (f"{size / 2**20:.1f} MiB, more than the {MAX_FILE_BYTES // 2**20} MiB a worklog file may be: "
               "refused, left out of the site (split it into several files)")
        return None, [Diagnostic(name, 1, msg, DiagnosticCode.FILE_REFUSED)]
    data = path.read_bytes()
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        msg = "holds NUL bytes: not a text file; refused, left out of the site"
        return None, [Diagnostic(name, line, msg, DiagnosticCode.FILE_REFUSED)]
    text, diagnostics = repair.decode_bytes(data, name)
    depth, line = nesting(text)
    if depth > MAX_NESTING:
        msg = (f"lists or quotes nested {depth} deep (at most {MAX_NESTING}): Python-Markdown, which renders the "
               "site, would take minutes on it; refused, left out of the site")
        return None, [Diagnostic(name, line, msg, DiagnosticCode.FILE_REFUSED)]
    return text, diagnostics
