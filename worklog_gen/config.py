"""The ``worklog`` plugin's options, shared by the MkDocs plugin and the CLI.

Declared with MkDocs' typed ``base.Config`` so that both validate the same way.
The CLI reads them from ``./mkdocs.yml`` without building the site.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import PluginError


class TopicConfig(base.Config):
    """One topic: a jupytext notebook rendered as a page, and the words that name it."""

    id = c.Type(str)
    """Topic id, used in URLs (``topics/<id>/``) and the export (``tiled-matmul``)."""
    title = c.Type(str)
    """Page title (``Tiled matmul``)."""
    notebook = c.Optional(c.Type(str))
    """Notebook path relative to ``mkdocs.yml`` (``notebooks/tiled_matmul.py``); none for a topic without one."""
    aliases = c.ListOfItems(c.Type(str), default=[])
    """Words that mention the topic in an entry, matched case-insensitively as whole words.
    The title and id are always aliases."""


class WorklogConfig(base.Config):
    """Options of the ``worklog`` MkDocs plugin."""

    worklog_dir = c.Type(str, default="worklog")
    """Folder of worklog markdown files (or one file), relative to ``mkdocs.yml``."""
    date_order = c.Choice(("auto", "mdy", "dmy"), default="auto")
    """Order of month and day in entry headers; ``auto`` infers it from the data
    (a first field above 12 means day-first)."""
    url_prefix = c.Type(str, default="worklog")
    """Site folder of the generated worklog pages."""
    nav_title = c.Type(str, default="Worklog")
    """Title of the worklog's section in the navigation."""
    old_site_url = c.Optional(c.Type(str))
    """Base URL of the site the log was written for (``https://me.github.io``). Root-relative
    links such as ``/blog/2025/x/`` are rewritten to it; without it they are kept and listed
    in one warning."""
    topics = c.ListOfItems(c.SubConfig(TopicConfig), default=[])
    """Topics with their notebooks and aliases."""
    freeze_dir = c.Type(str, default="notebooks/_freeze")
    """Folder of the committed freeze store, relative to ``mkdocs.yml``."""
    feed = c.Type(bool, default=True)
    """Write an Atom feed of entries at ``feed.xml``, at the site root."""
    year = c.Optional(c.Type(int))
    """Year of the oldest entry of a progress log whose headings name no year (``## November 24``);
    a file's front matter ``year:`` wins. Without either, the latest year that puts no entry
    after the build date, with a warning naming the file and the year chosen."""


class _TolerantLoader(yaml.SafeLoader):
    """Loads mkdocs.yml, leaving ``!!python/name:`` and ``!ENV`` tags as plain values."""


_TolerantLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def load_plugin_config(mkdocs_yml: str | Path = "mkdocs.yml") -> tuple[WorklogConfig, Path]:
    """Read the ``worklog`` plugin's options from ``mkdocs_yml``.

    Returns the validated config and the folder that holds ``mkdocs.yml``, against
    which its paths are relative. A missing file gives the defaults.

    Raises:
        PluginError: the file is not valid YAML or an option is invalid, named.
    """
    path = Path(mkdocs_yml)
    root = path.parent.resolve()
    options: dict = {}
    if path.exists():
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_TolerantLoader) or {}
        except yaml.YAMLError as exc:
            raise PluginError(f"{path}: invalid YAML: {exc}") from exc
        for item in data.get("plugins") or []:
            if isinstance(item, dict) and "worklog" in item:
                options = item["worklog"] or {}
            elif item == "worklog":
                options = {}
    cfg = WorklogConfig(config_file_path=str(path))
    cfg.load_dict(options)
    errors, _warnings = cfg.validate()
    if errors:
        msg = "; ".join(f"'{key}': {err}" for key, err in errors)
        raise PluginError(f"{path}: invalid 'worklog' plugin options: {msg}")
    return cfg, root
