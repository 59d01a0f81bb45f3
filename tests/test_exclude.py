"""The plugin's ``exclude`` option: files of the worklog folder that are no part of the log (an
Obsidian vault's templates, private notes) are not read, found or published."""

from __future__ import annotations

import base64
import datetime as dt
import subprocess
import sys

import pathspec
import pytest

from worklog_gen.log.authoring import append_entry
from worklog_gen.log.files import Exclusion, worklog_files
from worklog_gen.log.parse import load

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
PATTERNS = "Templates/\nprivate/**\n*.draft.md\n"


def _vault(root):
    """An Obsidian vault used as the worklog folder: daily notes, a template, a private folder."""
    log = root / "worklog"
    for folder in ("Daily", "Templates", "private", "attachments"):
        (log / folder).mkdir(parents=True)
    (log / "Daily" / "2025-12-08.md").write_text("Read [[Triton notes]]. ![[roofline.png]] ![[salary.png]]\n",
                                                 encoding="utf-8")
    (log / "Daily" / "2025-12-09.md").write_text("Softmax at 4096 rows - Done\n![plan](../private/salary.png)\n",
                                                 encoding="utf-8")
    (log / "Daily" / "2025-12-10.draft.md").write_text("half a thought\n", encoding="utf-8")
    (log / "Templates" / "Daily.md").write_text("{{date:YYYY-MM-DD}}\n## Read\n## Did\n", encoding="utf-8")
    (log / "private" / "Triton notes.md").write_text("# Triton notes\n", encoding="utf-8")
    (log / "private" / "salary.png").write_bytes(PNG)
    (log / "attachments" / "roofline.png").write_bytes(PNG)
    return log


def _exclusion(log):
    return Exclusion(log, pathspec.GitIgnoreSpec.from_lines(PATTERNS.splitlines()))


def test_excluded_files_are_no_files_of_the_log(tmp_path):
    log = _vault(tmp_path)
    names = [p.relative_to(log).as_posix() for p in worklog_files(log, _exclusion(log))]
    assert names == ["Daily/2025-12-08.md", "Daily/2025-12-09.md"]
    assert len(worklog_files(log)) == 5  # without it, the template and the notes too


def test_without_exclude_a_template_stops_the_build_and_the_message_says_how_to_leave_it_out(tmp_path):
    errors = [d for d in load(_vault(tmp_path)).diagnostics if d.severity == "error"]
    assert sorted(d.path.split("/")[-1] for d in errors) == ["Daily.md", "Triton notes.md"]
    assert all("left out with the plugin's `exclude` option" in d.message for d in errors)


def test_an_excluded_file_is_found_by_no_wikilink_or_link(tmp_path):
    folder = _vault(tmp_path)
    log = load(folder, exclude=_exclusion(folder))
    assert [e.date for e in log.entries] == [dt.date(2025, 12, 8), dt.date(2025, 12, 9)]
    found = sorted((d.path.split("/")[-1], d.line, d.code) for d in log.diagnostics)
    assert found == [("2025-12-08.md", 1, "wikilink"), ("2025-12-08.md", 1, "wikilink"),
                     ("2025-12-09.md", 2, "missing-image")]
    assert [i.url for i in log.entries[0].images] == ["../attachments/roofline.png"]  # not excluded: found


def test_new_leaves_excluded_files_alone(tmp_path):
    folder = _vault(tmp_path)
    file, header = append_entry(folder, dt.date(2025, 12, 11), exclude=_exclusion(folder))
    assert (file.relative_to(folder).as_posix(), header, file.read_text()) == ("Daily/2025-12-11.md", "", "")


def test_an_excluded_file_is_never_published_even_in_the_docs_folder(build_site):
    files = {f"docs/journal/{p}": data for p, data in {
        "Daily/2025-12-08.md": b"Read the PTX ISA. ![[roofline.png]] ![[salary.png]]\n",
        "Daily/2025-12-09.md": b"Softmax at 4096 rows - Done\n",
        "Templates/Daily.md": b"{{date:YYYY-MM-DD}}\n",
        "private/notes.md": b"# Private\n",
        "private/salary.png": PNG,
        "attachments/roofline.png": PNG,
    }.items()}
    site = build_site(None, files=files, plugin={"worklog_dir": "docs/journal", "exclude": "Templates/\nprivate/\n"})
    journal = sorted(p.relative_to(site).as_posix() for p in (site / "journal").rglob("*") if p.is_file())
    assert journal == ["journal/attachments/roofline.png"]  # a file of the docs, as MkDocs publishes one; no page
    assert (site / "worklog" / "2025-12-08" / "attachments" / "roofline.png").read_bytes() == PNG
    assert not list(site.rglob("salary.png")) and not list(site.rglob("Templates")) and not list(site.rglob("private"))


