"""The ``worklog-gen`` command line, end to end through click's runner."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner

from conftest import REPO, T_MINUS_LOGS, TMINUS_FIXTURE
from worklog_gen.cli import main
from worklog_gen.config import load_plugin_config
from worklog_gen.log.parse import load


def run(*args, cwd=None, **kwargs):
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(main, list(map(str, args)), **kwargs)
    with runner.isolated_filesystem(temp_dir=cwd):
        return runner.invoke(main, list(map(str, args)), **kwargs)


def test_export_json_of_the_tminus_fixture():
    result = run("export", "--format", "json", TMINUS_FIXTURE, "-f", REPO / "mkdocs.yml")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    entries = data["entries"]
    assert data["target_date"] == "2026-05-12"
    assert [e["date"] for e in entries] == [f"2025-12-{d:02d}" for d in range(9, 21)]
    assert [e["countdown"] for e in entries] == list(range(154, 142, -1))
    assert sum(len(e["links"]) for e in entries) == 24
    assert entries[0]["url"] == "worklog/2025-12-09/"
    assert entries[0]["source"].endswith("tminus-worklog.md:27")
    assert entries[0]["links"][0] == {
        "title": "Making Deep Learning Go Brrrr From First Principles",
        "url": "https://horace.io/brrr_intro.html",
    }
    assert set(entries[0]) == {"date", "countdown", "url", "source", "links", "tasks", "topics", "words",
                               "kind", "title", "tags", "day_number", "draft"}
    assert (entries[0]["kind"], entries[0]["title"], entries[0]["tags"], entries[0]["day_number"]) == ("day", None, [], None)
    statuses = {t["status"] for e in entries for t in e["tasks"]}
    assert statuses <= {"done", "carried", "open"} and "done" in statuses and "carried" in statuses
    # 12/13 reads the Triton matmul tutorial: the project's topics apply to any log.
    by_date = {e["date"]: e for e in entries}
    assert "tiled-matmul" in by_date["2025-12-13"]["topics"]
    assert all(e["words"] > 0 for e in entries)


def test_export_markdown_keeps_every_entry():
    result = run("export", "--format", "markdown", TMINUS_FIXTURE, "-f", REPO / "mkdocs.yml")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n## 2025-12-") == 12
    assert "[Making Deep Learning Go Brrrr From First Principles](https://horace.io/brrr_intro.html)" in result.stdout


def test_export_without_path_reads_the_configured_worklog(tmp_path, monkeypatch):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "log.md").write_text("12/09/25 (T - 3)\nRead [a](https://a.org/x).\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins:\n  - worklog:\n      worklog_dir: logs\n")
    monkeypatch.chdir(tmp_path)
    result = run("export")
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["entries"]
    assert entry["source"] == "logs/log.md:1"  # relative, not a machine path
    assert entry["links"] == [{"title": "a", "url": "https://a.org/x"}]


def test_new_appends_todays_header_with_the_countdown(tmp_path, monkeypatch):
    log = tmp_path / "log.md"
    log.write_text("12/09/25 (T - 10)\nfirst day\n")
    monkeypatch.chdir(tmp_path)
    result = run("new", log, "--date", "2025-12-12")
    assert result.exit_code == 0, result.output
    assert log.read_text().endswith("first day\n\n12/12/25 (T - 7)\n")
    again = run("new", log, "--date", "2025-12-12")
    assert again.exit_code != 0 and "2025-12-12" in again.output
    assert log.read_text().count("12/12/25") == 1  # nothing appended twice


@pytest.mark.parametrize("first, then", [("2025-12-09.md", "2025-12-10.md"), ("2025_12_09.md", "2025_12_10.md")])
def test_new_in_a_folder_of_daily_notes_writes_the_day_s_empty_file(tmp_path, monkeypatch, first, then):
    """Obsidian's daily notes, or Logseq's journals: a file a day, its name its date (with the
    newest's separator), no header and no target date."""
    (tmp_path / "Daily").mkdir()
    (tmp_path / "Daily" / first).write_text("Read the PTX ISA.\n")
    monkeypatch.chdir(tmp_path)
    result = run("new", tmp_path / "Daily", "--date", "2025-12-10")
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith(f"{then}: added 2025-12-10")
    assert (tmp_path / "Daily" / then).read_text() == ""
    assert [e.date.isoformat() for e in load(tmp_path / "Daily").entries] == ["2025-12-09", "2025-12-10"]


@pytest.mark.parametrize("given, said", [("2026-02-30", "'2026-02-30' does not exist: day is out of range"),
                                         ("2026/02/03", "'2026/02/03' is not a date written YYYY-MM-DD")])
def test_new_says_whether_a_date_does_not_exist_or_is_not_yyyy_mm_dd(tmp_path, monkeypatch, given, said):
    log = tmp_path / "log.md"
    text = "02/27/26 (T - 10)\nTimed the softmax at 4096 rows.\n"
    log.write_text(text)
    monkeypatch.chdir(tmp_path)
    for args in (["new", log, "--date", given], ["init", tmp_path / "site", "--target", given]):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert said in result.output.strip().splitlines()[-1], args
    assert log.read_text() == text and not (tmp_path / "site").exists()


def test_check_exits_1_on_errors_with_file_and_line(tmp_path, monkeypatch):
    log = tmp_path / "log.md"
    log.write_text(
        "12/09/25 (T - 10)\nok\n\n02/30/2025 (T - 9)\nnot a date\n\n12/11/25 (T - 2)\noff target\n\n"
        "12/12/25 (T - 7)\nok\n"
    )
    monkeypatch.chdir(tmp_path)
    result = run("check", log)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith(f"{log}:4: error:") for line in lines), lines
    assert any(line.startswith(f"{log}:7: error:") for line in lines), lines


