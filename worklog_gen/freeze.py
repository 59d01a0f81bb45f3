"""Execute topic notebooks and freeze their results into a committed store.

A topic notebook (jupytext percent format, ``notebooks/<stem>.py``) runs once on a
GPU box; what it produced is frozen into the store, which the site build
(:mod:`worklog_gen.render`) reads without a GPU, torch or triton.

Store layout, under ``freeze_dir`` (default ``notebooks/_freeze``)::

    <stem>/                    one entry per notebook, replaced whole on success
        <stem>.ipynb           the executed notebook: code, outputs, images
        record.json            provenance: source hash, GPU, versions, date, cell times,
                               headline figures, mode (see ``execute_notebook``)
        data/                  every file the notebook wrote to WORKLOG_GEN_OUTPUT
                               (headline.json, roofline.json, measurement CSVs)
    <stem>.failed.json         the last failed attempt (source hash, time, cell,
                               error); removed by the next success
    .<stem>.new-*/ .<stem>.old-*/   transient, only while an entry is swapped in

The **source hash** (:func:`source_hash`) covers the notebook's code cells and the
``worklog_gen`` modules they import, not its markdown cells: prose edits need no
GPU re-run. A notebook is ``fresh`` when its entry's hash equals the current one,
``stale`` when it differs, ``missing`` without an entry and ``failed`` when the
last attempt for the current hash failed.

Runs on a GPU box that has nbclient and ipykernel: nothing heavy is imported at
module level, and torch and triton are never imported in this process (versions
and GPU facts come from a subprocess).
"""

from __future__ import annotations

import ast
import datetime as dt
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worklog_gen import __version__
from worklog_gen.notebook import HEADLINE_FILE, NOTEBOOK_ENV, OUTPUT_ENV

PACKAGE = "worklog_gen"
RECORD_FILE = "record.json"
DATA_DIR = "data"
FAILED_SUFFIX = ".failed.json"
STATES = ("fresh", "stale", "missing", "failed")
_HASH_VERSION = b"worklog-gen source hash v1\n"


# --- reading and hashing -------------------------------------------------------------------


def read_notebook(path: str | Path):
    """Read a jupytext percent-format notebook into an ``nbformat`` v4 notebook.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: jupytext cannot read it, with the file named.
    """
    import jupytext

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        return jupytext.reads(text, fmt="py:percent")
    except Exception as exc:  # jupytext raises several types; name the file
        raise ValueError(f"{path}: not a readable jupytext percent notebook: {exc}") from exc


