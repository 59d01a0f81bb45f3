"""Every file the ``worklog`` plugin adds to a site, made without MkDocs.

:func:`generate` parses the log once and returns the worklog pages, the topic pages, the
Kernels page, their images and data, the Atom feed and the nav sections, as plain paths
and contents. Two hand-overs use it and share everything else:

- the MkDocs plugin (:mod:`worklog_gen.plugin`, for MkDocs and ProperDocs) hands the files
  to MkDocs as generated files and appends the sections to its nav;
- ``worklog-gen generate`` (:func:`write_site`) writes them into a folder, with a copy of
  the author's ``docs/``, the nav as YAML and a ``mkdocs.yml`` without the plugin, so that
  an engine that runs no MkDocs plugins (Zensical) builds the same site.

Problems the author must fix raise ``PluginError`` naming file and line; the parser's
warnings, stale notebooks and the renderer's warnings are returned as messages.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import posixpath
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Sequence

import yaml
from mkdocs.exceptions import PluginError

from worklog_gen.freeze import render
from worklog_gen.freeze import store as freeze
from worklog_gen.config import UnknownTag, WorklogConfig, exclusion, read_mkdocs_yml, worklog_folder
from worklog_gen.log.local_files import Repository
from worklog_gen.paths import inside
from worklog_gen.site import assets, fallback, settings
from worklog_gen.site import layout as paths
from worklog_gen.site.feed import FEED_LENGTH, NO_SITE_URL, atom_feed
from worklog_gen.site.kernels import kernels_page
from worklog_gen.site.layout import Layout
from worklog_gen.site.old_links import OldSiteLinks
from worklog_gen.site.pages import SiteContext, entry_body, nav_section, topic_page, worklog_pages
from worklog_gen.site.sanitize import marked
from worklog_gen.site.topics import match_topics
from worklog_gen.log import Entry, Severity, Worklog, load
from worklog_gen.log.files import worklog_files

NAV_FILE = "nav.yml"
"""Name of the nav fragment :func:`write_site` writes beside ``docs/``."""
GENERATED_MARK = ".worklog-gen-generated"
"""The file that marks a folder as written by :func:`write_site`: only such a folder (or a new or empty one)
is written into. Before, the mark was in its ``docs/``; such a folder is still :func:`write_site`'s."""


class OutFolderRefused(PluginError):
    """``worklog-gen generate --out`` names a folder :func:`write_site` must not write into
    (:func:`check_out`): a problem with how the command was called."""


@dataclass
class Message:
    """Something to log: a ``warning`` fails ``--strict``; an ``info`` is a note."""

    level: Severity
    text: str


@dataclass
class Section:
    """One nav section: ``{title: items}`` in MkDocs' nav form, and the pages it holds (those
    its items name, and those reached from them: the day pages)."""

    title: str
    items: list
    srcs: set[str]

    def nav(self) -> dict:
        return {self.title: self.items}


@dataclass
class GeneratedSite:
    """What :func:`generate` makes.

    ``files`` maps a path relative to the docs folder (``worklog/2025-12-09.md``,
    ``topics/vector-add/fig-1.png``, ``feed.xml``) to its text (pages) or bytes.
    """

    files: dict[str, str | bytes] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    not_in_nav: list[str] = field(default_factory=list)
    """Gitignore-style patterns of the generated pages that no nav lists (the day pages), for
    MkDocs' ``not_in_nav`` of a written ``mkdocs.yml``."""

    @property
    def pages(self) -> dict[str, str]:
        """The markdown pages of ``files``."""
        return {src: text for src, text in self.files.items() if src.endswith(".md")}

    def warnings(self) -> list[str]:
        return [m.text for m in self.messages if m.level is Severity.WARNING]


