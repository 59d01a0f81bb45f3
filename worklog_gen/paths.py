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


def inside(path: str | Path, folder: str | Path) -> Path:
    """``path`` (relative to ``folder`` unless absolute) resolved, symbolic links followed,
    when it lies inside ``folder`` (itself resolved).

    Raises:
        OutsideFolder: it leads outside, saying where to.
    """
    base = Path(folder).resolve()
    target = (base / path).resolve()
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
