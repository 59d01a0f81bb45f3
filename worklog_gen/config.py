"""The ``worklog`` plugin's options, shared by the MkDocs plugin and the CLI.

Declared with MkDocs' typed ``base.Config`` so that both validate the same way.
The CLI reads them from ``./mkdocs.yml`` without building the site.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pathspec
import yaml
from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import PluginError

from worklog_gen.log import logseq, obsidian
from worklog_gen.log.files import Exclusion
from worklog_gen.paths import OutsideFolder, inside

TOPIC_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")

class Year(c.BaseConfigOption[int]):
    """A year a date can hold with a day either side (2 to 9998, as the parser reads a front matter
    ``year:``), written as an integer: ``true`` is no year, though YAML's booleans are Python ints."""

    def run_validation(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not dt.MINYEAR < value < dt.MAXYEAR:
            raise c.ValidationError(f"expected a year such as 2025 (an integer from {dt.MINYEAR + 1} to "
                                    f"{dt.MAXYEAR - 1}), not {value!r}")
        return value


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
    primary_machine = c.Optional(c.Type(str))
    """The machine whose record a topic page, its results and its charts show when the store holds
    several (``NVIDIA H200``, ``nvidia-h100-80gb-hbm3``, ``h200``): its name or store slug,
    case-insensitive, else a part of the name (the newest matching record then). A notebook with no
    record of that machine shows its newest record; a name that matches no machine of the store is a
    configuration error. Default: each notebook's newest record (``executed_at``)."""
    feed = c.Type(bool, default=True)
    """Write an Atom feed of entries at ``feed.xml``, at the site root."""
    sanitize = c.Type(bool, default=False)
    """Pass each worklog page's HTML through the ``nh3`` sanitiser (:mod:`worklog_gen.site.sanitize`):
    no script, style, embedded frames or event handlers, and links only to ``http``, ``https``,
    ``mailto`` or relative targets. Turn it on for a log others write too (a shared log that takes
    pull requests); off, an entry's raw HTML is published as written, except links that run script,
    which are always dropped."""
    cache_dir = c.Type(str, default=".cache/plugin/worklog")
    """Folder, relative to ``mkdocs.yml``, where the build keeps what it renders once and reads back
    on later builds: each chart's narrow SVG for phones (:mod:`worklog_gen.site.fallback`). Safe to
    delete; not to commit."""
    exclude = c.Optional(c.PathSpec())
    """Files of the worklog folder that are no part of the log, in gitignore's patterns relative to
    it, written as MkDocs' ``exclude_docs`` (a block of lines: ``templates/``, ``private/**``): not
    read as the log, never published, and found by no wikilink or link (:class:`~worklog_gen.log.files.Exclusion`)."""
    year = c.Optional(Year())
    """Year of the oldest entry of a progress log whose headings name no year (``## November 24``);
    a file's front matter ``year:`` wins. Without either, the latest year that puts no entry
    after the build date, with a warning naming the file and the year chosen."""


@dataclass(frozen=True)
class UnknownTag:
    """A YAML value under a tag other than ``!ENV`` (``!!python/name:material.extensions.emoji.twemoji``):
    kept as written, for MkDocs alone to resolve."""

    tag: str
    value: object


class _Loader(yaml.SafeLoader):
    """Safe loading of ``mkdocs.yml``: ``!ENV`` resolved as MkDocs resolves it, any other tag kept
    as an :class:`UnknownTag` (nothing is constructed from it)."""


def _env_tag(loader: yaml.Loader, node: yaml.Node):
    from yaml_env_tag import construct_env_tag  # MkDocs' own dependency

    return construct_env_tag(loader, node)


def _unknown_tag(loader: yaml.Loader, suffix: str, node: yaml.Node) -> UnknownTag:
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node)
    else:
        value = loader.construct_mapping(node)
    return UnknownTag(node.tag, value)


_Loader.add_constructor("!ENV", _env_tag)
_Loader.add_multi_constructor("", _unknown_tag)