def log_sources(cfg: WorklogConfig, root: Path) -> set[Path]:
    """The log's markdown files (:func:`~worklog_gen.log.files.worklog_files`), resolved; empty
    when ``worklog_dir`` does not exist. A log kept inside the docs folder is the source of the
    worklog's pages, not pages of its own: the plugin takes these out of MkDocs' files, and
    :func:`write_site` leaves them out of its copy of the docs."""
    path = root / cfg.worklog_dir
    return {p.resolve() for p in worklog_files(path, exclusion(cfg, root))} if path.exists() else set()


def kept_out(cfg: WorklogConfig, root: Path) -> Callable[[Path], bool]:
    """Whether a file of the docs folder stays out of the site as it is: one of the log's files
    (:func:`log_sources`), whose pages are generated, or one that ``exclude`` leaves out of a log
    kept in the docs folder (a template, a private note), which is never published."""
    sources, excluded = log_sources(cfg, root), exclusion(cfg, root)
    return lambda path: path.resolve() in sources or excluded(path)


def load_log(cfg: WorklogConfig, root: Path, messages: list[Message], today: dt.date | None = None,
             repository: Repository | None = None) -> Worklog:
    """Parse the configured worklog, naming its files relative to ``root`` (the folder of
    ``mkdocs.yml``). The parser's warnings and notes are appended to ``messages``.

    Raises:
        PluginError: the worklog is missing, the parser raised, reported an error
            diagnostic, or two entries share a date (listed with file:line).
    """
    path = root / cfg.worklog_dir
    if not path.exists():
        raise PluginError(f"worklog: worklog_dir '{cfg.worklog_dir}' not found next to mkdocs.yml")
    try:
        worklog = load(path, date_order=cfg.date_order, year=cfg.year, today=today, relative_to=root,
                       exclude=exclusion(cfg, root), repository=repository)
    except (ValueError, OSError) as exc:
        raise PluginError(f"worklog: cannot read {cfg.worklog_dir}: {exc}") from exc
    # The parser reports everything the author must fix (invalid dates, duplicate days,
    # ...) as error diagnostics; warnings (repaired damage) fail only --strict.
    messages += [Message(d.severity, str(d)) for d in worklog.diagnostics if d.severity != "error"]
    errors = [d for d in worklog.diagnostics if d.severity == "error"]
    if errors:
        raise PluginError("worklog: fix the log:\n" + "\n".join(map(str, errors)))
    return worklog


