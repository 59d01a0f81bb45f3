"""The freeze store: execute, record, status, and what editing or breaking a notebook does.

Kernel start-up is slow on a small machine, so the fixture notebooks are executed once
per module and each test works on a copy of that project.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import hashlib
import json
import platform
import shutil
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from dateutil.parser import isoparse

from worklog_gen import __version__
from worklog_gen.freeze import store as freeze
from worklog_gen.cli import main
from worklog_gen.config import load_plugin_config
from worklog_gen.freeze import execute
from worklog_gen.freeze.execute import execute_cli, execute_notebook
from worklog_gen.freeze.record import FreezeRecord
from worklog_gen.freeze.source_hash import source_hash

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
MKDOCS_YML = """\
site_name: freeze test
plugins:
  - worklog:
      topics:
        - id: alpha
          title: Alpha
          notebook: notebooks/alpha.py
        - id: beta
          title: Beta
          notebook: notebooks/beta.py
        - id: prose
          title: A topic without a notebook
"""


def make_project(root: Path) -> Path:
    (root / "notebooks").mkdir(parents=True)
    for name in ("alpha.py", "beta.py"):
        shutil.copy(FIXTURES / name, root / "notebooks" / name)
    (root / "mkdocs.yml").write_text(MKDOCS_YML)
    return root


def snapshot(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder``, by relative path."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def states(root: Path) -> dict[str, str]:
    cfg, _ = load_plugin_config(root / "mkdocs.yml")
    return {row.topic: row.state for row in freeze.status(cfg, root)}


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """A project whose two notebooks ran once through ``execute_cli``."""
    root = make_project(tmp_path_factory.mktemp("executed"))
    cfg, _ = load_plugin_config(root / "mkdocs.yml")
    ok = execute_cli(cfg, root, [], timeout=300)
    return root, ok


@pytest.fixture
def project(executed, tmp_path):
    """A copy of the executed project (store included) that a test may change."""
    root, _ = executed
    return Path(shutil.copytree(root, tmp_path / "project"))


def test_execute_writes_a_store_entry_with_its_record(executed):
    root, ok = executed
    assert ok
    store = root / "notebooks" / "_freeze"
    (entry,) = (store / "alpha").iterdir()  # one machine: this one
    assert sorted(p.name for p in entry.iterdir()) == ["alpha.ipynb", "data", "record.json"]
    assert not [p for p in store.rglob(".*")], "temporary folders left behind"

    record = json.loads((entry / "record.json").read_text())
    assert record["machine"] == FreezeRecord.from_json(record).device_label
    assert entry.name == freeze.machine_slug(record["machine"])
    assert record["source_hash"] == source_hash(root / "notebooks/alpha.py", root).hexdigest
    assert record["notebook"] == "notebooks/alpha.py"
    assert record["hashed_files"] == ["worklog_gen/kit/__init__.py", "worklog_gen/kit/notebook.py"]
    assert set(record["hashes"]["modules"]) == set(record["hashed_files"])
    assert len(record["hashes"]["cells"]) == 4  # one per non-empty code cell
    executed_at = isoparse(record["executed_at"])
    assert executed_at.utcoffset() == dt.timedelta(0)
    assert abs(dt.datetime.now(dt.timezone.utc) - executed_at) < dt.timedelta(hours=1)
    assert record["mode"] in ("gpu", "cpu")  # not interpret: TRITON_INTERPRET is unset here
    assert record["python"] == platform.python_version()
    assert record["worklog_gen"] == __version__
    for key in ("gpu", "driver", "cuda", "torch", "triton", "wall_seconds"):
        assert key in record

    # one timing per non-empty code cell, each pointing at its first line in the .py
    source_lines = (root / "notebooks/alpha.py").read_text().split("\n")
    nb = nbformat.read(entry / "alpha.ipynb", as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    assert [c["index"] for c in record["cells"]] == code
    for timing in record["cells"]:
        assert timing["seconds"] >= 0
        assert source_lines[timing["line"] - 1] == nb.cells[timing["index"]].source.split("\n")[0]
    assert sum(c["seconds"] for c in record["cells"]) <= record["wall_seconds"]

    # headline figures and data files come from what the notebook wrote
    expected_sum = float(sum(i * i for i in range(10)))
    assert record["headline"]["alpha_sum_of_squares"]["value"] == expected_sum
    assert record["data_files"] == ["headline.json", "squares.csv"]
    with (entry / "data" / "squares.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["square"]) for r in rows] == [i * i for i in range(10)]

    # the executed notebook holds the outputs, the figure among them
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert any(o.get("text", "").startswith("sum of squares: 285.0") for o in outputs)


def test_status_reports_fresh_results(executed):
    root, _ = executed
    cfg, _ = load_plugin_config(root / "mkdocs.yml")
    rows = freeze.status(cfg, root)
    assert [r.topic for r in rows] == ["alpha", "beta"]  # the topic without a notebook is left out
    alpha = rows[0].to_json()
    assert set(alpha) == {"topic", "path", "machine", "slug", "state", "gpu", "executed_at", "headline", "reasons",
                          "failure"}
    record = freeze.load_record(root / "notebooks/_freeze", "notebooks/alpha.py")
    assert alpha == {"topic": "alpha", "path": "notebooks/alpha.py", "state": "fresh",
                     "machine": record.machine_name, "slug": freeze.machine_slug(record.machine_name),
                     "gpu": record.device_label, "executed_at": record.executed_at,
                     "headline": {"alpha_sum_of_squares": 285.0}, "reasons": [], "failure": None}
    assert rows[1].to_json()["headline"] == {"beta_ratio": 0.75}
    line = rows[0].summary()
    assert "\n" not in line
    for part in ("alpha", "fresh", record.executed_at, "notebooks/alpha.py"):
        assert part in line

    result = CliRunner().invoke(main, ["status", "--json", "-f", str(root / "mkdocs.yml")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"notebooks": [r.to_json() for r in rows]}


def test_fresh_notebooks_are_not_run_again(project, capsys):
    store = project / "notebooks" / "_freeze"
    before = snapshot(store)
    cfg, _ = load_plugin_config(project / "mkdocs.yml")
    assert execute_cli(cfg, project, [], timeout=300)
    err = capsys.readouterr().err
    assert "notebooks/alpha.py: fresh, skipped" in err
    assert "notebooks/beta.py: fresh, skipped" in err
    assert snapshot(store) == before


def test_editing_a_code_cell_makes_only_that_notebook_stale(project):
    edit(project / "notebooks/alpha.py", "range(10)", "range(11)")
    assert states(project) == {"alpha": "stale", "beta": "fresh"}
    cfg, _ = load_plugin_config(project / "mkdocs.yml")
    alpha = freeze.status(cfg, project)[0]
    assert "stale" in alpha.summary()
    assert alpha.to_json()["gpu"] is not None  # the old result is still described
    line = next(i for i, text in enumerate((project / "notebooks/alpha.py").read_text().split("\n"), 1)
                if text.startswith("import matplotlib"))
    assert alpha.reasons == [f"code cell 1 (line {line}) changed"]
    assert f"why: code cell 1 (line {line}) changed" in alpha.summary()


def test_editing_prose_comments_formatting_or_tags_keeps_it_fresh(project):
    path = project / "notebooks/alpha.py"
    before = source_hash(path, project)
    edit(path, "# The squares, saved as data and drawn.", "# Rewritten prose: a different sentence.")
    edit(path, "squares = [i * i for i in range(10)]", "squares = [i*i for i in range(10)]  # a comment   ")
    edit(path, "\n# %%\nsave_data(", '\n# %% tags=["hide-input"]\n# Save and draw.\nsave_data(')
    assert source_hash(path, project) == before
    assert states(project) == {"alpha": "fresh", "beta": "fresh"}


def test_a_notebook_without_a_store_entry_is_missing(project):
    shutil.rmtree(project / "notebooks/_freeze/beta")
    cfg, _ = load_plugin_config(project / "mkdocs.yml")
    beta = freeze.status(cfg, project)[1]
    assert beta.to_json() == {"topic": "beta", "path": "notebooks/beta.py", "state": "missing",
                              "machine": None, "slug": None,
                              "gpu": None, "executed_at": None, "headline": {}, "reasons": [], "failure": None}
    assert "missing" in beta.summary()


def test_a_failing_cell_keeps_the_frozen_result(project):
    store = project / "notebooks" / "_freeze"
    before = snapshot(store)
    path = project / "notebooks/alpha.py"
    edit(path, '# %% tags=["hide-output"]', "# %%\nraise ValueError('boom from the fixture')\n\n# %% tags=[\"hide-output\"]")

    result = CliRunner().invoke(main, ["execute", "-f", str(project / "mkdocs.yml")])
    assert result.exit_code == 1
    output = result.output
    assert "raise ValueError('boom from the fixture')" in output  # the cell's source
    assert "Traceback" in output and "ValueError: boom from the fixture" in output
    assert "notebooks/beta.py: fresh, skipped" in output

    machine = freeze.load_record(store, "alpha.py").machine_name
    failed = f"alpha/{freeze.machine_slug(machine)}.failed.json"  # beside that machine's entry
    assert snapshot(store) == {**before, failed: snapshot(store)[failed]}
    failure = json.loads((store / failed).read_text())
    assert failure["machine"] == machine
    assert failure["source_hash"] == source_hash(path, project).hexdigest
    assert failure["ename"] == "ValueError" and failure["evalue"] == "boom from the fixture"
    lines = path.read_text().split("\n")
    assert lines[failure["line"] - 1] == "raise ValueError('boom from the fixture')"
    assert isoparse(failure["failed_at"]).utcoffset() == dt.timedelta(0)
    assert states(project) == {"alpha": "failed", "beta": "fresh"}
    cfg, _ = load_plugin_config(project / "mkdocs.yml")
    assert "failed" in freeze.status(cfg, project)[0].summary()

    # the failure belongs to that source hash: undoing the edit makes the old result fresh again
    edit(path, "# %%\nraise ValueError('boom from the fixture')\n\n", "")
    assert states(project) == {"alpha": "fresh", "beta": "fresh"}


def test_the_hash_follows_worklog_gen_imports_transitively(tmp_path):
    pkg = tmp_path / "worklog_gen"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""package"""\n')
    (pkg / "helpers.py").write_text("from . import deep\n\ndef f():\n    from worklog_gen.lazy import g\n")
    (pkg / "deep.py").write_text("X = 1\n")
    (pkg / "lazy.py").write_text("def g():\n    return 2\n")
    (pkg / "unused.py").write_text("Y = 1\n")
    nb = tmp_path / "nb.py"
    nb.write_text("# %% [markdown]\n# Prose.\n\n# %%\n%matplotlib inline\nfrom worklog_gen.helpers import f\n")

    first = source_hash(nb, tmp_path)
    assert first.files == ("worklog_gen/deep.py", "worklog_gen/helpers.py", "worklog_gen/lazy.py")
    (pkg / "unused.py").write_text("Y = 2\n")
    assert source_hash(nb, tmp_path) == first
    (pkg / "lazy.py").write_text("def g():\n    return 3\n")
    assert source_hash(nb, tmp_path).hexdigest != first.hexdigest


