"""The freeze store: where executed topic notebooks are kept, and their status.

A topic notebook (jupytext percent format, ``notebooks/<stem>.py``) runs once per machine on a
GPU box (:mod:`worklog_gen.freeze.execute`); what it produced is frozen into the store,
which the site build (:mod:`worklog_gen.freeze.render`) reads without a GPU, torch or
triton. This module holds the store's layout, reads and writes its entries and
says where each notebook stands on each machine.

Store layout, under ``freeze_dir`` (default ``notebooks/_freeze``)::

    <stem>/                    one folder per notebook
        <slug>/                one entry per machine (:func:`machine_slug` of its name:
                               ``nvidia-h200``, ``2x-nvidia-h200-nvlink-nv18``), replaced whole
                               on that machine's next success
            <stem>.ipynb       the executed notebook: code, outputs, images
            record.json        provenance: the machine's name, source hash and its parts, GPU,
                               versions, date, cell times, headline figures, mode
                               (:class:`~worklog_gen.freeze.record.FreezeRecord`)
            data/              every file the notebook wrote to WORKLOG_GEN_OUTPUT
                               (headline.json, roofline.json, measurement CSVs)
        <slug>.failed.json     that machine's last failed attempt
                               (:class:`~worklog_gen.freeze.record.FailureRecord`); removed by its
                               next success
        .<slug>.new-*/ .<slug>.old-*/   transient, only while an entry is swapped in

A machine is named as ``worklog-gen status`` names it
(:func:`~worklog_gen.freeze.record.machine_name`: ``NVIDIA H100 80GB HBM3``,
``2 × NVIDIA H200, NVLink NV18``, ``CPU (no GPU)``); its record keeps that name.

Legacy layout, still read: a flat entry ``<stem>/{record.json,<stem>.ipynb,data/}`` is the
record of the machine it names, and ``<stem>.failed.json`` beside the notebook folders the
failure of that machine (or of the only one). Writing another machine's record moves a flat
entry into its own ``<stem>/<slug>/`` first (:func:`migrate_legacy`), so nothing is lost.

Each machine's record has its own state: ``fresh`` when its source hash
(:func:`worklog_gen.freeze.source_hash.source_hash`) equals the current one, ``stale``
when it differs, ``failed`` when that machine's last attempt for the current hash failed;
a notebook with no record at all is ``missing``.

Nothing heavy is imported at module level (nbformat only when an entry is
written); torch and triton are never imported.
"""

from __future__ import annotations

import json
import os
import re
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
    """The store folder of ``notebook``: ``<store_dir>/<stem>`` (its machines' entries inside,
    or a legacy flat entry)."""
    return Path(store_dir) / Path(notebook).stem


def machine_slug(name: str) -> str:
    """A file-system-safe folder name for a machine's name: lowercase letters, digits and ``-``
    (``NVIDIA H200`` -> ``nvidia-h200``, ``2 × NVIDIA H200, NVLink NV18`` ->
    ``2x-nvidia-h200-nvlink-nv18``); ``unknown`` when nothing is left."""
    text = re.sub(r"\s*×\s*", "x ", name).lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "unknown"


def machine_dir(store_dir: str | Path, notebook: str | Path, machine: str) -> Path:
    """The entry of ``notebook`` for ``machine`` (its name): ``<store_dir>/<stem>/<slug>``."""
    return entry_dir(store_dir, notebook) / machine_slug(machine)


def failure_path(store_dir: str | Path, notebook: str | Path, machine: str | None = None) -> Path:
    """Where the last failed attempt of ``notebook`` on ``machine`` is recorded:
    ``<store_dir>/<stem>/<slug>.failed.json``; without a machine, the legacy
    ``<store_dir>/<stem>.failed.json``."""
    if machine is None:
        return Path(store_dir) / (Path(notebook).stem + FAILED_SUFFIX)
    return entry_dir(store_dir, notebook) / (machine_slug(machine) + FAILED_SUFFIX)


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


def _read_record(path: Path) -> FreezeRecord | None:
    data = _read_json(path)
    return None if data is None else FreezeRecord.from_json(data, str(path))


def _read_failure(path: Path) -> FailureRecord | None:
    data = _read_json(path)
    return None if data is None else FailureRecord.from_json(data, str(path))