def generate(cfg: WorklogConfig, root: Path, *, site_name: str, site_url: str | None = None,
             site_author: str | None = None, use_directory_urls: bool = True,
             build_date: dt.date | None = None, home_at_root: bool = False,
             repo_url: str | None = None, docs_dir: Path | None = None) -> GeneratedSite:
    """Make every page and file of the worklog, its topics and the Kernels page, each chart's
    narrow SVG for phones (:func:`worklog_gen.site.fallback.narrow_files`, kept in ``cache_dir``),
    and the scripts, styles and libraries they need (:func:`worklog_gen.site.assets.static_files`).

    Args:
        cfg: the ``worklog`` plugin's options.
        root: the folder of ``mkdocs.yml``; the options' paths are relative to it.
        site_name, site_url, site_author: ``mkdocs.yml``'s, for the feed.
        use_directory_urls: ``mkdocs.yml``'s; page links follow it.
        build_date: "today" for the countdown and streaks (default: today, or MkDocs'
            ``SOURCE_DATE_EPOCH`` when the caller passes it).
        home_at_root: the site has no home page of its own (:func:`has_home`): the worklog home
            is the site's ``index.md``.
        repo_url: ``mkdocs.yml``'s: a link from the log to a file of the repository outside the
            worklog folder leads to the file there (:class:`~worklog_gen.log.local_files.Repository`).
        docs_dir: the docs folder: a link to one of its pages stays MkDocs' to check.

    Returns:
        The files, the nav sections (worklog, then Kernels or Topics) and the messages.

    Raises:
        PluginError: the log or a notebook/store file is unreadable or has errors, named.
    """
    site = GeneratedSite()
    repository = Repository.of(repo_url, root)
    worklog = load_log(cfg, root, site.messages, today=build_date, repository=repository)
    drafts = [e for e in worklog.entries if e.draft]
    if drafts:  # checked like every entry, but not published
        worklog = dataclasses.replace(worklog, entries=[e for e in worklog.entries if not e.draft])
        site.messages.append(Message(Severity.INFO, "worklog: left out of the site, as drafts (draft: true): "
                                     + ", ".join(e.source for e in drafts)))
    mentioned = [(e, match_topics(e.body, cfg.topics)) for e in worklog.entries]
    entry_topics: dict[str, list[str]] = {}
    for e, ids in mentioned:  # a day written in two files: the topics of both, each once
        entry_topics[e.slug] = list(dict.fromkeys([*entry_topics.get(e.slug, []), *ids]))
    ctx = SiteContext(
        layout=Layout(cfg.url_prefix, use_directory_urls, home_at_root),
        topic_titles={t.id: t.title for t in cfg.topics},
        entry_topics=entry_topics,
        old_links=OldSiteLinks(cfg.old_site_url),
        build_date=build_date or dt.date.today(),
        feed=cfg.feed,
        title=cfg.nav_title,
        root=root,
        worklog_dir=worklog_folder(cfg, root),
        exclude=exclusion(cfg, root),
        sanitize=cfg.sanitize,
        repository=repository,
        docs_dir=docs_dir,
    )
    pages = worklog_pages(worklog, ctx)
    site.messages += [Message(Severity.WARNING, text) for text in dict.fromkeys(ctx.withheld)]
    extra: dict[str, bytes] = dict(ctx.files)  # the heatmap
    extra |= {dest: path.read_bytes() for dest, path in ctx.assets.items()}  # a post's images
    site.sections.append(Section(cfg.nav_title, nav_section(worklog, ctx), set(pages)))
    site.not_in_nav.append(ctx.layout.entry_pages_pattern)
    topic_items = _topic_pages(cfg, root, mentioned, ctx, pages, extra, site.messages)
    if topic_items:
        topic_srcs = {next(iter(item.values())) for item in topic_items}
        title = "Kernels" if paths.KERNELS_PAGE in topic_srcs else "Topics"
        site.sections.append(Section(title, topic_items, topic_srcs))
    if message := ctx.old_links.message():
        site.messages.append(Message(Severity.INFO, message))
    if cfg.feed:
        bodies: dict[str, str] = {}
        newest = {e.slug for e in worklog.entries[-FEED_LENGTH:]}
        for e in (e for e in worklog.entries if e.slug in newest):  # a day in two files: both texts
            body = entry_body(e, ctx.entry_page(e), ctx)
            bodies[e.slug] = f"{bodies[e.slug]}\n\n---\n\n{body}" if e.slug in bodies else body
        extra[paths.FEED] = atom_feed(worklog, ctx.layout, title=site_name, site_url=site_url, author=site_author,
                                      bodies=bodies, sanitize=cfg.sanitize)
        if not site_url:
            site.messages.append(Message(Severity.INFO, f"worklog: {NO_SITE_URL}"))
    narrow, notes = fallback.narrow_files(extra, root / cfg.cache_dir)  # each chart's SVG for phones
    extra |= narrow
    site.messages += [Message(Severity.INFO, note) for note in notes]
    site.files = {**pages, **extra, **assets.static_files()}
    return site


def has_home(author_pages) -> bool:
    """Whether the author's docs paths (``index.md``, ``notes/x.md``, ...) include a home page:
    ``index.md`` or ``README.md`` at the top, which MkDocs serves at the site's root."""
    return any(src in ("index.md", "README.md") for src in author_pages)


