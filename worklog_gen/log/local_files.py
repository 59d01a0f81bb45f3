"""Files of the log's own folder that an entry shows or links: a screenshot beside the log
(``![roofline](img/roofline.png)``), a PDF of notes (``[my notes](notes/wgmma.pdf)``).

The site publishes each such file beside the entry's page (as a post's figure is,
:func:`worklog_gen.site.pages.entry_body`); this module says which links and images name one
(:func:`file_target`) and reports, naming the file and line, those whose file is not there or
leads outside the worklog folder (:func:`problems`). A file is looked for as a figure's image
is (:func:`~worklog_gen.log.shortcodes.find_image`): beside the entry's file, then up to three
folders above it inside the worklog folder, and in their ``static/``.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode
from worklog_gen.log.model import Link
from worklog_gen.log.shortcodes import Image

PAGE_SUFFIXES = (".md", ".markdown", ".html", ".htm")
"""A link to one of these is to a page, not a file: MkDocs checks it as it checks every link."""

ACTIVE_SUFFIXES = frozenset({".svg", ".svgz", ".html", ".htm", ".shtml", ".xhtml", ".xht", ".xml", ".xsl", ".xslt",
                             ".mht", ".mhtml"})
"""Files a browser opens as a document that may run script in the site's origin (an SVG with a
``<script>``, an XHTML page), when a reader follows a link to one or opens an image by its address.
With the plugin's ``sanitize`` option such a file is not published (an ``<img>`` of an SVG runs no
script, but the file's own address would)."""


@dataclass(frozen=True)
class Repository:
    """The repository a log is kept in, and where its site shows its files (``mkdocs.yml``'s
    ``repo_url``): a link from the log to one of its files outside the worklog folder (the kernel's
    source, ``[softmax.cu](../kernels/softmax.cu)``; the ``README.md``) leads to that file there, as
    it does on GitHub, and is not published (:func:`file_url`)."""

    root: Path
    """The repository's folder: the nearest one holding ``.git`` at or above ``mkdocs.yml``'s, else that."""
    url: str
    """``repo_url``, without a trailing ``/`` or ``.git``."""

    @classmethod
    def of(cls, repo_url: str | None, project: Path) -> Repository | None:
        """The repository of the project in folder ``project`` whose ``mkdocs.yml`` sets ``repo_url``
        (an ``http(s)`` address); ``None`` without one."""
        if not repo_url or urlsplit(repo_url).scheme not in ("http", "https"):
            return None
        project = project.resolve()
        root = next((p for p in (project, *project.parents) if (p / ".git").exists()), project)
        return cls(root, repo_url.rstrip("/").removesuffix(".git"))

    def file(self, target: str, here: Path) -> Path | None:
        """The file of the repository that ``target`` (a link's path, percent-escapes decoded)
        names from the folder ``here``, or ``None`` (no such file, or outside the repository)."""
        path = Path(os.path.realpath(here / target))
        return path if path.is_file() and path.is_relative_to(self.root) else None

    def file_url(self, file: Path) -> str:
        """Where the repository's site shows ``file`` (one of its files), on its default branch
        (``HEAD``): ``<repo_url>/blob/HEAD/<path>`` on GitHub and Gitea, ``/-/blob/HEAD/`` on
        GitLab, ``/src/HEAD/`` on Bitbucket."""
        host = urlsplit(self.url).netloc.lower()
        way = "-/blob/HEAD" if "gitlab" in host else "src/HEAD" if "bitbucket" in host else "blob/HEAD"
        return f"{self.url}/{way}/{quote(file.relative_to(self.root).as_posix())}"


def can_run_script(path: str) -> bool:
    """Whether the file ``path`` is of a type in :data:`ACTIVE_SUFFIXES`."""
    return posixpath.splitext(path)[1].lower() in ACTIVE_SUFFIXES


def file_target(url: str, *, image: bool) -> str | None:
    """The path that ``url`` names in the log's folder, or ``None`` when it names none.

    An image's ``src`` or a link's destination names a file when it has no scheme
    (``https:``, ``mailto:``), is not protocol-relative (``//host/x``) and has a path; a
    link's must also end in a file name with a suffix that is not a page's
    (:data:`PAGE_SUFFIXES`): ``notes.pdf``, not ``2025-12-08.md`` or ``../blog/``. The query
    and fragment are dropped and percent-escapes decoded (``my%20plot.png`` is
    ``my plot.png``). A root-relative path (``/images/x.png``) is returned too: Hugo's posts
    name their ``static/`` files so."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path or url.startswith("//"):
        return None
    path = unquote(parts.path)
    name = posixpath.basename(path)
    suffix = posixpath.splitext(name)[1].lower()
    if not image and (not suffix or suffix in PAGE_SUFFIXES):
        return None
    return path


def page_target(url: str) -> tuple[str, str] | None:
    """``(path, fragment)`` of a link to a markdown file (``2025-12-08.md#wgmma``, ``../plan.md``),
    percent-escapes decoded, which may be one of the log's own files; ``None`` for any other URL."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith("//") or not parts.path.lower().endswith((".md", ".markdown")):
        return None
    return unquote(parts.path), parts.fragment


def file_links(images: Iterable[Link], links: Iterable[Link]) -> Iterator[tuple[Link, str, bool]]:
    """``(image or link, the path it names, whether it is an image)`` for each of ``images``, then
    ``links`` (an entry's, or a preamble's), that names a file (:func:`file_target`)."""
    for link, image in [*((i, True) for i in images), *((link, False) for link in links)]:
        if (target := file_target(link.url, image=image)) is not None:
            yield link, target, image


def problems(path: str, images: Iterable[Link], links: Iterable[Link], find: Callable[[str], Image],
             in_repository: Callable[[str], bool] = lambda target: False) -> list[Diagnostic]:
    """Warnings, in file ``path``, for ``images`` and ``links`` (an entry's, or a preamble's) to
    files that ``find`` (a path to an
    :class:`~worklog_gen.log.shortcodes.Image`) does not find (``missing-image``,
    ``missing-file``) or refuses as leading outside the worklog folder (``unsafe-path``). A
    root-relative path that is not found is no problem: it is a link to the site the log was
    written for (:mod:`worklog_gen.site.old_links`). Nor is a link (not an image) to a file
    outside the worklog folder that ``in_repository`` finds in the log's :class:`Repository`: the
    page links it there."""
    out = []
    for link, target, image in file_links(images, links):
        found = find(target)
        what = "image" if image else "linked file"
        if found.refused and not image and in_repository(target):
            continue
        if found.refused:
            hint = "" if image else " (with repo_url in mkdocs.yml, a file of the repository is linked there)"
            out.append(Diagnostic(path, link.line, f"{what} {link.url!r} refused: {found.refused}; the page "
                                  f"links it as written, unpublished{hint}", DiagnosticCode.UNSAFE_PATH))
        elif found.path is None and not target.startswith("/"):
            code = DiagnosticCode.MISSING_IMAGE if image else DiagnosticCode.MISSING_FILE
            out.append(Diagnostic(path, link.line, f"{what} {link.url!r} not found beside {path} or "
                                  "in the worklog folder above it; the page links it as written", code))
    return out
