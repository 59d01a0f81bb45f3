"""The project's site from three engines: MkDocs and ProperDocs run the plugin;
Zensical, which runs no MkDocs plugins, builds what ``worklog-gen generate`` wrote.

Each build is strict and goes to ``tmp_path``; the tests assert on the HTML: every day
page, topic page and the Kernels page exist with their images and charts, and the text
of a day page and a topic page is the same from all three engines (navigation aside; each
formula is counted, not read: MkDocs and ProperDocs run the plugin's ``on_page_content``, which
writes it as MathML, while Zensical's page keeps its TeX for KaTeX).
The plugin's generated markdown and ``generate``'s files are compared byte for byte.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from worklog_gen.config import load_plugin_config
from worklog_gen.log import load
from worklog_gen.site.generate import GENERATED_MARK, nav_paths

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("engines")

REPO = Path(__file__).resolve().parents[1]
QUIET = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def _run(cmd: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, cwd=cwd, env=QUIET, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed (the test extra installs it)")
        pytest.skip(f"{name} is not installed")
    return path


@pytest.fixture(scope="module")
def mkdocs_site(project_build) -> Path:
    """MkDocs' strict build of the project: the run's shared one (``conftest.project_build``)."""
    return project_build.root


@pytest.fixture(scope="module")
def properdocs_site(tmp_path_factory) -> Path:
    """ProperDocs' strict build of the project (the plugin run by ProperDocs)."""
    out = tmp_path_factory.mktemp("properdocs") / "site"
    _run([_tool("properdocs"), "build", "--strict", "-q", "-f", "mkdocs.yml", "-d", str(out)])
    return out


@pytest.fixture(scope="module")
def zensical_site(tmp_path_factory) -> Path:
    """What ``worklog-gen generate --strict`` wrote, built by Zensical (strict): the site's folder,
    ``site`` inside the generated project."""
    zensical = _tool("zensical")  # skips (or fails in CI) before generating when it is missing
    generated = tmp_path_factory.mktemp("generated")
    _run([sys.executable, "-m", "worklog_gen", "generate", "--strict", "--out", str(generated)])
    _run([zensical, "build", "--strict", "-f", str(generated / "mkdocs.yml")])
    return generated / "site"


ENGINES = ("mkdocs", "properdocs", "zensical")
"""Each engine's build is the fixture ``<engine>_site``, made by the first test that needs it, so
that no one test waits for all three."""


@pytest.fixture(scope="module")
def sites(request) -> dict[str, Path]:
    """engine -> built site folder, for every engine."""
    return {engine: request.getfixturevalue(f"{engine}_site") for engine in ENGINES}


def _generated(zensical_site: Path) -> Path:
    """The folder ``worklog-gen generate`` wrote in the ``zensical_site`` fixture (Zensical's site is in it)."""
    return zensical_site.parent


def _expected_pages() -> list[str]:
    cfg, root = load_plugin_config(REPO / "mkdocs.yml")
    log = load(root / cfg.worklog_dir, date_order=cfg.date_order)
    days = [f"{cfg.url_prefix}/{e.slug}/index.html" for e in log.entries]
    topics = [f"topics/{t.id}/index.html" for t in cfg.topics]
    return days + topics + ["kernels/index.html", f"{cfg.url_prefix}/index.html"]