def _topic_pages(cfg: WorklogConfig, root: Path, mentioned: list[tuple[Entry, list[str]]], ctx: SiteContext,
                 pages: dict, extra: dict, messages: list[Message]) -> list:
    """Add topic pages and the Kernels page (with their files) from the freeze store;
    collect the renderer's warnings. ``mentioned``: each entry, in date order, with the ids of
    the topics its own text mentions. Returns their nav items."""
    store = root / cfg.freeze_dir
    items: list = []
    with_notebook = []
    primary = cfg.primary_machine
    check_primary_machine(primary, store, [t.notebook for t in cfg.topics if t.notebook],
                          getattr(cfg, "config_file_path", None) or "mkdocs.yml")
    for topic in cfg.topics:
        # one line per day: its first entry that mentions the topic (a day in two files has one page)
        mentions = list({e.slug: e for e, ids in reversed(mentioned) if topic.id in ids}.values())
        body = "*No notebook for this topic yet.*"
        src = paths.topic_page(topic.id)
        if topic.notebook:
            with_notebook.append((topic.id, topic.title, Path(topic.notebook)))
            try:
                rendered = render.render_topic(Path(topic.notebook), store, root, files_dir=paths.topic_files(topic.id),
                                               primary=primary)
            except (OSError, ValueError) as exc:  # an unreadable notebook or store file, named
                raise PluginError(f"worklog: topic '{topic.id}': {exc}") from exc
            body = rendered.markdown
            _add_rendered(rendered, posixpath.dirname(src), extra, messages)
        pages[src] = topic_page(topic.title, body, mentions, ctx, topic.id)
        items.append({topic.title: src})
    if with_notebook:
        try:
            rendered = kernels_page(with_notebook, store, root, primary=primary)
        except (OSError, ValueError) as exc:
            raise PluginError(f"worklog: Kernels page: {exc}") from exc
        pages[paths.KERNELS_PAGE] = rendered.markdown
        _add_rendered(rendered, posixpath.dirname(paths.KERNELS_PAGE), extra, messages)
        items.insert(0, {"Overview": paths.KERNELS_PAGE})
    return items


def check_primary_machine(wanted: str | None, store: Path, notebooks: list[str], config_file: str | Path) -> None:
    """Raise unless ``wanted`` (the ``primary_machine`` option) names a machine that some notebook of
    ``notebooks`` has a record of in ``store`` (:func:`worklog_gen.freeze.store.matches_machine`).
    Nothing is checked without the option, or while the store holds no record at all.

    Raises:
        PluginError: naming ``config_file``, the option and the machines the store holds.
    """
    if not wanted:
        return
    machines: dict[str, str] = {}
    for notebook in notebooks:
        try:
            entries = freeze.machine_entries(store, notebook)
        except ValueError as exc:
            raise PluginError(f"worklog: {exc}") from exc
        machines.update((e.slug, e.name) for e in entries if e.record is not None)
    if machines and not any(freeze.matches_machine(name, slug, wanted) for slug, name in machines.items()):
        known = ", ".join(f"{name} ({slug})" for slug, name in sorted(machines.items()))
        raise PluginError(f"{config_file}: worklog option 'primary_machine': {wanted!r} names no machine of the "
                          f"freeze store; it holds records of: {known}")


def _add_rendered(rendered: render.RenderedPage, folder: str, extra: dict, messages: list[Message]) -> None:
    messages += [Message(Severity.WARNING, w) for w in rendered.warnings]
    messages += [Message(Severity.INFO, n) for n in rendered.notes]
    for rel, data in rendered.files.items():
        extra[posixpath.normpath(posixpath.join(folder, rel))] = data


# --- worklog-gen generate ----------------------------------------------------------------


def read_config(mkdocs_yml: Path) -> dict:
    """``mkdocs_yml`` as data for rewriting (:func:`worklog_gen.config.read_mkdocs_yml`).

    Raises:
        PluginError: not valid YAML, or a tag other than ``!ENV`` (``!!python/name:`` cannot be
            carried into a plain file), named.
    """
    data = read_mkdocs_yml(mkdocs_yml)

    def check(value) -> None:
        if isinstance(value, UnknownTag):
            raise PluginError(f"{mkdocs_yml}: cannot carry it over to the generated config: the tag "
                              f"{value.tag} ({value.value!r}) means something to MkDocs alone")
        for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
            check(item)

    check(data)
    return data


