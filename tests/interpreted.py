"""Running a notebook's Triton launchers under ``TRITON_INTERPRET=1`` for the kernel tests, and
compiling its kernels for sm_90 (:func:`run_for_sm90`).

Triton decides at import whether ``@triton.jit`` interprets, and other tests import it
without the interpreter, so the notebook runs in a child process started with
``TRITON_INTERPRET=1``. The child executes the notebook's definitions (:func:`definitions`: its
imports, functions, classes and assignments, in its CPU mode), then the test's ``body``, which
fills ``results``; the results come back through ``torch.save``, and the assertions are made in
the test. The notebook's own checks, loops and displays are left out here: ``test_notebooks`` runs
every notebook whole, as ``worklog-gen execute`` does, and running them twice cost about 90 s of
the suite's worker time (tiled matmul 34 s whole against 3.4 s, FlashAttention 30 against 3.8).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PRELUDE = r'''
import sys
from pathlib import Path

import torch

from interpreted import definitions

notebook, results_path = Path(sys.argv[1]), Path(sys.argv[2])
namespace = {"__name__": notebook.stem}
# compiled under the notebook's own file name: the interpreter re-reads each kernel's source from it
exec(compile(definitions(notebook.read_text(), frozenset(sys.argv[3:])), str(notebook), "exec"), namespace)


def attempt(function, *args, **kwargs):
    """The function's result, or the exception it raised as (type name, message)."""
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # reported to the test, which asserts on it
        return (type(exc).__name__, str(exc))


results = {}
'''


DEFINING = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
"""The top-level statements :func:`definitions` keeps (and the ``if`` and ``try`` blocks around them)."""


def definitions(source: str, leave_out: frozenset[str] = frozenset()) -> ast.Module:
    """The module ``source`` with only the statements that define names: :data:`DEFINING`, and each
    ``if`` or ``try`` block cut down the same way (an ``if`` kept where anything is left in it, a
    ``try`` always, with its handlers). Expressions (``display(...)``), ``assert``, loops and
    ``with`` blocks are left out, and so is an assignment to names in ``leave_out`` only (a check
    whose result a test names as its own to skip). Line numbers stay the source's, so a traceback
    names the notebook's own line."""

    def keep(body: list[ast.stmt]) -> list[ast.stmt]:
        out = []
        for node in body:
            if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id in leave_out
                                                    for t in node.targets):
                continue
            if isinstance(node, DEFINING):
                out.append(node)
            elif isinstance(node, ast.If):
                node.body, node.orelse = keep(node.body), keep(node.orelse)
                if node.body or node.orelse:
                    node.body = node.body or [ast.Pass()]
                    out.append(node)
            elif isinstance(node, ast.Try):
                node.body = keep(node.body) or [ast.Pass()]
                for handler in node.handlers:
                    handler.body = keep(handler.body) or [ast.Pass()]
                node.orelse, node.finalbody = keep(node.orelse), keep(node.finalbody)
                out.append(node)
        return out

    tree = ast.parse(source)
    tree.body = keep(tree.body)
    return ast.fix_missing_locations(tree)


def run_interpreted(notebook: Path, body: str, folder: Path, leave_out: tuple[str, ...] = ()) -> dict:
    """Execute ``notebook``'s definitions (:func:`definitions`, without the assignments to the
    names in ``leave_out``) and then ``body`` (Python that reads ``namespace`` and fills
    ``results``) in a child process under the interpreter; return ``results``.
    Skips without torch or triton; fails the test, with the child's output, if it fails."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    import torch

    env = {**os.environ, "TRITON_INTERPRET": "1", "WORKLOG_GEN_OUTPUT": str(folder / "out"),
           "WORKLOG_GEN_NOTEBOOK_DIR": str(notebook.parent),  # as worklog-gen execute sets it
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH")]))}
    script = PRELUDE + body + "\ntorch.save(results, results_path)\n"
    result = subprocess.run([sys.executable, "-c", script, str(notebook), str(folder / "results.pt"), *leave_out],
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return torch.load(folder / "results.pt", weights_only=False)


JIT_FUNCTIONS = r'''
import ast, sys
import triton

