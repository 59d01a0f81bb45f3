"""Shared fixtures: hand-built entries and logs, and real MkDocs builds in tmp_path."""

from __future__ import annotations

import datetime as dt
import json
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from worklog_gen.kit.measure import H200_SXM, Ceilings
from worklog_gen.kit.roofline import RooflinePoint
from worklog_gen.log import Entry, Link, Task, TaskStatus, Worklog

REPO = Path(__file__).resolve().parent.parent
TMINUS_FIXTURE = REPO / "tests" / "fixtures" / "real_logs" / "tminus-worklog.md"
"""A T-minus learning log written for the tests, in the shape of a real one: HTML-comment-wrapped
front matter, a ``T - X Days`` preamble, 12 days (12/09/25 to 12/20/2025, T - 154 to T - 143,
target 2026-05-12) with mixed header forms, 24 links (one twice in a day, one on three days, two
root-relative, a title with a typographic ligature), done and carried tasks, a header with a
trailing space, whitespace-only lines, and no newline at the end."""
OWN_LOG = REPO / "worklog" / "tminus.md"
T_MINUS_LOGS = [
    pytest.param(OWN_LOG, id="own-log"),
    pytest.param(TMINUS_FIXTURE, id="tminus-fixture"),
]
"""The T-minus logs the tests read: the project's own and the test fixture, both in the repository."""


@dataclass(frozen=True)
class ProjectBuild:
    """The project's site, built once for the whole test run (:func:`project_build`)."""

    root: Path
    """The build's folder: read it, never write to it (every test and worker shares it)."""
    base_path: str
    """The path of ``site_url`` (``/`` without one), where the site expects to be served."""
    prefix: str
    """The worklog's ``url_prefix`` without slashes: ``worklog``."""
    topics: list[tuple[str, str | None]]
    """Each topic's ``(id, notebook)``, in configured order."""
    generated: Path
    """What the worklog plugin handed to MkDocs in that build (its ``generated``: each page and file
    by its path below ``docs_dir``), written out below this folder as the same bytes."""


def project_dir() -> Path:
    """The MkDocs project the site tests build: ``WORKLOG_GEN_TEST_PROJECT`` or this repository."""
    return Path(os.environ.get("WORKLOG_GEN_TEST_PROJECT") or REPO).resolve()


def _run_folder(request, tmp_path_factory) -> Path:
    """The temporary folder of the whole run, the same for every pytest-xdist worker (a worker's
    own is one below it)."""
    shared = tmp_path_factory.getbasetemp()
    return shared.parent if hasattr(request.config, "workerinput") else shared


@pytest.fixture(scope="session")
def project_build(request, tmp_path_factory) -> ProjectBuild:
    """``mkdocs build --strict`` of :func:`project_dir` from the committed freeze store, made once
    for the whole run and shared by every test that reads the project's site (links, browser,
    accessibility, engines). Under pytest-xdist the first worker to get here builds it while the
    others wait on a file lock (pytest-xdist's documented way to run a session fixture once), then
    all read the same folder. Raises MkDocs' ``Abort`` when the strict build warns."""
    from filelock import FileLock

    shared = _run_folder(request, tmp_path_factory)
    root, summary, generated = shared / "project-site", shared / "project-site.json", shared / "project-generated"
    with FileLock(str(shared / "project-site.lock")):
        if not summary.is_file():
            from urllib.parse import urlsplit

            from mkdocs.commands.build import build
            from mkdocs.config import load_config

            config = load_config(str(project_dir() / "mkdocs.yml"), strict=True, site_dir=str(root))
            build(config)
            for src, content in config.plugins["worklog"].generated.items():
                path = generated / src
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
            plugin = config.plugins["worklog"].config
            summary.write_text(json.dumps({
                "base_path": urlsplit(config.site_url or "/").path or "/",
                "prefix": plugin.url_prefix.strip("/"),
                "topics": [[t.id, t.notebook] for t in plugin.topics]}), encoding="utf-8")
    built = json.loads(summary.read_text(encoding="utf-8"))
    return ProjectBuild(root, built["base_path"], built["prefix"], [tuple(t) for t in built["topics"]], generated)


@pytest.fixture
def make_entry():
    """``make_entry("2025-12-09", body, countdown=154, links=[(title, url)], tasks=[(text, status)])``:
    an :class:`Entry` built by hand (no parser), with words counted as whitespace-separated tokens."""

    def make(date: str, body: str = "", countdown: int | None = None, links=(), tasks=(), path="log.md", line=1):
        day = dt.date.fromisoformat(date)
        return Entry(
            date=day,
            countdown=countdown,
            header=f"{day:%m/%d/%y}" + (f" (T - {countdown})" if countdown is not None else ""),
            body=body,
            path=path,
            line=line,
            links=[Link(title=t, url=u, line=line + 1) for t, u in links],
            tasks=[Task(text=t, status=TaskStatus(s), line=line + 1) for t, s in tasks],
            words=len(body.split()),
        )

    return make


@pytest.fixture
def make_log():
    """``make_log(entries, target="2026-05-12", preamble="")``: a :class:`Worklog` by hand."""

    def make(entries, target: str | None = "2026-05-12", preamble: str = "", title: str | None = None):
        return Worklog(
            entries=sorted(entries, key=lambda e: e.date),
            preamble=preamble,
            front_matter={"title": title} if title else {},
            target_date=dt.date.fromisoformat(target) if target else None,
            paths=["log.md"],
        )

    return make


