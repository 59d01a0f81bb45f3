"""Links between the log's own files that only their own tool reads: Obsidian's wikilinks, and
the cross-references of Hugo's and Jekyll's posts, read as the markdown links they stand for.

A log kept in Obsidian (daily notes, a file per day) links its notes as ``[[2025-12-08]]``,
``[[Triton notes#Masks|the masks]]`` and shows its images as ``![[roofline.png]]`` or
``![[roofline.png|400]]``; a Hugo post links another as ``[the tree]({{< ref "warp-shuffles.md" >}})``
(or ``relref``), a Jekyll post as ``[the tree]({% post_url 2025-01-05-warp-shuffles %})`` (or
``{% link _posts/2025-01-05-warp-shuffles.md %}``). Any other renderer shows them as raw text. Each
one is found (outside code) and resolved as its tool resolves it (https://help.obsidian.md/links,
https://gohugo.io/methods/shortcode/ref/, https://jekyllrb.com/docs/liquid/tags/#linking-to-posts):
a name without a suffix is a note (``.md``, or a Hugo page bundle's ``index.md``), looked for
beside the linking file, then from the worklog folder's root, then by its file name anywhere in
that folder (the nearest first). It is then the markdown link or image it stands for, to that file
by its path relative to the linking file (``[the masks](<Triton notes.md#masks>)``,
``![roofline.png](<attachments/roofline.png>)``; a cross-reference, inside its link, the path
alone), so the rest of the site treats it as any other link to a file beside the log: a note of the
log leads to its page, an image or file is published. A size after an image (``|400``,
``|400x300``) is dropped; an embedded note (``![[Note]]``) is a link to it. A wikilink that names
no file in the folder (in Obsidian, a note not written yet) is its text (the alias, else the
name), with a note (``wikilink``, info: it never fails a build); a cross-reference that names none
stays as written, with a warning (``missing-file``), as Hugo stops on one.

A Logseq journal's block reference, ``((6756a1b2-...))``, is a link to the file of the block whose
``id::`` it names, its text the block's (:func:`worklog_gen.log.logseq.block_texts`), as Logseq
shows the block's text in its place; one that names no block stays as written, with a note
(``wikilink``, info).

The parser resolves each entry's internal links once (:func:`resolve`); the page writes the same
markdown from what it recorded (:func:`rewrite`), so both read one text.
"""

from __future__ import annotations

import os
import re
from urllib.parse import quote
from collections.abc import Callable
from pathlib import Path

from markdown.extensions.toc import slugify

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode
from worklog_gen.log.logseq import BLOCK_REF_RE, block_texts, is_graph, journal_titles
from worklog_gen.log.obsidian import is_vault
from worklog_gen.log.repair import code_span_ranges, track_fence
from worklog_gen.paths import OutsideFolder, inside

WIKILINK_RE = re.compile(
    r"(?P<bang>!?)\[\[(?P<target>[^\[\]|#^\n]*)(?:#(?P<anchor>[^\[\]|^\n]*))?(?:\^[\w-]*)?"
    r"(?:\|(?P<alias>[^\[\]\n]*))?\]\]"
)
"""``[[target#heading|alias]]``, each part but the brackets optional; ``!`` before it embeds."""
REFERENCE_RE = re.compile(
    r"\{\{[<%][ \t]*(?:rel)?ref[ \t]+\"(?P<hugo>[^\"\n]+)\"[ \t]*[>%]\}\}"
    r"|\{%-?[ \t]*(?:post_url|link)[ \t]+(?P<jekyll>[^\s%]+)[ \t]*-?%\}"
)
"""Hugo's ``{{< ref "warp-shuffles.md#tree" >}}`` (``relref``, ``{{% ... %}}``) and Jekyll's
``{% post_url 2025-01-05-warp-shuffles %}`` or ``{% link _posts/2025-01-05-warp-shuffles.md %}``."""
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".avif", ".bmp"})
"""The files Obsidian embeds as an image (https://help.obsidian.md/file-formats)."""
_SIZE = re.compile(r"\d+(?:x\d+)?")