def normalise_source(source: str) -> str:
    """A cell's source as hashed and compared: trailing whitespace stripped from every
    line, leading and trailing blank lines dropped, ``\\n`` line ends."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def code_sources(nb) -> list[str]:
    """Normalised sources of the non-empty code cells of ``nb``, in order."""
    sources = (normalise_source(c.source) for c in nb.cells if c.cell_type == "code")
    return [s for s in sources if s]


def package_dir(root: str | Path) -> Path:
    """The ``worklog_gen`` package a notebook run from ``root`` imports: the one in
    ``root`` when there is one (the repository), otherwise the installed one."""
    local = Path(root) / PACKAGE
    if (local / "__init__.py").is_file():
        return local.resolve()
    return Path(__file__).resolve().parent


def _parse(source: str) -> ast.AST | None:
    # IPython magics and shell escapes (``%matplotlib``, ``!nvidia-smi``) are not Python
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None  # the cell itself is still hashed; it will fail when executed


def _imported_names(tree: ast.AST, package: str | None) -> set[str]:
    """Dotted names that ``tree`` imports from ``worklog_gen`` (``from a import b`` gives
    both ``a`` and ``a.b``: b may be a module or an attribute). ``package`` resolves
    relative imports."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None:
                    continue
                parts = package.split(".")
                keep = len(parts) - (node.level - 1)
                if keep <= 0:
                    continue
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    return {n for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")}


def _module_file(name: str, pkg_dir: Path) -> Path | None:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    for candidate in (pkg_dir / rel / "__init__.py", pkg_dir / rel.with_suffix(".py") if rel.parts else None):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def imported_modules(sources: list[str], pkg_dir: Path) -> list[Path]:
    """Files of the ``worklog_gen`` modules that ``sources`` (code cells) import, found
    with ``ast``, transitively through those modules' own ``worklog_gen`` imports
    (absolute and relative, at any depth in the file), with the ``__init__.py`` of
    every package on the way. Sorted; empty when nothing from ``worklog_gen`` is used."""
    todo: set[str] = set()
    for source in sources:
        tree = _parse(source)
        if tree is not None:
            todo |= _imported_names(tree, None)
    seen: set[str] = set()
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.update(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run too
        path = _module_file(name, pkg_dir)
        if path is None:
            continue  # an attribute (``from worklog_gen.notebook import headline``), not a module
        files.add(path)
        is_package = path.name == "__init__.py"
        package = name if is_package else ".".join(parts[:-1]) or None
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        todo |= _imported_names(tree, package) - seen
    return sorted(files)


@dataclass(frozen=True)
class SourceHash:
    """The source hash of a notebook and the ``worklog_gen`` files it covers
    (relative to the package's parent, e.g. ``worklog_gen/notebook.py``)."""

    hexdigest: str
    files: tuple[str, ...]


def source_hash(notebook: str | Path, root: str | Path) -> SourceHash:
    """sha256 over the notebook's normalised code cells (:func:`code_sources`) and the
    source of the ``worklog_gen`` modules they import (:func:`imported_modules`).

    Markdown cells and empty code cells are left out, so prose edits keep a frozen
    result fresh; editing a code cell, or a module it uses, makes it stale.

    Raises:
        FileNotFoundError: ``notebook`` does not exist.
        ValueError: jupytext cannot read it.
    """
    sources = code_sources(read_notebook(notebook))
    pkg = package_dir(root)
    digest = hashlib.sha256(_HASH_VERSION)
    for source in sources:
        digest.update(b"cell\0" + source.encode("utf-8") + b"\0")
    rels = []
    for path in imported_modules(sources, pkg):
        rel = path.relative_to(pkg.parent).as_posix()
        text = path.read_text(encoding="utf-8")  # universal newlines
        digest.update(b"module\0" + rel.encode("utf-8") + b"\0" + text.encode("utf-8") + b"\0")
        rels.append(rel)
    return SourceHash(digest.hexdigest(), tuple(rels))


# --- the store -----------------------------------------------------------------------------


def store_path(root: str | Path, freeze_dir: str | Path) -> Path:
    """The freeze store folder: ``freeze_dir`` relative to ``root`` unless absolute."""
    return (Path(root) / freeze_dir).resolve()


def entry_dir(store_dir: str | Path, notebook: str | Path) -> Path:
    """The store entry of ``notebook``: ``<store_dir>/<stem>``."""
    return Path(store_dir) / Path(notebook).stem


def failure_path(store_dir: str | Path, notebook: str | Path) -> Path:
    """Where the last failed attempt of ``notebook`` is recorded: ``<store_dir>/<stem>.failed.json``."""
    return Path(store_dir) / (Path(notebook).stem + FAILED_SUFFIX)


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: invalid JSON in the freeze store: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}:1: expected a JSON object in the freeze store")
    return data


def load_record(store_dir: str | Path, notebook: str | Path) -> dict | None:
    """``record.json`` of the notebook's store entry, or ``None`` without one.

    Raises:
        ValueError: the record is not a JSON object, naming file and line.
    """
    return _read_json(entry_dir(store_dir, notebook) / RECORD_FILE)


def load_failure(store_dir: str | Path, notebook: str | Path) -> dict | None:
    """The last failed attempt of the notebook (``<stem>.failed.json``), or ``None``."""
    return _read_json(failure_path(store_dir, notebook))


def relative_path(notebook: str | Path, root: str | Path) -> str:
    """``notebook`` relative to ``root``, posix (``notebooks/vector_add.py``); the
    absolute path when it lies outside ``root``."""
    path = Path(notebook)
    path = path if path.is_absolute() else Path(root) / path
    try:
        return path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


@dataclass
class NotebookState:
    """Where one notebook stands against the store.

    ``current_hash`` is ``None`` when the source file does not exist (``state`` is then
    ``missing``); ``record`` and ``failure`` are the parsed JSON files or ``None``.
    """

    path: str
    state: str
    current_hash: str | None
    record: dict | None
    failure: dict | None
    entry: Path
    source_exists: bool = True


def notebook_state(notebook: str | Path, root: str | Path, store_dir: str | Path) -> NotebookState:
    """Compare ``notebook`` (absolute or relative to ``root``) with its store entry.

    ``fresh``: the entry's source hash equals the current one; ``stale``: it differs;
    ``missing``: no entry (or no source file); ``failed``: the last attempt for the
    current source hash failed (the older entry, if any, is still there).

    Raises:
        ValueError: the notebook cannot be read, or the store holds invalid JSON.
    """
    root = Path(root)
    path = Path(notebook) if Path(notebook).is_absolute() else root / notebook
    rel = relative_path(path, root)
    record = load_record(store_dir, path)
    failure = load_failure(store_dir, path)
    entry = entry_dir(store_dir, path)
    if not path.is_file():
        return NotebookState(rel, "missing", None, record, failure, entry, source_exists=False)
    current = source_hash(path, root).hexdigest
    if failure is not None and failure.get("source_hash") == current:
        state = "failed"
    elif record is None:
        state = "missing"
    elif record.get("source_hash") == current:
        state = "fresh"
    else:
        state = "stale"
    return NotebookState(rel, state, current, record, failure, entry)


def device_label(record: dict | None) -> str | None:
    """What ran the kernels of a record, in words: the GPU name, or that it was the CPU
    (``TRITON_INTERPRET=1``, or no GPU present). ``None`` without a record."""
    if record is None:
        return None
    mode = record.get("mode")
    if mode == "interpret":
        return "CPU (TRITON_INTERPRET=1)"
    if mode == "cpu" or not record.get("gpu"):
        return "CPU (no GPU)"
    return record["gpu"]


@dataclass
class NotebookStatus:
    """One row of ``worklog-gen status``."""

    topic: str
    path: str
    state: str
    gpu: str | None
    executed_at: str | None
    headline: dict[str, float] = field(default_factory=dict)
    failure: dict | None = None
    source_exists: bool = True

    def to_json(self) -> dict:
        """``{"topic", "path", "state", "gpu", "executed_at", "headline": {name: value}}``;
        ``gpu`` and ``executed_at`` are ``None`` without a frozen result."""
        return {"topic": self.topic, "path": self.path, "state": self.state, "gpu": self.gpu,
                "executed_at": self.executed_at, "headline": dict(self.headline)}

    def summary(self) -> str:
        """One line: topic, state, device, execution time and path, plus why when failed."""
        line = f"{self.topic:<20} {self.state:<8} {self.gpu or '-':<24} {self.executed_at or '-':<21} {self.path}"
        if not self.source_exists:
            line += "  (source file not found)"
        if self.state == "failed" and self.failure:
            f = self.failure
            line += f"  (cell {f.get('cell_index')}, line {f.get('line')}: {f.get('ename')}: {f.get('evalue')})"
        return line


def _status_row(topic: str, st: NotebookState) -> NotebookStatus:
    record = st.record or {}
    headline = {name: fig.get("value") if isinstance(fig, dict) else fig
                for name, fig in (record.get("headline") or {}).items()}
    return NotebookStatus(topic=topic, path=st.path, state=st.state, gpu=device_label(st.record),
                          executed_at=record.get("executed_at"), headline=headline,
                          failure=st.failure if st.state == "failed" else None,
                          source_exists=st.source_exists)


def status(cfg, root: str | Path) -> list[NotebookStatus]:
    """The state of every configured topic notebook (topics without one are skipped).

    ``cfg`` is a :class:`worklog_gen.config.WorklogConfig`; ``root`` the folder of mkdocs.yml.

    Raises:
        ValueError: a notebook cannot be read, or the store holds invalid JSON.
    """
    store = store_path(root, cfg.freeze_dir)
    return [_status_row(t.id, notebook_state(t.notebook, root, store)) for t in cfg.topics if t.notebook]


# --- executing -----------------------------------------------------------------------------

_INFO_SCRIPT = "import json; from worklog_gen.measure import gpu_info; print(json.dumps(gpu_info()))"


def _python_path(root: Path) -> str:
    # root first (``import worklog_gen`` from the repository), then this package's
    # parent so that a notebook outside the repository still finds worklog_gen
    parts = [str(root), str(Path(__file__).resolve().parent.parent)]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(dict.fromkeys(parts))


@functools.lru_cache(maxsize=4)
def environment(root: str) -> dict:
    """GPU and versions of the Python that runs the kernel (``sys.executable``), from
    :func:`worklog_gen.measure.gpu_info` in a subprocess, so that this process never
    imports torch. Keys as ``gpu_info``; pieces that cannot be found are ``None``.
    Never raises: without the subprocess's answer, only Python's version is known."""
    import platform

    env = dict(os.environ, PYTHONPATH=_python_path(Path(root)))
    try:
        out = subprocess.run([sys.executable, "-c", _INFO_SCRIPT], cwd=root, env=env, capture_output=True,
                             text=True, timeout=300, check=True).stdout
        info = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        info = {}
    info.setdefault("python", platform.python_version())
    return info


def _strip_ansi(text: str) -> str:
    try:
        from nbconvert.filters import strip_ansi
    except ImportError:  # a GPU box with nbclient but without nbconvert: same pattern as nbconvert's
        import re

        return re.sub(r"\x1b\[(.*?)([@-~])|\x1b\](.*?)\x07", "", text)
    return strip_ansi(text)


def _cell_lines(path: Path, nb) -> dict[int, int]:
    """1-based line in the ``.py`` file where each code cell's source starts."""
    lines = [line.rstrip() for line in path.read_text(encoding="utf-8").split("\n")]
    where: dict[int, int] = {}
    cursor = 0
    for index, cell in enumerate(nb.cells):
        first = next((line.rstrip() for line in cell.source.split("\n") if line.strip()), None)
        if cell.cell_type != "code" or first is None:
            continue
        for i in range(cursor, len(lines)):
            if lines[i] == first or lines[i] == "# " + first:  # magics are commented out in the file
                where[index] = i + 1
                cursor = i + 1
                break
    return where


@dataclass
class ExecutionResult:
    """What :func:`execute_notebook` did. ``entry`` is the store entry written on
    success; ``failure`` the recorded failure (also in ``<stem>.failed.json``)."""

    path: str
    ok: bool
    source_hash: str
    entry: Path | None = None
    record: dict | None = None
    failure: dict | None = None
    nb: Any = None


def _kernel_env(root: Path, out_dir: Path, stem: str, extra_env: dict | None) -> dict:
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # let ipykernel's inline backend put figures in the outputs
    env.update({OUTPUT_ENV: str(out_dir), NOTEBOOK_ENV: stem, "PYTHONPATH": _python_path(root)})
    env.update(extra_env or {})
    return env


def _run_cells(nb, root: Path, env: dict, *, timeout: int, kernel_name: str, label: str, progress: bool):
    """Execute ``nb`` in place; return ``(seconds per cell index, failure or None)``."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from tqdm.auto import tqdm

    total = sum(1 for c in nb.cells if c.cell_type == "code" and c.source.strip())
    bar = tqdm(total=total, desc=label, unit="cell", disable=not progress, file=sys.stderr)
    started: dict[int, float] = {}
    seconds: dict[int, float] = {}
    state: dict[str, Any] = {"index": None, "reply": None}

    def on_cell_execute(cell, cell_index):
        state["index"] = cell_index
        started[cell_index] = time.perf_counter()

    def on_cell_executed(cell, cell_index, execute_reply):
        seconds[cell_index] = time.perf_counter() - started[cell_index]
        bar.update(1)

    def on_cell_error(cell, cell_index, execute_reply):
        state["reply"] = execute_reply.get("content", {})

    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name,
                            resources={"metadata": {"path": str(root)}},
                            on_cell_execute=on_cell_execute, on_cell_executed=on_cell_executed,
                            on_cell_error=on_cell_error)
    failure = None
    try:
        client.execute(env=env, cwd=str(root))
    except CellExecutionError:
        reply = state["reply"] or {}
        failure = {"ename": reply.get("ename", "Error"), "evalue": reply.get("evalue", ""),
                   "traceback": [_strip_ansi(t) for t in reply.get("traceback", [])]}
    except CellTimeoutError as exc:
        failure = {"ename": "CellTimeoutError", "evalue": f"cell ran past the {timeout} s timeout",
                   "traceback": [str(exc)]}
    except DeadKernelError as exc:
        failure = {"ename": "DeadKernelError", "evalue": "the kernel died", "traceback": [str(exc)]}
    finally:
        bar.close()
    if failure is not None:
        failure["cell_index"] = state["index"]
    return seconds, failure


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def write_entry(store_dir: str | Path, stem: str, nb, data_dir: str | Path | None, record: dict) -> Path:
    """Write a store entry ``<store_dir>/<stem>/`` (notebook, ``data/``, ``record.json``)
    into a temporary sibling folder, then swap it in by two renames (old entry aside,
    new one in), so that a reader never sees a half-written entry; between the
    renames the entry is briefly absent, and if the second fails the old one is put back.

    ``nb`` is an nbformat v4 notebook; ``data_dir`` a folder whose files are copied
    into ``data/`` (``None``: empty). Returns the entry folder.

    Raises:
        OSError: the store cannot be written; the previous entry is then left in place.
    """
    import nbformat

    store = Path(store_dir)
    store.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{stem}.new-", dir=store))
    final = store / stem
    old: Path | None = None
    try:
        os.chmod(tmp, 0o755)
        nbformat.write(nb, str(tmp / f"{stem}.ipynb"))
        if data_dir is not None and Path(data_dir).is_dir():
            shutil.copytree(data_dir, tmp / DATA_DIR)
        else:
            (tmp / DATA_DIR).mkdir()
        _write_json(tmp / RECORD_FILE, record)
        if final.exists():
            old = store / f".{stem}.old-{uuid.uuid4().hex[:8]}"
            final.rename(old)
        try:
            tmp.rename(final)
        except OSError:
            if old is not None:
                old.rename(final)
                old = None
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _say(message: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(message, file=sys.stderr)


def _report_failure(path: str, nb, failure: dict, entry: str, had_entry: bool) -> None:
    index = failure.get("cell_index")
    source = nb.cells[index].source if index is not None else "(no cell)"
    where = f"{path}:{failure['line']}" if failure.get("line") else path
    kept = f"the previous frozen result in {entry}/ is kept" if had_entry else "nothing was frozen"
    rule = "-" * 72
    _say(f"{where}: cell {index} failed: {failure['ename']}: {failure['evalue']}\n"
         f"{rule}\n{source}\n{rule}\n" + "\n".join(failure.get("traceback", [])) + f"\n{rule}\n{path}: {kept}")


def execute_notebook(notebook: str | Path, root: str | Path, store_dir: str | Path, *, timeout: int = 1800,
                     kernel_name: str = "python3", extra_env: dict | None = None,
                     progress: bool = True) -> ExecutionResult:
    """Execute one notebook and, if every cell succeeds, freeze it into ``store_dir``.

    The notebook (absolute or relative to ``root``) is read with jupytext and run by
    nbclient in a ``kernel_name`` kernel whose cwd is ``root`` and whose PYTHONPATH
    starts with ``root``; ``WORKLOG_GEN_OUTPUT`` points at a fresh temporary folder
    and ``WORKLOG_GEN_NOTEBOOK`` is the stem. ``timeout`` is per cell, in seconds;
    ``extra_env`` is added to the kernel's environment. A tqdm bar counts cells.

    On success the entry ``<store_dir>/<stem>/`` is replaced (:func:`write_entry`) and
    ``record.json`` holds: ``source_hash``, ``hashed_files``, ``notebook``,
    ``executed_at`` (ISO 8601, UTC), ``mode`` (``gpu``; ``interpret`` under
    ``TRITON_INTERPRET=1``; ``cpu`` with no GPU found), ``gpu``, ``driver``, ``cuda``,
    ``sm_count``, ``memory_gib``, ``compute_capability``, ``torch``, ``triton``,
    ``python``, ``worklog_gen``, ``kernel``, ``wall_seconds``, ``cells`` (per code
    cell: ``index``, ``line`` in the .py, ``seconds`` of wall time), ``headline``
    (the notebook's ``headline.json``) and ``data_files``.

    On a failing cell the notebook stops, the cell's source and traceback are printed,
    ``<stem>.failed.json`` records the source hash, time, cell and error, and the
    previous entry is left untouched.

    Raises:
        FileNotFoundError, ValueError: the notebook cannot be read.
        jupyter_client.kernelspec.NoSuchKernel: no kernel named ``kernel_name``.
    """
    root = Path(root).resolve()
    store = Path(store_dir)
    path = Path(notebook) if Path(notebook).is_absolute() else root / notebook
    rel = relative_path(path, root)
    stem = path.stem
    hashed = source_hash(path, root)
    nb = read_notebook(path)
    out_dir = Path(tempfile.mkdtemp(prefix=f"worklog-gen-{stem}-"))
    try:
        env = _kernel_env(root, out_dir, stem, extra_env)
        executed_at = _utc_now()
        t0 = time.perf_counter()
        seconds, failure = _run_cells(nb, root, env, timeout=timeout, kernel_name=kernel_name,
                                      label=rel, progress=progress)
        wall = time.perf_counter() - t0
        lines = _cell_lines(path, nb)
        if failure is not None:
            failure.update(notebook=rel, source_hash=hashed.hexdigest, failed_at=executed_at,
                           line=lines.get(failure["cell_index"]),
                           cell_source=nb.cells[failure["cell_index"]].source
                           if failure["cell_index"] is not None else None)
            had_entry = entry_dir(store, path).is_dir()
            store.mkdir(parents=True, exist_ok=True)
            _write_json(failure_path(store, path), failure)
            _report_failure(rel, nb, failure, relative_path(entry_dir(store, path), root), had_entry)
            return ExecutionResult(rel, False, hashed.hexdigest, failure=failure, nb=nb)
        info = environment(str(root))
        interpret = env.get("TRITON_INTERPRET", "0") not in ("", "0")  # as notebook.interpret_mode()
        headline_path = out_dir / HEADLINE_FILE
        record = {
            "notebook": rel,
            "source_hash": hashed.hexdigest,
            "hashed_files": list(hashed.files),
            "executed_at": executed_at,
            "mode": "interpret" if interpret else ("gpu" if info.get("device") else "cpu"),
            "gpu": info.get("device"),
            **{k: info.get(k) for k in ("driver", "cuda", "sm_count", "memory_gib", "compute_capability",
                                        "torch", "triton", "python")},
            "worklog_gen": __version__,
            "kernel": kernel_name,
            "wall_seconds": round(wall, 3),
            "cells": [{"index": i, "line": lines.get(i), "seconds": round(s, 3)} for i, s in sorted(seconds.items())],
            "headline": json.loads(headline_path.read_text()) if headline_path.is_file() else {},
            "data_files": sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file()),
        }
        entry = write_entry(store, stem, nb, out_dir, record)
        failure_path(store, path).unlink(missing_ok=True)
        return ExecutionResult(rel, True, hashed.hexdigest, entry=entry, record=record, nb=nb)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def execute_cli(cfg, root: str | Path, notebooks: list[Path], *, force: bool = False, timeout: int = 1800,
                kernel_name: str = "python3") -> bool:
    """``worklog-gen execute``: run the stale, missing or failed notebooks among
    ``notebooks`` (every configured topic notebook when empty; all of them with
    ``force``) and freeze each one that succeeds into ``cfg.freeze_dir``.

    Prints one line per notebook, and the cell and traceback of a failure. Returns
    ``True`` when every notebook that ran succeeded (and none was unreadable).
    """
    root = Path(root).resolve()
    store = store_path(root, cfg.freeze_dir)
    paths = [Path(p).resolve() for p in notebooks] or [root / t.notebook for t in cfg.topics if t.notebook]
    if not paths:
        _say("no topic notebooks configured (plugins: worklog: topics: ... notebook:)")
        return True
    stems: dict[str, Path] = {}
    for p in paths:
        if p.stem in stems and stems[p.stem] != p:
            _say(f"error: {stems[p.stem]} and {p} would share the store entry {store / p.stem}")
            return False
        stems[p.stem] = p
    ok = True
    for path in dict.fromkeys(paths):
        rel = relative_path(path, root)
        try:
            st = notebook_state(path, root, store)
            if not st.source_exists:
                _say(f"error: {rel}: notebook not found")
                ok = False
                continue
            if st.state == "fresh" and not force:
                _say(f"{rel}: fresh, skipped (--force runs it anyway)")
                continue
            _say(f"{rel}: {st.state}, executing")
            result = execute_notebook(path, root, store, timeout=timeout, kernel_name=kernel_name)
        except Exception as exc:  # unreadable notebook, missing kernel: report it, go on with the rest
            _say(f"error: {rel}: {type(exc).__name__}: {exc}")
            ok = False
            continue
        if result.ok:
            record = result.record
            _say(f"{rel}: frozen into {relative_path(result.entry, root)}/ "
                 f"({record['wall_seconds']:.1f} s, {device_label(record)})")
        ok = ok and result.ok
    return ok