def test_exclude_is_a_block_of_patterns_as_mkdocs_exclude_docs(tmp_path):
    (tmp_path / "worklog").mkdir()
    (tmp_path / "worklog" / "log.md").write_text("2025-12-09\nRead the PTX ISA.\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nplugins:\n  - worklog:\n      exclude: [Templates/]\n",
                                         encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "worklog_gen", "check"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 2 and "exclude" in run.stderr and "Expected a multiline string" in run.stderr


def test_the_init_template_s_exclude_works_once_uncommented(tmp_path):
    """The commented lines ``init`` writes, uncommented as a user would: a block scalar keeps a
    ``#``, so its pattern line must carry none."""
    from importlib import resources

    from worklog_gen.config import exclusion, load_plugin_config

    yml = (resources.files("worklog_gen") / "templates" / "mkdocs.yml").read_text(encoding="utf-8")
    lines = yml.split("\n")
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("# exclude:"))
    for i in (at, at + 1):
        lines[i] = lines[i].replace("# ", "", 1)
    (tmp_path / "mkdocs.yml").write_text("\n".join(lines), encoding="utf-8")
    cfg, root = load_plugin_config(tmp_path / "mkdocs.yml")
    (tmp_path / "worklog" / "Templates").mkdir(parents=True)
    excluded = exclusion(cfg, root)
    assert excluded(tmp_path / "worklog" / "Templates" / "Daily.md")
    assert not excluded(tmp_path / "worklog" / "log.md")


# --- a vault or a graph recognised: no exclude needed ---------------------------------------------


def _config(root, options: str = ""):
    from worklog_gen.config import exclusion, load_plugin_config

    (root / "mkdocs.yml").write_text(f"site_name: v\nplugins:\n  - worklog:\n      worklog_dir: worklog\n{options}",
                                     encoding="utf-8")
    cfg, folder = load_plugin_config(root / "mkdocs.yml")
    return exclusion(cfg, folder)


@pytest.mark.parametrize("settings", [None, '{"folder": "Daily/", "format": "YYYY-MM-DD", "template": "Templates/Daily"}'],
                         ids=["no-settings", "daily-notes-json"])
def test_an_obsidian_vault_is_read_for_its_daily_notes(tmp_path, settings):
    """A vault (``.obsidian/``) needs no ``exclude``: its daily notes are the log, the folder its
    Daily notes settings name, else every note named by a date; its other notes and templates are
    left out, its attachments still found."""
    folder = _vault(tmp_path)
    (folder / ".obsidian").mkdir()
    if settings:
        (folder / ".obsidian" / "daily-notes.json").write_text(settings, encoding="utf-8")
    (folder / "Home.md").write_text("# My vault\n", encoding="utf-8")
    exclude = _config(tmp_path)
    names = [p.relative_to(folder).as_posix() for p in worklog_files(folder, exclude)]
    assert names == ["Daily/2025-12-08.md", "Daily/2025-12-09.md", "Daily/2025-12-10.draft.md"]
    log = load(folder, exclude=exclude)
    assert not [d for d in log.diagnostics if d.severity == "error"]
    # attachments stay found (a private one too: only notes are left out; exclude names the rest)
    assert [i.url for i in log.entries[0].images] == ["../attachments/roofline.png", "../private/salary.png"]
    assert [d.code for d in log.diagnostics if d.path.endswith("2025-12-08.md")] == ["wikilink"]  # [[Triton notes]]


def test_the_exclude_option_adds_to_a_vault_s_own_and_may_take_a_note_back(tmp_path):
    folder = _vault(tmp_path)
    (folder / ".obsidian").mkdir()
    exclude = _config(tmp_path, "      exclude: |\n        *.draft.md\n        !private/Triton notes.md\n")
    names = [p.relative_to(folder).as_posix() for p in worklog_files(folder, exclude)]
    assert names == ["Daily/2025-12-08.md", "Daily/2025-12-09.md", "private/Triton notes.md"]