class Vault:
    """The files of a worklog ``folder`` by name, for wikilinks that name a file anywhere in it;
    listed once, the first time a name is not found by its path."""

    def __init__(self, folder: Path, excluded: Callable[[Path], bool] | None = None):
        self.folder = folder.absolute()
        self.excluded = excluded or (lambda path: False)
        """The files the plugin's ``exclude`` leaves out (:class:`~worklog_gen.log.files.Exclusion`): never found."""
        self._by_name: dict[str, list[Path]] | None = None
        self._blocks: dict[str, tuple[Path, str]] | None = None
        self.hides_comments = is_vault(self.folder)
        """An Obsidian vault: its notes' comments (``%%...%%``) are hidden (:mod:`worklog_gen.log.obsidian`)."""
        self.graph = is_graph(self.folder)
        """A Logseq graph: a wikilink may name a day by its journal title (``[[Dec 8th, 2025]]``)."""
        self._journals: dict[str, Path] | None = None
        self.reads_hashtags = self.hides_comments or self.graph
        """An Obsidian vault or a Logseq graph: a ``#tag`` in a note is one of its tags
        (:func:`worklog_gen.log.obsidian.hashtags`)."""

    def block(self, uuid: str) -> tuple[Path, str] | None:
        """The file and text of the block whose ``id::`` is ``uuid`` (a Logseq block reference's),
        among the markdown files of the folder (:meth:`files`); ``None`` when there is none."""
        if self._blocks is None:
            self._blocks = block_texts(f for f in self.files() if f.suffix.lower() == ".md")
        return self._blocks.get(uuid)

    def files(self) -> list[Path]:
        """Every file of the folder but those in hidden folders and those :attr:`excluded` leaves out."""
        return [f for found in self._names().values() for f in found]

    def _names(self) -> dict[str, list[Path]]:
        """File name (lower case) -> the files of that name; listed once."""
        if self._by_name is None:
            self._by_name = {}
            for dirpath, dirs, files in os.walk(self.folder):
                dirs[:] = [d for d in dirs if not d.startswith(".")]  # .git, .obsidian, .trash: as the log's files
                for file in files:
                    if not file.startswith(".") and not self.excluded(Path(dirpath) / file):
                        self._by_name.setdefault(file.lower(), []).append(Path(dirpath) / file)
        return self._by_name

    def find(self, target: str, here: Path) -> Path | None:
        """The file ``target`` (a wikilink's, without heading or alias; a cross-reference's) names
        from the folder ``here``: beside it, from the folder's root, then by file name
        (case-insensitive; a page bundle by its folder's name), the one with the fewest folders
        between it and ``here`` first. Only a file inside the folder
        counts, and none that :attr:`excluded` leaves out; by name, none in a hidden folder
        (``.git``, ``.obsidian``, ``.trash``). ``None`` when there is none."""
        name = target.strip().replace("\\", "/")
        names = _names(name)
        for candidate in [c for n in names for c in (here / n, self.folder / n.lstrip("/"))]:
            if candidate.is_file() and not self.excluded(candidate):
                try:
                    return inside(candidate, self.folder)
                except OutsideFolder:
                    return None
        by_name = self._names()
        found = [f for n in names[:2] for f in by_name.get(Path(n).name.lower(), [])]
        if not found and self.graph:  # a day by its journal title
            if self._journals is None:
                self._journals = journal_titles(self.folder, self.files())
            found = [self._journals[name.lower()]] if name.lower() in self._journals else []
        bundle = Path(name).name.lower()
        if len(names) > 2:
            found += [f for f in by_name.get("index.md", []) if f.parent.name.lower() == bundle]
        if not found:
            return None
        here = here.absolute()
        best = min(found, key=lambda p: (len(os.path.relpath(p.parent, here).split(os.sep)), str(p)))
        try:
            return inside(best, self.folder)
        except OutsideFolder:
            return None


def _may_hold(line: str) -> bool:
    """Whether ``line`` may hold an internal link (a cheap test before the patterns)."""
    return "[[" in line or "ref" in line or "post_url" in line or "link" in line or "((" in line


def _each(text: str, replace: Callable[[re.Match, int], str]) -> str:
    """``text`` with each wikilink and cross-reference outside code (fenced blocks, code spans)
    replaced by ``replace(match, line_index)``; every line keeps its place."""
    if not _may_link(text):
        return text
    lines, fence = text.split("\n"), None
    for i, line in enumerate(lines):
        fence, marker = track_fence(line, fence)
        if marker or fence is not None or not _may_hold(line):
            continue
        spans = code_span_ranges(line)
        for pattern in (WIKILINK_RE, REFERENCE_RE, BLOCK_REF_RE):
            line = pattern.sub(lambda m: m[0] if any(a <= m.start() < b for a, b in spans) else replace(m, i), line)
            spans = code_span_ranges(line)
        lines[i] = line
    return "\n".join(lines)


def _may_link(text: str) -> bool:
    """Whether ``text`` may hold an internal link at all (a cheap test before reading its lines)."""
    return "[[" in text or "{{" in text or "{%" in text or "((" in text


