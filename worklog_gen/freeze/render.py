"""A frozen notebook as a topic page that reads like a lesson, without executing anything.

Reads the freeze store (:mod:`worklog_gen.freeze.store`); imports neither torch nor triton.
The page, top to bottom:

1. the notebook's ``# title`` and the rest of its first markdown cell: what the reader will learn;
2. **Results**: a table of the run's headline figures, generated from the frozen record (never
   typed by hand): each with its value, its goal or prediction (met or missed), the baseline it
   is measured against, and the GPU and date under it (:func:`results_table`); when the store
   holds records of several machines, the page shows the primary machine's run, and the table has
   a value column per machine and a ratio column per other machine;
3. where the result comes from (GPU, driver, versions, date, source hash), folded while fresh,
   open when stale or failed (:func:`provenance`);
4. the notebook, folded where its author says (:mod:`worklog_gen.freeze.cells`).

When the code of the current source equals the frozen code (the source hash's normalised syntax
trees), the current cells are shown with the frozen outputs, so prose, comments and fold tags
change without a GPU run (:func:`merge_current_source`).
"""

from __future__ import annotations

import copy
import html
import json
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from worklog_gen.freeze import store as freeze
from worklog_gen.freeze.cells import details, downloadable_notebook, notebook_markdown
from worklog_gen.freeze.record import FreezeRecord, Headline, NotebookState
from worklog_gen.freeze.source_hash import code_cells, code_fingerprint, normalise_source, read_notebook
from worklog_gen.freeze.store import NotebookStatus
from worklog_gen.kit.notebook import HEADLINE_FILE
from worklog_gen.paths import OutsideFolder, inside


@dataclass
class RenderedPage:
    """Markdown for one page plus the files it references.

    ``files`` maps a path relative to the page's own folder (``vector-add/fig-3-1.png``)
    to its bytes; ``warnings`` are messages such as ``notebook notebooks/x.py is stale``
    that the plugin logs at WARNING level (so ``--strict`` fails).
    """

    markdown: str
    files: dict[str, bytes] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Messages the plugin logs at INFO: a notebook never executed (a new site's starter topic)."""


# --- markdown helpers ----------------------------------------------------------------------


def table_cell(text: str) -> str:
    """``text`` safe inside a markdown table cell: one line, markup characters escaped."""
    text = html.escape(str(text), quote=False).replace("\n", " ")
    for ch in "\\`*_[]|":
        text = text.replace(ch, "\\" + ch)
    return text


def tidy(markdown: str) -> str:
    """Collapse runs of blank lines to one, except inside code blocks and raw HTML
    (their line ranges found with markdown-it); other lines are kept as they are."""
    from markdown_it import MarkdownIt

    lines = markdown.split("\n")
    keep: set[int] = set()
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type in ("fence", "code_block", "html_block") and token.map:
            keep.update(range(*token.map))
    out: list[str] = []
    for i, line in enumerate(lines):
        if i not in keep and not line.strip():
            if not out or not out[-1].strip():
                continue
            line = ""
        out.append(line)
    return "\n".join(out).strip("\n") + "\n"


def number(value) -> str:
    """A figure for a table: 4 significant figures; thousands grouped rather than in exponent form."""
    if not isinstance(value, (int, float)):
        return table_cell(value)
    return f"{value:,.0f}" if 1e4 <= abs(value) < 1e15 else f"{value:,.4g}"


RATIO_UNITS = ("x", "fraction")
"""Headline units that are ratios: a speed-up over a baseline, a fraction of a roof."""


def figure(value, unit: str) -> str:
    """A measured headline figure for a table: a ratio (:data:`RATIO_UNITS`) to 3 decimals
    (``0.956``, ``1.632``, ``43.817``), so that a column of ratios reads alike and 0.998 is not
    rounded up to a goal of 1; any other figure as :func:`number` writes it."""
    if unit in RATIO_UNITS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:,.3f}"
    return number(value)


def _with_unit(value: float, unit: str, *, measured: bool = True) -> str:
    """``value`` with its unit (``0.956×``, ``571 TFLOP/s``); a measured figure by :func:`figure`,
    a goal (``measured=False``) as the author wrote it (:func:`number`)."""
    text = figure(value, unit) if measured else number(value)
    if unit == "x":
        return f"{text}×"
    return f"{text} {table_cell(unit)}".strip()


