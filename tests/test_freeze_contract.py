"""The freeze contract, on a copy of this project: what stales a frozen result and what does not.

A result is stale exactly when a code cell of its notebook, or the code of a kit module the
notebook imports, changes. Comments, docstrings, formatting, cell tags and the package version
are not code (README, "What stales a frozen result").
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from worklog_gen.cli import main
from worklog_gen.config import load_plugin_config
from worklog_gen.freeze import store
from worklog_gen.freeze.record import NotebookState, SourceHashes
from worklog_gen.freeze.source_hash import code_fingerprint, explain_change, source_hash

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def copy(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    shutil.copytree(REPO / "worklog_gen", root / "worklog_gen", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    return root


def hashes(root: Path) -> dict[str, object]:
    cfg, _ = load_plugin_config(root / "mkdocs.yml")
    return {t.id: source_hash(root / t.notebook, root) for t in cfg.topics if t.notebook}


def reword_docstrings_and_comment(path: Path) -> None:
    """Add a comment line after the module docstring, and reword the first line of every
    docstring (module, class, function) in the file."""
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.split("\n")
    docstring_lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstring_lines.append(first.lineno - 1)
    assert docstring_lines, f"{path} has no docstring to reword"
    for i in docstring_lines:
        lines[i] = re.sub(r'("""|\'\'\')', r"\1Reworded. ", lines[i], count=1)
    module_doc = tree.body[0].end_lineno if docstring_lines and docstring_lines[0] == tree.body[0].lineno - 1 else 0
    lines.insert(module_doc, "# a comment line that changes nothing the notebooks compute")
    path.write_text("\n".join(lines))


def test_version_comments_and_docstrings_keep_every_result_as_it_was(copy):
    before = hashes(copy)
    init = copy / "worklog_gen" / "__init__.py"
    # the version is installed metadata; a new release changes at most this file's fallback
    text = init.read_text()
    assert '"0+unknown"' in text
    init.write_text(text.replace('"0+unknown"', '"9.9.9+unknown"', 1))
    # the kit's modules (the notebooks another imports have their own test below)
    hashed = sorted({f for h in before.values() for f in h.files if f.endswith(".py") and f.startswith("worklog_gen/")})
    assert hashed, "the notebooks import kit modules"  # CUDA C files are hashed as text
    for rel in hashed:
        reword_docstrings_and_comment(copy / rel)
    assert hashes(copy) == before
    cfg, _ = load_plugin_config(copy / "mkdocs.yml")
    rows = {(r.topic, r.machine): r.state for r in store.status(cfg, copy)}
    assert rows == {(r.topic, r.machine): r.state for r in store.status(cfg, REPO)}


def test_a_new_function_stales_exactly_the_notebooks_that_import_its_module(copy):
    before = hashes(copy)
    counts: dict[str, int] = {}
    for h in before.values():
        for f in h.files:
            if f.endswith(".py") and not f.endswith("__init__.py"):
                counts[f] = counts.get(f, 0) + 1
    module = max(counts, key=counts.get)  # the module most records hash
    with (copy / module).open("a") as fh:
        fh.write("\n\ndef appended_helper(x):\n    return 2 * x\n")
    after = hashes(copy)
    stale = {topic for topic in before if after[topic].hexdigest != before[topic].hexdigest}
    assert stale == {topic for topic, h in before.items() if module in h.files}
    assert 0 < len(stale) < len(before) or len(stale) == counts[module]
    for topic in stale:
        reasons = explain_change(before[topic].parts, after[topic].parts, [])
        assert reasons == [f"module {module} changed"]


def test_worklog_gen_status_names_the_changed_module(copy):
    cfg, _ = load_plugin_config(copy / "mkdocs.yml")
    before = {(r.topic, r.machine): r for r in store.status(cfg, copy)}  # a row per notebook and machine
    module = "worklog_gen/kit/power.py"  # imported by some notebooks, not all
    importers = {topic for topic, h in hashes(copy).items() if module in h.files}
    assert importers and importers != {topic for topic, _ in before}
    with (copy / module).open("a") as fh:
        fh.write("\n\ndef appended_helper(x):\n    return 2 * x\n")
    result = CliRunner().invoke(main, ["status", "-f", str(copy / "mkdocs.yml")])
    assert result.exit_code == 1, result.output  # stale results: status fails, for a CI step
    for row in store.status(cfg, copy):
        if row.topic in importers:
            assert row.state is NotebookState.STALE
            assert f"module {module} changed" in row.reasons
            assert f"why: module {module} changed" in result.output
        else:
            was = before[row.topic, row.machine]
            assert (row.state, row.reasons) == (was.state, was.reasons)