def resolve(text: str, file: Path, vault: Vault | None, path: str,
            first_line: int) -> tuple[str, dict[str, str], list[Diagnostic]]:
    """``text`` (an entry's or a preamble's, from ``file``, shown as ``path``, its first line
    ``first_line``) with its wikilinks and cross-references written as markdown (see the module
    docstring); what each became (for :func:`rewrite`), and a ``wikilink`` note for each wikilink
    that names no file, a ``missing-file`` warning for each such cross-reference. Without a
    ``vault``, a name is looked for beside ``file`` only."""
    if not _may_link(text):
        return text, {}, []
    made: dict[str, str] = {}
    problems: list[Diagnostic] = []
    here = file.absolute().parent

    def replace(m: re.Match, i: int) -> str:
        if m[0] in made:
            return made[m[0]]
        if m.re is REFERENCE_RE:
            return reference(m, i)
        if m.re is BLOCK_REF_RE:
            return block(m, i)
        target, anchor, alias = m["target"].strip(), (m["anchor"] or "").strip(), (m["alias"] or "").strip()
        text = _label(m)
        if not target:  # [[#Heading]]: a heading of the same page
            made[m[0]] = f"[{text}](#{slugify(anchor, '-')})" if anchor else m[0]
            return made[m[0]]
        found = find(target)
        if found is None:
            problems.append(Diagnostic(path, first_line + i, f"wikilink {m[0]!r} finds no file in the worklog folder "
                                       "(a note not written yet, or one left out as no part of the log); "
                                       "the page shows its text", DiagnosticCode.WIKILINK))
            made[m[0]] = _escape(text)
            return made[m[0]]
        rel = Path(os.path.relpath(found, here)).as_posix()
        if m["bang"] and found.suffix.lower() in IMAGE_SUFFIXES:
            alt = alias if alias and not _SIZE.fullmatch(alias) else found.name
            made[m[0]] = f"![{_escape(alt)}](<{rel}>)"
        else:
            made[m[0]] = f"[{_escape(text)}](<{rel}{'#' + slugify(anchor, '-') if anchor else ''}>)"
        return made[m[0]]

    def reference(m: re.Match, i: int) -> str:
        written = m["hugo"] or m["jekyll"]
        target, _, anchor = written.partition("#")
        found = find(target.lstrip("/")) if target else None
        if found is None:
            problems.append(Diagnostic(path, first_line + i, f"cross-reference {m[0]!r} names no file in the worklog "
                                       "folder; the page shows it as written", DiagnosticCode.MISSING_FILE))
            return m[0]
        made[m[0]] = quote(Path(os.path.relpath(found, here)).as_posix()) + (f"#{anchor}" if anchor else "")
        return made[m[0]]

    def block(m: re.Match, i: int) -> str:
        found = vault.block(m["uuid"]) if vault is not None else block_texts([file.absolute()]).get(m["uuid"])
        if found is None:
            problems.append(Diagnostic(path, first_line + i, f"block reference {m[0]!r} names no block of the worklog "
                                       "folder (no 'id::' property with that id); the page shows it as written",
                                       DiagnosticCode.WIKILINK))
            return m[0]
        made[m[0]] = f"[{_escape(plain(found[1]))}](<{Path(os.path.relpath(found[0], here)).as_posix()}>)"
        return made[m[0]]

    def find(target: str) -> Path | None:
        return vault.find(target, here) if vault is not None else _beside(target, here)

    return _each(text, replace), made, problems


def rewrite(text: str, made: dict[str, str]) -> str:
    """``text`` with its internal links written as :func:`resolve` wrote them (``made``)."""
    return _each(text, lambda m, i: made.get(m[0], m[0])) if made else text


def plain(text: str) -> str:
    """``text`` (a task's, shown as plain text) with each wikilink as what it shows (:func:`_label`):
    ``From [[2025-12-08]]: the swizzle`` is ``From 2025-12-08: the swizzle``."""
    return WIKILINK_RE.sub(_label, text) if "[[" in text else text


def _label(m: re.Match) -> str:
    """What a wikilink shows: its alias (not an image's size), else its target and heading as
    Obsidian writes them (``Triton notes > Masks``)."""
    alias = (m["alias"] or "").strip()
    if alias and not (m["bang"] and _SIZE.fullmatch(alias)):
        return alias
    target, anchor = m["target"].strip(), (m["anchor"] or "").strip()
    return " > ".join(part for part in (target, anchor) if part)


def _beside(target: str, here: Path) -> Path | None:
    """The file ``target`` names beside ``here`` (a note, ``.md``, first), if any."""
    return next((here / n for n in _names(target) if (here / n).is_file()), None)


def _names(target: str) -> list[str]:
    """The files a link's ``target`` may name, in the order looked for: itself when it ends in
    ``.md``; else a note (``.md``), the file itself, and a page bundle's ``index.md``."""
    return [target] if target.lower().endswith(".md") else [f"{target}.md", target, f"{target}/index.md"]


def _escape(text: str) -> str:
    """``text`` as literal link text: ``&`` and ``<`` as entities, brackets, backslashes and
    emphasis marks escaped (as both CommonMark and Python-Markdown read them)."""
    return re.sub(r"([\\`*_\[\]])", r"\\\1", text.replace("&", "&amp;").replace("<", "&lt;"))
