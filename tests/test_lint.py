"""``lint.check`` and ``worklog-gen check``: what is an error, what is a warning, and where."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import T_MINUS_LOGS
from worklog_gen.cli import main
from worklog_gen.log.lint import check


BAD_LOG = """\
Preamble.
02/30/2025 (T - 100)

12/09/25 (T - 154)

Slides - Done.

12/11/25 (T - 150)

12/10/25 (T - 153)

[https://a.org/post](A post (v2))

12/10/2025 (T - 153)

again
"""


def found(diagnostics) -> list[tuple[int, str, str]]:
    return [(d.line, d.severity, d.code) for d in diagnostics]


def test_each_problem_named_at_its_line(tmp_path):
    path = tmp_path / "log.md"
    path.write_bytes(BAD_LOG.replace("\n", "\r\n").encode())
    diagnostics = check(path)
    assert found(diagnostics) == [
        (1, "info", "line-ends"),
        (2, "error", "invalid-date"),
        (8, "error", "target-date"),  # a warning in load, an error here
        (8, "info", "empty-entry"),
        (10, "warning", "out-of-order"),
        (12, "warning", "backwards-link"),
        (14, "error", "duplicate-day"),
        (14, "warning", "out-of-order"),
    ]
    assert all(str(d).startswith(f"{path}:{d.line}: {d.severity}: ") for d in diagnostics)
    target = next(d for d in diagnostics if d.code == "target-date")
    assert "2026-05-10" in target.message and "2026-05-12" in target.message


def test_a_day_in_two_files_is_a_note_and_a_day_twice_in_one_file_an_error(tmp_path):
    (tmp_path / "a.md").write_text("12/09/25 (T - 154)\nx\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("12/09/2025 (T - 154)\ny\n", encoding="utf-8")
    (d,) = check(tmp_path)
    assert (Path(d.path).name, d.line, d.severity, d.code) == ("b.md", 1, "info", "same-day")
    assert "a.md:1" in d.message and "both are kept" in d.message
    (tmp_path / "b.md").write_text("12/09/2025 (T - 154)\ny\n12/09/2025 (T - 154)\nz\n", encoding="utf-8")
    same_file = [d for d in check(tmp_path) if d.code == "duplicate-day"]
    assert [(Path(d.path).name, d.line, d.severity) for d in same_file] == [("b.md", 3, "error")]


def test_order_is_checked_per_file_not_across_files(tmp_path):
    (tmp_path / "a.md").write_text("12/10/25 (T - 153)\nx\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("12/09/25 (T - 154)\ny\n", encoding="utf-8")
    assert check(tmp_path) == []


@pytest.mark.parametrize("log", T_MINUS_LOGS)
def test_a_t_minus_log_is_clean(log):
    assert check(log) == []


def test_cli_check_exit_codes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no mkdocs.yml here or above: PATHs of a log need none
    bad = tmp_path / "bad.md"
    bad.write_text(BAD_LOG, encoding="utf-8")
    good = tmp_path / "good.md"
    good.write_text("12/09/25 (T - 154)\n\nWork.\n\n12/10/25 (T - 153)\n\nMore - Done\n", encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["check", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:2: error: invalid date 02/30/2025" in result.output
    result = runner.invoke(main, ["check", str(good)])
    assert result.exit_code == 0, result.output
    assert "0 error(s), 0 warning(s)" in result.output
    assert runner.invoke(main, ["check", str(good), "-f", str(tmp_path / "absent.yml")]).exit_code == 2


def test_the_readme_s_table_of_diagnostics_says_each_code_s_severity():
    """The README's table lists every diagnostic code with the severity the code gives it, and
    its prose says what a day in two files and an empty entry are (notes, not warnings)."""
    import re
    from pathlib import Path

    from worklog_gen.log import DiagnosticCode

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `([a-z-]+)` \| (error|warning|info) \|", readme, re.MULTILINE))
    assert table == {code.value: code.severity.value for code in DiagnosticCode}
    for said in ("empty entry, with a warning", "two files is kept on one page, each text\n  under its source, with a warning"):
        assert said not in readme
