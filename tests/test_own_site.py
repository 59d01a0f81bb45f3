"""A stranger's own log, from the installed package: ``worklog-gen init``, a minimal ``mkdocs.yml``
in a folder outside this repository, several files that each keep what they say, the CLI's
promises (one-line errors, ``--diff`` as a dry run, ``status`` exit codes), the full-content
feed, what ``serve`` watches, and the executor's GPU count.

Sites are built with ``mkdocs build --strict`` in a subprocess whose working folder is the new
project (``tmp_path``), as a user runs it; nothing is read from this repository's ``docs/`` or
``mkdocs.yml``.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from bs4 import BeautifulSoup
from click.testing import CliRunner

from worklog_gen import scaffold
from worklog_gen.cli import main
from worklog_gen.config import WorklogConfig
from worklog_gen.freeze import execute
from worklog_gen.freeze.record import FreezeRecord, link_between
from worklog_gen.freeze.source_hash import source_hash
parse = importlib.import_module("worklog_gen.log.parse")  # the module (worklog_gen.log re-exports a function of its name)
from worklog_gen.site import assets, settings
from worklog_gen.site.feed import ATOM_NS
from worklog_gen.site.settings import with_extensions

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}

MINIMAL_YML = "site_name: Kernels by hand\ntheme: material\nplugins:\n  - worklog\n"

TMINUS = """\
---
title: Countdown to the GPU MODE talk
target_date: 2027-03-05
---
Goal: give a talk on writing attention kernels by hand.

Rules: code before reading someone else's kernel; write down one measured number a day.

02/01/27 (T - 32)