def read_mkdocs_yml(path: str | Path) -> dict:
    """``mkdocs.yml`` as data, read once for the plugin's options and for ``worklog-gen generate``:
    safely (no Python objects are built), ``!ENV`` resolved, other tags kept as :class:`UnknownTag`.
    An empty file gives ``{}``.

    Raises:
        PluginError: not valid YAML, or not a mapping, naming the file (and the line).
    """
    path = Path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise PluginError(f"{path}: invalid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PluginError(f"{path}:1: expected a mapping of settings, found {type(data).__name__}")
    return data


def check_config(cfg: WorklogConfig, root: Path, config_file: str | Path) -> None:
    """Raise unless every path option stays inside ``root``, the folder of ``mkdocs.yml``
    (:func:`worklog_gen.paths.inside`: ``worklog_dir``, ``freeze_dir``, ``cache_dir`` and each topic's
    ``notebook``), ``url_prefix`` names a folder inside the site (:func:`check_url_prefix`), and every
    topic id is unique and URL-safe (``[a-z0-9_-]``, it is part of a URL).

    Raises:
        PluginError: naming ``config_file``, the option and where it leads.
    """
    named = [("worklog_dir", cfg.worklog_dir), ("freeze_dir", cfg.freeze_dir), ("cache_dir", cfg.cache_dir)]
    named += [(f"topics: {t.id}: notebook", t.notebook) for t in cfg.topics if t.notebook]
    for option, value in named:
        try:
            inside(value, root)
        except OutsideFolder as exc:
            raise PluginError(f"{config_file}: worklog option '{option}': {exc}; paths stay inside the "
                              "project (the folder of mkdocs.yml)") from exc
    check_url_prefix(cfg.url_prefix, config_file)
    ids = [t.id for t in cfg.topics]
    for topic_id in ids:
        if not TOPIC_ID.match(topic_id) or ids.count(topic_id) > 1:
            raise PluginError(f"{config_file}: worklog topic id '{topic_id}' must be unique and "
                              "use lowercase letters, digits, '-' or '_' (it is part of a URL)")


def check_url_prefix(url_prefix: str, config_file: str | Path) -> None:
    """Raise unless ``url_prefix`` names a folder inside the site. The worklog's pages are written at
    ``site_dir/<url_prefix>/``: a ``..`` past the site's root would write them outside ``site_dir``, and
    a prefix that names no folder (``/``, ``""``) at the root of the machine.

    Raises:
        PluginError: naming ``config_file``, the option and where it leads.
    """
    folder = posixpath.normpath(url_prefix.strip("/")) if url_prefix.strip("/") else ""
    if folder in ("", "."):
        raise PluginError(f"{config_file}: worklog option 'url_prefix': {url_prefix!r} names no folder of the "
                          "site; it names the folder of the worklog's pages, such as 'worklog'")
    if folder == ".." or folder.startswith("../"):
        raise PluginError(f"{config_file}: worklog option 'url_prefix': {url_prefix!r} leads outside the site "
                          f"(to {folder}); it names a folder inside site_dir, such as 'worklog'")


def worklog_folder(cfg: WorklogConfig, root: Path) -> Path:
    """The worklog folder (``worklog_dir``, or the folder of the one file it names), resolved."""
    path = (root / cfg.worklog_dir).resolve()
    return path if path.is_dir() else path.parent


def exclusion(cfg: WorklogConfig, root: Path) -> Exclusion:
    """What the ``exclude`` option leaves out of the worklog folder (nothing without it), and, in
    a Logseq graph or an Obsidian vault, the notes that are not its journals or daily notes
    (:func:`worklog_gen.log.logseq.exclude_patterns`, :func:`worklog_gen.log.obsidian.exclude_patterns`),
    before the option's patterns, so that a ``!pages/plan.md`` of the option takes a file back."""
    folder = worklog_folder(cfg, root)
    spec = cfg.exclude
    if tool := logseq.exclude_patterns(folder) or obsidian.exclude_patterns(folder):
        own = pathspec.GitIgnoreSpec.from_lines(tool)
        spec = own if spec is None else own + spec
    return Exclusion(folder, spec)


def load_plugin_config(mkdocs_yml: str | Path = "mkdocs.yml",
                       on_warning: Callable[[str], None] | None = None) -> tuple[WorklogConfig, Path]:
    """Read the ``worklog`` plugin's options from ``mkdocs_yml``.

    Returns the validated config and the folder that holds ``mkdocs.yml``, against
    which its paths are relative. A missing file gives the defaults. What MkDocs would warn
    about while building (an option it does not know, such as a misspelt ``worklog_dri``) goes
    to ``on_warning``, one message each, the file and option named.

    Raises:
        PluginError: the file is not valid YAML, an option is invalid, or a path option leads
            outside the folder of ``mkdocs.yml`` (:func:`check_config`), named.
    """
    path = Path(mkdocs_yml)
    root = path.parent.resolve()
    options: dict = {}
    if path.exists():
        data = read_mkdocs_yml(path)
        plugins = data.get("plugins") or []
        for item in plugins.items() if isinstance(plugins, dict) else plugins:  # a list, or a mapping
            # as MkDocs reads them: empty options (null, "", 0) are none
            if isinstance(item, tuple) and item[0] == "worklog":
                options = item[1] or {}
            elif isinstance(item, dict) and "worklog" in item:
                options = item["worklog"] or {}
            elif item == "worklog":
                options = {}
    if not isinstance(options, dict):
        raise PluginError(f"{path}: invalid 'worklog' plugin options: expected a mapping of options under "
                          f"'worklog:' (such as 'worklog_dir: worklog'), found {type(options).__name__} "
                          f"{options!r}")
    cfg = WorklogConfig(config_file_path=str(path))
    cfg.load_dict(options)
    errors, warnings = cfg.validate()
    if errors:
        msg = "; ".join(f"'{key}': {err}" for key, err in errors)
        raise PluginError(f"{path}: invalid 'worklog' plugin options: {msg}")
    for key, warning in warnings if on_warning else ():
        on_warning(f"{path}: 'worklog' plugin option '{key}': {warning}")
    check_config(cfg, root, path)
    return cfg, root