@pytest.fixture
def fake_render(monkeypatch):
    """Replace the notebook renderer with fakes that record their ``calls``.

    Each topic page gets ``Rendered <id>.`` with one figure ``<id>/fig.png`` and no
    warnings; set ``fake_render.warnings`` to make every topic render warn."""
    from worklog_gen.freeze import render
    from worklog_gen.site import generate

    class FakeRender:
        def __init__(self):
            self.calls: list[tuple] = []
            self.warnings: list[str] = []

        def render_topic(self, notebook, store_dir, root, *, files_dir, primary=None):
            topic_id = files_dir
            self.calls.append(("topic", topic_id, Path(notebook)))
            return render.RenderedPage(
                markdown=f"Rendered {topic_id}.\n\n![figure]({topic_id}/fig.png)\n",
                files={f"{topic_id}/fig.png": b"\x89PNG fake"},
                warnings=list(self.warnings),
            )

        def kernels_page(self, topics, store_dir, root, primary=None):
            self.calls.append(("kernels", [t[0] for t in topics]))
            return render.RenderedPage(markdown="# Kernels\n\nEvery kernel.\n")

    fake = FakeRender()
    monkeypatch.setattr(render, "render_topic", fake.render_topic)
    monkeypatch.setattr(generate, "kernels_page", fake.kernels_page)
    return fake


@pytest.fixture
def build_site(tmp_path, monkeypatch):
    """``build_site(log_text, plugin={...}, config={...}, docs={...}, files={...}, strict=True) -> site_dir``.

    Writes ``mkdocs.yml`` (Material theme, the ``worklog`` plugin reading
    ``worklog/log.md``), the docs, the log and ``files`` (a path under the project's folder ->
    bytes) into a fresh folder and runs a real
    ``mkdocs build`` in-process. The build date is fixed at 2025-12-21 through
    ``SOURCE_DATE_EPOCH``. Raises MkDocs' ``Abort`` when a strict build warns.
    """
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(dt.datetime(2025, 12, 21, 12, tzinfo=dt.timezone.utc).timestamp())))
    counter = iter(range(1000))

    def build_it(log_text: str | None, *, plugin: dict | None = None, config: dict | None = None,
                 docs: dict[str, str] | None = None, files: dict[str, bytes] | None = None,
                 strict: bool = True) -> Path:
        root = tmp_path / f"project{next(counter)}"
        (root / "docs").mkdir(parents=True)
        (root / "worklog").mkdir()
        if log_text is not None:
            (root / "worklog" / "log.md").write_text(textwrap.dedent(log_text), encoding="utf-8")
        for name, data in (files or {}).items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        for name, text in (docs or {"index.md": "# Home\n"}).items():
            (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
            (root / "docs" / name).write_text(text, encoding="utf-8")
        cfg = {
            "site_name": "Test log",
            "theme": {"name": "material"},
            "markdown_extensions": ["tables", "attr_list", "md_in_html", {"toc": {"permalink": True}}],
            "validation": {
                "omitted_files": "warn",
                "absolute_links": "warn",
                "unrecognized_links": "warn",
                "anchors": "warn",
            },
            "plugins": [{"worklog": plugin or {}}],
            **(config or {}),
        }
        (root / "mkdocs.yml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        build(load_config(str(root / "mkdocs.yml"), strict=strict))
        return root / "site"

    return build_it


# --- roofline points on synthetic numbers (test_roofline.py, test_charts.py) -------------------

ROOFLINE_N = 2**24  # elements of a vector add


@pytest.fixture
def ceilings() -> Ceilings:
    return Ceilings("NVIDIA H200", copy_gbps=4000, bf16_tflops=800, tf32_tflops=400, fp32_tflops=67,
                    datasheet=H200_SXM)


@pytest.fixture
def points() -> list[RooflinePoint]:
    m = 4096
    return [
        # fp32 vector add: 1 FLOP per element, read x and y, write out: 12 bytes per element
        RooflinePoint("torch add", ROOFLINE_N, 12 * ROOFLINE_N, 0.0537, "fp32", "vector add", size="2^24",
                      dtype="fp32"),
        RooflinePoint("triton add BLOCK_SIZE=1024", ROOFLINE_N, 12 * ROOFLINE_N, 0.0550, "fp32", "vector add"),
        # bf16 matmul: 2 m^3 FLOP, A and B read, C written: 3 m^2 * 2 bytes
        RooflinePoint("naive", 2 * m**3, 6 * m * m, 2.3, "bf16", "tiled matmul", size="4096^3", dtype="bf16"),
        RooflinePoint("grouped GROUP_SIZE_M=8", 2 * m**3, 6 * m * m, 0.25, "bf16", "tiled matmul"),
    ]


@pytest.fixture(scope="session")
def reader_visits(request, tmp_path_factory) -> Path:
    """The folder where each reader's visit (``test_a11y.read_page``) is kept for the whole run,
    shared by the pytest-xdist workers (the run's folder, as :func:`project_build` shares the site)."""
    folder = _run_folder(request, tmp_path_factory) / "a11y-visits"
    folder.mkdir(exist_ok=True)
    return folder
