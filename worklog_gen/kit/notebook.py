"""Helpers that a topic notebook calls while it runs: where to write, and what to record.

``worklog-gen execute`` runs each notebook with ``WORKLOG_GEN_OUTPUT`` pointing at a
fresh folder; everything written there (headline figures, measurement tables) is
moved into the freeze store only if the whole notebook succeeds. Run by hand, a
notebook writes to ``./_output/<notebook stem>/`` instead.

This module imports neither torch nor triton.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

OUTPUT_ENV = "WORKLOG_GEN_OUTPUT"
"""Folder the running notebook writes its data to (set by ``worklog-gen execute``)."""
NOTEBOOK_ENV = "WORKLOG_GEN_NOTEBOOK"
"""Stem of the running notebook, for the default output folder."""
HEADLINE_FILE = "headline.json"


def interpret_mode(environ: Mapping[str, str] | None = None) -> bool:
    """True under ``TRITON_INTERPRET=1`` (in ``environ``, default this process's environment):
    the notebook runs on the CPU at small, irregular sizes, checks correctness and skips
    benchmarks and GPU ceilings."""
    return (os.environ if environ is None else environ).get("TRITON_INTERPRET", "0") not in ("", "0")


def output_dir() -> Path:
    """The folder this run's data goes to; created if needed."""
    out = os.environ.get(OUTPUT_ENV)
    path = Path(out) if out else Path("_output") / os.environ.get(NOTEBOOK_ENV, "notebook")
    path.mkdir(parents=True, exist_ok=True)
    return path


def headline(name: str, value: float, unit: str = "", description: str = "", *, label: str = "",
             goal: float | None = None, goal_op: str = ">=", baseline: str = "") -> float:
    """Record a headline figure of this notebook, and return ``value``. The topic page opens with
    a results table of them, in the order recorded; the Kernels page and ``worklog-gen status``
    list them too.

    Args:
        name: stable identifier, e.g. ``add_fp32_large_vs_torch``.
        value: a finite number measured in this run.
        unit: e.g. ``"x"`` for a ratio, ``"GB/s"``, ``"TFLOP/s"``, ``"fraction"``.
        description: one line saying how it was measured.
        label: what it is, in words, for the results table.
        goal: the goal or the prediction written before measuring, in ``unit``; the table says
            whether it is met.
        goal_op: ``">="`` (the value must reach the goal) or ``"<="``.
        baseline: what it is measured against, e.g. ``"torch.add, paired"``.

    Raises:
        ValueError: ``value`` or ``goal`` is not a finite number, or ``goal_op`` is neither.
    """
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"headline {name!r} is not finite: {value}")
    if goal is not None and not math.isfinite(float(goal)):
        raise ValueError(f"headline {name!r}: goal is not finite: {goal}")
    if goal_op not in (">=", "<="):
        raise ValueError(f"headline {name!r}: goal_op must be '>=' or '<=', not {goal_op!r}")
    path = output_dir() / HEADLINE_FILE
    figures = json.loads(path.read_text()) if path.exists() else {}
    figures[name] = {"value": value, "unit": unit, "description": description, "label": label,
                     "goal": None if goal is None else float(goal), "goal_op": goal_op, "baseline": baseline}
    path.write_text(json.dumps(figures, indent=2))  # in the order recorded: the results table's
    return value


def save_data(name: str, data: Any) -> Path:
    """Save measurements so that plots can be redrawn without a GPU.

    ``name`` ending in ``.csv`` takes an iterable of row mappings (one header from
    the union of keys); anything else is written as JSON (``.json`` is appended if
    missing). Returns the path written.
    """
    out = output_dir()
    if name.endswith(".csv"):
        rows = [dict(r) for r in data]
        keys: list[str] = []
        for row in rows:
            keys.extend(k for k in row if k not in keys)
        path = out / name
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=keys)
            writer.writeheader()
            writer.writerows(rows)
        return path
    path = out / (name if name.endswith(".json") else name + ".json")
    path.write_text(json.dumps(data, indent=2, default=_jsonable))
    return path


def load_data(folder: str | Path, name: str) -> Any:
    """Read back what :func:`save_data` wrote into ``folder`` (CSV as a list of dicts
    with numbers parsed)."""
    path = Path(folder) / name
    if name.endswith(".csv"):
        with path.open(newline="") as fh:
            return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(fh)]
    if not name.endswith(".json"):
        path = path.with_name(name + ".json")
    return json.loads(path.read_text())


def _number(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(obj)
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, Iterable):
        return list(obj)
    raise TypeError(f"cannot save {type(obj).__name__} as JSON")