def test_write_entry_replaces_the_old_entry_whole(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    data = tmp_path / "out"
    data.mkdir()
    (data / "old.csv").write_text("a\n1\n")
    store = tmp_path / "store"
    record = FreezeRecord(notebook="x.py", source_hash="old", executed_at="2026-11-25T00:00:00Z", mode="cpu")
    freeze.write_entry(store, "x", nb, data, record)
    (data / "old.csv").unlink()
    (data / "new.json").write_text("{}")
    entry = freeze.write_entry(store, "x", nb, data, dataclasses.replace(record, source_hash="new"))
    assert sorted(p.relative_to(entry).as_posix() for p in entry.rglob("*")) == [
        "data", "data/new.json", "record.json", "x.ipynb"]
    assert freeze.load_record(store, "x.py").source_hash == "new"
    assert [p.name for p in store.iterdir()] == ["x"]
    assert [p.name for p in (store / "x").iterdir()] == ["cpu-no-gpu"] == [entry.name]


def test_the_kernel_runs_over_ipc_without_the_tcp_warning(tmp_path, capfd):
    notebook = tmp_path / "quiet.py"
    notebook.write_text("# %%\nprint(6 * 7)\n")
    result = execute_notebook(notebook, tmp_path, tmp_path / "store", progress=False)
    assert result.ok
    assert result.nb.cells[0].outputs[0]["text"] == "42\n"
    err = capfd.readouterr().err
    assert "without encryption" not in err
    assert "Parent appears to have exited" not in err


FIRST_KERNEL = """\
# %% [markdown]
# # Vector add
#
# One element per program; the launch grid is `triton.cdiv(n, BLOCK_SIZE)`.

# %%
import torch

x = torch.rand(98_432, device="cuda")
print(float((x + x).sum()))
"""
ONE_TOPIC_YML = """\
site_name: vector add
plugins:
  - worklog:
      topics:
        - id: vector-add
          title: Vector add
          notebook: notebooks/vector_add.py
"""


def one_notebook_project(root: Path) -> Path:
    """A project with one topic notebook that needs a GPU (it declares no ``gpus``)."""
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "vector_add.py").write_text(FIRST_KERNEL)
    (root / "mkdocs.yml").write_text(ONE_TOPIC_YML)
    return root


