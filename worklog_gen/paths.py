"""The one rule for every path that comes from author input or config: it stays in its folder.

A post's figure, a file of the worklog folder, the freeze store and the notebooks named in
``mkdocs.yml``, the folder ``worklog-gen generate`` writes: each is resolved (``..`` and
symbolic links followed) and must lie inside the folder it belongs to. A post copied from
elsewhere, or a pull request to a shared log, can then never publish a file of the machine that
builds the site (``src="../../../../etc/passwd"``, or a link inside ``worklog/`` that points out).
"""

from __future__ import annotations

from pathlib import Path


class OutsideFolder(ValueError):
    """A path that leads outside the folder it must stay in."""


class SymlinkLoop(OutsideFolder):
    """A path through a loop of symbolic links: it leads nowhere, so it is refused as well."""


def inside(path: str | Path, folder: str | Path) -> Path:
    """``path`` (relative to ``folder`` unless absolute) resolved, symbolic links followed,
    when it lies inside ``folder`` (itself resolved).

    A relative ``path`` is taken relative to ``folder``, never to the current folder: a caller
    holding a path relative to the current folder (``worklog/log.md``) passes it absolute, or the
    folder would be joined twice (``worklog/worklog/log.md``, a path that does not exist and so
    would seem inside).

    Raises:
        OutsideFolder: it leads outside, saying where to; :class:`SymlinkLoop` (a subclass) when it
            runs through a loop of symbolic links.
    """
    base = Path(folder).resolve()
    try:
        target = (base / path).resolve()
    except (RuntimeError, OSError) as exc:  # a loop of symbolic links (RuntimeError before Python 3.13)
        raise SymlinkLoop(f"{path} is a loop of symbolic links ({exc})") from exc
    if target != base and not target.is_relative_to(base):
        raise OutsideFolder(f"{path} leads outside {folder} (to {target})")
    return target


def is_inside(path: str | Path, folder: str | Path) -> bool:
    """Whether :func:`inside` accepts ``path``."""
    try:
        inside(path, folder)
    except OutsideFolder:
        return False
    return True
