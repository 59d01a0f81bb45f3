"""The Kernels page: every topic notebook's headline figures, across machines, what scales with
what, and a roofline of every kernel per GPU.

Built from the freeze store (:mod:`worklog_gen.freeze.store`) without executing anything:
headline figures from each machine's record, roofline points from its ``data/roofline.json``
(:func:`worklog_gen.kit.roofline.load_roofline`), datasheet peaks from
:data:`worklog_gen.kit.measure.DATASHEETS` (read, never measured here).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from worklog_gen.freeze import store
from worklog_gen.freeze.record import FreezeRecord
from worklog_gen.freeze.render import (
    RATIO_UNITS,
    RenderedPage,
    _with_unit,
    headline_label,
    headline_table,
    machine_labels,
    ratio_text,
    table_cell,
)
from worklog_gen.paths import inside
from worklog_gen.site import layout as paths

ROOFLINE = "kernels/roofline"
"""Stem of the combined roofline's chart files, beside the Kernels page."""


@dataclass
class _Topic:
    """One topic on the Kernels page: the status of its primary machine and the other machines'."""

    id: str
    title: str
    primary: store.NotebookStatus
    others: list[store.NotebookStatus]

    @property
    def link(self) -> str:
        return f"[{table_cell(self.title)}]({paths.topic_page(self.id)})"

    @property
    def records(self) -> list[FreezeRecord]:
        return [st.record for st in (self.primary, *self.others) if st.record is not None]

    @property
    def stale(self) -> set[str]:
        """The machines whose record is of older code than the notebook's current code."""
        return store.stale_machines((self.primary, *self.others))


def _section(topic: _Topic) -> str:
    st, record = topic.primary, topic.primary.record
    if record is None:
        return f"### {topic.link}\n\nNot executed yet: `worklog-gen execute {st.path}`."
    others = [o.record for o in topic.others]
    body = headline_table(record, others) if any(r.headline for r in topic.records) else "No headline figures."
    runs = "; ".join(f"{table_cell(o.record.device_label)}, {o.record.executed_at[:10]}, **{o.state}**"
                     for o in topic.others)
    return (f"### {topic.link}\n\n{table_cell(record.device_label)}, {record.executed_at[:10]}, **{st.state}**"
            + (f"; {runs}" if runs else "") + f"\n\n{body}")


def comparison_table(topics: list[_Topic]) -> str:
    """Every headline of every topic in one table, with a value column per machine (in the order
    machines first appear, each topic's primary first) and the ratio of each other machine's value
    to the primary's (:func:`~worklog_gen.freeze.render.ratio_text`). A value from a record of older
    code than the notebook's current code has "(stale)" after it. Empty unless some topic has
    records of two machines or more."""
    if not any(len(t.records) > 1 for t in topics):
        return ""
    machines = list(dict.fromkeys(r.machine_name for t in topics for r in t.records))
    labels = machine_labels(machines)
    label = dict(zip(machines, labels))
    rows = ["| Topic | Headline | " + " | ".join(table_cell(x) for x in labels) + " | Ratio to the primary |",
            "| --- | --- | " + " | ".join(["---:"] * len(labels)) + " | --- |"]
    for t in topics:
        records = t.records
        stale = t.stale
        names = list(dict.fromkeys(n for r in records for n in r.headline))
        for name in names:
            by_machine = {r.machine_name: r.headline.get(name) for r in records}
            values = [(_with_unit(by_machine[m].value, by_machine[m].unit) + (" (stale)" if m in stale else ""))
                      if by_machine.get(m) else "—" for m in machines]
            first = records[0]
            ratios = [f"{ratio_text(first.headline.get(name), r.headline.get(name))} "
                      f"({table_cell(label[r.machine_name])} / {table_cell(label[first.machine_name])})"
                      for r in records[1:] if name in r.headline and name in first.headline]
            rows.append(f"| {t.link} | {headline_label(records, name)} | " + " | ".join(values)
                        + f" | {'; '.join(ratios) or '—'} |")
    return "\n".join(rows)


