"""The ``worklog`` MkDocs plugin: a thin adapter over :mod:`worklog_gen.site.generate`.

On a plain ``mkdocs build`` (or ``properdocs build``) it makes the site's files once
(``on_files``): the worklog pages, the topic pages and the Kernels page, their images,
the Atom feed; it hands them to MkDocs as generated files and puts the sections of
:func:`~worklog_gen.site.generate.generate` in the navigation (the worklog's home, lists and
year pages, the topics); the pages no section names, the day pages, are marked not in the
nav, so that ``validation: omitted_files`` stays quiet. ``worklog-gen generate`` writes the same files for other engines. Problems the author must fix raise
``PluginError`` naming file and line; the parser's warnings and stale notebooks
are logged at WARNING, so ``mkdocs build --strict`` fails on them.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from mkdocs.config.config_options import ExtraScriptValue
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority, get_plugin_logger
from mkdocs.structure.files import File, Files, InclusionLevel, file_sort_key
from mkdocs.utils import get_build_datetime, get_relative_url, nest_paths

from worklog_gen.config import WorklogConfig, check_config, read_mkdocs_yml
from worklog_gen.log import Severity
from worklog_gen.site import assets, fallback, math, settings
from worklog_gen.site.layout import FEED
from worklog_gen.site.names import break_long_names
from worklog_gen.site.sanitize import safe_html
from worklog_gen.site.generate import GeneratedSite, generate, has_home, kept_out, with_sections

log = get_plugin_logger(__name__)


def _deferred(path: str) -> ExtraScriptValue:
    """``<script src=path defer>``: run once the page is parsed (Material's bundle, which defines
    ``document$``, has run by then), so the scripts never hold up the first paint."""
    script = ExtraScriptValue(path)
    script.defer = True
    return script


class WorklogPlugin(BasePlugin[WorklogConfig]):
    """Hands the files of :func:`worklog_gen.site.generate.generate` to MkDocs and puts its
    sections in the nav."""

    generated: dict[str, str | bytes]
    """After ``on_files``: every generated file, docs path -> content (for benchmarks
    and debugging)."""

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        """Bring what the site needs (:mod:`worklog_gen.site.settings`, :mod:`worklog_gen.site.assets`):
        the markdown extensions the pages are written with, merged with the author's; the
        scripts and styles, before the author's own (so that theirs win); system fonts unless
        the author chose a font; Material's features the pages need (code blocks set up as
        they come into view)."""
        path = config.config_file_path
        self.root = Path(path).resolve().parent if path else Path.cwd()  # paths are relative to mkdocs.yml
        self.nav_configured = config.nav is not None
        settings.merge_extensions(config.markdown_extensions, config.mdx_configs)
        config.extra_css[:0] = [p for p in assets.stylesheet_paths() if p not in config.extra_css]
        config.extra_javascript[:0] = [_deferred(p) for p in assets.script_paths()
                                       if p not in map(str, config.extra_javascript)]
        theme = read_mkdocs_yml(path).get("theme") if path and Path(path).is_file() else None
        if not (isinstance(theme, dict) and "font" in theme):
            config.theme["font"] = False
        if "features" not in config.theme:
            config.theme["features"] = []
        settings.merge_features(config.theme["features"])
        check_config(self.config, self.root, config.config_file_path)
        return config

    # Before other plugins' on_files (default priority 0), so that they see the pages.
    @event_priority(50)
    def on_files(self, files: Files, config: MkDocsConfig) -> Files:
        out_of_site = kept_out(self.config, self.root)
        for f in [f for f in files if f.abs_src_path and out_of_site(Path(f.abs_src_path))]:
            files.remove(f)  # a log kept in the docs folder: the source of the worklog's pages (or excluded), not a page
        site = generate(self.config, self.root, site_name=config.site_name, site_url=config.site_url,
                        site_author=config.site_author, use_directory_urls=config.use_directory_urls,
                        build_date=get_build_datetime().date(),
                        home_at_root=not has_home(f.src_uri for f in files), repo_url=config.repo_url,
                        docs_dir=Path(config.docs_dir))
        for message in site.messages:
            (log.warning if message.level is Severity.WARNING else log.info)(message.text)
        in_nav = self._nav(config, files, site)
        self.generated = site.files
        self.narrow = fallback.narrow_sizes(site.files)
        # the pages that hold the author's text: the worklog section's (the home at the root too)
        self.worklog_pages = site.sections[0].srcs
        for src, content in site.files.items():
            if files.get_file_from_path(src) is not None:
                raise PluginError(f"worklog: docs/{src} clashes with a page the worklog plugin generates")
            inclusion = InclusionLevel.UNDEFINED if src in in_nav or not src.endswith(".md") else InclusionLevel.NOT_IN_NAV
            files.append(File.generated(config, src, content=content, inclusion=inclusion))
        return files

    def _nav(self, config: MkDocsConfig, files: Files, site: GeneratedSite) -> set[str]:
        """Put the worklog section (and a Kernels or Topics section) in the nav.

        Without a configured ``nav``, the automatic nav of the other pages is kept
        and the sections are appended. With one, each section is appended unless the
        author's nav already names one of its pages; then the author's nav is left
        as it is and the pages it does not name are marked not-in-nav. Returns the
        generated pages that are in the nav.
        """
        if not self.nav_configured:
            pages = sorted(files.documentation_pages(), key=file_sort_key)
            config.nav = nest_paths(f.src_uri for f in pages if f.inclusion.is_in_nav() and f.src_uri not in site.files)
        config.nav, in_nav = with_sections(config.nav, site.sections)
        return in_nav

    def on_page_content(self, content: str, /, *, page, config: MkDocsConfig, files: Files) -> str:
        """On every page, each chart's image in a ``<picture>`` with its narrow SVG for phones
        (:func:`worklog_gen.site.fallback.with_pictures`), each formula written as MathML so that
        math reads without JavaScript (:func:`worklog_gen.site.math.page_mathml`; a formula it
        cannot convert stays TeX, with a warning), and a long identifier in inline code given
        break points after its dots and underscores (:func:`worklog_gen.site.names.break_long_names`);
        then, last, so that it sees the page whole, a worklog page's HTML without links that run
        script, and sanitised with ``sanitize`` (:func:`worklog_gen.site.sanitize.safe_html`; the parser
        has warned at each link's file:line)."""
        content = fallback.with_pictures(content, page.url, self.narrow)
        content, unconverted = math.page_mathml(content)
        content = break_long_names(content)
        for formula in unconverted:
            log.warning(f"{page.file.src_uri}: formula left as TeX, latex2mathml cannot convert it "
                        f"({formula.error}): {formula.tex}")
        if page.file.src_uri in self.worklog_pages:
            content = safe_html(content, sanitize=self.config.sanitize)
        return content

    def on_post_page(self, output: str, /, *, page, config: MkDocsConfig) -> str:
        """Advertise the feed in every page's ``<head>`` (feed readers look there)."""
        if not self.config.feed:
            return output
        href = get_relative_url(FEED, page.url)
        title = html.escape(config.site_name)
        tag = f'<link rel="alternate" type="application/atom+xml" title="{title}" href="{href}">'
        return output.replace("</head>", tag + "</head>", 1)

    def on_serve(self, server, /, *, config: MkDocsConfig, builder):
        """Rebuild when the log, the freeze store or a notebook changes: the folder of every
        configured notebook is watched (so a notebook added while serving, and the CUDA sources
        and worker modules beside it that its source hash covers, are seen)."""
        paths = {self.root / self.config.worklog_dir, self.root / self.config.freeze_dir}
        paths |= {(self.root / t.notebook).parent for t in self.config.topics if t.notebook}
        for path in sorted(paths):
            if path.exists():
                server.watch(os.fspath(path))
        return server

