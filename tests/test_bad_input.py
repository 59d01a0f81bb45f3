"""Real logs through a strict build, ``check --fix``, and input meant to break or abuse the tool.

The folder ``tests/fixtures/real_logs`` holds one log of each kind the README lists, with the
defects real exports have: a T-minus export with mojibake, backwards links and CRLF line ends;
a progress log whose headings name no year (the plugin's ``year`` is set); dated fragment
notes with an empty day; a Hugo post bundle with its image. It also holds ``tminus-worklog.md``,
a clean T-minus log (conftest's ``TMINUS_FIXTURE``) that other tests read on its own; the
project built here leaves it out, so the damaged exports are checked by themselves.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worklog_gen.cli import main
from worklog_gen.log import DiagnosticCode, load, parse
from worklog_gen.log import fix as fixer
from worklog_gen.log.files import MAX_FILE_BYTES, MAX_NESTING
from worklog_gen.log.urls import is_script_url

FIXTURE = Path(__file__).parent / "fixtures" / "real_logs"
CLEAN_LOGS = ("tminus-worklog.md",)  # read by conftest.TMINUS_FIXTURE's tests, not built here
CONFIG = {
    "site_name": "Real logs",
    "theme": {"name": "material"},
    "markdown_extensions": ["tables", "attr_list", "md_in_html", "footnotes", "pymdownx.superfences"],
    "validation": {"omitted_files": "warn", "absolute_links": "warn", "unrecognized_links": "warn", "anchors": "warn"},
    "plugins": ["search", {"worklog": {"year": 2025}}],
}
SECRET = "do-not-publish-3f9c"


def project(tmp_path: Path, plugin: dict | None = None) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root / "worklog", ignore=shutil.ignore_patterns(*CLEAN_LOGS))
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    config = dict(CONFIG, plugins=["search", {"worklog": {"year": 2025, **(plugin or {})}}])
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root


def mkdocs_build(root: Path, strict: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mkdocs", "build", *(["--strict"] if strict else []), "-f", str(root / "mkdocs.yml")]
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", SOURCE_DATE_EPOCH="1764000000")
    # the worklog_gen of this checkout, whatever checkout the installed package points at
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parents[1]), env.get("PYTHONPATH")]))
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=root)


def check(root: Path, *args: str):
    cwd = os.getcwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(main, ["check", *args])
    finally:
        os.chdir(cwd)


def test_real_logs_pass_a_strict_build_after_check_fix(tmp_path):
    root = project(tmp_path)
    damaged = root / "worklog" / "tminus-export.md"
    lines_before = damaged.read_bytes().count(b"\n")

    first = check(root)
    assert first.exit_code == 0, first.output
    assert "warning: mojibake repaired" in first.output and "warning: backwards link repaired" in first.output
    assert "Notes (style and habits" in first.output
    failed = mkdocs_build(root)
    assert failed.returncode == 1 and "Aborted with 5 warnings in strict mode" in failed.stdout

    fixed = check(root, "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert "+Read [Making Deep Learning Go Brrrr From First Principles](https://horace.io/brrr_intro.html)" in fixed.output
    assert damaged.read_bytes().count(b"\n") == lines_before  # every line kept
    assert b"\r" not in damaged.read_bytes() and "Memory-\ufb03cient" in damaged.read_text(encoding="utf-8")

    again = check(root)
    assert again.exit_code == 0 and ": warning: " not in again.output
    notes = [line for line in again.output.splitlines() if ": info: " in line]
    assert {line.split(": info: ")[0] for line in notes} == {
        "worklog/notes.md:10", "worklog/progress.md:9", "worklog/progress.md:15", "worklog/progress.md:23",
        "worklog/tminus-export.md:15"}
    built = mkdocs_build(root)
    assert built.returncode == 0, built.stdout
    assert "info: Day 22 again" in built.stdout  # the notes are still listed, at INFO
    post = (root / "site/worklog/2025-01-05-warp-shuffles-without-shared-memory/index.html").read_text()
    assert "tree.svg" in post and "The butterfly" in post


def test_check_diff_writes_nothing_and_json_carries_severity_and_code(tmp_path):
    root = project(tmp_path)
    before = (root / "worklog" / "tminus-export.md").read_bytes()
    result = check(root, "--diff")
    assert result.exit_code == 0 and "--- a/worklog/tminus-export.md" in result.output
    assert (root / "worklog" / "tminus-export.md").read_bytes() == before
    data = json.loads(check(root, "--json").stdout)
    assert data["summary"] == {"error": 0, "warning": 5, "info": 6}
    codes = {(d["severity"], d["code"]) for d in data["diagnostics"]}
    assert ("warning", "mojibake") in codes and ("info", "day-number") in codes and ("info", "line-ends") in codes


def test_fix_never_touches_a_file_it_cannot_repair_losslessly(tmp_path):
    log = tmp_path / "log.md"
    log.write_text("12/09/25 (T - 154)\nE\u00ef\u00ac\u0192cient\n", encoding="utf-8")
    link = tmp_path / "link.md"
    link.symlink_to(log)
    loaded = load(link)
    (fix,) = fixer.plan(loaded)
    assert fix.refused == "a symbolic link: fix the file it points to"
    with pytest.raises(ValueError, match="not fixed"):
        fixer.apply(fix)
    assert log.read_text(encoding="utf-8") == "12/09/25 (T - 154)\nE\u00ef\u00ac\u0192cient\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([
    "Read [https://arxiv.org/abs/2307.08691](FlashAttention-2: Faster Attention)",
    "E\u00ef\u00ac\u0192cient kernels, bandwidth-bound",
    "https://triton-lang.org/main/index.html",
    "- Timed the reduction -> Tmr",
    "```", "", "plain notes on num_warps", "12/11/25 (T - 152)",
]), max_size=12), st.booleans())
def test_fix_keeps_every_line_and_leaves_no_repair(tmp_path, body, crlf):
    path = tmp_path / "log.md"
    text = "\n".join(["12/09/25 (T - 154)", *body, ""])
    path.write_bytes(text.replace("\n", "\r\n" if crlf else "\n").encode("utf-8"))
    lines = path.read_bytes().count(b"\n")
    log = load(path)
    for f in fixer.plan(log):
        assert not f.refused, f.refused
        fixer.apply(f)
    assert path.read_bytes().count(b"\n") == lines
    assert not [d for d in load(path).diagnostics if d.code.repair]


def test_a_post_never_publishes_a_file_from_outside_the_log(tmp_path):
    root = project(tmp_path)
    (tmp_path / "outside-secret.txt").write_text(SECRET, encoding="utf-8")
    bundle = root / "worklog" / "posts" / "escape"
    bundle.mkdir()
    (bundle / "linked.svg").symlink_to(tmp_path / "outside-secret.txt")
    (bundle / "index.md").write_text(
        "---\ntitle: Escape attempts\ndate: 2025-01-06\n---\nIntro.\n"
        '{{< figure src="../../../../outside-secret.txt" caption="Up and out." >}}\n'
        '{{< figure src="../../../../../../../../etc/passwd" caption="Far up." >}}\n'
        f'{{{{< figure src="{tmp_path / "outside-secret.txt"}" caption="Absolute." >}}}}\n'
        '{{< figure src="linked.svg" caption="A link out." >}}\n', encoding="utf-8")
    result = mkdocs_build(root, strict=False)
    assert result.returncode == 0, result.stdout
    refusals = [line for line in result.stdout.splitlines() if "unsafe" in line or "refused" in line]
    for line in (6, 7, 8, 9):
        assert any(f"worklog/posts/escape/index.md:{line}: warning: figure image" in r for r in refusals), refusals
    published = [p for p in (root / "site").rglob("*") if p.is_file()]
    assert not [p for p in published if SECRET in p.read_bytes().decode("utf-8", "replace")]
    assert not [p for p in published if b"root:x:0:0" in p.read_bytes()]
    page = (root / "site/worklog/2025-01-06-escape-attempts/index.html").read_text()
    for caption in ("Up and out.", "Far up.", "Absolute.", "A link out."):
        assert caption in page  # the caption stays, without the file
    assert mkdocs_build(root).returncode == 1  # each refusal is a warning


def test_a_log_file_linked_from_outside_the_folder_is_refused(tmp_path):
    root = project(tmp_path)
    (tmp_path / "elsewhere.md").write_text(f"2025-02-01\n{SECRET}\n", encoding="utf-8")
    (root / "worklog" / "borrowed.md").symlink_to(tmp_path / "elsewhere.md")
    log = load(root / "worklog", relative_to=root)
    (refused,) = [d for d in log.diagnostics if d.code is DiagnosticCode.UNSAFE_PATH]
    assert refused.path == "worklog/borrowed.md" and refused.severity == "warning"
    assert not [e for e in log.entries if SECRET in e.body]


@pytest.mark.parametrize("option, value", [("worklog_dir", "../elsewhere"), ("freeze_dir", "/tmp"),
                                           ("topics", [{"id": "x", "title": "X", "notebook": "../x.py"}]),
                                           ("url_prefix", "../../escape"), ("url_prefix", "kernels/../..")])
def test_config_paths_stay_inside_the_project(tmp_path, option, value):
    root = project(tmp_path, plugin={option: value})
    result = mkdocs_build(root, strict=False)
    assert result.returncode == 1
    assert "leads outside" in result.stdout and "mkdocs.yml" in result.stdout
    assert not (tmp_path / "escape").exists() and not list(tmp_path.glob("*.html"))
    for command in (["status"], ["generate", "--out", str(tmp_path / "generated")]):
        result = CliRunner().invoke(main, [*command, "-f", str(root / "mkdocs.yml")])
        assert result.exit_code == 2 and "leads outside" in result.output  # a configuration problem
    assert not (tmp_path / "generated").exists()


@pytest.mark.parametrize("value", ["/", "", "."])
def test_url_prefix_names_a_folder_of_the_site(tmp_path, value):
    root = project(tmp_path, plugin={"url_prefix": value})  # never built: '/' put the pages in the machine's /
    for command in (["status"], ["generate", "--out", str(tmp_path / "generated")]):
        result = CliRunner().invoke(main, [*command, "-f", str(root / "mkdocs.yml")])
        assert result.exit_code == 2 and "'url_prefix'" in result.output and "names no folder" in result.output


def _tree(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_generate_out_never_writes_over_files_it_did_not_write(tmp_path, monkeypatch):
    root = project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "mkdocs.yml").write_text("site_name: my other site\n")
    monkeypatch.setenv("HOME", str(home))
    content = root.parent / "content-project"
    shutil.copytree(root, content)
    (content / "docs").rename(content / "content")
    config = yaml.safe_load((content / "mkdocs.yml").read_text())
    (content / "mkdocs.yml").write_text(yaml.safe_dump({**config, "docs_dir": "content"}, sort_keys=False))
    before = _tree(tmp_path)
    refused = [(root, out, "holds the project") for out in (".", "..", str(root / "docs" / ".."))]
    refused += [(root, out, "inside the project's") for out in ("docs", "docs/generated", "worklog/site")]
    refused += [(root, os.path.expanduser("~"), "did not write"), (content, ".", "holds the project")]
    for project_root, out, why in refused:
        result = run_cli(project_root, "generate", "--out", out)
        assert result.exit_code == 2 and why in result.output, (out, result.output)
        assert len(result.output.strip().splitlines()) == 1 and "--out" in result.output
    assert _tree(tmp_path) == before  # nothing written, nothing replaced
    mine = tmp_path / "mine"
    (mine / "docs").mkdir(parents=True)
    (mine / "docs" / "keep.md").write_text("mine\n")
    result = run_cli(root, "generate", "--out", str(mine))
    assert result.exit_code == 2 and "did not write" in result.output and (mine / "docs" / "keep.md").exists()
    out = tmp_path / "generated"
    for _ in range(2):  # its own output it replaces
        result = run_cli(root, "generate", "--out", str(out))
        assert result.exit_code == 0, result.output
    earlier = tmp_path / "earlier"  # written by a version that marked only its docs/
    (earlier / "docs").mkdir(parents=True)
    (earlier / "docs" / ".worklog-gen-generated").write_text("")
    (earlier / "mkdocs.yml").write_text("site_name: x\n")
    assert run_cli(root, "generate", "--out", str(earlier)).exit_code == 0


@pytest.mark.parametrize("front_matter, expected", [
    ("- a list\n- of tags", "front matter is not a mapping"),
    ("just a sentence", "front matter is not a mapping"),
    ("title: !!python/object/apply:os.system [echo owned]", "could not determine a constructor"),
    ("title: [unclosed", "front matter is not valid YAML"),
])
def test_bad_front_matter_is_an_error_at_its_line(front_matter, expected):
    log = parse(f"---\n{front_matter}\n---\nBody.\n", "posts/2025-01-05-x.md")
    (d,) = [d for d in log.diagnostics if d.code is DiagnosticCode.FRONT_MATTER]
    assert d.severity == "error" and expected in d.message and d.path == "posts/2025-01-05-x.md" and d.line >= 2


def test_files_that_are_not_text_too_large_or_too_deep_are_refused(tmp_path):
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "good.md").write_text("2025-01-13\nshared memory banks\n", encoding="utf-8")
    (folder / "binary.md").write_bytes(b"2025-01-14\nPNG\x00\x00\x1a\n")
    (folder / "huge.md").write_bytes(b"2025-01-15\n" + b"x" * (MAX_FILE_BYTES + 1))
    deep = "\n".join("  " * i + "- nested" for i in range(MAX_NESTING + 8))
    (folder / "deep.md").write_text(f"2025-01-16\n{deep}\n", encoding="utf-8")
    log = load(folder)
    refused = {Path(d.path).name: (d.line, d.code) for d in log.diagnostics if d.code is DiagnosticCode.FILE_REFUSED}
    assert refused == {"binary.md": (2, DiagnosticCode.FILE_REFUSED), "huge.md": (1, DiagnosticCode.FILE_REFUSED),
                       "deep.md": (MAX_NESTING + 2, DiagnosticCode.FILE_REFUSED)}
    assert [e.date.isoformat() for e in log.entries] == ["2025-01-13"]
    for name in ("binary.md", "huge.md", "deep.md"):
        (folder / "good.md").unlink(missing_ok=True)
    nothing = load(folder)
    assert [d.severity for d in nothing.diagnostics if d.code is DiagnosticCode.NO_ENTRIES] == ["error"]


def test_markup_in_titles_and_tags_is_text_everywhere(tmp_path):
    root = project(tmp_path)
    hostile = "</title></script><script>alert(1)</script> ]]> & <b>"
    (root / "worklog" / "posts" / "hostile.md").write_text(
        f"---\ntitle: '{hostile}'\ndate: 2025-01-07\ntags: ['{hostile}']\n---\n"
        f"Quoted: `{hostile}`.\n",  # outside code, an entry's raw HTML is markdown's, passed as written
        encoding="utf-8")
    result = mkdocs_build(root, strict=False)
    assert result.returncode == 0, result.stdout
    site = root / "site"
    for page in site.rglob("*.html"):  # <title> holds text only (RCDATA) until </title>: nothing may close it
        text = page.read_text(encoding="utf-8")
        assert len(re.findall(r"</title>", text, re.IGNORECASE)) <= 1, page
        assert "<script>alert(1)" not in re.sub(r"<title>.*?</title>", "", text, flags=re.S | re.I), page
    feed = ET.fromstring((site / "feed.xml").read_bytes())
    titles = [e.text for e in feed.iter("{http://www.w3.org/2005/Atom}title")]
    assert any(hostile in (t or "") for t in titles)
    for data in [*site.rglob("*.json")]:
        json.loads(data.read_text(encoding="utf-8"))
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert not [d for d in index["docs"] if "<script>alert(1)" in d["title"] + d["text"]]


TMINUS = ("12/09/25 (T - 154)\nRead [Making Deep Learning Go Brrrr](https://horace.io/brrr_intro.html).\n\n"
          "12/10/25 (T - 153)\nTimed the softmax at 4096 rows; bandwidth-bound.\n")


def small_project(tmp_path: Path) -> Path:
    """A project whose worklog is one T-minus file, with ``mkdocs.yml`` naming the plugin."""
    root = tmp_path / "small"
    (root / "worklog").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (root / "worklog" / "tminus.md").write_text(TMINUS, encoding="utf-8")
    config = dict(CONFIG, plugins=["search", "worklog"])
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root


def run_cli(cwd: Path, *args: str):
    here = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args))
    finally:
        os.chdir(here)


def test_no_command_reads_a_link_out_of_the_log_folder_whatever_the_path_form(tmp_path):
    root = small_project(tmp_path)
    (tmp_path / "elsewhere.md").write_text(f"2025-02-01\n{SECRET}\n", encoding="utf-8")
    (root / "worklog" / "borrowed.md").symlink_to(tmp_path / "elsewhere.md")
    config = str(root / "mkdocs.yml")
    runs = [(root, ["check"]), (root, ["export", "--format", "markdown"]), (root, ["export"]),
            (root, ["export", "worklog", "--format", "markdown"]),
            (root, ["export", str(root / "worklog"), "--format", "markdown"]),
            (tmp_path, ["export", "-f", config, "--format", "markdown"]),
            (tmp_path, ["export", "small/worklog", "--format", "markdown"]),
            (tmp_path, ["check", "-f", config])]
    for cwd, args in runs:
        result = run_cli(cwd, *args)
        assert SECRET not in result.output, args
        assert "borrowed.md:1: warning: a link to" in result.output and "refused" in result.output, args


def test_looping_and_dangling_links_are_reported(tmp_path):
    root = small_project(tmp_path)
    (root / "worklog" / "loop-a.md").symlink_to("loop-b.md")
    (root / "worklog" / "loop-b.md").symlink_to("loop-a.md")
    (root / "worklog" / "gone.md").symlink_to("moved-away.md")
    (root / "worklog" / "images").mkdir()
    (root / "worklog" / "folder.md").symlink_to("images")
    log = load(root / "worklog", relative_to=root)
    found = {(d.path, d.line, d.code) for d in log.diagnostics}
    assert ("worklog/loop-a.md", 1, DiagnosticCode.UNSAFE_PATH) in found
    assert ("worklog/loop-b.md", 1, DiagnosticCode.UNSAFE_PATH) in found
    assert ("worklog/gone.md", 1, DiagnosticCode.FILE_REFUSED) in found
    assert ("worklog/folder.md", 1, DiagnosticCode.FILE_REFUSED) in found
    assert [e.date.isoformat() for e in log.entries] == ["2025-12-09", "2025-12-10"]


@pytest.mark.parametrize("front_matter, line, code", [
    ("title: Warp shuffles\ndate: 2026-02-30", 3, DiagnosticCode.INVALID_DATE),
    ("title: Warp shuffles\ndate: 0000-01-01", 3, DiagnosticCode.INVALID_DATE),
    ("title: Warp shuffles\ndate: 2026-02-28\ntarget: 2026-02-30", 4, DiagnosticCode.FRONT_MATTER),
    ("title: Warp shuffles\ndate: 2026-01-05\ncountdown: 99999999999999999999", 4, DiagnosticCode.FRONT_MATTER),
    ("title: Warp shuffles\ndate: 2026-01-05\ntags: " + "[" * 3000, 2, DiagnosticCode.FRONT_MATTER),
])
def test_an_impossible_front_matter_value_is_an_error_at_its_line_and_the_log_still_reads(
        tmp_path, front_matter, line, code):
    root = small_project(tmp_path)
    (root / "worklog" / "post.md").write_text(f"---\n{front_matter}\n---\nShuffles within a warp.\n", encoding="utf-8")
    log = load(root / "worklog", relative_to=root)
    assert any(d.path == "worklog/post.md" and d.line == line and d.code is code and d.severity == "error"
               for d in log.diagnostics), [str(d) for d in log.diagnostics]
    assert {"2025-12-09", "2025-12-10"} <= {e.date.isoformat() for e in log.entries}
    for args in (["check"], ["export"], ["export", "--format", "markdown"]):
        result = run_cli(root, *args)
        assert result.exit_code == 1 and (result.exception is None or isinstance(result.exception, SystemExit)), args
        assert f"worklog/post.md:{line}: error:" in result.output, args


@pytest.mark.parametrize("header", ["12/31/9999 (T - 5)", "01/02/0001 (T + 40)"])
def test_a_countdown_past_the_calendar_is_an_error_at_its_line(tmp_path, header):
    root = small_project(tmp_path)
    (root / "worklog" / "far.md").write_text(f"12/11/25 (T - 152)\nTiled the matmul.\n\n{header}\n"
                                             "Read the persistent-matmul tutorial.\n", encoding="utf-8")
    log = load(root / "worklog", relative_to=root)
    (bad,) = [d for d in log.diagnostics if d.severity == "error"]
    assert (bad.path, bad.line, bad.code) == ("worklog/far.md", 4, DiagnosticCode.INVALID_DATE), str(bad)
    assert "target date" in bad.message
    for args in (["check"], ["export"]):
        result = run_cli(root, *args)
        assert result.exit_code == 1 and (result.exception is None or isinstance(result.exception, SystemExit)), args
        assert "worklog/far.md:4: error: invalid date" in result.output and "bug" not in result.output, args


def test_a_post_titled_with_one_long_word_gets_a_short_unique_page_name(tmp_path):
    root = small_project(tmp_path)
    word = ("tiledmatmulwithgroupsizem" * 11)[:270]
    for name, title in (("one.md", word), ("two.md", word[:-1] + "x"), ("short.md", "Warp shuffles")):
        (root / "worklog" / name).write_text(f"---\ntitle: {title}\ndate: 2026-01-05\n---\nShuffles within a warp.\n",
                                            encoding="utf-8")
    log = load(root / "worklog", relative_to=root)
    assert not [d for d in log.diagnostics if d.severity == "error"], [str(d) for d in log.diagnostics]
    slugs = {e.path: e.slug for e in log.entries if e.kind == "post"}
    assert slugs["worklog/short.md"] == "2026-01-05-warp-shuffles"
    long = [slugs["worklog/one.md"], slugs["worklog/two.md"]]
    assert len(set(long)) == 2 and all(len(s) <= 80 and s.startswith("2026-01-05-tiledmatmul") for s in long)
    again = load(root / "worklog", relative_to=root)
    assert {e.path: e.slug for e in again.entries if e.kind == "post"} == slugs  # the same on every build
    result = mkdocs_build(root)
    assert result.returncode == 0, result.stdout[-2000:]
    assert (root / "site" / "worklog" / long[0] / "index.html").is_file()


def test_a_day_written_many_times_is_one_error_per_copy_and_one_note_per_other_file(tmp_path):
    day = "12/10/25 (T - 153)\nTimed the softmax at 4096 rows.\n"
    copies = 20_000  # the check counts per page and file: linear, where one scan per entry took minutes
    log = parse(day * copies, "tminus.md")
    errors = [d for d in log.diagnostics if d.code is DiagnosticCode.DUPLICATE_DAY]
    assert [(d.line, d.message.rsplit(" ", 1)[-1]) for d in errors[:2]] == [(3, "2025-12-10-2"), (5, "2025-12-10-3")]
    assert len(errors) == copies - 1 and errors[-1].message.endswith(f"page 2025-12-10-{copies}")
    assert len({e.slug for e in log.entries}) == copies
    post = "---\ntitle: Warp shuffles\ndate: 2026-01-05\n---\nShuffles within a warp.\n"
    for name, text in {"a.md": day * 2, "b.md": day, "post1.md": post, "post2.md": post}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    several = load(tmp_path, relative_to=tmp_path)
    found = sorted((d.path, d.line, d.code) for d in several.diagnostics
                   if d.code in (DiagnosticCode.DUPLICATE_DAY, DiagnosticCode.SAME_DAY))
    assert found == [("a.md", 3, DiagnosticCode.DUPLICATE_DAY), ("b.md", 1, DiagnosticCode.SAME_DAY),
                     ("post2.md", 5, DiagnosticCode.DUPLICATE_DAY)]


def test_the_last_days_of_the_calendar_still_make_a_heatmap():
    from worklog_gen.site.heatmap import heatmap_cells

    last = dt.date(9999, 12, 30)
    cells = heatmap_cells({last: 40}, until=dt.date.max)  # the target date is the calendar's last day
    assert [(c.date, c.words, c.ahead) for c in cells] == [(last, 40, False), (dt.date.max, None, True)]


def test_a_progress_log_year_out_of_the_calendar_is_an_error():
    log = parse("---\nyear: 99999999999999\n---\n## November 24 - Day 25\nTimed the softmax.\n", "progress.md")
    assert [d.code for d in log.diagnostics if d.severity == "error"] == [DiagnosticCode.FRONT_MATTER]


def test_fix_never_rewrites_a_file_that_is_no_log_or_that_is_read_only(tmp_path):
    root = small_project(tmp_path)
    damaged = "12/11/25 (T - 152)\r\nMemory-E\u00ef\u00ac\u0192cient attention\r\n"
    junk = bytes(range(1, 256)) * 40  # random-looking bytes, no NUL, named .md
    (root / "worklog" / "junk.md").write_bytes(junk)
    readonly = root / "worklog" / "readonly.md"
    readonly.write_bytes(damaged.encode("utf-8"))
    readonly.chmod(0o444)
    result = check(root, "--fix")
    assert "worklog/junk.md: not fixed: no entry is recognised in it" in result.output
    assert "worklog/readonly.md: not fixed: the file is read-only" in result.output
    assert (root / "worklog" / "junk.md").read_bytes() == junk
    assert readonly.read_bytes() == damaged.encode("utf-8")
    readonly.chmod(0o644)
    (root / "worklog").chmod(0o555)
    try:
        result = check(root, "--fix")
        assert "worklog/readonly.md: not fixed: its folder" in result.output and "read-only" in result.output
        assert readonly.read_bytes() == damaged.encode("utf-8")
    finally:
        (root / "worklog").chmod(0o755)


def test_a_permission_error_while_fixing_is_a_message(tmp_path, monkeypatch):
    root = small_project(tmp_path)
    (root / "worklog" / "crlf.md").write_bytes(b"12/11/25 (T - 152)\r\nTimed the reduction.\r\n")

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(root / "worklog"))

    monkeypatch.setattr(os, "replace", denied)
    result = check(root, "--fix")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "worklog/crlf.md: not fixed: cannot write it: Permission denied" in result.output
    assert (root / "worklog" / "crlf.md").read_bytes() == b"12/11/25 (T - 152)\r\nTimed the reduction.\r\n"
    assert not [p for p in (root / "worklog").iterdir() if p.name.endswith(".fix")]


@pytest.mark.parametrize("command", [["check"], ["export"], ["new", "--date", "2025-12-11"]])
def test_a_worklog_dir_that_does_not_exist_is_one_line_exit_2(tmp_path, command):
    root = small_project(tmp_path)
    shutil.rmtree(root / "worklog")
    result = run_cli(root, *command)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: ") and "worklog" in line and "no such file or folder" in line


def test_export_exits_1_after_printing_a_log_with_errors(tmp_path):
    root = small_project(tmp_path)
    (root / "worklog" / "tminus.md").write_text(TMINUS + "\n12/10/25 (T - 153)\nThe same day twice.\n",
                                                encoding="utf-8")
    result = run_cli(root, "export")
    assert result.exit_code == 1 and "duplicate day 2025-12-10" in result.stderr
    assert json.loads(result.stdout)["entries"]


@pytest.mark.parametrize("marker", ["- ", "1. ", "> ", "* > 2) "])
def test_nesting_written_on_one_line_is_refused(tmp_path, marker):
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "good.md").write_text("2025-01-13\nshared memory banks\n", encoding="utf-8")
    (folder / "deep.md").write_text(f"2025-01-16\nA note.\n{marker * 500}warp shuffles\n", encoding="utf-8")
    log = load(folder)
    refused = [(Path(d.path).name, d.line) for d in log.diagnostics if d.code is DiagnosticCode.FILE_REFUSED]
    assert refused == [("deep.md", 3)]
    assert [e.date.isoformat() for e in log.entries] == ["2025-01-13"]


def test_a_site_with_a_list_nested_on_one_line_still_builds(tmp_path):
    root = small_project(tmp_path)
    (root / "worklog" / "deep.md").write_text("2025-12-11\n" + "- " * 500 + "x\n", encoding="utf-8")
    result = mkdocs_build(root, strict=False)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "worklog/deep.md:2: warning: lists or quotes nested" in result.stdout


def test_every_link_of_a_long_paragraph_has_its_own_line():
    """A pasted reading list is one paragraph of thousands of lines; each link keeps its line
    (found from a table of line starts, not by counting from the paragraph's start per link)."""
    rows = []
    for i in range(3000):
        if i % 3 == 0:
            rows.append(f"Read [paper {i}](https://arxiv.org/abs/{i:07d}) and <https://github.com/k/{i}>")
        elif i % 3 == 1:
            rows.append(f"then [a title over\ntwo lines {i}](https://triton-lang.org/{i}) [ref {i}][r]")
        else:
            rows.append(f"notes on num_warps, no link {i}")
    text = "12/09/25 (T - 154)\n" + "\n".join(rows) + "\n\n[r]: https://horace.io/brrr_intro.html\n"
    (entry,) = parse(text, "links.md").entries
    lines = text.split("\n")
    for link in entry.links:
        line = lines[link.line - 1]
        assert f"[{link.title.split()[0]}" in line or f"<{link.url}>" in line, link  # the line the link starts on
    assert len(entry.links) == 4 * 1000
    first = [(link.line, link.url) for link in entry.links[:5]]
    assert first == [(2, "https://arxiv.org/abs/0000000"), (2, "https://github.com/k/0"),
                     (3, "https://triton-lang.org/1"), (4, "https://horace.io/brrr_intro.html"),
                     (6, "https://arxiv.org/abs/0000003")]


def test_a_yaml_alias_refuses_its_file_with_a_warning_and_the_rest_builds(tmp_path):
    root = small_project(tmp_path)
    (root / "worklog" / "2026-01-05-shuffles.md").write_text(
        "---\ntitle: Warp shuffles\ndate: 2026-01-05\ntags: &t [cuda, warps]\ncategories: *t\n---\n"
        "Shuffles move registers between the lanes of a warp.\n", encoding="utf-8")
    log = load(root / "worklog", relative_to=root)
    (d,) = [d for d in log.diagnostics if d.path == "worklog/2026-01-05-shuffles.md"]
    assert (d.line, d.code, d.severity) == (5, DiagnosticCode.FILE_REFUSED, "warning") and "alias (*t)" in d.message
    assert [e.date.isoformat() for e in log.entries] == ["2025-12-09", "2025-12-10"]
    assert not [d for d in log.diagnostics if d.severity == "error"]
    assert "Shuffles move" not in log.preamble
    result = mkdocs_build(root, strict=False)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "2026-01-05-shuffles.md:5: warning: an alias (*t)" in result.stdout
    assert "no entry" not in result.stdout
    assert not (root / "site" / "worklog" / "2026-01-05-warp-shuffles").exists()
    assert mkdocs_build(root).returncode == 1  # --strict fails on the warning


def test_two_new_commands_at_once_write_each_day_once_and_in_order(tmp_path, monkeypatch):
    """Two ``new`` racing, as threads that read the log at the same moment and are slow to append
    (the read is made slow, so that without the lock both would read before either writes)."""
    import threading
    import time

    from worklog_gen.log import authoring

    def slow_load(*args, **kwargs):
        log = load(*args, **kwargs)
        time.sleep(0.2)
        return log

    monkeypatch.setattr(authoring, "load", slow_load)
    for round_ in range(3):
        path = tmp_path / f"tminus-{round_}.md"
        path.write_text(TMINUS, encoding="utf-8")
        days = ["2025-12-11", "2025-12-11"] if round_ % 2 == 0 else ["2025-12-12", "2025-12-11"]
        start, outcomes = threading.Barrier(2), []

        def racer(day):
            start.wait()
            try:
                outcomes.append(authoring.append_entry(path, dt.date.fromisoformat(day))[1])
            except ValueError as exc:
                outcomes.append(str(exc))

        threads = [threading.Thread(target=racer, args=(day,)) for day in days]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        headers = [line for line in path.read_text(encoding="utf-8").split("\n") if line.startswith("12/")]
        assert len(headers) == len(set(headers)), (headers, outcomes)  # no day twice
        entries = load(path).entries
        assert [e.date for e in entries] == sorted(e.date for e in entries), (headers, outcomes)  # in order
        assert not [d for d in load(path).diagnostics if d.severity == "error"]


def test_each_tag_links_to_its_own_heading_even_when_tags_slugify_alike(tmp_path):
    root = small_project(tmp_path)
    tags = ["Upper", "UPPER", "\U0001f680", ".", "..", "Tags", "tag"]
    for k, tag in enumerate(tags):
        (root / "worklog" / f"2026-01-{k + 1:02d}-post.md").write_text(
            f"---\ntitle: Post {k}\ndate: 2026-01-{k + 1:02d}\ntags: [{json.dumps(tag, ensure_ascii=False)}]\n---\nNotes on warp shuffles.\n",
            encoding="utf-8")
    result = mkdocs_build(root)
    assert result.returncode == 0, result.stdout[-3000:]
    page = (root / "site" / "worklog" / "tags" / "index.html").read_text(encoding="utf-8")
    # each heading's text (before its permalink, which toc adds) -> its id
    ids = {html_text: id_ for id_, html_text in re.findall(r'<h2 id="([^"]*)">(.*?)(?:<a class="headerlink"[^>]*>[^<]*</a>)?</h2>', page)}
    assert len(ids) == len(tags) and len(set(ids.values())) == len(tags) and all(ids.values()), ids
    for k, tag in enumerate(tags):
        post = (root / "site" / "worklog" / f"2026-01-{k + 1:02d}-post-{k}" / "index.html").read_text(encoding="utf-8")
        (anchor,) = re.findall(r'href="\.\./tags/#([^"]*)"', post)
        assert ids[html.escape(tag, quote=False)] == anchor, (tag, anchor)


SCRIPT_LINKS = ("12/11/25 (T - 152)\n"
                "Read [the paper](javascript:alert(1)) and [the code](<java\tscript:alert(2)>).\n"
                "Then [the notes](JaVa&#9;ScRiPt:alert(3)) and <a href=\" javascript:alert(4)\">raw</a>.\n"
                "Kept: [FlashAttention](https://arxiv.org/abs/2205.14135), [home](../index.md).\n"
                "<img src=x onerror=\"alert(5)\"><script>alert(6)</script>\n")


def test_script_links_are_reported_at_their_lines_and_never_kept():
    log = parse(TMINUS + "\n" + SCRIPT_LINKS, "worklog/tminus.md")
    found = [(d.line, d.code) for d in log.diagnostics if d.code is DiagnosticCode.UNSAFE_LINK]
    assert found == [(8, DiagnosticCode.UNSAFE_LINK)] * 2 + [(9, DiagnosticCode.UNSAFE_LINK)] * 2
    (entry,) = [e for e in log.entries if e.date.isoformat() == "2025-12-11"]
    assert [link.url for link in entry.links] == ["https://arxiv.org/abs/2205.14135", "../index.md"]


ATTR_LIST_LINKS = ("12/12/25 (T - 151)\n"
                   "Read [the Nsight Compute guide](https://docs.nvidia.com/nsight-compute/)"
                   "{: href=\"javascript:alert(7)\" }\n"
                   "and the roofline notes\n"
                   "{: .note onclick=\"alert(8)\" src='java&#9;script:alert(9)' }\n"
                   "Written as text, not applied: `{: href=\"javascript:alert(10)\"}` and "
                   "\\{: href=\"javascript:alert(11)\"}.\n")


def test_a_script_link_set_with_attr_list_is_reported_at_its_line():
    log = parse(TMINUS + "\n" + ATTR_LIST_LINKS, "worklog/tminus.md")
    found = [(d.line, d.code) for d in log.diagnostics if d.code is DiagnosticCode.UNSAFE_LINK]
    assert found == [(8, DiagnosticCode.UNSAFE_LINK), (10, DiagnosticCode.UNSAFE_LINK)]
    (entry,) = [e for e in log.entries if e.date.isoformat() == "2025-12-12"]
    assert [link.url for link in entry.links] == ["https://docs.nvidia.com/nsight-compute/"]


def test_generate_strict_fails_on_a_script_link_set_with_attr_list(tmp_path):
    root = small_project(tmp_path)
    (root / "worklog" / "tminus.md").write_text(TMINUS + "\n" + ATTR_LIST_LINKS, encoding="utf-8")
    result = run_cli(root, "generate", "--strict", "--out", str(tmp_path / "generated"))
    assert result.exit_code == 1 and "worklog/tminus.md:8: warning: a link that runs script" in result.output


def test_sanitize_functions_without_mkdocs():
    from worklog_gen.site.sanitize import clean_html, drop_script_links

    page = ('<p><a href="javascript:alert(1)">a</a> <a href="java&#9;script:x" title="t">b</a>\n'
            '<A HREF=" JAVASCRIPT:x">c</A> <a href="https://triton-lang.org">d</a> <a href="../x/">e</a></p>')
    dropped, n = drop_script_links(page)
    assert n == 3 and "script:" not in dropped.lower() and '<a title="t">b</a>' in dropped
    assert '<a href="https://triton-lang.org">d</a> <a href="../x/">e</a></p>' in dropped
    assert drop_script_links("<p>no links</p>") == ("<p>no links</p>", 0)
    cleaned = clean_html('<p onclick="x">a<script>alert(1)</script><a href="data:text/html,x">b</a>'
                         '<a href="mailto:me@example.org">c</a><iframe src="https://e.org"></iframe>'
                         '<img src="tree.svg" onerror="y" width="3"><code class="language-py">x</code></p>')
    assert cleaned == ('<p>a<a>b</a><a href="mailto:me@example.org">c</a><img src="tree.svg" width="3">'
                       '<code class="language-py">x</code></p>')
    pictures = clean_html('<picture><source srcset="roofline.narrow.svg" media="(max-width: 600px)">'
                          '<source srcset="data:image/svg+xml,x 2x, r.svg"><img src="roofline.vega.svg"></picture>')
    assert pictures == ('<picture><source srcset="roofline.narrow.svg" media="(max-width: 600px)">'
                        '<source><img src="roofline.vega.svg"></picture>')


def test_the_sanitiser_as_a_markdown_extension_runs_on_marked_pages_only():
    import markdown

    from worklog_gen.site.sanitize import SANITIZE_MARK, SafeHTMLExtension, marked

    post = ('---\ntitle: "Warp shuffles"\n---\n\n# Warp shuffles\n\n<img src=x onerror="alert(1)"> '
            '`__shfl_down_sync` trees.\n\n```python\nnever closed\n')
    page = marked(post)
    assert page.startswith('---\ntitle: "Warp shuffles"\n---\n' + SANITIZE_MARK + "\n\n# Warp shuffles")
    render = lambda text: markdown.markdown(text, extensions=["fenced_code", SafeHTMLExtension()])  # noqa: E731
    assert 'onerror' not in render(page) and "<code>__shfl_down_sync</code>" in render(page)
    assert SANITIZE_MARK not in render(page)
    assert 'onerror="alert(1)"' in render(post)  # an unmarked page (the author's own docs) is left as it is


@pytest.mark.parametrize("sanitize", [False, True])
def test_a_site_never_publishes_a_script_link_and_sanitizes_on_request(tmp_path, sanitize):
    root = small_project(tmp_path)
    config = yaml.safe_load((root / "mkdocs.yml").read_text())
    config["plugins"] = ["search", {"worklog": {"sanitize": sanitize}}]
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (root / "worklog" / "tminus.md").write_text(TMINUS + "\n" + SCRIPT_LINKS, encoding="utf-8")
    result = mkdocs_build(root, strict=False)
    assert result.returncode == 0, result.stdout[-2000:]
    for line in (8, 9):
        assert f"worklog/tminus.md:{line}: warning: a link that runs script" in result.stdout
    for page in (root / "site" / "worklog").rglob("*.html"):
        text = html.unescape(page.read_text(encoding="utf-8"))
        hrefs = re.findall(r'(?:href|src)\s*=\s*"([^"]*)"', text, re.I)
        assert not [h for h in hrefs if "script:" in re.sub(r"\s", "", h).lower()], (page, hrefs)
    day = (root / "site" / "worklog" / "2025-12-11" / "index.html").read_text(encoding="utf-8")
    assert 'href="https://arxiv.org/abs/2205.14135"' in day and "the paper" in day
    assert ("<script>alert(6)" in day) is not sanitize and ("onerror" in day) is not sanitize
    feed = ET.fromstring((root / "site" / "feed.xml").read_bytes())
    content = "".join(c.text for c in feed.iter("{http://www.w3.org/2005/Atom}content"))
    hrefs = re.findall(r'(?:href|src)\s*=\s*"([^"]*)"', content, re.I)
    assert len(hrefs) > 3 and not [h for h in hrefs if is_script_url(h)], hrefs  # as on the pages
    assert ("<script>alert(6)" in content) is not sanitize and ("onerror" in content) is not sanitize
    assert mkdocs_build(root).returncode == 1  # each script link is a warning