@pytest.mark.parametrize("log", T_MINUS_LOGS)
def test_check_passes_on_a_t_minus_log(log):
    result = run("check", log, "-f", REPO / "mkdocs.yml")
    assert result.exit_code == 0, result.output


def test_status_json_names_every_configured_topic(monkeypatch):
    monkeypatch.chdir(REPO)
    result = run("status", "--json")
    rows = json.loads(result.stdout)["notebooks"]
    assert result.exit_code == (0 if all(r["state"] == "fresh" for r in rows) else 1), result.output  # for a CI step
    configured = [t.id for t in load_plugin_config(REPO / "mkdocs.yml")[0].topics]
    assert list(dict.fromkeys(r["topic"] for r in rows)) == configured  # a row per notebook and machine
    assert configured[:4] == ["vector-add", "tiled-matmul", "persistent-matmul", "online-softmax"]
    for row in rows:
        assert set(row) == {"topic", "path", "machine", "slug", "state", "gpu", "executed_at", "headline", "reasons",
                            "failure"}
        assert row["state"] in {"fresh", "stale", "missing", "failed"}
        if row["state"] != "missing":
            dt.datetime.fromisoformat(row["executed_at"].replace("Z", "+00:00"))
            assert all(isinstance(v, (int, float)) for v in row["headline"].values())


def test_bad_plugin_options_are_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins:\n  - worklog:\n      date_order: ymd\n")
    monkeypatch.chdir(tmp_path)
    result = run("export")
    assert result.exit_code != 0
    assert "mkdocs.yml" in result.output and "date_order" in result.output


PROGRESS_LOG = "## November 24 - Day 1 of ML Systems\nTimed the softmax at 4096 rows.\n"


