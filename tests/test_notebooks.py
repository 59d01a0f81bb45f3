"""CI for the topic notebooks: each ``notebooks/*.py`` runs on the CPU under
``TRITON_INTERPRET=1`` (at the small, irregular sizes the notebooks pick in
interpret mode), through the same code path as ``worklog-gen execute``, into
``tmp_path`` instead of the store.

Correctness asserts live in the notebooks, so a completed run is a pass. A guard
installed as an IPython startup file makes every benchmark entry point raise,
so a notebook that benchmarks under the interpreter fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from worklog_gen.freeze import execute

REPO = Path(__file__).resolve().parents[1]
# a notebook opens with jupytext's header; modules beside them (``*_workers.py``) are not notebooks
NOTEBOOKS = sorted(p for p in (REPO / "notebooks").glob("*.py")
                   if not p.name.endswith("_workers.py") and p.read_text().startswith("# ---\n# jupyter:"))
CELL_TIMEOUT_S = 900  # interpreted kernels are slow on a 2-core CI machine

GUARD = '''\
"""Installed by tests/test_notebooks.py: under TRITON_INTERPRET=1 nothing may benchmark."""


def _no_benchmarks(*args, **kwargs):
    raise AssertionError("a benchmark ran under TRITON_INTERPRET=1; "
                         "notebooks must skip benchmarks when worklog_gen.kit.notebook.interpret_mode()")


try:
    import triton.testing

    triton.testing.do_bench = _no_benchmarks
except ImportError:
    pass
import worklog_gen.kit.measure

worklog_gen.kit.measure.bench = _no_benchmarks
worklog_gen.kit.measure.measure_ceilings = _no_benchmarks
'''


def run_interpreted(notebook: Path, tmp_path: Path) -> execute.ExecutionResult:
    """Execute ``notebook`` as ``worklog-gen execute`` does, under the interpreter, with
    the benchmark guard, freezing into ``tmp_path / "store"``."""
    ipython_dir = tmp_path / "ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-no-benchmarks.py").write_text(GUARD)
    env = {"TRITON_INTERPRET": "1", "IPYTHONDIR": str(ipython_dir)}
    return execute.execute_notebook(notebook, REPO, tmp_path / "store", timeout=CELL_TIMEOUT_S,
                                   extra_env=env, progress=False)


def _listing(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*")} if folder.is_dir() else {}


def _explain(result: execute.ExecutionResult) -> str:
    f = result.failure or {}
    return (f"{result.path}: cell {f.get('cell_index')} (line {f.get('line')}) failed: "
            f"{f.get('ename')}: {f.get('evalue')}\n" + "\n".join(f.get("traceback", [])))


@pytest.mark.notebook
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_under_the_interpreter(notebook, tmp_path):
    store = REPO / "notebooks" / "_freeze"
    before = _listing(store)
    result = run_interpreted(notebook, tmp_path)
    # the guard raises on any benchmark, so a completed run means none ran
    assert result.ok, _explain(result)
    assert result.entry == tmp_path / "store" / notebook.stem / "cpu-triton-interpret-1"
    assert result.record.mode == "interpret"
    assert (result.entry / f"{notebook.stem}.ipynb").is_file()
    assert _listing(store) == before  # the committed store is not touched


@pytest.mark.notebook
def test_the_guard_fails_a_notebook_that_benchmarks(tmp_path):
    result = run_interpreted(REPO / "tests" / "fixtures" / "notebooks" / "benchmarks_anyway.py", tmp_path)
    assert not result.ok
    assert result.failure.ename == "AssertionError"
    assert "a benchmark ran under TRITON_INTERPRET=1" in result.failure.evalue
    folder = tmp_path / "store" / "benchmarks_anyway"  # the failure is recorded, no result is frozen
    assert [p.name for p in folder.iterdir()] == ["cpu-triton-interpret-1.failed.json"]