@dataclass
class MachineEntry:
    """One machine's part of a notebook's store folder: its record (``None`` when it only failed)
    and its last failure (``None`` when there is none).

    ``folder`` holds ``record.json``, ``<stem>.ipynb`` and ``data/`` (the notebook's folder itself
    for a legacy flat entry, ``legacy`` then); ``failure_file`` is where its failure is read from.
    """

    name: str | None
    slug: str | None
    folder: Path
    record: FreezeRecord | None = None
    failure: FailureRecord | None = None
    failure_file: Path | None = None
    legacy: bool = False


def machine_entries(store_dir: str | Path, notebook: str | Path) -> list[MachineEntry]:
    """Every machine's record and failure for ``notebook``, newest ``executed_at`` first (machines
    that only failed last). A legacy flat entry is the record of the machine it names; a legacy
    ``<stem>.failed.json`` the failure of the machine it names, else of the flat entry's machine,
    else of the only machine (else one of its own, ``name`` then ``None`` when it names none).

    Raises:
        ValueError: a ``record.json`` or failure file is not valid JSON or not a record, naming it.
    """
    folder = entry_dir(store_dir, notebook)
    by_slug: dict[str, MachineEntry] = {}
    flat = _read_record(folder / RECORD_FILE)
    if flat is not None:
        name = flat.machine_name
        by_slug[machine_slug(name)] = MachineEntry(name, machine_slug(name), folder, flat, legacy=True)
    subfolders = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")) \
        if folder.is_dir() else []
    for sub in subfolders:
        record = _read_record(sub / RECORD_FILE)
        if record is not None:  # a subfolder without a record (a flat entry's data/) is no machine
            by_slug[sub.name] = MachineEntry(record.machine_name, sub.name, sub, record)
    failures = sorted(folder.glob("*" + FAILED_SUFFIX)) if folder.is_dir() else []
    for path in failures:
        failure = _read_failure(path)
        slug = path.name[: -len(FAILED_SUFFIX)]
        entry = by_slug.setdefault(slug, MachineEntry(failure.machine or slug, slug, folder / slug))
        entry.failure, entry.failure_file = failure, path
    legacy_path = failure_path(store_dir, notebook)
    legacy = _read_failure(legacy_path)
    if legacy is not None:
        if legacy.machine:
            slug = machine_slug(legacy.machine)
        elif flat is not None:
            slug = machine_slug(flat.machine_name)
        elif len(by_slug) == 1:
            slug = next(iter(by_slug))
        else:
            slug = None
        entry = by_slug.get(slug) if slug else None
        if entry is None:
            entry = MachineEntry(legacy.machine, slug, folder / slug if slug else folder)
            by_slug[slug or ""] = entry
        if entry.failure is None:
            entry.failure, entry.failure_file = legacy, legacy_path
    newest_first = sorted(by_slug.values(), key=_stamp, reverse=True)
    return sorted(newest_first, key=lambda e: e.record is None)  # stable: machines with a record first


def _stamp(entry: MachineEntry) -> str:
    """When the entry's record ran, else when its failure happened: ISO 8601 UTC, which sorts as text."""
    stamp = entry.record.executed_at if entry.record else (entry.failure.failed_at if entry.failure else "")
    return stamp or ""


def load_record(store_dir: str | Path, notebook: str | Path, machine: str | None = None) -> FreezeRecord | None:
    """The :class:`FreezeRecord` of ``notebook`` on ``machine`` (its name or slug, case-insensitive),
    or by default the newest one; ``None`` without one.

    Raises:
        ValueError: a ``record.json`` is not valid JSON or not a record, naming the file.
    """
    records = [e for e in machine_entries(store_dir, notebook) if e.record is not None]
    if machine is not None:
        records = [e for e in records if _same_machine(e, machine)]
    return records[0].record if records else None


def load_failure(store_dir: str | Path, notebook: str | Path, machine: str | None = None) -> FailureRecord | None:
    """The last failed attempt of ``notebook`` on ``machine`` (by default, the newest failure of
    any machine), or ``None``.

    Raises:
        ValueError: a failure file is not valid JSON or not a failure record, naming it.
    """
    entries = [e for e in machine_entries(store_dir, notebook) if e.failure is not None]
    if machine is not None:
        entries = [e for e in entries if _same_machine(e, machine)]
    entries.sort(key=lambda e: e.failure.failed_at, reverse=True)
    return entries[0].failure if entries else None


