"""The typed records of the freeze store: what a run left behind, and where a notebook stands.

``record.json`` (:class:`FreezeRecord`) is written once per successful run and machine by
:mod:`worklog_gen.freeze.execute`; ``<slug>.failed.json`` (:class:`FailureRecord`) by a failed
one. Both are read back by :mod:`worklog_gen.freeze.store` and the page renderer, always through
these classes, so that the schema lives here and nowhere else. As jupyter-cache keeps its
``CacheBundleIn`` and ``ExecutorRunResult``, these are plain dataclasses with ``to_json`` and
``from_json``; unknown keys are ignored on reading, so an older record still loads.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass, field
from typing import Any, Literal

RunMode = Literal["gpu", "interpret", "cpu"]
"""What ran the kernels: a GPU; the CPU under ``TRITON_INTERPRET=1``; the CPU with no GPU found."""
RUN_MODES: tuple[RunMode, ...] = ("gpu", "interpret", "cpu")


class NotebookState(str, enum.Enum):
    """Where a notebook stands against its store entry (see :func:`worklog_gen.freeze.store.notebook_state`)."""

    FRESH = "fresh"
    """The entry's source hash equals the current one."""
    STALE = "stale"
    """It differs: a code cell or a kit module the notebook imports changed."""
    MISSING = "missing"
    """No entry, or no source file."""
    FAILED = "failed"
    """The last run of the current source failed (an older entry may still be there)."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Headline:
    """A headline figure of a notebook (:func:`worklog_gen.kit.notebook.headline`)."""

    value: float
    unit: str = ""
    """``x`` for a ratio, ``TFLOP/s``, ``GB/s``, ``fraction``."""
    description: str = ""
    """One line saying how it was measured."""
    label: str = ""
    """What it is, in words, for the results table (``Forward, bf16, against SDPA FlashAttention-2``)."""
    goal: float | None = None
    """The goal or the written prediction it is held against, in its unit."""
    goal_op: str = ">="
    """How the value must stand to the goal: ``>=`` or ``<=``."""
    baseline: str = ""
    """What it is measured against (``torch.add, paired``), for the results table."""

    @property
    def met(self) -> bool | None:
        """Whether the goal is met; ``None`` without a goal."""
        if self.goal is None:
            return None
        return self.value >= self.goal if self.goal_op == ">=" else self.value <= self.goal

    @classmethod
    def from_json(cls, data: Any) -> Headline:
        """From ``{"value", "unit", "description", ...}`` or a bare number."""
        if not isinstance(data, dict):
            return cls(float(data))
        goal = data.get("goal")
        return cls(float(data["value"]), str(data.get("unit", "")), str(data.get("description", "")),
                   str(data.get("label", "")), None if goal is None else float(goal),
                   str(data.get("goal_op", ">=")), str(data.get("baseline", "")))


@dataclass(frozen=True)
class CellTiming:
    """Wall time of one code cell: its index among the notebook's cells, the 1-based line
    where its source starts in the ``.py`` file, and seconds."""

    index: int
    line: int | None
    seconds: float


@dataclass(frozen=True)
class SourceHashes:
    """The parts of a source hash, so that a stale result can say what changed:
    one hash per non-empty code cell, in order, and one per ``worklog_gen`` module the
    notebook imports (path relative to the package's parent, ``worklog_gen/kit/measure.py``) or
    CUDA source it names (relative to the project, ``notebooks/cuda/vector_add.cu``)."""

    cells: tuple[str, ...] = ()
    modules: tuple[tuple[str, str], ...] = ()
    version: int = 2
    """The source hash scheme that made them (``HASH_SCHEME`` of :mod:`worklog_gen.freeze.source_hash`);
    records written before it was kept hold scheme 2."""

    @property
    def module_hashes(self) -> dict[str, str]:
        return dict(self.modules)

    def to_json(self) -> dict:
        return {"version": self.version, "cells": list(self.cells), "modules": dict(self.modules)}

    @classmethod
    def from_json(cls, data: Any) -> SourceHashes:
        return cls(tuple(data.get("cells", ())), tuple(sorted(dict(data.get("modules", {})).items())),
                   int(data.get("version", 2)))


@dataclass
class FreezeRecord:
    """``record.json``: the provenance and results of one successful run.

    Versions and GPU facts are ``None`` when they could not be found (no GPU, no nvidia-smi).
    ``hashes`` is ``None`` in records written before per-file hashes (source hash v1).
    """

    notebook: str
    """The notebook's path relative to the project root (``notebooks/vector_add.py``)."""
    source_hash: str
    """sha256 hex digest of :func:`worklog_gen.freeze.source_hash.source_hash`."""
    executed_at: str
    """ISO 8601, UTC, to the second (``2026-11-24T12:27:49Z``)."""
    mode: RunMode
    hashes: SourceHashes | None = None
    hashed_files: list[str] = field(default_factory=list)
    """The ``worklog_gen`` modules the hash covers."""
    gpu: str | None = None
    driver: str | None = None
    cuda: str | None = None
    sm_count: int | None = None
    memory_gib: float | None = None
    compute_capability: str | None = None
    torch: str | None = None
    triton: str | None = None
    python: str | None = None
    gpus: list[str] = field(default_factory=list)
    """Every GPU the machine had, by name, in device order (``[]`` without CUDA or in older records)."""
    gpus_used: int = 1
    """How many GPUs the notebook declared it runs on (its jupytext metadata ``worklog_gen: gpus:``)."""
    interconnect: str | None = None
    """``nvidia-smi topo -m`` as printed on that machine, when several GPUs were used."""
    nccl: str | None = None
    """NCCL's version as torch reports it (``2.28.9``), when several GPUs were used."""
    worklog_gen: str | None = None
    """The package version that ran it (provenance only: it is not part of the hash)."""
    kernel: str = "python3"
    wall_seconds: float = 0.0
    cells: list[CellTiming] = field(default_factory=list)
    headline: dict[str, Headline] = field(default_factory=dict)
    data_files: list[str] = field(default_factory=list)
    """Files the run wrote to ``data/`` (relative paths)."""
    machine: str | None = None
    """The machine's display name as the run named it (:attr:`device_label` then); ``None`` in
    records written before the store kept a record per machine (:attr:`machine_name` then derives it)."""

    @property
    def device_label(self) -> str:
        """What ran the kernels, in words: the GPU's name (``2 × NVIDIA H200, NVLink NV18`` for a
        notebook on several GPUs: the count, the name and the link between the first two,
        :func:`link_between`), or that it was the CPU (:func:`machine_name`)."""
        return machine_name(self.mode, self.gpu, self.gpus_used, self.interconnect)

    @property
    def machine_name(self) -> str:
        """The machine this record belongs to in the store: :attr:`machine`, else :attr:`device_label`."""
        return self.machine or self.device_label

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["hashes"] = self.hashes.to_json() if self.hashes is not None else None
        data["headline"] = {name: dataclasses.asdict(h) for name, h in self.headline.items()}
        return data

    @classmethod
    def from_json(cls, data: dict, where: str = "record.json") -> FreezeRecord:
        """Read a record; ``where`` names the file in errors.

        Raises:
            ValueError: a required key is missing or a value has the wrong type, naming ``where``.
        """
        try:
            known = {f.name for f in dataclasses.fields(cls)}
            kwargs = {k: v for k, v in data.items() if k in known}
            if kwargs.get("mode") not in RUN_MODES:
                raise ValueError(f"mode {kwargs.get('mode')!r} is not one of {', '.join(RUN_MODES)}")
            hashes = kwargs.get("hashes")
            kwargs["hashes"] = SourceHashes.from_json(hashes) if isinstance(hashes, dict) else None
            kwargs["cells"] = [CellTiming(int(c["index"]), c.get("line"), float(c["seconds"]))
                               for c in kwargs.get("cells") or []]
            kwargs["headline"] = {str(k): Headline.from_json(v) for k, v in (kwargs.get("headline") or {}).items()}
            return cls(**kwargs)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: not a freeze record: {type(exc).__name__}: {exc}") from exc


def machine_name(mode: str, gpu: str | None, gpus_used: int = 1, interconnect: str | None = None) -> str:
    """A machine named by what ran the kernels, as ``worklog-gen status`` names it: the GPU model
    (``NVIDIA H200``), with the count and the link between the first two GPUs when a notebook used
    several (``2 × NVIDIA H200, NVLink NV18``), or ``CPU (TRITON_INTERPRET=1)`` / ``CPU (no GPU)``.
    ``mode`` is a :data:`RunMode`; ``interconnect`` the ``nvidia-smi topo -m`` matrix or ``None``."""
    if mode == "interpret":
        return "CPU (TRITON_INTERPRET=1)"
    if mode == "cpu" or not gpu:
        return "CPU (no GPU)"
    if gpus_used <= 1:
        return gpu
    label = f"{gpus_used} × {gpu}"
    link = link_between(interconnect, 0, 1) if interconnect else None
    return f"{label}, {link}" if link else label


_LINK_NAMES = {"NV": "NVLink", "PIX": "PCIe, one switch", "PXB": "PCIe, several switches",
               "PHB": "PCIe host bridge", "NODE": "PCIe within a NUMA node", "SYS": "PCIe across NUMA nodes"}
"""The connection codes of ``nvidia-smi topo -m`` (its legend), in words."""


def link_between(topology: str, a: int, b: int) -> str | None:
    """How GPU ``a`` reaches GPU ``b`` in an ``nvidia-smi topo -m`` matrix: ``NVLink NV18`` (18
    bonded NVLinks), ``PCIe, one switch`` (``PIX``) ...; ``None`` when the matrix does not say."""
    rows = {}
    header: list[str] = []
    topology = re.sub(r"\x1b\[[0-9;]*m", "", topology)  # nvidia-smi underlines the header on a terminal
    for line in topology.splitlines():
        cells = line.split()
        if cells and cells[0].startswith("GPU") and not header:
            header = cells
        elif cells and cells[0].startswith("GPU") and header:
            rows[cells[0]] = dict(zip(header, cells[1:]))
    code = rows.get(f"GPU{a}", {}).get(f"GPU{b}")
    if not code or code == "X":
        return None
    if code.startswith("NV") and code[2:].isdigit():
        return f"NVLink {code}"
    return _LINK_NAMES.get(code, code)


@dataclass
class FailureRecord:
    """``<stem>.failed.json``: the last failed run of a notebook."""

    notebook: str
    source_hash: str
    failed_at: str
    """ISO 8601, UTC."""
    ename: str
    evalue: str
    cell_index: int | None = None
    """Index of the failing cell among the notebook's cells, markdown included (``None``: before any
    cell ran); for nbformat."""
    code_cell: int | None = None
    """The failing cell's 1-based number among the non-empty code cells: how ``status`` numbers cells
    everywhere (``code cell 3 (line 120)``). ``None`` in records written before it was kept."""
    line: int | None = None
    """1-based line in the ``.py`` file where the failing cell starts."""
    traceback: list[str] = field(default_factory=list)
    cell_source: str | None = None
    machine: str | None = None
    """The machine it failed on (:func:`machine_name`); ``None`` in records written before the store
    kept a record per machine."""

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict, where: str = "failed.json") -> FailureRecord:
        """Raises: ValueError naming ``where`` when a required key is missing."""
        known = {f.name for f in dataclasses.fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise ValueError(f"{where}: not a failure record: {exc}") from exc

    def summary(self) -> str:
        """``code cell 3 (line 143): RuntimeError: ...``, numbered as a stale result's reasons are."""
        where = f"code cell {self.code_cell}" if self.code_cell is not None else f"cell {self.cell_index}"
        if self.line:
            where += f" (line {self.line})"
        return f"{where}: {self.ename}: {self.evalue}"