def _goal(h: Headline, unit: bool = True) -> str:
    """``≥ 1.05×, met``: the goal (with its unit, or only the ``×`` of a ratio without ``unit``) and the verdict."""
    if h.goal is None:
        return "—"
    verdict = "met" if h.met else "**missed**"
    goal = _with_unit(h.goal, h.unit, measured=False) if unit or h.unit == "x" else number(h.goal)
    return f"{h.goal_op.replace('>=', '≥').replace('<=', '≤')} {goal}, {verdict}"


def _goals(records: list[FreezeRecord], name: str, labels: list[str]) -> str:
    """The goal of headline ``name`` and whether each machine's run met it: one verdict when they
    agree (:func:`_goal`); one goal and a verdict per machine, in the order of the value columns,
    when every machine's run set the same goal (``≥ 1.05×: met, **missed**``); each run's goal and
    verdict in the order of the value columns, the unit once, when every run set a goal but not the
    same one (``≥ 0.9 fraction, met; ≥ 0.85, met``); else the verdict of each machine (``labels``, in
    ``records``' order) that holds the figure, named, each against the goal its own run set."""
    held = [(label, r.headline[name]) for label, r in zip(labels, records) if name in r.headline]
    with_goal = [(label, h) for label, h in held if h.goal is not None]
    if len({(h.goal_op, h.goal, h.met) for _, h in with_goal}) <= 1:
        return _goal(held[0][1])
    if len({(h.goal_op, h.goal) for _, h in with_goal}) == 1 and len(with_goal) == len(records):
        # one goal: its verdicts in the order of the value columns, short enough not to wrap
        goal = _goal(with_goal[0][1]).rsplit(", ", 1)[0]
        return f"{goal}: " + ", ".join("met" if h.met else "**missed**" for _, h in with_goal)
    if len(with_goal) == len(records):
        # a goal per run (a goal per number of GPUs): each with its verdict, in column order, the unit once
        return "; ".join(_goal(h, unit=i == 0) for i, (_, h) in enumerate(with_goal))
    return "; ".join(f"{_goal(h)} on {label}" for label, h in with_goal)


def short_machine(name: str) -> str:
    """A machine's name for a column header: the GPU model without the vendor (``NVIDIA H100 80GB
    HBM3`` -> ``H100``, ``2 × NVIDIA H200, NVLink NV18`` -> ``2 × H200``): the first word holding a
    digit; the name itself for a CPU or a name without such a word."""
    if name.startswith("CPU"):
        return name
    count, sep, gpu = name.partition(",")[0].rpartition(" × ")
    words = [w for w in gpu.split() if w.upper() not in ("NVIDIA", "GEFORCE", "TESLA", "QUADRO")]
    model = next((w for w in words if any(ch.isdigit() for ch in w)), None)
    if model is None:
        return name
    return f"{count} × {model}" if sep else model


def machine_labels(names: list[str]) -> list[str]:
    """Column headers for machines, in order: their :func:`short_machine` names, or their full names
    when two short names would be the same (an H100 PCIe beside an H100 SXM)."""
    short = [short_machine(n) for n in names]
    return short if len(set(short)) == len(short) else list(names)


def ratio_text(primary: Headline | None, other: Headline | None) -> str:
    """``other`` ÷ ``primary`` to 3 decimals with ``×`` (``1.433×``), or ``—`` when either is
    missing or the primary is zero."""
    if primary is None or other is None or not primary.value:
        return "—"
    return f"{other.value / primary.value:,.3f}×"


def _headline_names(records: list[FreezeRecord], order: list[str] | None = None) -> list[str]:
    """Headline names: ``order`` first (those any record holds), then each record's in turn."""
    names = [n for n in order or [] if any(n in r.headline for r in records)]
    for r in records:
        names += [n for n in r.headline if n not in names]
    return names


def _first(records: list[FreezeRecord], name: str) -> Headline:
    return next(r.headline[name] for r in records if name in r.headline)