def _same_machine(entry: MachineEntry, wanted: str) -> bool:
    wanted = wanted.strip().lower()
    return bool(wanted) and (wanted == (entry.name or "").lower() or entry.slug in (wanted, machine_slug(wanted)))


def matches_machine(name: str, slug: str, wanted: str) -> int:
    """How well ``wanted`` (a setting such as ``primary_machine``) names the machine ``name``
    (its slug ``slug``): 2 when it is the name or the slug (case-insensitive), 1 when it is part of
    either, 0 when neither."""
    wanted = wanted.strip().lower()
    if not wanted:
        return 0
    if wanted == name.lower() or slug in (wanted, machine_slug(wanted)):
        return 2
    return 1 if wanted in name.lower() or wanted in slug else 0


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
    """Where one notebook stands against one machine's record in the store.

    ``current_hash`` is ``None`` when the source file does not exist (``state`` is then
    ``missing``). ``reasons`` says why a result is stale (which code cells or modules changed,
    :func:`worklog_gen.freeze.source_hash.explain_change`); empty otherwise. ``machine`` is the
    machine's name (``None`` for a notebook with no record and no failure), ``entry`` the folder
    of its record, executed notebook and ``data/``; ``failure_file`` where its failure lies.
    """

    path: str
    state: NotebookState
    current_hash: str | None
    record: FreezeRecord | None
    failure: FailureRecord | None
    entry: Path
    source_exists: bool = True
    reasons: list[str] = field(default_factory=list)
    machine: str | None = None
    slug: str | None = None
    failure_file: Path | None = None
    legacy: bool = False


def stale_machines(statuses) -> set[str]:
    """The machine names of the records among ``statuses`` (:class:`NotebookStatus`) that are of older
    code than the notebook's current code: what a page marks "(stale)" beside its figures."""
    return {st.record.machine_name for st in statuses if st.record is not None and st.state is NotebookState.STALE}


def notebook_states(notebook: str | Path, root: str | Path, store_dir: str | Path) -> list[NotebookStatus]:
    """Compare ``notebook`` (absolute or relative to ``root``) with each machine's record in the
    store: one status per machine (newest record first, :func:`machine_entries`), or one
    ``missing`` status when the store holds nothing for it.

    Per machine, ``fresh``: its record's source hash equals the current one; ``stale``: it differs
    (with the reasons); ``failed``: that machine's last attempt for the current source hash failed
    (its older record, if any, is still there); ``missing``: no record (or no source file).

    Raises:
        ValueError: the notebook cannot be read, or the store holds invalid JSON.
    """
    root = Path(root)
    path = Path(notebook) if Path(notebook).is_absolute() else root / notebook
    rel = relative_path(path, root)
    entries = machine_entries(store_dir, path) or [MachineEntry(None, None, entry_dir(store_dir, path))]
    if not path.is_file():
        return [NotebookStatus(rel, NotebookState.MISSING, None, e.record, e.failure, e.folder, source_exists=False,
                               machine=e.name, slug=e.slug, failure_file=e.failure_file, legacy=e.legacy)
                for e in entries]
    current = source_hash(path, root)
    out = []
    for e in entries:
        reasons: list[str] = []
        if e.failure is not None and e.failure.source_hash == current.hexdigest:
            state = NotebookState.FAILED
        elif e.record is None:
            state = NotebookState.MISSING
        elif e.record.source_hash == current.hexdigest:
            state = NotebookState.FRESH
        else:
            state = NotebookState.STALE
            reasons = explain_change(e.record.hashes, current.parts, code_cell_lines(path))
        out.append(NotebookStatus(rel, state, current.hexdigest, e.record, e.failure, e.folder, reasons=reasons,
                                  machine=e.name, slug=e.slug, failure_file=e.failure_file, legacy=e.legacy))
    return out