@pytest.mark.parametrize("plugins, option", [
    ("  - worklog:\n      year: true\n", "'year': expected a year such as 2025"),  # YAML's true is a Python int
    ("  - worklog:\n      year: 0\n", "'year': expected a year such as 2025"),
    ("  worklog:\n    year: true\n", "'year': expected a year such as 2025"),  # plugins as a mapping
    ('  - worklog: "x"\n', "expected a mapping of options under 'worklog:'"),
    ("  - worklog: [2025]\n", "expected a mapping of options under 'worklog:'"),
])
@pytest.mark.parametrize("command", [["check"], ["export"], ["new", "--date", "2025-11-25"]])
def test_a_bad_plugin_option_is_blamed_on_mkdocs_yml_not_the_log(tmp_path, monkeypatch, plugins, option, command):
    (tmp_path / "worklog").mkdir()
    (tmp_path / "worklog" / "progress.md").write_text(PROGRESS_LOG, encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(f"site_name: ML Systems\nplugins:\n{plugins}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run(*command)
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: {tmp_path / 'mkdocs.yml'}: invalid 'worklog' plugin options: ") and option in line
    assert "progress.md" not in line
    assert (tmp_path / "worklog" / "progress.md").read_text(encoding="utf-8") == PROGRESS_LOG


def test_a_year_option_that_is_a_year_is_read(tmp_path, monkeypatch):
    (tmp_path / "worklog").mkdir()
    (tmp_path / "worklog" / "progress.md").write_text(PROGRESS_LOG, encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins:\n  worklog:\n    year: 2024\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run("export")
    assert result.exit_code == 0, result.output
    assert [e["date"] for e in json.loads(result.stdout)["entries"]] == ["2024-11-24"]


def test_new_right_after_init_says_what_to_do_and_init_hints_what_works(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    made = run("init", "mylog", "--target", "2099-03-05")
    assert made.exit_code == 0, made.output
    today = dt.date.today()
    header = f"{today:%m/%d/%y} (T - {(dt.date(2099, 3, 5) - today).days})"
    assert f"first entry: {header}, today's, in mylog/worklog/log.md: write today's notes under it" in made.output
    assert "from tomorrow on, worklog-gen new adds each day's header" in made.output
    monkeypatch.chdir(tmp_path / "mylog")
    log = tmp_path / "mylog" / "worklog" / "log.md"
    before = log.read_text(encoding="utf-8")
    same_day = run("new")
    assert same_day.exit_code == 1, same_day.output
    (line,) = same_day.output.strip().splitlines()
    assert f"{today} already has an entry ({header}): write that day's notes under it" in line
    assert "--date YYYY-MM-DD" in line and line.startswith(f"Error: {log}:")
    assert log.read_text(encoding="utf-8") == before  # nothing appended
    tomorrow = run("new", "--date", (today + dt.timedelta(days=1)).isoformat())  # what the hint says works
    assert tomorrow.exit_code == 0, tomorrow.output
    assert log.read_text(encoding="utf-8").startswith(before)


def test_status_has_a_header_and_says_the_next_step(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("init", "mylog", "--target", "2099-03-05").exit_code == 0
    monkeypatch.chdir(tmp_path / "mylog")
    result = run("status")
    assert result.exit_code == 1, result.output
    header, row, step = result.stdout.splitlines()
    assert header.split() == ["topic", "state", "ran", "on", "executed", "at", "notebook"]
    assert row.split()[:2] == ["first-kernel", "missing"] and row.index("missing") == header.index("state")
    assert step.startswith("next: worklog-gen execute notebooks/first_kernel.py ") and "TRITON_INTERPRET=1" in step
    assert step.endswith("then commit notebooks/_freeze/")
    (rows,) = json.loads(run("status", "--json").stdout).values()  # --json: the rows alone, as before
    assert [r["state"] for r in rows] == ["missing"]


def test_status_names_a_notebook_that_is_not_found_and_a_site_without_notebooks(tmp_path, monkeypatch):
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nplugins:\n  - worklog:\n      topics:\n        - id: softmax\n          title: Softmax\n"
        "          notebook: notebooks/softmax.py\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run("status")
    assert result.exit_code == 1, result.output
    assert ("next: topic 'softmax': notebooks/softmax.py is not found; fix its 'notebook' in mkdocs.yml"
            in result.stdout.splitlines())
    assert "worklog-gen execute" not in result.stdout
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins:\n  - worklog\n", encoding="utf-8")
    result = run("status")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"no topic names a notebook in {tmp_path / 'mkdocs.yml'}: nothing to execute\n"


def test_an_unknown_plugin_option_is_a_warning_naming_it_as_mkdocs_build_gives(tmp_path, monkeypatch):
    """A misspelt option (``worklog_dri``) is what MkDocs warns about; the command line said nothing
    and read the default folder. It warns now, with the file and the option, and ``generate
    --strict`` fails on it as ``mkdocs build --strict`` does."""
    (tmp_path / "worklog").mkdir()
    (tmp_path / "worklog" / "log.md").write_text("12/09/25 (T - 3)\nRead [a](https://a.org/x).\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins:\n  - worklog:\n      worklog_dri: logs\n")
    monkeypatch.chdir(tmp_path)
    result = run("check")
    assert "WARNING: " in result.stderr and "mkdocs.yml: 'worklog' plugin option 'worklog_dri': Unrecognised" \
        in result.stderr, result.stderr
    assert result.exit_code == 0, result.output  # a warning, not an error: the log itself is fine
    strict = run("generate", "--strict", "--out", tmp_path / "out")
    assert strict.exit_code == 1 and "strict mode" in strict.stderr, strict.output
    relaxed = run("generate", "--out", tmp_path / "out2")
    assert relaxed.exit_code == 0 and "worklog_dri" in relaxed.stderr, relaxed.output
