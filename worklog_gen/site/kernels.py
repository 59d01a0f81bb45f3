"""The Kernels page: every topic notebook's headline figures, and a roofline of every kernel per GPU.

Built from the freeze store (:mod:`worklog_gen.freeze.store`) without executing anything:
headline figures from each entry's record, roofline points from its ``data/roofline.json``
(:func:`worklog_gen.kit.roofline.load_roofline`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from worklog_gen.freeze import store
from worklog_gen.freeze.render import RenderedPage, headline_table, table_cell
from worklog_gen.paths import inside
from worklog_gen.site import layout as paths

ROOFLINE = "kernels/roofline"
"""Stem of the combined roofline's chart files, beside the Kernels page."""


def _section(topic_id: str, title: str, st: store.NotebookStatus) -> str:
    link = f"[{table_cell(title)}]({paths.topic_page(topic_id)})"
    record = st.record
    if record is None:
        return f"### {link}\n\nNot executed yet: `worklog-gen execute {st.path}`."
    body = headline_table(record) if record.headline else "No headline figures."
    return f"### {link}\n\n{table_cell(record.device_label)}, {record.executed_at[:10]}, **{st.state}**\n\n{body}"


def _roofline_groups(topics, statuses, warnings: list[str]) -> list[tuple]:
    """Every notebook's roofline points, grouped by the device their roofs were measured on, in
    the order the devices first appear: ``(ceilings, points, plotted topic links)`` per device.
    A notebook with an unreadable file is left out with a warning."""
    from worklog_gen.kit.roofline import load_roofline

    groups: dict[str, tuple] = {}
    for (topic_id, title, _), st in zip(topics, statuses):
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
        plotted.append(f"[{table_cell(title)}]({paths.topic_page(topic_id)})")
    return list(groups.values())


def kernels_page(topics: list[tuple[str, str, Path]], store_dir: Path, root: Path) -> RenderedPage:
    """The Kernels page (:data:`~worklog_gen.site.layout.KERNELS_PAGE`): every notebook's headline
    figures with GPU, date and state, and a roofline per GPU with every kernel variant measured on
    it, drawn (:func:`worklog_gen.kit.charts.roofline_chart`) as the chart files
    ``kernels/roofline.vega.json`` and ``.vega.svg``, ``kernels/roofline-2.*`` for a second GPU, and so
    on. ``topics`` holds ``(topic_id, title,
    notebook)``; paths are relative to ``root`` unless absolute.

    Raises:
        ValueError: a notebook or a store record cannot be read (file named).
    """
    root = Path(root)
    store_dir = store_dir if Path(store_dir).is_absolute() else root / store_dir
    statuses = [store.notebook_state(notebook, root, store_dir) for _, _, notebook in topics]
    warnings: list[str] = []
    parts = ["# Kernels", "The headline figures of every topic notebook, from its frozen result, "
             "with the device, the date and the state of the run.", "## Headline figures",
             *(_section(topic_id, title, st) for (topic_id, title, _), st in zip(topics, statuses))]
    groups = _roofline_groups(topics, statuses, warnings)
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