def notebook_state(notebook: str | Path, root: str | Path, store_dir: str | Path,
                   machine: str | None = None) -> NotebookStatus:
    """Where ``notebook`` stands on ``machine`` (its name or slug, case-insensitive): that machine's
    status from :func:`notebook_states`, ``missing`` (with ``entry`` where its record would go) when
    it has none. Without ``machine``, the newest record's (the default primary machine).

    Raises:
        ValueError: the notebook cannot be read, or the store holds invalid JSON.
    """
    states = notebook_states(notebook, root, store_dir)
    if machine is None:
        return states[0]
    for st in states:
        if st.slug is not None and _same_machine(MachineEntry(st.machine, st.slug, st.entry), machine):
            return st
    first = states[0]
    return NotebookStatus(first.path, NotebookState.MISSING, first.current_hash, None, None,
                          machine_dir(store_dir, notebook, machine), source_exists=first.source_exists,
                          machine=machine, slug=machine_slug(machine))


def primary_status(states: list[NotebookStatus], wanted: str | None) -> NotebookStatus:
    """The status a notebook's page shows, among ``states`` (:func:`notebook_states`): the machine
    that ``wanted`` names (:func:`matches_machine`: its name or slug first, else the newest record
    whose name contains it), else the newest record from a GPU (a run on the CPU, under the
    interpreter, measures nothing worth leading a page with), else the newest record. ``states``
    must not be empty."""
    with_record = [st for st in states if st.record is not None] or states
    if wanted:
        scored = [(matches_machine(st.machine or "", st.slug or "", wanted), st) for st in with_record]
        best = max((score for score, _ in scored), default=0)
        if best:
            return next(st for score, st in scored if score == best)
    on_gpu = [st for st in with_record if st.record is not None and st.record.mode == "gpu"]
    return (on_gpu or with_record)[0]


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
    """One row of ``worklog-gen status``: one notebook on one machine."""

    topic: str
    path: str
    state: NotebookState
    gpu: str | None
    executed_at: str | None
    headline: dict[str, Headline] = field(default_factory=dict)
    failure: FailureRecord | None = None
    source_exists: bool = True
    reasons: list[str] = field(default_factory=list)
    machine: str | None = None
    slug: str | None = None

    def to_json(self) -> dict:
        """``{"topic", "path", "machine", "slug", "state", "gpu", "executed_at", "headline": {name: value},
        "reasons", "failure"}``; ``machine`` (its name) and ``slug`` (its store folder) are ``None`` for a
        notebook with nothing frozen, ``gpu`` (what ran it, in words) and ``executed_at`` without a frozen
        result; ``reasons`` says why a stale one is stale, ``failure`` (or ``None``) where its last run failed."""
        return {"topic": self.topic, "path": self.path, "machine": self.machine, "slug": self.slug,
                "state": self.state.value, "gpu": self.gpu,
                "executed_at": self.executed_at, "headline": {k: h.value for k, h in self.headline.items()},
                "reasons": list(self.reasons), "failure": self.failure.summary() if self.failure else None}

    def summary(self, topic_width: int = 20, gpu_width: int = 24) -> str:
        """Topic, state, machine, execution time and path, plus why when stale or failed
        (one indented line per reason); the topic and machine columns padded to the widths given."""
        line = (f"{self.topic:<{topic_width}} {self.state.value:<8} {self.gpu or self.machine or '-':<{gpu_width}} "
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
                     source_exists=st.source_exists, reasons=st.reasons, machine=st.machine, slug=st.slug)


def status(cfg, root: str | Path) -> list[StatusRow]:
    """The state of every configured topic notebook on every machine it has a record or a failure
    for: one row per notebook and machine (newest record first), one ``missing`` row for a notebook
    with nothing frozen. Topics without a notebook are skipped.

    ``cfg`` is a :class:`worklog_gen.config.WorklogConfig`; ``root`` the folder of mkdocs.yml.

    Raises:
        ValueError: a notebook cannot be read, or the store holds invalid JSON.
    """
    store = store_path(root, cfg.freeze_dir)
    return [_status_row(t.id, st) for t in cfg.topics if t.notebook
            for st in notebook_states(t.notebook, root, store)]


# --- writing entries -----------------------------------------------------------------------