# the @triton.jit functions of the notebook named by argv[1], compiled on their own (no torch, no GPU):
# ns[name] is each one, for triton.compile
tree = ast.parse(open(sys.argv[1]).read())
keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and any("triton.jit" in ast.unparse(d) for d in n.decorator_list)]
ns = {"__name__": "notebook_kernels"}
exec(compile(ast.Module(body=[ast.parse("import triton, triton.language as tl").body[0]] + keep, type_ignores=[]),
             sys.argv[1], "exec"), ns)
'''
"""Python that a :func:`run_for_sm90` script starts with: the notebook's kernels in ``ns``."""


NO_LINE_INFO = {"TRITON_DISABLE_LINE_INFO": "1"}
"""Environment for a child that compiles kernels only to read what they compiled to: no line table
in the PTX (``.loc``, ``-lineinfo`` for ``ptxas``), which no test reads. ptxas documents
``-lineinfo`` as information for tools that changes no code; the 199 kernels of the sm_86
compile (``test_older_cards``) give the same shared memory, registers and spills both ways here,
and the compile takes 46 s instead of 53 s."""


PTXAS_REPORTED = r'''
import contextlib as _contextlib, io as _io, re as _re
import triton as _triton
from triton import knobs as _knobs
from triton.runtime.cache import get_cache_manager as _cache_manager


def compile_reported(src, target, options):
    """``triton.compile(src, target=target, options=options)`` and what ``ptxas -v`` printed for that
    cubin (``TRITON_DUMP_PTXAS_LOG=1``: its registers, spill stores and loads). ptxas runs only when
    Triton compiles, not on a hit in Triton's cache, so its report is kept in the cache beside the
    cubin, under the compile's own key (``CompiledKernel.hash``); a hit with no report kept (a compile
    made without the log) compiles again."""
    for again in (False, True):
        log = _io.StringIO()
        with _contextlib.redirect_stdout(log), _knobs.compilation.scope():
            _knobs.compilation.always_compile = again
            kernel = _triton.compile(src, target=target, options=options)
        cache = _cache_manager(kernel.hash)
        if _re.search(r"Used \d+ registers", log.getvalue()):
            cache.put(log.getvalue(), "ptxas.log", binary=False)
            return kernel, log.getvalue()
        kept = cache.get_file("ptxas.log")
        if kept:
            with open(kept, encoding="utf-8") as file:
                return kernel, file.read()
    raise RuntimeError(f"ptxas reported nothing on {kernel.name}")
'''
"""Python that a compiling child starts with: ``compile_reported``, ``triton.compile`` with ptxas's report
on the cubin, kept in Triton's cache so that a cache hit reports as the compile did."""


def run_for_sm90(script: str, *args: str, **env: str) -> dict:
    """Run ``script`` (Python that compiles kernels with ``triton.compile`` for an sm_90 target, or
    another it names, and prints a JSON value as its last line) in a child process without the
    interpreter; return that value. No GPU is needed: Triton ships its own ``ptxas``. Skips where this
    Triton cannot generate code for the target; fails the test, with the child's stderr, on any other
    error, a kernel that ``ptxas`` rejects (``PTXASError``) included."""
    pytest.importorskip("triton")
    child = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    child["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    child.update(NO_LINE_INFO)
    result = subprocess.run([sys.executable, "-c", script, *args], env={**child, **env},
                            capture_output=True, text=True, timeout=600)
    no_codegen = "ptxas" in result.stderr and "PTXASError" not in result.stderr  # a kernel ptxas rejects fails
    if result.returncode != 0 and (no_codegen or "No module named" in result.stderr):
        pytest.skip(f"no code generation for the target here: {result.stderr.strip().splitlines()[-1]}")
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