def engine_config(config: dict, docs_dir: str, nav: list, not_in_nav: Sequence[str] = (),
                  sanitize: bool = False) -> dict:
    """``config`` (a ``mkdocs.yml``'s data) for an engine that runs no MkDocs plugins: what the
    plugin's ``on_config`` adds (:mod:`~worklog_gen.site.settings`' extensions, fonts and features,
    :mod:`~worklog_gen.site.assets`' styles and scripts) written out, the ``worklog`` plugin removed, ``docs_dir`` set to the generated folder and the whole nav spelled out; the patterns ``not_in_nav`` (the day pages, which the plugin marks not in the nav) are added to the author's.
    With ``sanitize`` (the plugin's option), the sanitiser's markdown extension
    (:class:`~worklog_gen.site.sanitize.SafeHTMLExtension`) is added too, to run on the pages
    :func:`write_site` marks."""
    config = dict(config)
    config["markdown_extensions"] = settings.with_extensions(list(config.get("markdown_extensions") or []))
    if sanitize:
        config["markdown_extensions"].append("worklog_gen.site.sanitize")
    config["theme"] = settings.with_theme_defaults(config.get("theme"))
    config["extra_css"] = [*assets.stylesheet_paths(), *(config.get("extra_css") or [])]
    config["extra_javascript"] = [*assets.script_paths(), *(config.get("extra_javascript") or [])]
    config["plugins"] = [p for p in config.get("plugins") or []
                         if not (p == "worklog" or (isinstance(p, dict) and "worklog" in p))]
    config["docs_dir"] = docs_dir
    config["nav"] = nav
    if not_in_nav:
        own = (config.get("not_in_nav") or "").strip("\n")
        config["not_in_nav"] = "\n".join([own, *not_in_nav] if own else not_in_nav) + "\n"
    config.pop("site_dir", None)
    return config