class _Article(HTMLParser):
    """The text, images and charts of a Material page's article (no nav, header or footer)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.hidden = 0
        self.words: list[str] = []
        self.images: list[str] = []
        self.charts = 0
        self.formulas = 0
        self.math_at: int | None = None  # the depth of the formula being read

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if not self.depth:
            if tag == "article" and "md-content__inner" in (a.get("class") or ""):
                self.depth = 1
            return
        if tag not in ("img", "br", "hr", "input", "source", "meta", "link"):
            self.depth += 1
            if tag in ("script", "style", "noscript"):
                self.hidden += 1
            if self.math_at is None and "arithmatex" in (a.get("class") or ""):
                self.math_at = self.depth
                self.formulas += 1
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])
        if "data-chart" in a or "vega-chart" in (a.get("class") or ""):
            self.charts += 1

    def handle_endtag(self, tag):
        if self.depth and tag not in ("img", "br", "hr", "input", "source", "meta", "link"):
            if self.math_at == self.depth:
                self.math_at = None
            self.depth -= 1
            if tag in ("script", "style", "noscript") and self.hidden:
                self.hidden -= 1

    def handle_data(self, data):
        if self.depth and not self.hidden and self.math_at is None:
            self.words += data.split()


def _article(page: Path) -> _Article:
    parser = _Article()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


@pytest.mark.parametrize("engine", ENGINES)
def test_every_page_is_built_with_its_images(request, engine):
    site = request.getfixturevalue(f"{engine}_site")
    for rel in _expected_pages():
        page = site / rel
        assert page.is_file(), f"{engine}: {rel} missing"
        article = _article(page)
        assert article.words, f"{engine}: {rel} has no text"
        for src in article.images:
            if re.match(r"^[a-z]+:", src):
                continue
            target = (page.parent / src.split("#")[0]).resolve()
            assert target.is_file(), f"{engine}: {rel} shows {src}, which is not in the site"
    topics = [rel for rel in _expected_pages() if rel.startswith("topics/")]
    assert all(_article(site / rel).images for rel in topics), f"{engine}: a topic page has no figure"
    kernels = _article(site / "kernels/index.html")
    assert kernels.images or kernels.charts, f"{engine}: the Kernels page has no roofline"
    assert (site / "feed.xml").is_file()


@pytest.mark.parametrize("rel", ["worklog/2026-11-21/index.html", "topics/vector-add/index.html"])
def test_the_engines_agree_on_a_page_text(sites, rel):
    articles = {engine: _article(site / rel) for engine, site in sites.items()}
    texts = {engine: article.words for engine, article in articles.items()}
    assert len({article.formulas for article in articles.values()}) == 1, {e: a.formulas for e, a in articles.items()}
    assert len(texts["mkdocs"]) > 50
    assert texts["properdocs"] == texts["mkdocs"]
    assert texts["zensical"] == texts["mkdocs"]


def test_generate_writes_what_the_plugin_hands_to_mkdocs(zensical_site, project_build):
    """``generate``'s docs (the ``zensical_site`` fixture's run) against what the plugin handed to MkDocs
    in the run's shared build (``conftest.project_build``), file by file, byte for byte."""
    plugin_files = {p.relative_to(project_build.generated).as_posix(): p.read_bytes()
                    for p in project_build.generated.rglob("*") if p.is_file()}
    assert plugin_files, "the plugin generated nothing: the comparison would compare nothing"
    docs = _generated(zensical_site) / "docs"
    written = {p.relative_to(docs).as_posix(): p.read_bytes() for p in docs.rglob("*")
               if p.is_file() and p.name != GENERATED_MARK}
    authored = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*") if p.is_file()}
    assert set(written) - authored == set(plugin_files)
    for src, expected in plugin_files.items():
        assert written[src] == expected, f"{src} differs between the plugin and generate"


def test_generated_config_drops_the_plugin_and_spells_out_the_nav(zensical_site):
    import yaml

    out = _generated(zensical_site)
    config = yaml.safe_load((out / "mkdocs.yml").read_text())
    assert "worklog" not in [p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]]
    assert config["docs_dir"] == "docs"
    nav = yaml.safe_load((out / "nav.yml").read_text())
    assert config["nav"] == nav
    sections = [next(iter(item)) for item in nav if isinstance(item, dict)]
    assert sections[:2] == ["Worklog", "Kernels"]
    kernels = next(item["Kernels"] for item in nav if isinstance(item, dict) and "Kernels" in item)
    assert {"Overview": "kernels.md"} in kernels
    assert not [p for p in nav_paths(nav) if re.search(r"\d{4}-\d\d-\d\d", p)]  # day pages: out of the nav
    assert config["not_in_nav"].splitlines() == ["/notes/", "/worklog/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*.md"]


SHARED_LOG = """\
12/11/25 (T - 152)

Profiled the fused softmax: $\\frac{2 \\cdot 4096 \\cdot 4 \\text{ B}}{t}$ is 3.1 TB/s, near the copy roof.
<img src=x onerror="alert(1)"><script>alert(2)</script>
<a href="https://triton-lang.org" onclick="alert(3)">Triton's tutorial</a>, read again.

Tried num_warps 8
{: onmouseover="alert(4)" }
"""


def test_generate_with_sanitize_hands_zensical_sanitised_pages(tmp_path):
    import yaml

    project = tmp_path / "shared"
    (project / "docs").mkdir(parents=True)
    (project / "worklog").mkdir()
    (project / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (project / "worklog" / "tminus.md").write_text(SHARED_LOG, encoding="utf-8")
    (project / "mkdocs.yml").write_text("site_name: A shared kernels log\ntheme: material\n"
                                        "plugins:\n  - worklog:\n      sanitize: true\n", encoding="utf-8")
    out = tmp_path / "generated"
    _run([sys.executable, "-m", "worklog_gen", "generate", "--out", str(out)], cwd=project)
    config = yaml.safe_load((out / "mkdocs.yml").read_text(encoding="utf-8"))
    assert "worklog_gen.site.sanitize" in config["markdown_extensions"]  # the sanitiser, for Zensical to run
    _run([_tool("zensical"), "build", "-f", str(out / "mkdocs.yml")])
    day = (out / "site" / "worklog" / "2025-12-11" / "index.html").read_text(encoding="utf-8")
    assert "3.1 TB/s" in day and "arithmatex" in day and 'href="https://triton-lang.org"' in day
    for page in (out / "site" / "worklog").rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not [bad for bad in ("alert(", "onerror", "onclick", "onmouseover") if bad in text], page