def headline_label(records: list[FreezeRecord], name: str) -> str:
    """The table cell naming headline ``name`` across machines' ``records``: its label (the
    name in code where none has one). Where the machines' runs label it differently, as a
    figure about "1 → 2 GPUs" on one machine and "1 → 4 GPUs" on another, the clauses they
    share (up to a comma) once and then each run's own ending, in the records' order, joined by
    " / " ("Scaling efficiency, 1 → 2 GPUs / 1 → 4 GPUs"), so that no column reads under another
    machine's words."""
    labels = [x for x in dict.fromkeys(r.headline[name].label for r in records if name in r.headline) if x]
    if not labels:
        return f"`{name}`"
    if len(labels) == 1:
        return table_cell(labels[0])
    shared = os.path.commonprefix(labels)
    shared = shared[:shared.rfind(", ") + 2] if ", " in shared else ""  # whole clauses only
    return table_cell(shared + " / ".join(x[len(shared):] for x in labels))


def headline_table(record: FreezeRecord, others: list[FreezeRecord] = ()) -> str:
    """The record's headline figures as a markdown table: what each is (its label, else its
    name), value (:func:`figure`), unit, how it was measured. With ``others`` (other machines'
    records of the same notebook), one value column per machine, ``record``'s first, and one
    column per other machine with its value ÷ the first's (``H200 / H100``)."""
    records = [record, *others]
    if not others:
        rows = ["| Figure | Value | Unit | Description |", "| --- | ---: | --- | --- |"]
        rows += [f"| {table_cell(h.label) if h.label else f'`{name}`'} | {figure(h.value, h.unit)} "
                 f"| {table_cell(h.unit)} | {table_cell(h.description)} |"
                 for name, h in sorted(record.headline.items())]
        return "\n".join(rows)
    labels = [table_cell(x) for x in machine_labels([r.machine_name for r in records])]
    ratios = [f"{other} / {labels[0]}" for other in labels[1:]]
    rows = ["| Figure | " + " | ".join(labels + ratios) + " | Unit | Description |",
            "| --- | " + " | ".join(["---:"] * (len(labels) + len(ratios))) + " | --- | --- |"]
    for name in sorted(_headline_names(records)):
        h = _first(records, name)
        values = [figure(r.headline[name].value, h.unit) if name in r.headline else "—" for r in records]
        quotients = [ratio_text(record.headline.get(name), r.headline.get(name)) for r in others]
        rows.append(f"| {headline_label(records, name)} | " + " | ".join(values + quotients)
                    + f" | {table_cell(h.unit)} | {table_cell(h.description)} |")
    return "\n".join(rows)