def test_code_fingerprint_sees_code_not_comments_docstrings_or_layout():
    a = 'def f(x):\n    """Square."""\n    return x * x  # squared\n'
    b = 'def f(x):\n    """Return x squared, reworded."""\n\n    return x*x\n'
    c = 'def f(x):\n    return x * x + 0\n'
    assert code_fingerprint(a) == code_fingerprint(b) == code_fingerprint('def f(x):\n    return x * x\n')
    assert code_fingerprint(a) != code_fingerprint(c)
    assert code_fingerprint("%matplotlib inline\nx = 1") != code_fingerprint("%matplotlib widget\nx = 1")
    assert code_fingerprint("%%bash\necho hi") != code_fingerprint("%%bash\necho bye")


def test_explain_change_names_cells_and_modules():
    old = SourceHashes(cells=("a", "b", "c"), modules=(("worklog_gen/kit/measure.py", "1"),
                                                       ("worklog_gen/kit/paired.py", "2")))
    new = SourceHashes(cells=("a", "B", "c", "d"), modules=(("worklog_gen/kit/measure.py", "1b"),
                                                            ("worklog_gen/kit/power.py", "3")))
    assert explain_change(old, new, [10, 20, 30, 40]) == [
        "code cell 2 (line 20) changed", "code cell 4 (line 40) added",
        "module worklog_gen/kit/measure.py changed", "module worklog_gen/kit/paired.py no longer imported",
        "module worklog_gen/kit/power.py newly imported"]
    assert explain_change(old, SourceHashes(cells=("a",), modules=old.modules), [5]) == [
        "2 code cell(s) removed after code cell 1 (line 5)"]
    assert explain_change(None, new, []) == ["the frozen record has no per-file hashes (written before source hash v2)"]
    assert explain_change(old, SourceHashes(cells=old.cells, modules=old.modules, version=3), []) == [
        "the frozen record was hashed by source hash v2, this worklog-gen hashes by v3"]


FINGERPRINTED = ('import torch\n\n\n@torch.no_grad()\ndef f(x: int, *, y=None) -> str:\n    """Doc."""\n'
                 '    return f"{x!r:>{y}} {x=}" + str([i for i in range(x) if i])\n\n\n'
                 'class C:\n    async def g(self):\n        async with a as b:\n            return [i async for i in b]\n')


def test_a_fingerprint_is_the_same_on_every_python():
    # Frozen on the GPU box's Python, checked on CI's and a user's: 3.12 added an empty
    # ``type_params`` to every function's syntax tree, which must not stale a result. This value
    # was computed on 3.11 and checked on 3.10, 3.12 and 3.13.
    assert code_fingerprint(FINGERPRINTED) == "fec37583728419de4faf14efffc725bf350d4797060388cdef347d0e0d67f589"


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_other_installed_pythons_fingerprint_this_repository_alike(version):
    python = shutil.which(f"python{version}")
    if python is None:
        pytest.skip(f"no python{version} here")
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
              "from worklog_gen.freeze.source_hash import code_fingerprint as f; "
              "print(json.dumps({p.name: f(p.read_text()) for p in sorted(Path(sys.argv[1], 'notebooks').glob('*.py'))}))")
    import json
    import subprocess

    result = subprocess.run([python, "-c", script, str(REPO)], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        pytest.skip(f"python{version} cannot run it here: {result.stderr.strip().splitlines()[-1:]}")
    theirs = json.loads(result.stdout)
    assert theirs == {p.name: code_fingerprint(p.read_text()) for p in sorted((REPO / "notebooks").glob("*.py"))}


def test_a_notebook_whose_cells_another_imports_stales_both_on_a_code_change_and_neither_on_prose(copy):
    """The backward and FlashAttention-3 topics run the forward topic's cells tagged "forward"
    (kit.cells.import_cells), so their hashes cover that notebook's code; its markdown and tags are not code."""
    forward = copy / "notebooks" / "flash_attention.py"
    before = hashes(copy)
    importers = {"flash-attention-backward", "flash-attention-3"}
    assert {topic for topic in before if "notebooks/flash_attention.py" in before[topic].files} == importers
    text = forward.read_text()
    forward.write_text(text.replace("# # FlashAttention\n", "# # FlashAttention, reworded\n", 1)
                       .replace('tags=["forward"]', 'tags=["forward", "hide-input"]', 1))
    assert hashes(copy) == before
    forward.write_text(text.replace("TOKENS = 16384 * 32", "TOKENS = 16384 * 16", 1))
    after = hashes(copy)
    stale = {topic for topic in before if after[topic].hexdigest != before[topic].hexdigest}
    assert stale == {"flash-attention"} | importers
    assert explain_change(before["flash-attention-backward"].parts, after["flash-attention-backward"].parts, []) \
        == ["module notebooks/flash_attention.py changed"]