def nav_paths(nav) -> list[str]:
    """Every page path named in a MkDocs ``nav`` value."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in nav_paths(value)]
    if isinstance(nav, list):
        return [p for item in nav for p in nav_paths(item)]
    return []


def with_sections(nav: list, sections: list[Section]) -> tuple[list, set[str]]:
    """``nav`` with each section appended, unless ``nav`` already names one of its pages
    (then the author placed them, and the rest stay out of the nav). An appended section puts
    in the nav the pages its items name; its other pages (the day pages) stay out.

    Returns:
        The new nav and the generated pages that are in it.
    """
    nav = list(nav)
    named = set(nav_paths(nav))
    in_nav: set[str] = set()
    for section in sections:
        if named & section.srcs:
            in_nav |= named & section.srcs
        else:
            nav.append(section.nav())
            in_nav |= set(nav_paths(section.items))
    return nav, in_nav


def _author_nav(docs: Path, not_in_nav: str | None = None) -> list:
    """The nav MkDocs makes on its own for the author's pages (``nest_paths`` over
    them in MkDocs' file order), leaving out the pages that ``not_in_nav`` (mkdocs.yml's
    gitignore-style patterns) names."""
    import pathspec
    from mkdocs.structure.files import File, file_sort_key
    from mkdocs.utils import nest_paths

    hidden = pathspec.PathSpec.from_lines("gitwildmatch", (not_in_nav or "").splitlines())
    files = [File(p.relative_to(docs).as_posix(), str(docs), "", True) for p in docs.rglob("*.md")]
    files = [f for f in files if not hidden.match_file(f.src_uri)]
    return nest_paths(f.src_uri for f in sorted(files, key=file_sort_key))


def check_out(out: Path, cfg: WorklogConfig, root: Path, docs_dir: Path) -> None:
    """Raise unless :func:`write_site` may write into ``out``: a folder that neither holds the project
    (``root``, the folder of ``mkdocs.yml``) nor lies inside one of its folders (``docs_dir``, and
    the plugin's ``worklog_dir``, ``freeze_dir`` and ``cache_dir``), and that is new, empty, or
    written by an earlier run (:data:`GENERATED_MARK`). So ``--out .``, ``..``, ``~`` or ``docs``
    never writes over a file that ``worklog-gen generate`` did not write.

    Raises:
        OutFolderRefused: naming ``--out``, where it leads and why.
    """
    target = out.resolve()
    own = {"docs_dir": docs_dir, "worklog_dir": worklog_folder(cfg, root), "freeze_dir": root / cfg.freeze_dir,
           "cache_dir": root / cfg.cache_dir}
    if root.is_relative_to(target):
        why = f"holds the project ({root})"
    elif inner := next((k for k, v in own.items() if target.is_relative_to(v.resolve())), None):
        why = f"lies inside the project's {inner} ({own[inner].resolve()})"
    elif (target.is_dir() and any(target.iterdir()) and not (target / GENERATED_MARK).is_file()
          and not (target / "docs" / GENERATED_MARK).is_file()):
        why = f"holds files worklog-gen did not write (no {GENERATED_MARK})"
    else:
        return
    raise OutFolderRefused(f"worklog-gen generate: --out {out} is {target}, which {why}; it writes only into a "
                           "new or empty folder of its own, or one it wrote before (such as build/generated)")


def write_site(site: GeneratedSite, out: Path, cfg: WorklogConfig, *, docs_dir: Path, mkdocs_yml: Path) -> Path:
    """Write ``site`` for engines that run no MkDocs plugins.

    ``out/docs/`` gets a copy of ``docs_dir`` with every generated file added,
    ``out/nav.yml`` the nav fragment (MkDocs' ``nav`` form), and ``out/mkdocs.yml`` the project's
    configuration as :func:`engine_config` rewrites it; ``out`` is marked as written here
    (:data:`GENERATED_MARK`). ``out`` must be a folder of its own (:func:`check_out`). With ``cfg``'s
    ``sanitize``, each worklog page is marked for the sanitiser
    (:func:`~worklog_gen.site.sanitize.marked`), which the written configuration names, so that the
    engine's HTML of it is sanitised as the plugin's is.

    Returns:
        The path of the written ``mkdocs.yml``.

    Raises:
        OutFolderRefused: ``out`` is not a folder of its own (:func:`check_out`).
        PluginError: a generated file would overwrite a page of ``docs_dir``, or ``mkdocs_yml`` cannot be
            carried over (:func:`read_config`), named.
    """
    check_out(out, cfg, mkdocs_yml.resolve().parent, docs_dir)
    target = (out / "docs").resolve()
    if target.exists():
        shutil.rmtree(target)
    out_of_site = kept_out(cfg, mkdocs_yml.resolve().parent)
    shutil.copytree(docs_dir, target, ignore=lambda folder, names: [
        n for n in names if out_of_site(Path(folder, n))])  # a log kept in the docs: its pages are generated
    (out / GENERATED_MARK).write_text("written by worklog-gen generate: docs/, nav.yml and mkdocs.yml are replaced "
                                      "on each run\n")
    for src, content in site.files.items():
        path = inside(src, target)
        if path.exists():
            raise PluginError(f"worklog: {docs_dir.name}/{src} clashes with a page the worklog plugin generates")
        if cfg.sanitize and src in site.sections[0].srcs:  # the worklog's pages, as the plugin sanitises them
            content = marked(content)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    data = read_config(mkdocs_yml)
    nav, _in_nav = with_sections(data.get("nav") or _author_nav(docs_dir, data.get("not_in_nav")), site.sections)
    (out / NAV_FILE).write_text(yaml.safe_dump(nav, sort_keys=False, allow_unicode=True), encoding="utf-8")
    config = engine_config(data, "docs", nav, site.not_in_nav, sanitize=cfg.sanitize)
    config_path = out / "mkdocs.yml"
    config_path.write_text(
        "# Written by `worklog-gen generate` from the project's mkdocs.yml: the worklog plugin's\n"
        "# pages are in docs/, so any engine that reads mkdocs.yml builds the site. Do not edit.\n"
        + yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    return config_path