Read [Triton's fused softmax tutorial](https://triton-lang.org/main/getting-started/tutorials/02-fused-softmax.html).
Timed the online softmax at 4096 columns - Done

02/02/27 (T - 31)

One pass over the row instead of three: 1.9x over torch.softmax at 8192 columns.
Write up the napkin math -> Tmr
"""

PROGRESS = """\
---
title: 100 days of CUDA
year: 2027
---
The rules of this log: a kernel a day, timed against cuBLAS or torch.

## January 30 - Day 1 of CUDA

Vector add in CUDA C; 2.9 TB/s on an H100 with 16-byte loads.

## January 31 - Day 2 of CUDA

Tree reduction with warp shuffles (`__shfl_down_sync`).
"""


def build(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` run in ``folder``, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", *args], cwd=folder, env=ENV,
                          capture_output=True, text=True, timeout=600)


def html(folder: Path, page: str) -> BeautifulSoup:
    return BeautifulSoup((folder / "site" / page).read_text(encoding="utf-8"), "html.parser")


# --- worklog-gen init ---------------------------------------------------------------------


def test_init_makes_a_site_that_builds_strictly_before_any_notebook_runs(tmp_path):
    result = CliRunner().invoke(main, ["init", str(tmp_path / "mylog"), "--target", "2099-03-05"])
    assert result.exit_code == 0, result.output
    project = tmp_path / "mylog"
    for rel in scaffold.FILES:
        assert (project / rel).is_file(), rel
    log = (project / "worklog" / "log.md").read_text()
    today = dt.date.today()
    assert f"{today:%m/%d/%y} (T - {(dt.date(2099, 3, 5) - today).days})" in log
    assert "target_date: 2099-03-05" in log
    yml = (project / "mkdocs.yml").read_text()
    for option in WorklogConfig().keys():
        assert f"{option}:" in yml, option  # every option present (most commented)
    done = build(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "has no frozen result yet" in done.stderr  # said at INFO, not a warning
    topic = html(project, "topics/first-kernel/index.html")
    assert "Not executed yet" in topic.get_text() and "add_kernel" in topic.get_text()
    assert (project / "site" / "worklog" / "index.html").is_file()
    assert "first-kernel" in (project / ".gitignore").read_text() or "_freeze" in (project / ".gitignore").read_text()
    workflow = yaml.safe_load((project / ".github/workflows/publish.yml").read_text())
    steps = workflow["jobs"]["build"]["steps"]
    assert any(s.get("run", "").startswith('python -m pip install "worklog-gen') for s in steps)
    assert workflow["jobs"]["deploy"]["steps"][0]["uses"].startswith("actions/deploy-pages")


def test_init_asks_for_the_target_and_overwrites_nothing(tmp_path):
    (tmp_path / "mkdocs.yml").write_text("site_name: mine\n")
    result = CliRunner().invoke(main, ["init", str(tmp_path), "--target", "2099-03-05"])
    assert result.exit_code == 2 and "mkdocs.yml" in result.output and "already exist" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mkdocs.yml"]  # nothing written
    assert (tmp_path / "mkdocs.yml").read_text() == "site_name: mine\n"
    asked = CliRunner().invoke(main, ["init", str(tmp_path / "new")], input="2099-03-05\n")
    assert asked.exit_code == 0, asked.output
    assert "Target date" in asked.output
    assert "target_date: 2099-03-05" in (tmp_path / "new" / "worklog" / "log.md").read_text()
    past = CliRunner().invoke(main, ["init", str(tmp_path / "past"), "--target", "2001-01-01"])
    assert past.exit_code == 2 and "before today" in past.output


def test_init_refuses_a_target_whose_countdown_a_header_cannot_hold(tmp_path):
    result = CliRunner().invoke(main, ["init", str(tmp_path / "far"), "--target", "2400-01-01"])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert "2400-01-01" in line and "99,999 days" in line
    assert not (tmp_path / "far").exists() or not list((tmp_path / "far").iterdir())


def test_init_that_cannot_write_every_file_writes_none(tmp_path, monkeypatch):
    folder = tmp_path / "mylog"
    opened = Path.open

    def read_only_worklog(self, mode="r", *args, **kwargs):
        if "x" in mode and self.parent.name == "worklog":
            raise PermissionError(13, "Permission denied", str(self))
        return opened(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", read_only_worklog)
    result = CliRunner().invoke(main, ["init", str(folder), "--target", "2099-03-05"])
    assert result.exit_code == 1, result.output
    (line,) = result.output.strip().splitlines()
    assert "worklog/log.md" in line and "Permission denied" in line and "init wrote nothing" in line
    assert not folder.exists()  # mkdocs.yml and docs/ removed again, and the folder init made
    monkeypatch.setattr(Path, "open", opened)
    again = CliRunner().invoke(main, ["init", str(folder), "--target", "2099-03-05"])
    assert again.exit_code == 0, again.output


def test_init_site_reads_the_site_url_the_publish_workflow_sets(tmp_path, monkeypatch):
    from mkdocs.config import load_config

    project = scaffold.create(tmp_path / "mylog", dt.date(2099, 3, 5)).folder
    workflow = yaml.safe_load((project / ".github/workflows/publish.yml").read_text())
    build_step = next(s for s in workflow["jobs"]["build"]["steps"] if "SITE_URL" in s.get("env", {}))
    assert build_step["run"].startswith("mkdocs build")
    env = {k: v for k, v in ENV.items() if k != "SITE_URL"}
    monkeypatch.chdir(project)
    monkeypatch.delenv("SITE_URL", raising=False)  # load_config reads !ENV from os.environ
    assert load_config(str(project / "mkdocs.yml"))["site_url"] is None  # unset: no site_url, as before
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=project, capture_output=True,
                          text=True, timeout=600, env={**env, "SITE_URL": "https://me.github.io/mylog"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "site_url is not set" not in done.stderr
    feed = ET.fromstring((project / "site" / "feed.xml").read_bytes())
    a = f"{{{ATOM_NS}}}"
    assert feed.find(f"{a}link[@rel='self']").get("href") == "https://me.github.io/mylog/feed.xml"
    links = [e.find(f"{a}link").get("href") for e in feed.findall(f"{a}entry")]
    assert links and all(link.startswith("https://me.github.io/mylog/worklog/") for link in links), links


@pytest.mark.parametrize("version, direct_url, requirement", [
    ("0.1.0", None, "worklog-gen==0.1.0"),  # a release from PyPI
    ("0.1.0", {"url": "file:///home/me/dist/worklog_gen-0.1.0-py3-none-any.whl", "archive_info": {}},
     "worklog-gen==0.1.0"),  # a release's wheel
    ("0.2.0.dev4+g1a2b3c4", {"url": "https://me:TOKEN@github.com/me/worklog-gen.git",
                             "vcs_info": {"vcs": "git", "commit_id": "1a2b3c4d5e6f"}},
     "worklog-gen @ git+https://github.com/me/worklog-gen.git@1a2b3c4d5e6f"),
    ("0.2.0", {"url": "https://example.org/worklog_gen-0.2.0.tar.gz", "archive_info": {}},
     "worklog-gen @ https://example.org/worklog_gen-0.2.0.tar.gz"),
    ("0.2.0.dev4+g1a2b3c4", {"url": "file:///home/me/worklog-gen", "dir_info": {"editable": True}}, "worklog-gen"),
])
def test_the_publish_workflow_installs_the_worklog_gen_that_ran_init(version, direct_url, requirement):
    got, note = scaffold.publish_requirement(version, json.dumps(direct_url) if direct_url else None)
    assert got == requirement
    assert version in note and "TOKEN" not in got + note and "/home/me" not in got + note
    if got == "worklog-gen":  # a folder CI cannot reach: the note names the commit to pin
        assert "git+https://" in note and "@1a2b3c4" in note


def test_the_starter_notebook_is_correct_under_the_interpreter(tmp_path):
    """The starter topic runs on a CPU, as a new user without a GPU runs it."""
    pytest.importorskip("triton")
    project = scaffold.create(tmp_path / "mylog", dt.date(2099, 1, 1)).folder
    result = execute.execute_notebook("notebooks/first_kernel.py", project, project / "notebooks/_freeze",
                                      timeout=600, extra_env={"TRITON_INTERPRET": "1"}, progress=False)
    assert result.ok, result.failure
    assert result.record.mode == "interpret"


# --- a minimal mkdocs.yml in a folder of one's own -------------------------------------------


@pytest.fixture(scope="module")
def minimal_site(tmp_path_factory):
    """site_name, theme and the plugin; a T-minus file beside a progress log; no docs/index.md;
    the reduction topic copied in with its frozen result."""
    folder = tmp_path_factory.mktemp("stranger")
    (folder / "docs").mkdir()
    (folder / "worklog").mkdir()
    (folder / "worklog" / "tminus.md").write_text(TMINUS)
    (folder / "worklog" / "progress.md").write_text(PROGRESS)
    (folder / "mkdocs.yml").write_text(MINIMAL_YML)
    done = build(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def test_the_plugin_brings_its_assets_extensions_and_fonts(minimal_site):
    page = html(minimal_site, "index.html")
    scripts = [s.get("src") for s in page.find_all("script") if s.get("src")]
    for name in assets.SCRIPTS:
        assert f"assets/worklog-gen/{name}" in scripts
    styles = [s.get("href") for s in page.find_all("link", rel="stylesheet")]
    assert "assets/worklog-gen/worklog.css" in styles
    for rel in assets.static_files():
        assert (minimal_site / "site" / rel).is_file(), rel
    text = (minimal_site / "site" / "index.html").read_text()
    assert "fonts.googleapis.com" not in text and "fonts.gstatic.com" not in text
    # Material's config, written into every page, has the features the plugin brings
    config = json.loads(page.find("script", id="__config").string)
    assert set(settings.THEME_FEATURES) <= set(config["features"])


def test_theme_features_are_added_to_the_authors_own_once():
    theme = settings.with_theme_defaults({"name": "material", "features": ["content.code.copy", "content.lazy"]})
    assert theme["features"] == ["content.code.copy", "content.lazy"]  # kept, in order, not repeated
    assert theme["font"] is False
    assert settings.with_theme_defaults("material")["features"] == list(settings.THEME_FEATURES)
    own = {"name": "material", "font": {"text": "Inter"}, "features": ["search.suggest"]}
    assert settings.with_theme_defaults(own) == {"name": "material", "font": {"text": "Inter"},
                                                 "features": ["search.suggest", *settings.THEME_FEATURES]}
    assert own["features"] == ["search.suggest"]  # the author's value is not changed in place


def test_without_a_home_page_the_worklog_home_is_the_root(minimal_site):
    root = html(minimal_site, "index.html")
    assert root.find("h2", id="countdown") is not None
    links = {a.get("href") for a in root.find_all("a")}
    assert "worklog/2027-02-02/" in links  # a day page, from the root
    heatmap = json.loads((minimal_site / "site" / "worklog" / "words-per-day.vega.json").read_text())
    assert "worklog/2027-02-01/" in json.dumps(heatmap)  # chart links resolve from the root


def test_each_file_keeps_its_preamble_and_its_target(minimal_site):
    root = html(minimal_site, "index.html")
    headings = [h.get_text(strip=True).rstrip("¶") for h in root.find_all("h2")]
    assert "Countdown to the GPU MODE talk" in headings and "100 days of CUDA" in headings
    text = root.get_text()
    assert "give a talk on writing attention kernels" in text and "a kernel a day" in text
    assert "2027-03-05" in text


def test_two_files_naming_two_targets_get_a_warning_naming_both(tmp_path):
    other = TMINUS.replace("target_date: 2027-03-05", "target_date: 2027-04-01").replace(
        "02/01/27 (T - 32)", "02/11/27 (T - 49)").replace("02/02/27 (T - 31)", "02/12/27 (T - 48)")
    log = parse.load([_write(tmp_path / "a.md", TMINUS), _write(tmp_path / "b.md", other)])
    assert [d.code.value for d in log.diagnostics if d.code.value == "targets"] == ["targets"]
    message = next(d.message for d in log.diagnostics if d.code.value == "targets")
    assert "2027-03-05" in message and "2027-04-01" in message and "a.md" in message and "b.md" in message
    assert log.target_date == dt.date(2027, 4, 1)  # the file with the newest entry
    assert {f.path.rsplit("/", 1)[-1]: f.target_date for f in log.files} == {
        "a.md": dt.date(2027, 3, 5), "b.md": dt.date(2027, 4, 1)}
    assert not [d for d in log.diagnostics if d.code.value == "target-date"]  # each entry against its own file


def test_a_file_target_applies_to_its_own_entries(tmp_path):
    wrong = TMINUS.replace("(T - 31)", "(T - 40)")  # off its own file's target
    log = parse.load([_write(tmp_path / "a.md", wrong), _write(tmp_path / "b.md", PROGRESS)])
    off = [d for d in log.diagnostics if d.code.value == "target-date"]
    assert len(off) == 1 and "a.md" in off[0].path and "2027-03-05" in off[0].message
    result = CliRunner().invoke(main, ["check", str(tmp_path / "a.md"), str(tmp_path / "b.md")])
    assert result.exit_code == 1 and "target date" in result.output


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_extensions_are_merged_with_the_authors_options():
    merged = with_extensions(["admonition", {"toc": {"permalink": "#", "toc_depth": 3}},
                              {"pymdownx.arithmatex": {"preview": False}}])
    as_dict = {next(iter(e)) if isinstance(e, dict) else e: (next(iter(e.values())) if isinstance(e, dict) else {})
               for e in merged}
    assert as_dict["toc"] == {"permalink": "#", "toc_depth": 3}  # the author's own options win
    assert as_dict["pymdownx.arithmatex"] == {"generic": True, "preview": False}  # ours fill the rest
    assert {"pymdownx.superfences", "pymdownx.details", "attr_list", "md_in_html", "tables"} <= set(as_dict)


# --- the CLI keeps its word -------------------------------------------------------------------


def test_outside_a_project_every_command_says_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command in (["check"], ["export"], ["status"], ["execute"], ["generate"], ["new"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, (command, result.output)
        assert result.output.strip() == f"Error: no mkdocs.yml in {tmp_path} or above: pass PATH or -f"
        assert "Traceback" not in result.output


def test_the_config_is_found_in_a_folder_above(tmp_path, monkeypatch):
    (tmp_path / "worklog").mkdir()
    _write(tmp_path / "worklog" / "tminus.md", TMINUS)
    _write(tmp_path / "mkdocs.yml", MINIMAL_YML)
    (tmp_path / "worklog" / "deep").mkdir()
    monkeypatch.chdir(tmp_path / "worklog" / "deep")
    result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 0, result.output


def test_an_unexpected_error_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "log.md", TMINUS)

    def boom(*args, **kwargs):
        raise RuntimeError("the parser broke")

    monkeypatch.setattr(parse, "load", boom)
    result = CliRunner().invoke(main, ["check", "log.md"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "unexpected RuntimeError: the parser broke" in result.output and "WORKLOG_GEN_TRACEBACK" in result.output


MOJIBAKE = "02/01/27 (T - 32)\nRead the FlashAttention paper: Memory-Eï¬ƒcient Exact Attention.\n"


def test_diff_is_a_dry_run_that_prints_the_diagnostics(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = _write(tmp_path / "log.md", MOJIBAKE)
    for args in (["check", "--diff", "log.md"], ["check", "--fix", "--diff", "log.md"]):
        result = CliRunner().invoke(main, args)
        assert log.read_text() == MOJIBAKE, args  # nothing written
        assert "+Read the FlashAttention paper: Memory-Eﬃcient" in result.output  # the diff
        assert "log.md:2: warning:" in result.output and "mojibake" in result.output.lower()  # the diagnostics
    fixed = CliRunner().invoke(main, ["check", "--fix", "log.md"])
    assert fixed.exit_code == 0, fixed.output
    assert "Eﬃcient" in log.read_text()
    assert "bare URL" not in main.commands["check"].help  # --fix does not repair bare URLs, nor says so


def test_status_exits_1_unless_every_notebook_is_fresh(tmp_path, monkeypatch):
    project = scaffold.create(tmp_path / "p", dt.date(2099, 1, 1)).folder
    monkeypatch.chdir(project)
    missing = CliRunner().invoke(main, ["status"])
    assert missing.exit_code == 1 and "missing" in missing.output


# --- the feed -------------------------------------------------------------------------------------


def test_the_feed_carries_each_entrys_content_with_absolute_links(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "worklog").mkdir()
    _write(tmp_path / "worklog" / "tminus.md", TMINUS + "\nSee [the tasks](tasks.md) and ![roof](roof.png).\n")
    (tmp_path / "worklog" / "roof.png").write_bytes(b"\x89PNG\r\n\x1a\n a roofline")  # published beside the day's page
    _write(tmp_path / "mkdocs.yml", MINIMAL_YML + "site_url: https://me.github.io/kernels/\n")
    build(tmp_path)
    feed = ET.parse(tmp_path / "site" / "feed.xml").getroot()
    entry = feed.find(f"{{{ATOM_NS}}}entry")
    content = entry.find(f"{{{ATOM_NS}}}content")
    assert content.get("type") == "html"
    assert '<a href="https://me.github.io/kernels/worklog/tasks/">the tasks</a>' in content.text
    assert 'src="https://me.github.io/kernels/worklog/2027-02-02/roof.png"' in content.text
    assert (tmp_path / "site" / "worklog" / "2027-02-02" / "roof.png").is_file()
    assert "<li>" not in content.text or "</li>" in content.text
    first = feed.findall(f"{{{ATOM_NS}}}entry")[-1].find(f"{{{ATOM_NS}}}content").text
    assert ('<a href="https://triton-lang.org/main/getting-started/tutorials/02-fused-softmax.html">'
            "Triton's fused softmax tutorial</a>") in first


# --- serve watches what a page depends on -------------------------------------------------------


def test_serve_watches_each_notebooks_folder(tmp_path):
    from mkdocs.config import load_config

    project = scaffold.create(tmp_path / "p", dt.date(2099, 1, 1)).folder
    config = load_config(str(project / "mkdocs.yml"))
    plugin = config.plugins["worklog"]
    plugin.on_config(config)
    watched: list[str] = []

    class Server:
        def watch(self, path, *args, **kwargs):
            watched.append(path)

    plugin.on_serve(Server(), config=config, builder=None)
    assert str(project / "notebooks") in watched  # a notebook added there, and its CUDA and worker files
    assert str(project / "worklog") in watched


# --- notebooks on several GPUs -------------------------------------------------------------------

TWO_GPU_NOTEBOOK = """\
# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   worklog_gen:
#     gpus: 2
# ---

# %%
import workers_here
print(workers_here.ranks())
"""


def test_a_notebook_declares_its_gpus_and_the_hash_covers_its_worker_module(tmp_path, monkeypatch):
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    notebook = _write(nb_dir / "two.py", TWO_GPU_NOTEBOOK)
    workers = _write(nb_dir / "workers_here.py", "def ranks():\n    return [0, 1]\n")
    assert execute.gpus_needed(execute.read_notebook(notebook)) == 2
    before = source_hash(notebook, tmp_path)
    assert "notebooks/workers_here.py" in dict(before.parts.modules)
    workers.write_text("def ranks():\n    return [0, 1, 2]\n")
    assert source_hash(notebook, tmp_path).hexdigest != before.hexdigest
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(execute, "environment", lambda root: {"device": "NVIDIA H100", "gpus": ["NVIDIA H100"]})
    assert execute._cannot_run_here(notebook, tmp_path) == ("needs 2 GPUs (its metadata worklog_gen: gpus: 2), "
                                                        "this machine has 1")
    # it starts a rank on every GPU it sees: on 4 its record is a machine of 4, not of the 2 it needs
    four = {"device": "NVIDIA H100", "gpus": ["NVIDIA H100"] * 4}
    assert execute.gpus_used(execute.read_notebook(notebook), four) == 4
    one_gpu = _write(nb_dir / "one.py", "# %%\nprint(1)\n")
    assert execute.gpus_used(execute.read_notebook(one_gpu), four) == 1


HOPPER_NOTEBOOK = """\
# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   worklog_gen:
#     compute_capability: 9.0  # TMA
#     memory_gib: 40
# ---

# %%
print(1)
"""

A100_40GB = {"device": "NVIDIA A100-SXM4-40GB", "gpus": ["NVIDIA A100-SXM4-40GB"], "compute_capability": "8.0",
             "memory_gib": 39.4}


def test_a_notebook_declares_its_compute_capability_and_memory_and_is_refused_up_front(tmp_path, monkeypatch):
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    notebook = _write(nb_dir / "hopper.py", HOPPER_NOTEBOOK)
    assert execute.requirements(notebook) == {"gpus": 1, "compute_capability": (9, 0), "memory_gib": 40.0}
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(execute, "environment", lambda root: A100_40GB)
    assert execute._cannot_run_here(notebook, tmp_path) == (
        "needs compute capability 9.0 or newer (its metadata worklog_gen: compute_capability: 9.0), this "
        "machine's NVIDIA A100-SXM4-40GB has 8.0; needs 40 GiB of GPU memory (its metadata worklog_gen: "
        "memory_gib: 40), this machine's NVIDIA A100-SXM4-40GB has 39.4 GiB")
    h100 = {"device": "NVIDIA H100 80GB HBM3", "gpus": ["NVIDIA H100 80GB HBM3"], "compute_capability": "9.0",
            "memory_gib": 79.1}
    monkeypatch.setattr(execute, "environment", lambda root: h100)
    assert execute._cannot_run_here(notebook, tmp_path) is None
    blackwell = {**h100, "compute_capability": "10.0"}  # compared as numbers, not as text
    monkeypatch.setattr(execute, "environment", lambda root: blackwell)
    assert execute._cannot_run_here(notebook, tmp_path) is None
    monkeypatch.setattr(execute, "environment", lambda root: {"device": None, "gpus": [], "torch": "2.13.0"})
    assert execute._cannot_run_here(notebook, tmp_path) == execute.NO_GPU_REFUSAL
    # the base install, without the notebooks extra: the step that comes first is installing it
    monkeypatch.setattr(execute, "environment", lambda root: {"device": None, "gpus": [], "torch": None})
    assert execute._cannot_run_here(notebook, tmp_path) == execute.NO_TORCH_REFUSAL
    assert 'pip install "worklog-gen[notebooks]"' in execute.NO_TORCH_REFUSAL
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the interpreter runs it on the CPU whatever it declares
    assert execute._cannot_run_here(notebook, tmp_path) is None


@pytest.mark.parametrize("value, expected", [("8.6", (8, 6)), (8.9, (8, 9)), ("10.0", (10, 0)), (9, (9, 0))])
def test_a_compute_capability_reads_as_major_minor(tmp_path, value, expected):
    notebook = _write(tmp_path / "cc.py", HOPPER_NOTEBOOK.replace("compute_capability: 9.0",
                                                                  f"compute_capability: {value!r}"))
    assert execute.requirements(notebook)["compute_capability"] == expected


@pytest.mark.parametrize("line", ["compute_capability: nine", "compute_capability: '9.0.1'", "compute_capability: true",
                                  "compute_capability: [9, 0]", "memory_gib: 0", "memory_gib: -8",
                                  "memory_gib: lots", "memory_gib: true", "gpus: 1.5"])
def test_bad_requirements_name_the_notebook(tmp_path, line):
    text = HOPPER_NOTEBOOK.replace("compute_capability: 9.0  # TMA\n#     memory_gib: 40", line)
    notebook = _write(tmp_path / "bad.py", text)
    with pytest.raises(ValueError, match=f"{notebook}: metadata worklog_gen: {line.split(':')[0]} must be"):
        execute.requirements(notebook)


def test_execute_refuses_a_card_too_old_up_front_and_records_no_failure(tmp_path, monkeypatch, capsys):
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    notebook = _write(nb_dir / "hopper.py", HOPPER_NOTEBOOK)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(execute, "environment", lambda root: A100_40GB)
    ran = []
    monkeypatch.setattr(execute, "execute_notebook", lambda *a, **k: ran.append(a))
    cfg = SimpleNamespace(freeze_dir="notebooks/_freeze", topics=[])
    assert execute.execute_cli(cfg, tmp_path, [notebook]) is False
    assert ran == []
    err = capsys.readouterr().err
    assert "error: notebooks/hopper.py: needs compute capability 9.0 or newer" in err
    assert "this machine's NVIDIA A100-SXM4-40GB has 8.0" in err
    assert not list(tmp_path.rglob("*.failed.json"))


def test_every_topic_notebook_declares_its_least_card():
    for path in sorted((REPO / "notebooks").glob("*.py")):
        if path.name == "collectives_workers.py":
            continue
        needs = execute.requirements(path)
        assert needs["compute_capability"] is not None and needs["compute_capability"] >= (7, 5), path.name
        assert needs["memory_gib"] is not None, path.name


TOPO = """\x1b[4m\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m
GPU0\t X \tNV18\t0-31\t0\t\tN/A
GPU1\tNV18\t X \t0-31\t0\t\tN/A
"""


def test_a_record_on_two_gpus_names_the_machine():
    record = FreezeRecord("notebooks/collectives.py", "0" * 64, "2026-11-26T06:00:00Z", "gpu", gpu="NVIDIA H200",
                          gpus=["NVIDIA H200", "NVIDIA H200"], gpus_used=2, interconnect=TOPO, nccl="2.28.9")
    assert record.device_label == "2 × NVIDIA H200, NVLink NV18"
    assert FreezeRecord.from_json(record.to_json()).device_label == "2 × NVIDIA H200, NVLink NV18"
    assert link_between(TOPO.replace("NV18", "PIX"), 0, 1) == "PCIe, one switch"
    one = FreezeRecord("notebooks/x.py", "0" * 64, "2026-11-26T06:00:00Z", "gpu", gpu="NVIDIA H100 80GB HBM3")
    assert one.device_label == "NVIDIA H100 80GB HBM3"