def shared_headlines_table(topics: list[_Topic]) -> str:
    """The headlines that two topics or more share, side by side: a row per headline label and unit
    that more than one topic's primary record holds (its author's way of saying "the same measure":
    the three attention topics each have "Backward against cuDNN", say), a column per such topic in
    the topics' order, each value from that topic's primary record. Empty when no label is shared."""
    by_label: dict[tuple[str, str], dict[str, object]] = {}
    for t in topics:
        record = t.primary.record
        for h in (record.headline.values() if record is not None else ()):
            if h.label:
                by_label.setdefault((h.label, h.unit), {})[t.id] = h
    shared = {key: found for key, found in by_label.items() if len(found) > 1}
    if not shared:
        return ""
    columns = [t for t in topics if any(t.id in found for found in shared.values())]
    rows = ["| Headline | " + " | ".join(t.link for t in columns) + " |",
            "| --- | " + " | ".join(["---:"] * len(columns)) + " |"]
    for (label, _unit), found in shared.items():
        rows.append(f"| {table_cell(label)} | " + " | ".join(
            _with_unit(found[t.id].value, found[t.id].unit) if t.id in found else "—" for t in columns) + " |")
    return "\n".join(rows)


SCALING_TOLERANCE = 0.10
"""How close (relative) a measured ratio must be to a datasheet ratio to scale with it."""
TIME_UNITS = ("ns", "us", "µs", "μs", "ms", "s")
"""Headline units that are times: less is faster."""
SCALES = ("memory bandwidth", "compute", "neither", "not classified")
"""What a headline scales with (:func:`classify_scaling`), in the order the page lists them."""


def speed_ratio(a: float, b: float, unit: str) -> float | None:
    """How much faster machine B is than machine A by a headline of ``unit`` measured as ``a`` on A
    and ``b`` on B: ``b / a`` for a rate (a unit with ``/s``: GB/s, TFLOP/s), ``a / b`` for a time
    (:data:`TIME_UNITS`); ``None`` for a ratio to a baseline (``x``, ``fraction``: the card cancels
    out), any other unit (FLOP/byte) or a value that is not positive."""
    if unit in RATIO_UNITS or a <= 0 or b <= 0:
        return None
    if "/s" in unit:
        return b / a
    if unit in TIME_UNITS:
        return a / b
    return None


def classify_scaling(speed: float | None, bandwidth: float, compute: float,
                     tolerance: float = SCALING_TOLERANCE) -> str:
    """What a headline scales with (one of :data:`SCALES`), from ``speed`` (:func:`speed_ratio`,
    B over A) and the datasheets' ratios B over A of HBM bandwidth and of dense bf16 peak: the
    nearer of the two when it lies within ``tolerance`` (relative) of it, ``neither`` when it lies
    within neither (between the two, or beyond both: both limit it, or something else does, such
    as latency or the launch), ``not classified`` without a speed ratio."""
    if speed is None:
        return "not classified"
    off = {"memory bandwidth": abs(speed / bandwidth - 1), "compute": abs(speed / compute - 1)}
    nearest = min(off, key=off.get)
    return nearest if off[nearest] <= tolerance else "neither"


def _pairs(topics: list[_Topic]) -> dict[tuple[str, str], list[tuple[_Topic, FreezeRecord, FreezeRecord]]]:
    """(primary machine, other machine) -> [(topic, primary record, other record)], for the single-GPU
    GPU runs of machines with a known datasheet."""
    from worklog_gen.kit.measure import datasheet_for

    def single(r: FreezeRecord) -> bool:
        return r.mode == "gpu" and r.gpus_used <= 1 and bool(r.gpu) and datasheet_for(r.gpu) is not None

    pairs: dict[tuple[str, str], list] = {}
    for t in topics:
        records = t.records
        if not records or not single(records[0]):
            continue
        for other in records[1:]:
            if single(other) and other.machine_name != records[0].machine_name:
                pairs.setdefault((records[0].machine_name, other.machine_name), []).append((t, records[0], other))
    return pairs


