"""``check --fix`` and writers that run while it does (issue #41): a line typed meanwhile, or a
day ``worklog-gen new`` adds, is never lost.

The race is made deterministic by wrapping :func:`worklog_gen.log.fix.plan`: the write happens
after ``--fix`` has read the file and before it renames its repair into place.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from pathlib import Path

import yaml
from click.testing import CliRunner

from worklog_gen.cli import main
from worklog_gen.log import fix as fixer
from worklog_gen.log.authoring import append_entry

# A T-minus export as a notes app writes it: CRLF line ends and one word in mojibake.
DAMAGED = ("12/09/25 (T - 154)\r\nRead [Making Deep Learning Go Brrrr](https://horace.io/brrr_intro.html).\r\n\r\n"
           "12/10/25 (T - 153)\r\nMemory-E\u00ef\u00ac\u0192cient attention: timed the softmax at 4096 rows.\r\n")
TYPED = "Also: the backward pass needs the row maxima kept."


def project(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "worklog").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (root / "worklog" / "tminus.md").write_bytes(DAMAGED.encode("utf-8"))
    config = {"site_name": "Race", "theme": {"name": "material"}, "plugins": ["search", "worklog"]}
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root


def check_fix(root: Path):
    here = os.getcwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(main, ["check", "--fix"])
    finally:
        os.chdir(here)


def test_a_line_typed_while_fix_runs_is_kept_and_fix_exits_1(tmp_path, monkeypatch):
    root = project(tmp_path)
    log = root / "worklog" / "tminus.md"
    plan = fixer.plan

    def plan_then_type(worklog):
        fixes = plan(worklog)
        with log.open("ab") as fh:  # an editor saves the file after --fix read it
            fh.write(f"{TYPED}\r\n".encode())
        return fixes

    monkeypatch.setattr(fixer, "plan", plan_then_type)
    result = check_fix(root)
    assert result.exit_code == 1, result.output
    assert "worklog/tminus.md: not fixed: it changed while check --fix ran" in result.output
    assert log.read_bytes() == (DAMAGED + TYPED + "\r\n").encode("utf-8")
    assert not [p for p in log.parent.iterdir() if p.name.endswith(".fix")]
    monkeypatch.setattr(fixer, "plan", plan)  # run again, as the message says: now it is fixed
    result = check_fix(root)
    assert result.exit_code == 0, result.output
    text = log.read_text(encoding="utf-8")
    assert TYPED in text and "Memory-E\ufb03cient" in text and "\r" not in text


def test_new_waits_for_fix_and_its_day_is_kept(tmp_path, monkeypatch):
    root = project(tmp_path)
    log = root / "worklog" / "tminus.md"
    plan = fixer.plan
    added: list = []
    new = threading.Thread(target=lambda: added.append(append_entry(log, dt.date(2025, 12, 11))))

    def plan_then_new(worklog):
        fixes = plan(worklog)
        new.start()  # worklog-gen new on the same log, while --fix holds it
        new.join(timeout=0.5)
        assert new.is_alive(), "new appended while check --fix held the log"
        return fixes

    monkeypatch.setattr(fixer, "plan", plan_then_new)
    result = check_fix(root)
    new.join(timeout=10)
    assert result.exit_code == 0, result.output
    assert added == [(log, "12/11/25 (T - 152)")]
    text = log.read_bytes().decode("utf-8")
    assert "Memory-E\ufb03cient" in text  # the repair
    assert text.endswith("\n\n12/11/25 (T - 152)\n")  # and the day new added after it, LF as the file now is
    assert text.count("\n") == DAMAGED.count("\n") + 2
