"""``worklog-gen init``: a new learning-log site that builds as it stands.

As ``mkdocs new``, ``quarto create project`` and ``jupyter-book create`` do, one command writes a
project from templates shipped in the package (``worklog_gen/templates/``), never a copy of this
repository:

- ``mkdocs.yml``: the site, with every ``worklog`` option present and commented;
- ``docs/index.md``: the home page;
- ``worklog/log.md``: the log, its target date in the front matter and today's entry header;
- ``notebooks/first_kernel.py``: a starter topic, a Triton kernel checked against torch, that runs
  on a GPU or on a CPU under ``TRITON_INTERPRET=1``;
- ``.gitignore`` and ``.github/workflows/publish.yml`` (a GitHub Pages workflow).

A fresh site builds with ``mkdocs build --strict`` before any notebook has run: a topic whose
notebook has never been executed shows its code without outputs, with a note saying how to run
it (:func:`worklog_gen.freeze.render.render_topic`), and the build logs that at INFO.

Nothing is overwritten: if any file to write exists, nothing is written.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from worklog_gen.log.shapes import HeaderStyle, format_header

FILES = {
    "mkdocs.yml": "mkdocs.yml",
    "docs/index.md": "docs/index.md",
    "worklog/log.md": "worklog/log.md",
    "notebooks/first_kernel.py": "notebooks/first_kernel.py",
    ".gitignore": "gitignore",
    ".github/workflows/publish.yml": "workflows/publish.yml",
}
"""Each file written, relative to the new project -> its template in ``worklog_gen/templates/``."""
FILLED = frozenset({"mkdocs.yml", "docs/index.md", "worklog/log.md"})
"""Templates with ``$name`` fields (:class:`string.Template`); the others are copied as they are."""


class ProjectExists(FileExistsError):
    """A file ``init`` would write is already there."""


@dataclass(frozen=True)
class NewProject:
    """What :func:`create` wrote: the folder, the files (relative paths) and today's header."""

    folder: Path
    files: list[str]
    header: str


def create(folder: str | Path, target: dt.date, *, today: dt.date | None = None,
           site_name: str | None = None) -> NewProject:
    """Write a new learning-log site into ``folder`` (created if needed; it may exist, empty or not,
    as long as none of :data:`FILES` is in it).

    Args:
        folder: where the project goes.
        target: the target date the log counts down to.
        today: the date of the first entry (default: today).
        site_name: the site's name (default: the folder's name).

    Raises:
        ProjectExists: a file to write exists already; nothing was written.
        ValueError: ``target`` is before ``today``.
        OSError: the folder or a file cannot be written.
    """
    folder = Path(folder)
    today = today or dt.date.today()
    if target < today:
        raise ValueError(f"the target date {target} is before today, {today}")
    present = [rel for rel in FILES if (folder / rel).exists() or (folder / rel).is_symlink()]
    if present:
        raise ProjectExists(f"{folder}: {', '.join(present)} already exist(s); init writes nothing over a file "
                            "(choose an empty folder)")
    name = site_name or folder.resolve().name
    header = format_header(today, (target - today).days, style=HeaderStyle(order="mdy"))
    fields = {"site_name": name, "site_name_yaml": json.dumps(name, ensure_ascii=False),  # JSON is YAML
              "folder": folder.resolve().name, "target": f"{target:%A} {target.day} {target:%B %Y}",
              "target_iso": target.isoformat(), "header": header}
    templates = resources.files("worklog_gen") / "templates"
    for rel, template in FILES.items():
        text = (templates / template).read_text(encoding="utf-8")
        if rel in FILLED:
            text = Template(text).substitute(fields)
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as fh:  # "x": never over a file that appeared meanwhile
            fh.write(text)
    return NewProject(folder, list(FILES), header)