def _write_json(path: Path, data: dict) -> None:
    # not sorted: a record's headlines keep the order the notebook recorded them in (the results table's)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def migrate_legacy(store_dir: str | Path, stem: str) -> Path | None:
    """Move a legacy flat entry ``<store_dir>/<stem>/{record.json,<stem>.ipynb,data/}`` into the
    folder of the machine its record names, ``<store_dir>/<stem>/<slug>/``, and a legacy
    ``<stem>.failed.json`` of that machine to ``<stem>/<slug>.failed.json``. The files are moved
    into a hidden temporary folder beside them, which is then renamed into place: a reader sees the
    record either flat or in its machine folder, or (between the two) briefly not at all. Should the
    machine folder exist already, the newer of the two records is kept. Returns the machine folder,
    or ``None`` when there was no flat entry.

    Raises:
        OSError: the store cannot be written.
        ValueError: the flat ``record.json`` cannot be read.
    """
    folder = Path(store_dir) / stem
    flat = _read_record(folder / RECORD_FILE)
    if flat is None:
        return None
    slug = machine_slug(flat.machine_name)
    target = folder / slug
    moving = [p for p in folder.iterdir() if not p.name.startswith(".") and not p.name.endswith(FAILED_SUFFIX)
              and not (p.is_dir() and (p / RECORD_FILE).is_file())]
    tmp = Path(tempfile.mkdtemp(prefix=f".{slug}.new-", dir=folder))
    os.chmod(tmp, 0o755)
    for item in sorted(moving, key=lambda p: p.name != RECORD_FILE):  # the record first: flat, then gone
        item.rename(tmp / item.name)
    existing = _read_record(target / RECORD_FILE)
    if existing is not None and existing.executed_at >= flat.executed_at:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        if target.exists():
            old = folder / f".{slug}.old-{uuid.uuid4().hex[:8]}"
            target.rename(old)
            shutil.rmtree(old, ignore_errors=True)
        tmp.rename(target)
    legacy = failure_path(store_dir, stem)
    failure = _read_failure(legacy)
    moved = failure_path(store_dir, stem, flat.machine_name)
    if failure is not None and failure.machine in (None, flat.machine_name) and not moved.exists():
        legacy.rename(moved)
    return target


def write_entry(store_dir: str | Path, stem: str, nb, data_dir: str | Path | None, record: FreezeRecord) -> Path:
    """Write the entry of ``record``'s machine, ``<store_dir>/<stem>/<slug>/`` (notebook,
    ``data/``, ``record.json`` with the machine's name), into a temporary sibling folder, then
    swap it in by two renames (old entry aside, new one in), so that a reader never sees a
    half-written entry; between the renames the entry is briefly absent, and if the second fails
    the old one is put back. Other machines' entries are left as they are; a legacy flat entry is
    first moved into its own machine's folder (:func:`migrate_legacy`).

    ``nb`` is an nbformat v4 notebook; ``data_dir`` a folder whose files are copied
    into ``data/`` (``None``: empty). Returns the entry folder.

    Raises:
        OSError: the store cannot be written; the previous entry is then left in place.
    """
    import nbformat

    machine = record.machine_name
    slug = machine_slug(machine)
    folder = Path(store_dir) / stem
    folder.mkdir(parents=True, exist_ok=True)
    migrate_legacy(store_dir, stem)
    tmp = Path(tempfile.mkdtemp(prefix=f".{slug}.new-", dir=folder))
    final = folder / slug
    old: Path | None = None
    try:
        os.chmod(tmp, 0o755)
        nbformat.write(nb, str(tmp / f"{stem}.ipynb"))
        if data_dir is not None and Path(data_dir).is_dir():
            shutil.copytree(data_dir, tmp / DATA_DIR)
        else:
            (tmp / DATA_DIR).mkdir()
        _write_json(tmp / RECORD_FILE, {**record.to_json(), "machine": machine})
        if final.exists():
            old = folder / f".{slug}.old-{uuid.uuid4().hex[:8]}"
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
    """Record a failed attempt of ``notebook`` on ``failure.machine`` in
    ``<store_dir>/<stem>/<slug>.failed.json`` (:func:`failure_path`; the legacy
    ``<store_dir>/<stem>.failed.json`` when it names no machine), creating folders as needed;
    the machine's entry, and every other machine's, are left untouched. Returns the file written.

    Raises:
        OSError: the store cannot be written.
    """
    path = failure_path(store_dir, notebook, failure.machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_json(path, failure.to_json())
    return path