def recorded_order(entry: Path) -> list[str]:
    """Headline names in the order the notebook recorded them: the keys of the entry's
    ``data/headline.json``, as :func:`worklog_gen.kit.notebook.headline` wrote it (``record.json``
    files written before this order was kept hold their headlines sorted by name). Empty when the file is missing or unreadable."""
    try:
        return list(json.loads((entry / "data" / HEADLINE_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return []


def results_table(record: FreezeRecord, order: list[str] | None = None, others: list[FreezeRecord] = (),
                  stale: Collection[str] = ()) -> str:
    """**Results** first on a topic page, from the frozen record: one row per headline figure,
    in ``order`` (names; the rest follow as the record holds them): what it is (its label), the
    value, the goal or prediction with met or missed, and the baseline it is measured against;
    then the GPU and the date of the run. Empty without headline figures.

    With ``others`` (other machines' records of the notebook), the value is one column per machine,
    ``record``'s (the primary machine's) first, followed by one column per other machine with its
    value ÷ the primary's (``H200 / H100``, :func:`ratio_text`); the goal says met or missed for each
    machine when their runs disagree (:func:`_goals`); the baseline is the primary's (another
    machine's where the primary lacks that figure); the line under the table names every machine
    and date. An other machine named in ``stale`` (machine names whose record no longer matches the
    code) has "(stale)" after its column's name, and the line under the table says its run was of
    older code, so that no figure of older code reads as the current code's."""
    records = [record, *others]
    if not any(r.headline for r in records):
        return ""
    when = f"*Measured on {table_cell(record.device_label)}, {record.executed_at[:10]}"
    if not others:
        rows = ["| Result | Value | Goal | Measured against |", "| --- | ---: | --- | --- |"]
    else:
        labels = [table_cell(x) for x in machine_labels([r.machine_name for r in records])]
        ratios = [f"{other} / {labels[0]}" for other in labels[1:]]
        columns = labels[:1] + [f"{x} (stale)" if r.machine_name in stale else x for x, r in zip(labels[1:], others)]
        rows = ["| Result | " + " | ".join(columns + ratios) + " | Goal | Measured against |",
                "| --- | " + " | ".join(["---:"] * (len(labels) + len(ratios))) + " | --- | --- |"]
        when += " (the run this page shows); " + "; ".join(
            f"{table_cell(r.machine_name)}, {r.executed_at[:10]}"
            + (" (stale: a run of older code)" if r.machine_name in stale else "") for r in others)
    for name in _headline_names(records, order):
        h = _first(records, name)
        label = headline_label(records, name)
        values = [_with_unit(r.headline[name].value, r.headline[name].unit) if name in r.headline else "—"
                  for r in records]
        values += [ratio_text(record.headline.get(name), r.headline.get(name)) for r in others]
        goal = _goals(records, name, labels) if others else _goal(h)
        rows.append(f"| {label} | {' | '.join(values)} | {goal} | {table_cell(h.baseline or '—')} |")
    source = "their frozen runs, the first one's below" if others else "the frozen run below"
    return "## Results\n\n" + "\n".join(rows) + f"\n\n{when}; every figure comes from {source}.*"


def merge_current_source(current, frozen):
    """The frozen notebook as the current source writes it, when the code of both is the same.

    When the current notebook's code cells have the same :func:`code_fingerprint` as the frozen
    ones, in order, the result holds the current cells (markdown, code text with its comments,
    tags and metadata) with the frozen cells' outputs: prose, comments and fold tags then show
    without a GPU run. Otherwise it is ``frozen`` as it ran.

    Returns ``(notebook, merged)``. ``current`` may be ``None`` (no source file).
    Neither argument is modified.
    """
    if current is None:
        return frozen, False
    executed, now = code_cells(frozen), code_cells(current)
    if [code_fingerprint(c.source) for c in executed] != [code_fingerprint(c.source) for c in now]:
        return frozen, False
    ran = iter(executed)
    nb = copy.deepcopy(frozen)
    cells = []
    for cell in current.cells:
        if cell.cell_type != "code":
            cells.append(copy.deepcopy(cell))
        elif normalise_source(cell.source):
            done = next(ran)
            merged = copy.deepcopy(cell)
            merged.outputs = copy.deepcopy(done.get("outputs", []))
            merged.execution_count = done.get("execution_count")
            cells.append(merged)
    nb.cells = cells
    return nb, True


def split_intro(nb) -> tuple[str, str, object]:
    """The notebook's ``# title`` and the rest of its first markdown cell (what the reader will
    learn), taken out of ``nb`` so that the results can go right under them. Headings found with
    markdown-it; a setext title is written as an ATX one. ``("", "", nb)`` without a first
    markdown cell."""
    from markdown_it import MarkdownIt

    if not nb.cells or nb.cells[0].cell_type != "markdown":
        return "", "", nb
    source = nb.cells[0].source
    tokens = MarkdownIt("commonmark").parse(source)
    heading = ""
    lines = source.split("\n")
    if tokens and tokens[0].type == "heading_open" and tokens[0].tag == "h1" and tokens[0].map is not None:
        start, end = tokens[0].map
        heading = "\n".join(lines[start:end]).strip()
        if not heading.startswith("# "):
            heading = "# " + tokens[1].content
        lines = lines[:start] + lines[end:]
    nb = copy.deepcopy(nb)
    nb.cells = nb.cells[1:]
    return heading, "\n".join(lines).strip("\n"), nb


# --- where the result comes from ------------------------------------------------------------


def _when(stamp: str | None) -> str:
    return str(stamp or "?").replace("T", " ").replace("Z", " UTC")


def _device(record: FreezeRecord) -> str:
    if record.mode == "gpu":
        nccl = f", NCCL {record.nccl}" if record.gpus_used > 1 and record.nccl else ""
        return (f"{table_cell(record.device_label)}, driver {table_cell(record.driver or 'unknown')}, "
                f"CUDA {table_cell(record.cuda or 'unknown')}{nccl}")
    if record.mode == "interpret":
        return "the CPU, under the Triton interpreter (`TRITON_INTERPRET=1`), not a GPU"
    return "the CPU (no GPU was found)"


def _state_note(st: NotebookStatus, merged: bool) -> tuple[str, str, str, list[str]]:
    """Admonition kind, title, the sentence saying where the result stands, and the build warnings."""
    rel, record = st.path, st.record
    short, now = record.source_hash[:12], (st.current_hash or "")[:12]
    if st.state is NotebookState.FRESH:
        return "info", "Frozen result: fresh", ("The notebook's code is unchanged since this run (fresh)"
                                                        + ("; the prose is the current one." if merged else ".")), []
    if st.state is NotebookState.STALE:
        why = "; ".join(st.reasons)
        return ("warning", "Frozen result: stale",
                f"The code has changed since this run ({why}; its hash is now `{now}`), so this page shows the "
                f"notebook as it ran. Run `worklog-gen execute {rel}` on a GPU to refresh it.",
                [f"notebook {rel} is stale ({why}): its frozen result is for source hash {short}, the source is "
                 f"now {now}; run worklog-gen execute {rel}"])
    if st.state is NotebookState.FAILED:
        failure = st.failure
        older = "the same code (fresh)" if record.source_hash == st.current_hash else "older code (stale)"
        return ("danger", "Frozen result: the last run failed",
                f"The last run of the current code failed at {failure.summary()} on {_when(failure.failed_at)}. "
                f"This page shows the previous run, of {older}.",
                [f"notebook {rel} failed at {failure.summary()}; the page shows the previous frozen result; "
                 f"fix it and run worklog-gen execute {rel}"])
    return ("warning", "Frozen result: source missing", f"The source `{rel}` no longer exists; this is its last "
            "frozen run.", [f"notebook {rel} does not exist; its page shows an old frozen result"])


def provenance(st: NotebookStatus, links: str, merged: bool,
               others: list[NotebookStatus] = ()) -> tuple[str, list[str]]:
    """The box that says where a topic page's result comes from (GPU, driver, CUDA, versions,
    date, short source hash, fresh or not in words), and the build warnings. Closed while the
    result is fresh; open (and a warning for the build) when it is stale, failed or orphaned.
    With ``others`` (the other machines' statuses), it says that the page shows the primary
    machine's run and lists the others with their dates and states; only the primary's state
    makes a build warning."""
    record = st.record
    versions = ", ".join(f"{name} {value}" for name, value in
                         (("torch", record.torch), ("triton", record.triton), ("Python", record.python),
                          ("worklog-gen", record.worklog_gen)) if value)
    facts = [f"- **Ran on:** {_device(record)}",
             f"- **Date:** {_when(record.executed_at)}, {record.wall_seconds:.0f} s",
             f"- **Versions:** {versions or 'not recorded'}",
             f"- **Source hash:** `{record.source_hash[:12]}`"]
    if others:
        facts.insert(0, f"- **Shown:** the run on {table_cell(record.machine_name)}, the primary machine "
                        "(the `primary_machine` setting, else the newest run)")
        facts.append("- **Other machines:** " + "; ".join(
            f"{table_cell(o.machine or '?')}, {_when(o.record.executed_at if o.record else None)} ({o.state})"
            for o in others))
    kind, title, note, warnings = _state_note(st, merged)
    notes = [note]
    if record.mode != "gpu":
        notes.insert(0, "This run checked correctness only: its timings, bandwidths and TFLOP/s say "
                        "nothing about a GPU.")
    body = "\n\n".join(["\n".join(facts), *notes, links])
    if st.state is NotebookState.FRESH and record.mode == "gpu":
        return details(body, title, kind).rstrip("\n"), warnings
    indented = "\n".join(("    " + line) if line.strip() else "" for line in body.split("\n"))
    return f'!!! {kind} "{title}"\n\n{indented}', warnings


# --- topic pages ---------------------------------------------------------------------------


def _resolve(root: Path, path: str | Path) -> Path:
    path = Path(path)
    return path if path.is_absolute() else root / path


def _missing_page(files_dir: str, st: NotebookStatus, store: Path, root: Path,
                  source: Path) -> RenderedPage:
    rel, stem = st.path, source.stem
    files: dict[str, bytes] = {}
    store_rel = freeze.relative_path(store, root)
    heading, intro, body = "", "", ""
    if st.source_exists:
        text = (f"`{rel}` has no frozen result in `{store_rel}/` yet, so this page shows its code "
                f"without outputs. Produce it on a GPU machine with\n\n"
                f"        worklog-gen execute {rel}\n\n"
                f"    (or on a CPU, correctness only, with `TRITON_INTERPRET=1 worklog-gen execute {rel}`) "
                f"and commit `{store_rel}/{stem}/`.")
        heading, intro, nb = split_intro(read_notebook(source))
        body, files = notebook_markdown(nb, files_dir)
        files[f"{files_dir}/{source.name}"] = source.read_bytes()
        text += f"\n\n    [Source ({source.name})]({files_dir}/{source.name})"
    else:
        text = f"The notebook `{rel}` does not exist and has no frozen result; check the topic's `notebook:`."
    box = f'!!! {"note" if st.source_exists else "warning"} "Not executed yet"\n    {text}'
    markdown = tidy("\n\n".join(p for p in (heading, intro, box, body.strip()) if p))
    if st.state is NotebookState.FAILED:
        return RenderedPage(markdown, files, [f"notebook {rel} failed at {st.failure.summary()} and has no frozen "
                                              f"result; fix it and run worklog-gen execute {rel}"])
    if st.source_exists:  # never executed (a new topic): the page says so; no warning, so --strict builds
        return RenderedPage(markdown, files, notes=[f"notebook {rel} has no frozen result yet; its page shows "
                                                    f"the code without outputs (worklog-gen execute {rel})"])
    return RenderedPage(markdown, files, [f"notebook {rel} does not exist; check the topic's notebook: option"])


def render_topic(notebook: Path, store_dir: Path, root: Path, *, files_dir: str,
                 primary: str | None = None) -> RenderedPage:
    """Render the frozen result of ``notebook`` (path relative to ``root``) as the body of its
    topic page (see the module docstring), from the record of the ``primary`` machine (the
    ``primary_machine`` setting, :func:`~worklog_gen.freeze.store.primary_status`; by default the
    newest record), with the other machines' figures beside it in the results table and their
    runs listed in the provenance box; the page's files go under ``files_dir``, relative to
    the page's folder: images and charts, and for download ``<files_dir>/<stem>.ipynb``
    (executed) and ``<files_dir>/<stem>.py`` (source). ``store_dir`` is relative to ``root``
    unless absolute.

    A stale or failed result, or a notebook that does not exist, adds a message to ``warnings``;
    a notebook never executed gives a page of its code that says how to produce the result, and a
    message in ``notes`` (so that a new site builds with ``--strict`` before its first GPU run).
    Nothing is executed.

    Raises:
        ValueError: the notebook or the store entry cannot be read, or the executed notebook is a
            link that leads outside the store (file named).
    """
    import nbformat

    root = Path(root)
    store = _resolve(root, store_dir)
    source = _resolve(root, notebook)
    stem = source.stem
    states = freeze.notebook_states(source, root, store)
    st = freeze.primary_status(states, primary)
    others = [o for o in states if o is not st and o.record is not None]
    ipynb = st.entry / f"{stem}.ipynb"
    if st.record is None or not ipynb.is_file():
        return _missing_page(files_dir, st, store, root, source)
    try:  # the executed notebook is published: it must be a file of the store
        ipynb = inside(ipynb, store)
    except OutsideFolder as exc:
        raise ValueError(f"{st.entry / f'{stem}.ipynb'}: refused: {exc}") from exc
    raw = ipynb.read_bytes()
    try:
        frozen = nbformat.reads(raw.decode("utf-8"), as_version=4)
    except Exception as exc:  # nbformat raises several types for a damaged file
        raise ValueError(f"{ipynb}: cannot read the frozen notebook: {exc}") from exc
    download = downloadable_notebook(frozen, raw)
    current = read_notebook(source) if st.source_exists else None
    nb, merged = merge_current_source(current, frozen)
    heading, intro, nb = split_intro(nb)
    body, files = notebook_markdown(nb, files_dir)

    files[f"{files_dir}/{stem}.ipynb"] = download
    links = f"[Executed notebook ({stem}.ipynb)]({files_dir}/{stem}.ipynb)"
    if st.source_exists:
        files[f"{files_dir}/{source.name}"] = source.read_bytes()
        links += f" · [Source ({source.name})]({files_dir}/{source.name})"
    box, warnings = provenance(st, links, merged, others)
    notes = [f"notebook {st.path}: the record of {o.machine} is {o.state}; run worklog-gen execute {st.path} on it"
             for o in states if o is not st and o.machine and o.state is not NotebookState.FRESH]
    results = results_table(st.record, recorded_order(st.entry), [o.record for o in others],
                            stale=freeze.stale_machines(others))
    markdown = "\n\n".join(p for p in (heading, intro, results, box, body.strip()) if p)
    return RenderedPage(tidy(markdown), files, warnings, notes)