def scaling_section(topics: list[_Topic]) -> str:
    """**What scales with what**, written from the records' own numbers: for each pair of
    single-GPU machines that some notebook was frozen on (its primary and another, both with a
    datasheet in :data:`worklog_gen.kit.measure.DATASHEETS`), each shared headline's measured speed
    ratio (:func:`speed_ratio`) held against the datasheets' ratios of HBM bandwidth and of dense
    bf16 peak (:func:`classify_scaling`). Ratios to a baseline on the same card and figures that
    are neither rates nor times are listed as not classified. A ratio that takes a record of older
    code than the notebook's current code has "(stale)" after it."""
    from worklog_gen.kit.measure import datasheet_for

    parts = ["## What scales with what",
             "Where a notebook was frozen on two single-GPU machines, each headline's measured ratio between "
             "them (the other machine over the primary; for a time the primary's over the other's, so that "
             "above 1 is always faster) is held against the datasheets' ratios of HBM bandwidth and of dense "
             f"bf16 peak. Within {SCALING_TOLERANCE:.0%} of the bandwidth ratio, a kernel scales with "
             f"**memory bandwidth**; within {SCALING_TOLERANCE:.0%} of the peak ratio, with **compute**; "
             "otherwise with **neither** (both limit it, or something else does: latency, the launch, "
             "the cache). A ratio to a baseline run on the same card (× torch, a fraction of a roof) cancels "
             "the card out, and a figure that is neither a rate nor a time (FLOP/byte) says nothing about "
             "speed: those are not classified."]
    pairs = _pairs(topics)
    if not pairs:
        parts.append("No notebook is frozen on two single-GPU machines with known datasheets yet: run "
                     "`worklog-gen execute` on a second one to compare them.")
        return "\n\n".join(parts)
    for (a_name, b_name), runs in pairs.items():
        a_sheet, b_sheet = datasheet_for(runs[0][1].gpu), datasheet_for(runs[0][2].gpu)
        bandwidth = b_sheet.hbm_gbps / a_sheet.hbm_gbps
        compute = b_sheet.bf16_tflops / a_sheet.bf16_tflops
        a_short, b_short = (table_cell(x) for x in machine_labels([a_name, b_name]))
        parts.append(f"### {b_short} / {a_short}")
        parts.append(f"The datasheets give {table_cell(b_sheet.name)} {bandwidth:.3f}× the HBM bandwidth of "
                     f"{table_cell(a_sheet.name)} ({b_sheet.hbm_gbps:,.0f} against {a_sheet.hbm_gbps:,.0f} GB/s) "
                     f"and {compute:.3f}× its dense bf16 peak ({b_sheet.bf16_tflops:,.1f} against "
                     f"{a_sheet.bf16_tflops:,.1f} TFLOP/s).")
        if abs(bandwidth / compute - 1) <= 2 * SCALING_TOLERANCE:
            parts.append("Those two ratios are too close to tell memory-bound kernels from compute-bound ones "
                         "on this pair.")
            continue
        rows = []
        for t, a, b in runs:
            for name, h in a.headline.items():
                if name not in b.headline:
                    continue
                speed = speed_ratio(h.value, b.headline[name].value, h.unit)
                kind = classify_scaling(speed, bandwidth, compute)
                old = " (stale)" if t.stale & {a.machine_name, b.machine_name} else ""
                rows.append((SCALES.index(kind), t, h.label or name, speed, kind, old))
        rows.sort(key=lambda row: row[0])  # stable: topics keep their order within a kind
        counts = {kind: sum(1 for row in rows if row[4] == kind) for kind in SCALES}
        parts.append("; ".join(f"{kind}: {counts[kind]}" for kind in SCALES).capitalize() + " headlines.")
        table = ["| Topic | Headline | Speed ratio | Scales with |", "| --- | --- | ---: | --- |"]
        table += [f"| {t.link} | {table_cell(label)} | {'—' if speed is None else f'{speed:.3f}×'}{old} | {kind} |"
                  for _, t, label, speed, kind, old in rows]
        parts.append("\n".join(table))
    return "\n\n".join(parts)


def _roofline_groups(topics: list[_Topic], warnings: list[str]) -> list[tuple]:
    """Every notebook's roofline points, of every machine it has a record of (its primary first),
    grouped by the device their roofs were measured on, in the order the devices first appear:
    ``(ceilings, points, plotted topic links)`` per device. A file that cannot be read is left out
    with a warning."""
    from worklog_gen.kit.roofline import load_roofline

    groups: dict[str, tuple] = {}
    for topic, st in ((t, st) for t in topics for st in (t.primary, *t.others)):
        topic_id, title = topic.id, topic.title
        path = st.entry / store.DATA_DIR / "roofline.json"
        if st.record is None or not path.is_file():
            continue
        try:
            these, roofs = load_roofline(inside(path, st.entry))
        except (OSError, ValueError) as exc:  # OutsideFolder is a ValueError
            warnings.append(f"Kernels page: roofline of {st.path} left out: {exc}")
            continue
        _, points, plotted = groups.setdefault(roofs.device, (roofs, [], []))
        points += [p if p.topic else dataclasses.replace(p, topic=topic_id) for p in these]
        link = f"[{table_cell(title)}]({paths.topic_page(topic_id)})"
        if link not in plotted:
            plotted.append(link)
    return list(groups.values())




