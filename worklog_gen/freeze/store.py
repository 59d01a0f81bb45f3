"""The freeze store: where executed topic notebooks are kept, and their status.

A topic notebook (jupytext percent format, ``notebooks/<stem>.py``) runs once on a
GPU box (:mod:`worklog_gen.freeze.execute`); what it produced is frozen into the store,
which the site build (:mod:`worklog_gen.freeze.render`) reads without a GPU, torch or
triton. This module holds the store's layout, reads and writes its entries and
says where each notebook stands.

Store layout, under ``freeze_dir`` (default ``notebooks/_freeze``)::

    <stem>/                    one entry per notebook, replaced whole on success
        <stem>.ipynb           the executed notebook: code, outputs, images
        record.json            provenance: source hash and its parts, GPU, versions, date,
                               cell times, headline figures, mode
                               (:class:`~worklog_gen.freeze.record.FreezeRecord`)
        data/                  every file the notebook wrote to WORKLOG_GEN_OUTPUT
                               (headline.json, roofline.json, measurement CSVs)
    <stem>.failed.json         the last failed attempt (:class:`~worklog_gen.freeze.record.FailureRecord`);
                               removed by the next success
    .<stem>.new-*/ .<stem>.old-*/   transient, only while an entry is swapped in

A notebook is ``fresh`` when its entry's source hash
(:func:`worklog_gen.freeze.source_hash.source_hash`) equals the current one, ``stale``
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

from worklog_gen.freeze.record import FailureRecord, FreezeRecord, Headline, NotebookState
from worklog_gen.freeze.source_hash import explain_change, source_hash

RECORD_FILE = "record.json"
DATA_DIR = "data"
FAILED_SUFFIX = ".failed.json"


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


def load_record(store_dir: str | Path, notebook: str | Path) -> FreezeRecord | None:
    """The :class:`FreezeRecord` of the notebook's store entry, or ``None`` without one.

    Raises:
        ValueError: ``record.json`` is not valid JSON or not a record, naming the file.
    """
    path = entry_dir(store_dir, notebook) / RECORD_FILE
    data = _read_json(path)
    return None if data is None else FreezeRecord.from_json(data, str(path))


def load_failure(store_dir: str | Path, notebook: str | Path) -> FailureRecord | None:
    """The last failed attempt of the notebook (``<stem>.failed.json``), or ``None``.

    Raises:
        ValueError: the file is not valid JSON or not a failure record, naming it.
    """
    path = failure_path(store_dir, notebook)
    data = _read_json(path)
    return None if data is None else FailureRecord.from_json(data, str(path))


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
class NotebookStatus:
    """Where one notebook stands against the store.

    ``current_hash`` is ``None`` when the source file does not exist (``state`` is then
    ``missing``). ``reasons`` says why a result is stale (which code cells or modules changed,
    :func:`worklog_gen.freeze.source_hash.explain_change`); empty otherwise.
    """

    path: str
    state: NotebookState
    current_hash: str | None
    record: FreezeRecord | None
    failure: FailureRecord | None
    entry: Path
    source_exists: bool = True
    reasons: list[str] = field(default_factory=list)


def notebook_state(notebook: str | Path, root: str | Path, store_dir: str | Path) -> NotebookStatus:
    """Compare ``notebook`` (absolute or relative to ``root``) with its store entry.

    ``fresh``: the entry's source hash equals the current one; ``stale``: it differs (with
    the reasons); ``missing``: no entry (or no source file); ``failed``: the last attempt for
    the current source hash failed (the older entry, if any, is still there).

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
        return NotebookStatus(rel, NotebookState.MISSING, None, record, failure, entry, source_exists=False)
    current = source_hash(path, root)
    reasons: list[str] = []
    if failure is not None and failure.source_hash == current.hexdigest:
        state = NotebookState.FAILED
    elif record is None:
        state = NotebookState.MISSING
    elif record.source_hash == current.hexdigest:
        state = NotebookState.FRESH
    else:
        state = NotebookState.STALE
        reasons = explain_change(record.hashes, current.parts, code_cell_lines(path))
    return NotebookStatus(rel, state, current.hexdigest, record, failure, entry, reasons=reasons)


