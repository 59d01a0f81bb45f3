"""``worklog-gen init``: a new learning-log site that builds as it stands.

As ``mkdocs new``, ``quarto create project`` and ``jupyter-book create`` do, one command writes a
project from templates shipped in the package (``worklog_gen/templates/``), never a copy of this
repository:

- ``mkdocs.yml``: the site, with every ``worklog`` option present and commented;
- ``docs/index.md``: the home page;
- ``worklog/log.md``: the log, its target date in the front matter and today's entry header;
- ``notebooks/first_kernel.py``: a starter topic, a Triton kernel checked against torch, that runs
  on a GPU or on a CPU under ``TRITON_INTERPRET=1``;
- ``.gitignore`` and ``.github/workflows/publish.yml`` (a GitHub Pages workflow that installs the
  worklog-gen that ran ``init``, from where CI can get it: :func:`publish_requirement`).

A fresh site builds with ``mkdocs build --strict`` before any notebook has run: a topic whose
notebook has never been executed shows its code without outputs, with a note saying how to run
it (:func:`worklog_gen.freeze.render.render_topic`), and the build logs that at INFO.

Nothing is overwritten: if any file to write exists, nothing is written.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import textwrap
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from string import Template
from urllib.parse import urlsplit, urlunsplit

from worklog_gen.log.shapes import MAX_COUNTDOWN, HeaderStyle, format_header

FILES = {
    "mkdocs.yml": "mkdocs.yml",
    "docs/index.md": "docs/index.md",
    "worklog/log.md": "worklog/log.md",
    "notebooks/first_kernel.py": "notebooks/first_kernel.py",
    ".gitignore": "gitignore",
    ".github/workflows/publish.yml": "workflows/publish.yml",
}
"""Each file written, relative to the new project -> its template in ``worklog_gen/templates/``."""
FILLED = frozenset({"mkdocs.yml", "docs/index.md", "worklog/log.md", ".github/workflows/publish.yml"})
"""Templates with ``$name`` fields (:class:`string.Template`); the others are copied as they are."""


DISTRIBUTION = "worklog-gen"
"""The package's name on PyPI."""


def publish_requirement(version: str, direct_url: str | None) -> tuple[str, str]:
    """What the new site's publish workflow installs: the worklog-gen that ran ``init``, from
    where CI can get it.

    Args:
        version: the installed distribution's version (``importlib.metadata``).
        direct_url: its ``direct_url.json`` (PEP 610), which pip and uv write when they install
            from a URL, a file or a folder rather than a package index; ``None`` without one.

    Returns:
        The pip requirement and a comment (its lines) saying where it comes from:

        - installed from a git repository over https: ``worklog-gen @ git+URL@COMMIT``, the commit
          installed (any user name or token in the URL left out);
        - from an archive over https: ``worklog-gen @ URL``;
        - a release (no ``.dev``, no local ``+`` part), from PyPI or from its wheel:
          ``worklog-gen==VERSION``;
        - a development version from a folder or a local file, which CI cannot reach:
          ``worklog-gen``, the latest release on PyPI, and the comment says how to pin the code
          instead.
    """
    info = json.loads(direct_url) if direct_url else {}
    parts = urlsplit(info.get("url", ""))
    if parts.scheme == "https" and parts.hostname:
        url = urlunsplit(parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "")))
        vcs = info.get("vcs_info", {})
        if vcs.get("vcs") == "git" and vcs.get("commit_id"):
            return (f"{DISTRIBUTION} @ git+{url}@{vcs['commit_id']}",
                    f"worklog-gen {version}, as `worklog-gen init` found it installed: {url} at its commit.")
        if "archive_info" in info:
            return (f"{DISTRIBUTION} @ {url}",
                    f"worklog-gen {version}, from the archive `worklog-gen init` was installed from.")
    if ".dev" not in version and "+" not in version:
        return (f"{DISTRIBUTION}=={version}",
                f"worklog-gen {version}, the release `worklog-gen init` ran with, from PyPI.")
    commit = re.search(r"\+g([0-9a-f]+)", version)
    at = commit.group(1) if commit else "COMMIT"
    return DISTRIBUTION, (f"`worklog-gen init` ran with worklog-gen {version}, installed from a folder or a file "
                          "that CI cannot reach, so this installs the latest release from PyPI. To build with that "
                          "code, name its repository in the requirement below:\n"
                          f"  worklog-gen @ git+https://REPOSITORY-URL@{at}")


def _installed() -> tuple[str, str | None]:
    """This worklog-gen's version and ``direct_url.json`` (``None`` if it has none)."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # this source tree on sys.path, never installed
        return "0+unknown", None
    return dist.version, dist.read_text("direct_url.json")


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
    if (target - today).days > MAX_COUNTDOWN:
        raise ValueError(f"the target date {target} is {(target - today).days:,} days away; a header's countdown has "
                         f"at most 5 digits ({MAX_COUNTDOWN:,} days, about 273 years), so choose a nearer one")
    present = [rel for rel in FILES if (folder / rel).exists() or (folder / rel).is_symlink()]
    if present:
        raise ProjectExists(f"{folder}: {', '.join(present)} already exist(s); init writes nothing over a file "
                            "(choose an empty folder)")
    name = site_name or folder.resolve().name
    header = format_header(today, (target - today).days, style=HeaderStyle(order="mdy"))
    fields = {"site_name": name, "site_name_yaml": json.dumps(name, ensure_ascii=False),  # JSON is YAML
              "folder": folder.resolve().name, "target": f"{target:%A} {target.day} {target:%B %Y}",
              "target_iso": target.isoformat(), "header": header}
    requirement, note = publish_requirement(*_installed())
    fields["requirement"] = requirement
    # the note as comment lines at the install step's indent, each of its lines wrapped at spaces
    fields["requirement_note"] = "\n      # ".join(
        wrapped for line in note.splitlines()
        for wrapped in textwrap.wrap(line, 92, break_on_hyphens=False, break_long_words=False))
    templates = resources.files("worklog_gen") / "templates"
    texts = {}
    for rel, template in FILES.items():
        text = (templates / template).read_text(encoding="utf-8")
        texts[rel] = Template(text).substitute(fields) if rel in FILLED else text
    _write_all(folder, texts)
    return NewProject(folder, list(FILES), header)


def _write_all(folder: Path, texts: dict[str, str]) -> None:
    """Write each ``texts`` file (relative path -> text) under ``folder``, or none: when one cannot
    be written (a read-only folder, a full disk), the files and folders written so far are removed
    and the OSError is raised.

    Raises:
        OSError: a folder or file cannot be written; nothing new is left behind.
    """
    made: list[Path] = []  # files and folders this call created, in order
    try:
        for rel, text in texts.items():
            path = folder / rel
            missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            made += reversed(missing)
            with path.open("x", encoding="utf-8") as fh:  # "x": never over a file that appeared meanwhile
                made.append(path)
                fh.write(text)
    except OSError:
        for p in reversed(made):
            p.rmdir() if p.is_dir() else p.unlink(missing_ok=True)
        raise
