"""The freeze store: where executed topic notebooks are kept, and their status.

A topic notebook (jupytext percent format, ``notebooks/<stem>.py``) runs once on a
GPU box (:mod:`worklog_gen.execute`); what it produced is frozen into the store,
which the site build (:mod:`worklog_gen.render`) reads without a GPU, torch or
triton. This module holds the store's layout, reads and writes its entries and
says where each notebook stands.

Store layout, under ``freeze_dir`` (default ``notebooks/_freeze``)::

    <stem>/                    one entry per notebook, replaced whole on success
        <stem>.ipynb           the executed notebook: code, outputs, images
        record.json            provenance: source hash, GPU, versions, date, cell times,
                               headline figures, mode (see ``execute.execute_notebook``)
        data/                  every file the notebook wrote to WORKLOG_GEN_OUTPUT
                               (headline.json, roofline.json, measurement CSVs)
    <stem>.failed.json         the last failed attempt (source hash, time, cell,
                               error); removed by the next success
    .<stem>.new-*/ .<stem>.old-*/   transient, only while an entry is swapped in

A notebook is ``fresh`` when its entry's source hash
(:func:`worklog_gen.source_hash.source_hash`) equals the current one, ``stale``
when it differs, ``missing`` without an entry and ``failed`` when the last attempt
for the current hash failed.

Nothing heavy is imported at module level (nbformat only when an entry is
written); torch and triton are never imported.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from worklog_gen.source_hash import source_hash

RECORD_FILE = "record.json"
DATA_DIR = "data"
FAILED_SUFFIX = ".failed.json"
STATES = ("fresh", "stale", "missing", "failed")


# --- layout, reading and status ---------------------------------------------------------


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


# --- writing entries -----------------------------------------------------------------------


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


def write_failure(store_dir: str | Path, notebook: str | Path, failure: dict) -> Path:
    """Record a failed attempt of ``notebook`` in ``<store_dir>/<stem>.failed.json``
    (:func:`failure_path`), creating the store folder if needed; the notebook's entry
    is left untouched. Returns the file written.

    Raises:
        OSError: the store cannot be written.
    """
    path = failure_path(store_dir, notebook)
    Path(store_dir).mkdir(parents=True, exist_ok=True)
    _write_json(path, failure)
    return path