def test_execute_without_a_gpu_refuses_before_running_and_writes_nothing(tmp_path, monkeypatch):
    root = one_notebook_project(tmp_path)
    store = root / "notebooks" / "_freeze"
    store.mkdir()

    def never(*args, **kwargs):
        raise AssertionError("the notebook ran")

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(execute, "environment", lambda root: {"device": None, "gpus": [], "torch": "2.13.0"})
    monkeypatch.setattr(execute, "execute_notebook", never)
    result = CliRunner().invoke(main, ["execute", "-f", str(root / "mkdocs.yml")])
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert line.startswith("error: notebooks/vector_add.py: needs a CUDA GPU and this machine has none")
    assert "TRITON_INTERPRET=1 worklog-gen execute" in line
    assert "Traceback" not in result.output
    assert snapshot(store) == {}  # no failure record: the next strict build still passes

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert execute._cannot_run_here(root / "notebooks" / "vector_add.py", root) is None


@pytest.mark.parametrize("missing", ["kernel", "nbclient"])
def test_execute_with_the_base_install_says_what_to_install(tmp_path, monkeypatch, missing):
    from jupyter_client.kernelspec import NoSuchKernel

    root = one_notebook_project(tmp_path)

    def no_kernel(*args, **kwargs):
        if missing == "kernel":
            raise NoSuchKernel("python3")
        raise ModuleNotFoundError("No module named 'nbclient'", name="nbclient")

    monkeypatch.setattr(execute, "environment", lambda root: {"device": "NVIDIA H100", "gpus": ["NVIDIA H100"]})
    monkeypatch.setattr(execute, "execute_notebook", no_kernel)
    result = CliRunner().invoke(main, ["execute", "-f", str(root / "mkdocs.yml")])
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert line.startswith("error: notebooks/vector_add.py: no Jupyter kernel 'python3'")
    assert 'pip install "worklog-gen[notebooks]"' in line
    assert not (root / "notebooks" / "_freeze").exists() or snapshot(root / "notebooks" / "_freeze") == {}
