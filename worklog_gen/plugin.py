"""The ``worklog`` MkDocs plugin: a thin adapter over :mod:`pages`, :mod:`topics`,
:mod:`feed` and :mod:`render`.

On a plain ``mkdocs build`` it parses the log once (``on_files``), adds the
worklog pages, the topic pages and the Kernels page as generated files, the
Atom feed, and puts them in the navigation. Problems the author must fix raise
``PluginError`` naming file and line; the parser's warnings and stale notebooks
are logged at WARNING, so ``mkdocs build --strict`` fails on them.
"""

from __future__ import annotations

import dataclasses
import html
import os
import posixpath
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority, get_plugin_logger
from mkdocs.structure.files import File, Files, InclusionLevel, file_sort_key
from mkdocs.utils import get_build_datetime, get_relative_url, nest_paths

from worklog_gen import render
from worklog_gen.config import WorklogConfig
from worklog_gen.feed import atom_feed, feed_src
from worklog_gen.old_links import OldSiteLinks
from worklog_gen.pages import SiteContext, nav_section, topic_page, worklog_pages
from worklog_gen.topics import match_topics
from worklog_gen.worklog import Worklog, load

log = get_plugin_logger(__name__)

_TOPIC_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class WorklogPlugin(BasePlugin[WorklogConfig]):
    """Generates the worklog's pages, topic pages, Kernels page and feed."""

    generated: dict[str, str | bytes]
    """After ``on_files``: every generated file, docs path -> content (for benchmarks
    and debugging)."""

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        path = config.config_file_path
        self.root = Path(path).resolve().parent if path else Path.cwd()  # paths are relative to mkdocs.yml
        self.nav_configured = config.nav is not None
        ids = [t.id for t in self.config.topics]
        for topic_id in ids:
            if not _TOPIC_ID.match(topic_id) or ids.count(topic_id) > 1:
                raise PluginError(
                    f"{config.config_file_path}: worklog topic id '{topic_id}' must be unique and "
                    "use lowercase letters, digits, '-' or '_' (it is part of a URL)"
                )
        return config

    def load_log(self) -> Worklog:
        """Parse the configured worklog; entry paths become relative to ``mkdocs.yml``.

        Raises:
            PluginError: the worklog is missing, the parser raised, reported an error
                diagnostic, or two entries share a date (listed with file:line).
        """
        path = self.root / self.config.worklog_dir
        if not path.exists():
            raise PluginError(f"worklog: worklog_dir '{self.config.worklog_dir}' not found next to mkdocs.yml")
        try:
            worklog = load(path, date_order=self.config.date_order)
        except (ValueError, OSError) as exc:
            raise PluginError(f"worklog: cannot read {self.config.worklog_dir}: {exc}") from exc
        # The parser reports everything the author must fix (invalid dates, duplicate days,
        # ...) as error diagnostics; warnings (repaired damage) fail only --strict.
        diagnostics = [dataclasses.replace(d, path=self._relative(d.path)) for d in worklog.diagnostics]
        for diag in diagnostics:
            if diag.severity != "error":
                log.warning(str(diag))
        for entry in worklog.entries:
            entry.path = self._relative(entry.path)
        errors = [d for d in diagnostics if d.severity == "error"]
        if errors:
            raise PluginError("worklog: fix the log:\n" + "\n".join(map(str, errors)))
        return worklog

    def _relative(self, path: str) -> str:
        p = Path(path)
        if p.is_absolute() and p.is_relative_to(self.root):
            return p.relative_to(self.root).as_posix()
        return path

    # Before other plugins' on_files (default priority 0), so that they see the pages.
    @event_priority(50)
    def on_files(self, files: Files, config: MkDocsConfig) -> Files:
        cfg = self.config
        worklog = self.load_log()
        topics = list(cfg.topics)
        ctx = SiteContext(
            url_prefix=cfg.url_prefix,
            topic_titles={t.id: t.title for t in topics},
            entry_topics={e.slug: match_topics(e.body, topics) for e in worklog.entries},
            old_links=OldSiteLinks(cfg.old_site_url),
            use_directory_urls=config.use_directory_urls,
            build_date=get_build_datetime().date(),
            feed=cfg.feed,
            title=cfg.nav_title,
        )
        pages = worklog_pages(worklog, ctx)
        worklog_srcs = set(pages)
        extra: dict[str, bytes] = {}
        topic_nav = self._topic_pages(worklog, ctx, pages, extra)
        if message := ctx.old_links.message():
            log.info(message)

        if cfg.feed:
            extra[feed_src(cfg)] = atom_feed(
                worklog, cfg, title=config.site_name, site_url=config.site_url, author=config.site_author
            )
        in_nav = self._nav(config, files, set(pages), ctx, worklog, topic_nav, worklog_srcs)
        self.generated = {**pages, **extra}
        for src, content in self.generated.items():
            if files.get_file_from_path(src) is not None:
                raise PluginError(f"worklog: docs/{src} clashes with a page the worklog plugin generates")
            inclusion = InclusionLevel.UNDEFINED if src in in_nav or not src.endswith(".md") else InclusionLevel.NOT_IN_NAV
            files.append(File.generated(config, src, content=content, inclusion=inclusion))
        return files

    def _topic_pages(self, worklog: Worklog, ctx: SiteContext, pages: dict, extra: dict) -> list:
        """Add topic pages and the Kernels page (with their files) from the freeze
        store; log the renderer's warnings. Returns their nav items."""
        store = self.root / self.config.freeze_dir
        items: list = []
        with_notebook = []
        for topic in self.config.topics:
            mentions = [e for e in worklog.entries if topic.id in ctx.entry_topics[e.slug]]
            body = "*No notebook for this topic yet.*"
            if topic.notebook:
                with_notebook.append((topic.id, topic.title, Path(topic.notebook)))
                try:
                    rendered = render.render_topic(topic.id, topic.title, Path(topic.notebook), store, self.root)
                except (OSError, ValueError) as exc:  # an unreadable notebook or store file, named
                    raise PluginError(f"worklog: topic '{topic.id}': {exc}") from exc
                body = rendered.markdown
                self._add_rendered(rendered, "topics", extra)
            src = f"topics/{topic.id}.md"
            pages[src] = topic_page(topic.title, body, mentions, ctx, topic.id)
            items.append({topic.title: src})
        if with_notebook:
            try:
                rendered = render.render_kernels_page(with_notebook, store, self.root)
            except (OSError, ValueError) as exc:
                raise PluginError(f"worklog: Kernels page: {exc}") from exc
            body = rendered.markdown.strip("\n")
            pages["kernels.md"] = (body if body.lstrip().startswith("# ") else f"# Kernels\n\n{body}") + "\n"
            self._add_rendered(rendered, "", extra)
            items.insert(0, {"Overview": "kernels.md"})
        return items

    @staticmethod
    def _add_rendered(rendered: render.RenderedPage, folder: str, extra: dict) -> None:
        for warning in rendered.warnings:
            log.warning(warning)
        for rel, data in rendered.files.items():
            extra[posixpath.normpath(posixpath.join(folder, rel))] = data

    def _nav(self, config, files, generated, ctx, worklog, topic_nav, worklog_srcs) -> set[str]:
        """Put the worklog section (and a Kernels or Topics section) in the nav.

        Without a configured ``nav``, the automatic nav of the other pages is kept
        and the sections are appended. With one, each section is appended unless the
        author's nav already names one of its pages; then the author's nav is left
        as it is and the pages it does not name are marked not-in-nav. Returns the
        generated pages that are in the nav.
        """
        sections = [({self.config.nav_title: nav_section(worklog, ctx)}, worklog_srcs)]
        if topic_nav:
            topic_srcs = {next(iter(item.values())) for item in topic_nav}
            title = "Kernels" if "kernels.md" in topic_srcs else "Topics"
            sections.append(({title: topic_nav}, topic_srcs))
        if not self.nav_configured:
            pages = sorted(files.documentation_pages(), key=file_sort_key)
            config.nav = nest_paths(f.src_uri for f in pages if f.inclusion.is_in_nav() and f.src_uri not in generated)
        named = set(_nav_paths(config.nav))
        in_nav = set()
        for section, srcs in sections:
            if named & srcs:
                in_nav |= named & srcs
            else:
                config.nav.append(section)
                in_nav |= srcs
        return in_nav

    def on_post_page(self, output: str, /, *, page, config: MkDocsConfig) -> str:
        """Advertise the feed in every page's ``<head>`` (feed readers look there)."""
        if not self.config.feed:
            return output
        href = get_relative_url(feed_src(self.config), page.url)
        title = html.escape(config.site_name)
        tag = f'<link rel="alternate" type="application/atom+xml" title="{title}" href="{href}">'
        return output.replace("</head>", tag + "</head>", 1)

    def on_serve(self, server, /, *, config: MkDocsConfig, builder):
        """Rebuild when the log, a notebook or the freeze store changes."""
        paths = [self.config.worklog_dir, self.config.freeze_dir]
        paths += [t.notebook for t in self.config.topics if t.notebook]
        for path in paths:
            if (self.root / path).exists():
                server.watch(os.fspath(self.root / path))
        return server


def _nav_paths(nav) -> list[str]:
    """Every page path named in a MkDocs ``nav`` value."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_paths(value)]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_paths(item)]
    return []