def code_cell_lines(path: Path) -> list[int | None]:
    """The 1-based line in the ``.py`` file where each hashed code cell
    (:func:`~worklog_gen.freeze.source_hash.code_cells`) starts."""
    from worklog_gen.freeze.source_hash import normalise_source, read_notebook

    nb = read_notebook(path)
    where = cell_lines(path, nb)
    return [where.get(i) for i, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and normalise_source(cell.source)]


def cell_lines(path: Path, nb) -> dict[int, int]:
    """Index of each code cell of ``nb`` (read from ``path``) -> the 1-based line where its
    source starts in the ``.py`` file."""
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
class StatusRow:
    """One row of ``worklog-gen status``."""

    topic: str
    path: str
    state: NotebookState
    gpu: str | None
    executed_at: str | None
    headline: dict[str, Headline] = field(default_factory=dict)
    failure: FailureRecord | None = None
    source_exists: bool = True
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """``{"topic", "path", "state", "gpu", "executed_at", "headline": {name: value}, "reasons"}``;
        ``gpu`` and ``executed_at`` are ``None`` without a frozen result; ``reasons`` says why a
        stale one is stale, ``failure`` (or ``None``) where the last run failed."""
        return {"topic": self.topic, "path": self.path, "state": self.state.value, "gpu": self.gpu,
                "executed_at": self.executed_at, "headline": {k: h.value for k, h in self.headline.items()},
                "reasons": list(self.reasons), "failure": self.failure.summary() if self.failure else None}

    def summary(self, topic_width: int = 20, gpu_width: int = 24) -> str:
        """Topic, state, device, execution time and path, plus why when stale or failed
        (one indented line per reason); the topic and device columns padded to the widths given."""
        line = (f"{self.topic:<{topic_width}} {self.state.value:<8} {self.gpu or '-':<{gpu_width}} "
                f"{self.executed_at or '-':<21} {self.path}")
        if not self.source_exists:
            line += "  (source file not found)"
        if self.state is NotebookState.FAILED and self.failure:
            line += f"  ({self.failure.summary()})"
        return "\n".join([line, *(f"{'':<22}why: {reason}" for reason in self.reasons)])


def _status_row(topic: str, st: NotebookStatus) -> StatusRow:
    record = st.record
    return StatusRow(topic=topic, path=st.path, state=st.state, gpu=record.device_label if record else None,
                     executed_at=record.executed_at if record else None,
                     headline=dict(record.headline) if record else {},
                     failure=st.failure if st.state is NotebookState.FAILED else None,
                     source_exists=st.source_exists, reasons=st.reasons)


def status(cfg, root: str | Path) -> list[StatusRow]:
    """The state of every configured topic notebook (topics without one are skipped).

    ``cfg`` is a :class:`worklog_gen.config.WorklogConfig`; ``root`` the folder of mkdocs.yml.

    Raises:
        ValueError: a notebook cannot be read, or the store holds invalid JSON.
    """
    store = store_path(root, cfg.freeze_dir)
    return [_status_row(t.id, notebook_state(t.notebook, root, store)) for t in cfg.topics if t.notebook]


# --- writing entries -----------------------------------------------------------------------


def _write_json(path: Path, data: dict) -> None:
    # not sorted: a record's headlines keep the order the notebook recorded them in (the results table's)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_entry(store_dir: str | Path, stem: str, nb, data_dir: str | Path | None, record: FreezeRecord) -> Path:
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
        _write_json(tmp / RECORD_FILE, record.to_json())
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


def write_failure(store_dir: str | Path, notebook: str | Path, failure: FailureRecord) -> Path:
    """Record a failed attempt of ``notebook`` in ``<store_dir>/<stem>.failed.json``
    (:func:`failure_path`), creating the store folder if needed; the notebook's entry
    is left untouched. Returns the file written.

    Raises:
        OSError: the store cannot be written.
    """
    path = failure_path(store_dir, notebook)
    Path(store_dir).mkdir(parents=True, exist_ok=True)
    _write_json(path, failure.to_json())
    return path