def kernels_page(topics: list[tuple[str, str, Path]], store_dir: Path, root: Path,
                 primary: str | None = None) -> RenderedPage:
    """The Kernels page (:data:`~worklog_gen.site.layout.KERNELS_PAGE`): every notebook's headline
    figures with GPU, date and state, from the ``primary`` machine's record
    (:func:`~worklog_gen.freeze.store.primary_status`) beside the other machines' records; the
    headlines several topics share, side by side (:func:`shared_headlines_table`); when some
    notebook has records of several machines, every headline across machines in one table
    (:func:`comparison_table`); what scales with memory bandwidth, compute or neither
    (:func:`scaling_section`); and a roofline per GPU with every kernel variant measured on
    it, drawn (:func:`worklog_gen.kit.charts.roofline_chart`) as the chart files
    ``kernels/roofline.vega.json`` and ``.vega.svg``, ``kernels/roofline-2.*`` for a second GPU, and so
    on. ``topics`` holds ``(topic_id, title,
    notebook)``; paths are relative to ``root`` unless absolute.

    Raises:
        ValueError: a notebook or a store record cannot be read (file named).
    """
    root = Path(root)
    store_dir = store_dir if Path(store_dir).is_absolute() else root / store_dir
    picked = []
    for topic_id, title, notebook in topics:
        states = store.notebook_states(notebook, root, store_dir)
        first = store.primary_status(states, primary)
        picked.append(_Topic(topic_id, title, first, [s for s in states if s is not first and s.record is not None]))
    warnings: list[str] = []
    parts = ["# Kernels", "The headline figures of every topic notebook, from its frozen result, "
             "with the device, the date and the state of the run.", "## Headline figures",
             *(_section(t) for t in picked)]
    if shared := shared_headlines_table(picked):
        parts += ["## Side by side", "The headlines that several topics share (the same label and unit), each "
                  "from its topic's primary machine: one measure, several kernels.", shared]
    if comparison := comparison_table(picked):
        parts += ["## Across machines", "Every headline figure on every machine it was frozen on, with the "
                  "ratio of each other machine's value to the primary machine's.", comparison]
    parts.append(scaling_section(picked))
    groups = _roofline_groups(picked, warnings)
    files: dict[str, bytes] = {}
    if not groups:
        parts += ["## Roofline", "No notebook has saved roofline data yet (`data/roofline.json`)."]
        return RenderedPage("\n\n".join(parts) + "\n", files, warnings)
    from worklog_gen.kit.charts import chart_files, chart_image, roofline_chart

    parts.append("## Roofline" if len(groups) == 1 else "## Rooflines")
    if len(groups) > 1:
        parts.append("One roofline per GPU: a kernel is drawn against the roofs of the card it ran on.")
    for i, (ceilings, points, plotted) in enumerate(groups):
        stem = ROOFLINE if i == 0 else f"{ROOFLINE}-{i + 1}"
        chart = roofline_chart(points, ceilings, title=f"Every kernel variant: {ceilings.device}", series="topic")
        files.update(chart_files(chart, stem))
        parts += ([f"### {table_cell(ceilings.device)}"] if len(groups) > 1 else []) + [
            f"Every kernel variant of {', '.join(plotted)} against the roofs measured on "
            f"{table_cell(ceilings.device)}: memory roof from a device copy, compute roofs from `torch.matmul`. "
            "Hover a point to read it; click a topic in the legend to hide its points or show them again.",
            chart_image(f"Roofline of every kernel variant measured on {ceilings.device}, coloured by topic",
                        f"{stem}.vega.svg", files[f"{stem}.vega.svg"])]
    return RenderedPage("\n\n".join(parts) + "\n", files, warnings)