def test_a_logseq_graph_leaves_out_its_pages_settings_and_backups(tmp_path):
    folder = tmp_path / "worklog"
    for name in ("journals/2025_12_08.md", "pages/Triton.md", "logseq/bak/journals/2025_12_08/2025-12-08T10_00_00.000Z.md",
                 "whiteboards/plan.md", "assets/roofline.png"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("- x\n", encoding="utf-8")
    (folder / "logseq" / "config.edn").write_text("{}\n", encoding="utf-8")
    exclude = _config(tmp_path)
    assert [p.relative_to(folder).as_posix() for p in worklog_files(folder, exclude)] == ["journals/2025_12_08.md"]
    assert not exclude(folder / "assets" / "roofline.png")


COMMENTED_DAY = """\
Read the [Triton matmul tutorial](https://triton-lang.org/main/getting-started/tutorials/03-matrix-multiplication.html). %%ask Sam about the L2 numbers%%
%%
private: [salary survey](https://example.com/salaries)
- interview prep - Done
%%
Code keeps its marks: `%%timeit` and
```python
# %%
```
Softmax at 4096 rows - Done
The swizzle keeps B in L2. ^swizzle-1
"""


@pytest.mark.parametrize("sanitize", [False, True], ids=["as-written", "sanitized"])
def test_an_obsidian_comment_reaches_no_reader(build_site, sanitize):
    """``%%...%%`` in a vault's note is hidden as Obsidian hides it: not on the day's page, in its
    summary, the feed, the reading list or the tasks; a ``%%`` in code stays. So is a block's id."""
    site = build_site(None, plugin={"sanitize": sanitize}, files={
        "worklog/.obsidian/app.json": b"{}\n",
        "worklog/2025-12-08.md": COMMENTED_DAY.encode(),
    })
    everything = "\n".join(p.read_text(encoding="utf-8") for p in site.rglob("*") if p.suffix in (".html", ".xml", ".json"))
    for hidden in ("ask Sam", "salary", "interview prep", "^swizzle-1"):
        assert hidden not in everything, hidden
    day = (site / "worklog/2025-12-08/index.html").read_text(encoding="utf-8")
    assert "%%timeit" in day and "# %%" in day and "Softmax at 4096 rows" in day and "Triton matmul tutorial" in day
    assert "The swizzle keeps B in L2." in day
    tasks = (site / "worklog/tasks/index.html").read_text(encoding="utf-8")
    assert "Softmax at 4096 rows" in tasks


def test_a_comment_outside_a_vault_is_text(tmp_path):
    (tmp_path / "2025-12-08.md").write_text(COMMENTED_DAY, encoding="utf-8")
    entry = load(tmp_path).entries[0]
    assert "ask Sam" in entry.body and "salary survey" in [link.title for link in entry.links]


def test_a_vault_s_daily_note_has_its_front_matter_tags_and_its_hashtags(tmp_path):
    """Tags as Obsidian reads them: the front matter's, then each ``#tag`` of the text (nested too),
    not ``#3``, a heading, a URL's fragment or code; outside a vault a ``#`` is text."""
    day = "---\ntags: [daily]\n---\n# Softmax #triton\nRead https://x.org/a#part and #cuda/memory, issue #3. `#define`\n"
    (tmp_path / "vault" / ".obsidian").mkdir(parents=True)
    for folder in ("vault", "plain"):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "2025-12-08.md").write_text(day, encoding="utf-8")
    assert load(tmp_path / "vault").entries[0].tags == ["daily", "triton", "cuda/memory"]
    assert load(tmp_path / "plain").entries[0].tags == ["daily"]


def test_a_vault_s_hashtag_links_to_its_tag(build_site):
    """On the page a ``#tag`` of a vault's note leads to the tag on the tags page, as in Obsidian;
    in code, or inside a link's text, it stays text."""
    day = "Read about #cuda/memory and [the #triton docs](https://triton-lang.org/) with `#define`.\n"
    site = build_site(None, files={"worklog/.obsidian/app.json": b"{}\n", "worklog/2025-12-08.md": day.encode()})
    from bs4 import BeautifulSoup

    page = BeautifulSoup((site / "worklog/2025-12-08/index.html").read_text(encoding="utf-8"), "html.parser")
    body = page.find("article")
    tag = body.find("a", string="#cuda/memory")
    assert tag is not None and tag["href"] == "../tags/#cudamemory"
    assert body.find("a", href="https://triton-lang.org/").get_text() == "the #triton docs"
    assert body.find("code").get_text() == "#define"
    tags = BeautifulSoup((site / "worklog/tags/index.html").read_text(encoding="utf-8"), "html.parser")
    assert tags.find(id="cudamemory") is not None and tags.find(id="triton") is not None
