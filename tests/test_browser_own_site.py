"""A stranger's site in a browser: ``worklog-gen init`` in a folder outside this repository, a
topic copied in with its frozen result (the reduction notebook: folds, charts and math), built by
``mkdocs build --strict`` from that folder with the installed package, served on 127.0.0.1 and
read by headless Chromium (the fixtures and helpers of :mod:`test_browser`).

Checked: every fold is closed and holds highlighted code; every chart is drawn by vega-embed in
place of its SVG; every formula is rendered by KaTeX; no request leaves the site (no CDN, no
Google Fonts) and nothing fails to load; a day with a GitHub task list (``- [x]``), which the
project's own log does not keep, passes axe-core in both palettes.
"""

from __future__ import annotations

import datetime as dt
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from test_browser import (  # noqa: F401 (browser is a fixture)
    _CHARTS,
    _MATH,
    _READ_EVERYTHING,
    DESKTOP,
    Site,
    _context,
    _open,
    _QuietHandler,
    _wait_for_charts,
    browser,
)
from test_a11y import _AXE_RUN, AXE, WCAG_21_AA
from worklog_gen import scaffold

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
TASK_LIST = """
- [x] Read the wgmma section of the PTX ISA
- [ ] Port `tl.dot` to wgmma
"""
"""Appended to ``init``'s first entry (today's): checkboxes on that day's page."""
TOPIC = """\
        - id: reduction
          title: Reductions
          notebook: notebooks/reduction.py
"""


@pytest.fixture(scope="module")
def own_site(browser, tmp_path_factory):
    """``init``, the reduction topic and its frozen result copied in, a strict build, served."""
    project = scaffold.create(tmp_path_factory.mktemp("own") / "mylog", dt.date(2099, 3, 5)).folder
    shutil.copy(REPO / "notebooks" / "reduction.py", project / "notebooks")
    shutil.copytree(REPO / "notebooks" / "cuda", project / "notebooks" / "cuda")
    shutil.copytree(REPO / "notebooks" / "_freeze" / "reduction", project / "notebooks" / "_freeze" / "reduction")
    yml = project / "mkdocs.yml"
    yml.write_text(yml.read_text() + TOPIC)
    with (project / "worklog" / "log.md").open("a", encoding="utf-8") as log:
        log.write(TASK_LIST)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=project, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    root = project / "site"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(root=root, url=f"http://127.0.0.1:{server.server_port}/", prefix="worklog",
                   topics=[("first-kernel", "notebooks/first_kernel.py"), ("reduction", "notebooks/reduction.py")])
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


_FOLDS = """() => Array.from(document.querySelectorAll("details.fold"), d => ({
  open: d.open,
  code: !!d.querySelector(".highlight pre code"),
  highlighted: d.querySelectorAll(".highlight pre code span[class]").length,
  raw: d.textContent.includes("```"),
}))"""


def test_a_copied_topic_has_closed_folds_drawn_charts_and_math(browser, own_site):
    context = _context(browser, own_site, DESKTOP)
    try:
        page, problems = _open(context, own_site, "topics/reduction/")
        folds = page.evaluate(_FOLDS)
        assert folds and not any(f["open"] for f in folds), "folds open on load"
        with_code = [f for f in folds if f["code"]]
        assert with_code and all(f["highlighted"] for f in with_code), "code in a fold is not highlighted"
        assert not any(f["raw"] for f in folds), "a fold shows a raw fence"
        page.evaluate(_READ_EVERYTHING, [True, None])
        _wait_for_charts(page, problems)
        charts = page.evaluate(_CHARTS)
        assert charts and all(c["state"] == "drawn" and c["hidden"] for c in charts), charts
        math = page.evaluate(_MATH)
        assert math["arithmatex"] and math["rendered"] == math["arithmatex"], math
        assert not problems, problems  # nothing failed, nothing left the site
        page.close()
        for path in ("", "worklog/", "topics/first-kernel/", "kernels/"):
            page, problems = _open(context, own_site, path)
            page.evaluate(_READ_EVERYTHING, [False, None])
            _wait_for_charts(page, problems)
            assert not problems, (path, problems)
            page.close()
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_task_list_s_checkboxes_pass_axe(browser, own_site, scheme):
    """Each checkbox ``pymdownx.tasklist`` writes is named (``worklog_gen.site.tasklist``): without
    a name axe-core's ``label`` rule fails the page (WCAG 2.1 SC 4.1.2)."""
    context = _context(browser, own_site, DESKTOP, scheme=scheme)
    try:
        page, problems = _open(context, own_site, f"worklog/{dt.date.today().isoformat()}/")
        assert page.locator("li.task-list-item input[type=checkbox]").count() == 2
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        assert page.evaluate(_AXE_RUN, [WCAG_21_AA, None]) == []
        assert not problems, problems
    finally:
        context.close()
