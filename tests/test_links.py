"""No broken internal link or anchor in the built site.

MkDocs' validation (``--strict`` with every check at ``warn``) checks the links that
markdown writes. It does not see raw HTML (the heatmap's links, pages passed through
from notebooks), the theme's own links or the feed's ``<link>``. This checker reads
every page of a real strict build of the project (from the committed freeze store):
each ``href``/``src`` that stays on the site must name a file there, and each
``#fragment`` an ``id`` (or ``<a name>``) in the page it points to.

``WORKLOG_GEN_TEST_PROJECT`` names another folder with a ``mkdocs.yml`` to build
instead of this repository (e.g. a copy with a store, while developing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

REPO = Path(__file__).resolve().parent.parent

# Attributes that make the browser fetch or navigate to a URL.
LINK_ATTRS = {"a": "href", "link": "href", "img": "src", "script": "src", "iframe": "src", "source": "src"}
# A URL with a scheme (https:, mailto:, data:, ...) or a network path (//host) leaves the site.
_EXTERNAL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*:|//)")
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)""")


@dataclass
class Page:
    """What one HTML file names and offers: its links as ``(line, url)`` and its anchors."""

    links: list[tuple[int, str]] = field(default_factory=list)
    anchors: set[str] = field(default_factory=set)


class _PageParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.page = Page()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id",) + (("name",) if tag == "a" else ()):
            if attrs.get(key):
                self.page.anchors.add(attrs[key])
        url = attrs.get(LINK_ATTRS.get(tag, ""))
        if url is not None:
            self.page.links.append((self.getpos()[0], url))


def parse_page(text: str) -> Page:
    """Links and anchors of an HTML document."""
    parser = _PageParser()
    parser.feed(text)
    parser.close()
    return parser.page


def _target_file(site: Path, path: str) -> Path | None:
    """The file a site path is served from (``a/`` -> ``a/index.html``), or None."""
    candidate = site / unquote(path).lstrip("/")
    if candidate.is_dir():
        candidate = candidate / "index.html"
    return candidate if candidate.is_file() else None


def broken_links(site: Path, base_path: str = "/") -> list[str]:
    """Every broken internal link of the built site, as ``file:line: message``.

    ``site`` is the build's folder, ``base_path`` the path it is served under (the path
    of ``site_url``; ``/`` without one). Links in HTML files and ``url()`` references in
    CSS files are checked; links with a scheme or host are left alone. A root-relative
    link (``/x``) must lie under ``base_path``, or it leaves the site.
    """
    site = site.resolve()
    base_path = "/" + base_path.strip("/") + "/" if base_path.strip("/") else "/"
    pages: dict[Path, Page] = {}

    def page(file: Path) -> Page:
        if file not in pages:
            pages[file] = parse_page(file.read_text(encoding="utf-8"))
        return pages[file]

    problems: list[str] = []
    sources = [(f, page(f).links) for f in sorted(site.rglob("*.html"))]
    for css in sorted(site.rglob("*.css")):
        text = css.read_text(encoding="utf-8", errors="replace")
        sources.append((css, [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _CSS_URL.finditer(text)]))

    for file, links in sources:
        rel = file.relative_to(site).as_posix()
        page_url = base_path + rel  # where the browser sees this file
        for line, url in links:
            url = url.strip()
            if not url or _EXTERNAL.match(url):
                continue
            where = f"{rel}:{line}"
            resolved = urlsplit(urljoin(page_url, url))
            if not resolved.path.startswith(base_path):
                problems.append(f"{where}: '{url}' leaves the site (served under {base_path})")
                continue
            target = _target_file(site, resolved.path[len(base_path):])
            if target is None:
                problems.append(f"{where}: '{url}' names no file in the site")
                continue
            fragment = unquote(resolved.fragment)
            if fragment and target.suffix == ".html" and fragment not in page(target).anchors:
                problems.append(f"{where}: '{url}': no id '{fragment}' in {target.relative_to(site).as_posix()}")
    return problems


# --- the checker itself, on small hand-made sites --------------------------------------


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_checker_accepts_good_links_and_finds_each_kind_of_broken_one(tmp_path):
    site = _write(tmp_path, {
        "index.html": '<a href="day/">day</a><a href="day/#notes">notes</a><a href="#top" id="top">top</a>\n'
                      '<img src="img/plot.png"><a href="https://example.org/x">out</a><a href="mailto:a@b.c">mail</a>\n'
                      '<a href="day/#missing">bad anchor</a>\n<a href="nowhere/">bad page</a>\n'
                      '<script src="js/gone.js"></script>\n<a href="/blog/old/">old site</a>',
        "day/index.html": '<h2 id="notes">Notes</h2><a href="../index.html#top">home</a><a name="legacy"></a>'
                          '<a href="#legacy">legacy</a>',
        "img/plot.png": "png",
        "css/site.css": '@font-face{src:url(../fonts/a.woff2) format("woff2")}\nb{background:url("data:image/png;base64,AA")}\n'
                        "i{background:url('../img/none.png')}",
        "fonts/a.woff2": "font",
    })
    assert sorted(broken_links(site)) == [
        "css/site.css:3: '../img/none.png' names no file in the site",
        "index.html:3: 'day/#missing': no id 'missing' in day/index.html",
        "index.html:4: 'nowhere/' names no file in the site",
        "index.html:5: 'js/gone.js' names no file in the site",
        "index.html:6: '/blog/old/' names no file in the site",
    ]


def test_root_relative_links_resolve_under_the_sites_base_path(tmp_path):
    site = _write(tmp_path, {
        "404.html": '<link href="/log/assets/main.css"><a href="/log/">home</a><a href="/other/">out</a>',
        "index.html": "<p>home</p>",
        "assets/main.css": "",
    })
    assert broken_links(site, "/log/") == ["404.html:1: '/other/' leaves the site (served under /log/)"]


# --- the project's own site ----------------------------------------------------------


@pytest.fixture
def project_site(project_build):
    return project_build.root, project_build.base_path


def test_project_site_has_no_broken_internal_links(project_site):
    site, base_path = project_site
    assert len(list(site.rglob("*.html"))) > 5, "the build wrote almost no pages"
    problems = broken_links(site, base_path)
    assert not problems, "broken links in the built site:\n" + "\n".join(problems)
