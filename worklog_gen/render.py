"""Render frozen notebooks into site pages, without executing anything.

Reads the freeze store written by :mod:`worklog_gen.freeze`; imports neither torch
nor triton. Owned by the notebook-pipeline work; the plugin calls only the two
functions below.

A topic page is the frozen notebook converted by nbconvert's ``MarkdownExporter``
with a small template (:data:`TEMPLATE`): markdown cells as they are, code cells as
fenced ``python`` blocks, text outputs as fenced ``text`` blocks (long ones trimmed,
saying so), images as files beside the page (never base64), HTML passed through and
errors shown. When the code cells of the current source match the frozen ones, the
current markdown cells are used, so prose edits show without a GPU re-run.
Cells tagged ``remove-cell``, ``remove-input`` or ``remove-output`` lose that part.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from worklog_gen import freeze
from worklog_gen.source_hash import code_sources, normalise_source, read_notebook

MAX_OUTPUT_LINES = 60
"""Text outputs longer than this keep their first and last lines (see :func:`trim_output`)."""
MAX_OUTPUT_CHARS = 12_000
"""Text outputs longer than this many characters are cut too."""

TEMPLATE = r"""
{%- extends 'markdown/index.md.j2' -%}

{% block input %}
{{ cell.source | fence('python') }}
{% endblock input %}

{% block stream %}
{{ output.text | strip_ansi | fence('text') }}
{% endblock stream %}

{% block data_text scoped %}
{{ output.data['text/plain'] | strip_ansi | fence('text') }}
{% endblock data_text %}

{% block error %}
**{{ output.ename }}**: {{ output.evalue | strip_ansi }}

{{ output.traceback | join('\n') | strip_ansi | fence('text') }}
{% endblock error %}

{% block data_png %}
{{ output | image_link('image/png') }}
{% endblock data_png %}

{% block data_jpg %}
{{ output | image_link('image/jpeg') }}
{% endblock data_jpg %}

{% block data_svg %}
{{ output | image_link('image/svg+xml') }}
{% endblock data_svg %}

{% block data_pdf %}
{{ output | image_link('application/pdf') }}
{% endblock data_pdf %}

{% block data_html scoped %}

{{ output.data['text/html'] | trim }}

{% endblock data_html %}

{% block data_javascript %}
{% endblock data_javascript %}
"""
"""nbconvert template: the stock markdown one with fenced code and output blocks and
image files instead of inline base64."""


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


# --- markdown helpers ----------------------------------------------------------------------


def fence(text: str, lang: str = "") -> str:
    """``text`` as a fenced code block, with a fence longer than any run of backticks in it."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def _image_link(output, mime: str) -> str:
    filenames = output.get("metadata", {}).get("filenames", {})
    if mime not in filenames:  # never inline base64 into the page
        return f"*(a {mime} output was not extracted; see the executed notebook)*"
    alt = output.get("metadata", {}).get("worklog_alt", "output")
    return f"![{alt}]({filenames[mime]})"


_IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "application/pdf")
_VEGALITE_PREFIX, _VEGALITE_SUFFIX = "application/vnd.vegalite.v", "+json"


def _vegalite_spec(output) -> dict | None:
    """The Vega-Lite spec of a display output (any major version's mime type), or ``None``."""
    for mime, data in output.get("data", {}).items():
        if mime.startswith(_VEGALITE_PREFIX) and mime.endswith(_VEGALITE_SUFFIX) and isinstance(data, dict):
            return data
    return None


def _extract_charts(nb, files_dir: str) -> dict[str, bytes]:
    """Turn every Vega-Lite output into the chart files of :func:`worklog_gen.charts.chart_files`
    (``<files_dir>/chart_<cell>_<output>.vega.json`` and ``.vega.svg``) and a markdown image of
    the SVG in its place, which ``charts.js`` replaces with the drawn chart. The SVG is the one
    frozen with the output (made where the notebook ran); an output without one gets it rendered
    here, with vl-convert. Modifies ``nb``; returns the files."""
    import json

    files: dict[str, bytes] = {}
    for i, cell in enumerate(nb.cells):
        for j, output in enumerate(cell.get("outputs", [])):
            spec = _vegalite_spec(output)
            if spec is None:
                continue
            stem = f"{files_dir}/chart_{i}_{j}"
            svg = output["data"].get("image/svg+xml")
            if not svg:
                from worklog_gen.charts import chart_svg

                svg = chart_svg(spec)
            files[f"{stem}.vega.json"] = json.dumps(spec, separators=(",", ":"), sort_keys=True).encode()
            files[f"{stem}.vega.svg"] = (svg if isinstance(svg, str) else "".join(svg)).encode()
            alt = output.get("metadata", {}).get("worklog_alt", "chart")
            output["data"] = {"text/markdown": f"![{alt}]({stem}.vega.svg)"}
            output.get("metadata", {}).pop("filenames", None)
    return files


def _label_figures(nb) -> None:
    """Give each image output an alt text naming the section it appears in and its
    number there ("Figure 2 in 6. Benchmark: ..."), from the nearest markdown heading
    above it (found with markdown-it), for screen readers and search."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    section, count = "", 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            tokens = md.parse(cell.source)
            for i, token in enumerate(tokens[:-1]):
                if token.type == "heading_open":
                    section, count = tokens[i + 1].content, 0
            continue
        for output in cell.get("outputs", []):
            if any(m in output.get("data", {}) for m in _IMAGE_MIMES) or _vegalite_spec(output) is not None:
                count += 1
                label = f"Figure {count} in {section}" if section else f"Figure {count}"
                title = (_vegalite_spec(output) or {}).get("title")
                title = title.get("text") if isinstance(title, dict) else title
                if title:
                    label += f": {title}"
                output.setdefault("metadata", {})["worklog_alt"] = _alt_text(label)


def _alt_text(text: str) -> str:
    """Alt text safe inside ``![...]``: no brackets, backslashes or backticks, one line."""
    return " ".join(text.replace("[", "(").replace("]", ")").replace("\\", "/").replace("`", "").split())


def _cell(text: str) -> str:
    """``text`` safe inside a markdown table cell: one line, markup characters escaped."""
    import html

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


def trim_output(text: str, max_lines: int = MAX_OUTPUT_LINES, max_chars: int = MAX_OUTPUT_CHARS) -> str:
    """Shorten a long text output: keep the first two thirds of ``max_lines`` lines and
    the last third, with a line saying how many were left out; then cut at ``max_chars``
    characters likewise. Short text is returned as it is."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) > max_lines:
        head, tail = max_lines * 2 // 3, max_lines // 3
        cut = len(lines) - head - tail
        lines = lines[:head] + [f"[... {cut} of {len(lines)} lines left out; the executed notebook has them all ...]"] \
            + lines[-tail:]
    out = "\n".join(lines)
    if len(out) > max_chars:
        cut = len(out) - max_chars
        out = (out[: max_chars * 2 // 3] + f"\n[... {cut} characters left out; the executed notebook has them all ...]\n"
               + out[-(max_chars // 3):])
    return out


def _trim_outputs(nb) -> None:
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                output["text"] = trim_output(output["text"])
            elif "text/plain" in output.get("data", {}):
                output["data"]["text/plain"] = trim_output(output["data"]["text/plain"])


def merge_current_markdown(current, frozen):
    """The frozen notebook with the current source's markdown cells, when the code cells
    of both match (:func:`worklog_gen.source_hash.code_sources`); otherwise ``frozen`` as it is.

    Returns ``(notebook, merged)``. ``current`` may be ``None`` (no source file).
    Neither argument is modified.
    """
    if current is None or code_sources(current) != code_sources(frozen):
        return frozen, False
    executed = iter([c for c in frozen.cells if c.cell_type == "code" and normalise_source(c.source)])
    nb = copy.deepcopy(frozen)
    cells = []
    for cell in current.cells:
        if cell.cell_type == "code":
            if normalise_source(cell.source):
                cells.append(copy.deepcopy(next(executed)))
        else:
            cells.append(copy.deepcopy(cell))
    nb.cells = cells
    return nb, True


def _split_title(nb) -> tuple[str, object]:
    """Take a leading ``# heading`` out of the first markdown cell (found with
    markdown-it), so that the provenance box can go right under it."""
    from markdown_it import MarkdownIt

    if not nb.cells or nb.cells[0].cell_type != "markdown":
        return "", nb
    source = nb.cells[0].source
    tokens = MarkdownIt("commonmark").parse(source)
    if not tokens or tokens[0].type != "heading_open" or tokens[0].tag != "h1" or tokens[0].map is None:
        return "", nb
    start, end = tokens[0].map
    lines = source.split("\n")
    heading = "\n".join(lines[start:end]).strip()
    if not heading.startswith("# "):  # a setext heading: write it as an ATX one
        heading = "# " + tokens[1].content
    nb = copy.deepcopy(nb)
    nb.cells[0].source = "\n".join(lines[:start] + lines[end:]).strip("\n")
    return heading, nb


def notebook_markdown(nb, files_dir: str) -> tuple[str, dict[str, bytes]]:
    """Convert an executed notebook to site markdown with nbconvert and :data:`TEMPLATE`.

    Images (PNG, JPEG, SVG, PDF outputs) are extracted to ``<files_dir>/cell_<i>_<j>.<ext>``
    and linked by that relative path; Vega-Lite charts become ``<files_dir>/chart_<i>_<j>.vega.json``
    and ``.vega.svg`` (:func:`_extract_charts`). Returns the markdown and those files.
    """
    from jinja2 import DictLoader
    from nbconvert import MarkdownExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb = copy.deepcopy(nb)
    _trim_outputs(nb)
    _label_figures(nb)
    charts = _extract_charts(nb, files_dir)
    exporter = MarkdownExporter(
        extra_loaders=[DictLoader({"worklog.md.j2": TEMPLATE})],
        template_file="worklog.md.j2",
        filters={"fence": fence, "image_link": _image_link},
    )
    exporter.register_preprocessor(TagRemovePreprocessor(
        remove_cell_tags={"remove-cell"}, remove_input_tags={"remove-input"},
        remove_all_outputs_tags={"remove-output"}, enabled=True), enabled=True)
    body, resources = exporter.from_notebook_node(nb, resources={"output_files_dir": files_dir,
                                                                 "unique_key": "cell"})
    files = {Path(name).as_posix(): data for name, data in sorted(resources.get("outputs", {}).items())}
    return body.strip() + "\n", files | charts


# --- topic pages ---------------------------------------------------------------------------


def _resolve(root: Path, path: str | Path) -> Path:
    path = Path(path)
    return path if path.is_absolute() else root / path


def _when(record: dict) -> str:
    stamp = str(record.get("executed_at") or "?")
    return stamp.replace("T", " ").replace("Z", " UTC")


def _provenance(st: freeze.NotebookState, links: str, merged: bool) -> tuple[str, list[str]]:
    """The Material admonition at the top of a topic page, and the build warnings."""
    record, rel = st.record or {}, st.path
    short, now = str(record.get("source_hash", ""))[:12], (st.current_hash or "")[:12]
    warnings: list[str] = []
    mode = record.get("mode")
    if mode == "gpu":
        device = (f"{record.get('gpu')}, driver {record.get('driver') or 'unknown'}, "
                  f"CUDA {record.get('cuda') or 'unknown'}")
    elif mode == "interpret":
        device = "the CPU, under the Triton interpreter (`TRITON_INTERPRET=1`), not a GPU"
    else:
        device = "the CPU (no GPU was found)"
    wall = record.get("wall_seconds")
    versions = ", ".join(f"{name} {record[key]}" for name, key in
                         (("torch", "torch"), ("triton", "triton"), ("Python", "python"),
                          ("worklog-gen", "worklog_gen")) if record.get(key))
    facts = [f"- **Ran on:** {device}",
             f"- **Date:** {_when(record)}" + (f", {wall:.0f} s" if isinstance(wall, (int, float)) else ""),
             f"- **Versions:** {versions or 'not recorded'}",
             f"- **Source hash:** `{short}`"]
    notes = []
    if mode != "gpu":
        notes.append("This run checked correctness only: its timings, bandwidths and TFLOP/s say "
                     "nothing about a GPU.")
    if st.state == "fresh":
        kind, title = "info", "Frozen result: fresh"
        notes.append("The notebook's code is unchanged since this run (fresh)"
                     + ("; the prose is the current one." if merged else "."))
    elif st.state == "stale":
        kind, title = "warning", "Frozen result: stale"
        notes.append(f"The code has changed since this run (stale; its hash is now `{now}`), so this page "
                     f"shows the notebook as it ran. Run `worklog-gen execute {rel}` on a GPU to refresh it.")
        warnings.append(f"notebook {rel} is stale: its frozen result is for source hash {short}, "
                        f"the source is now {now}; run worklog-gen execute {rel}")
    elif st.state == "failed":
        failure = st.failure or {}
        kind, title = "danger", "Frozen result: the last run failed"
        older = "the same code (fresh)" if record.get("source_hash") == st.current_hash else "older code (stale)"
        notes.append(f"The last run of the current code failed at cell {failure.get('cell_index')} "
                     f"(line {failure.get('line')}, {failure.get('ename')}: {failure.get('evalue')}) "
                     f"on {_when({'executed_at': failure.get('failed_at')})}. This page shows the "
                     f"previous run, of {older}.")
        warnings.append(f"notebook {rel} failed at cell {failure.get('cell_index')} "
                        f"({failure.get('ename')}: {failure.get('evalue')}); the page shows the previous "
                        f"frozen result; fix it and run worklog-gen execute {rel}")
    else:  # an entry whose source file is gone
        kind, title = "warning", "Frozen result: source missing"
        notes.append(f"The source `{rel}` no longer exists; this is its last frozen run.")
        warnings.append(f"notebook {rel} does not exist; its page shows an old frozen result")
    blocks = ["\n".join(facts), *notes, links]
    body = "\n\n".join("\n".join("    " + line for line in block.split("\n")) for block in blocks)
    return f'!!! {kind} "{title}"\n\n{body}', warnings


def _missing_page(topic_id: str, st: freeze.NotebookState, store: Path, root: Path,
                  source: Path) -> RenderedPage:
    rel, stem = st.path, source.stem
    files: dict[str, bytes] = {}
    store_rel = freeze.relative_path(store, root)
    if st.source_exists:
        text = (f"`{rel}` has no frozen result in `{store_rel}/` yet, so this page shows its code "
                f"without outputs. Produce it on a GPU machine with\n\n"
                f"        worklog-gen execute {rel}\n\n"
                f"    and commit `{store_rel}/{stem}/`.")
        nb = read_notebook(source)
        heading, nb = _split_title(nb)
        body, files = notebook_markdown(nb, topic_id)
        files[f"{topic_id}/{source.name}"] = source.read_bytes()
        text += f"\n\n    [Source ({source.name})]({topic_id}/{source.name})"
    else:
        heading, body = "", ""
        text = f"The notebook `{rel}` does not exist and has no frozen result; check the topic's `notebook:`."
    box = f'!!! warning "Not executed yet"\n    {text}'
    markdown = tidy("\n\n".join(p for p in (heading, box, body.strip()) if p))
    warning = (f"notebook {rel} has no frozen result; run worklog-gen execute {rel}" if st.source_exists
               else f"notebook {rel} of topic {topic_id!r} does not exist")
    return RenderedPage(markdown, files, [warning])


def render_topic(topic_id: str, title: str, notebook: Path, store_dir: Path, root: Path) -> RenderedPage:
    """Render the frozen result of ``notebook`` (path relative to ``root``) as the body
    of the topic page ``topics/<topic_id>.md``.

    The body starts with the notebook's own ``# heading`` when it has one (otherwise the
    page adds ``# title``), then a provenance box (GPU, driver, CUDA, torch, triton,
    Python, date, short source hash, fresh/stale in words, whether it ran on the CPU
    interpreter), then the notebook. ``files`` holds the images and, for download,
    ``<topic_id>/<stem>.ipynb`` (executed) and ``<topic_id>/<stem>.py`` (source).
    ``store_dir`` is relative to ``root`` unless absolute.

    A stale, failed or missing result adds a message to ``warnings``; a missing one
    gives a page that says how to produce it. Nothing is executed.

    Raises:
        ValueError: the notebook or the store entry cannot be read (file named).
    """
    import nbformat

    root = Path(root)
    store = _resolve(root, store_dir)
    source = _resolve(root, notebook)
    stem = source.stem
    st = freeze.notebook_state(source, root, store)
    ipynb = st.entry / f"{stem}.ipynb"
    if st.record is None or not ipynb.is_file():
        return _missing_page(topic_id, st, store, root, source)
    try:
        frozen = nbformat.read(str(ipynb), as_version=4)
    except Exception as exc:  # nbformat raises several types for a damaged file
        raise ValueError(f"{ipynb}: cannot read the frozen notebook: {exc}") from exc
    current = read_notebook(source) if st.source_exists else None
    nb, merged = merge_current_markdown(current, frozen)
    heading, nb = _split_title(nb)
    body, files = notebook_markdown(nb, topic_id)

    files[f"{topic_id}/{stem}.ipynb"] = ipynb.read_bytes()
    links = f"[Executed notebook ({stem}.ipynb)]({topic_id}/{stem}.ipynb)"
    if st.source_exists:
        files[f"{topic_id}/{source.name}"] = source.read_bytes()
        links += f" · [Source ({source.name})]({topic_id}/{source.name})"
    box, warnings = _provenance(st, links, merged)
    markdown = "\n\n".join(p for p in (heading, box, body.strip()) if p)
    return RenderedPage(tidy(markdown), files, warnings)


# --- the Kernels page ----------------------------------------------------------------------


def _number(value) -> str:
    """4 significant figures; thousands grouped rather than in exponent form."""
    if not isinstance(value, (int, float)):
        return _cell(value)
    return f"{value:,.0f}" if 1e4 <= abs(value) < 1e15 else f"{value:,.4g}"


def render_kernels_page(topics: list[tuple[str, str, Path]], store_dir: Path, root: Path) -> RenderedPage:
    """The Kernels page (``kernels.md``): every notebook's headline figures with GPU and
    date, and one roofline with every kernel variant of every notebook.
    ``topics`` holds ``(topic_id, title, notebook)``.

    Headline figures come from each store entry's ``record.json``; roofline points from
    its ``data/roofline.json`` (:func:`worklog_gen.roofline.load_roofline`), drawn
    against the roofs of the first notebook that has one as the chart files
    ``kernels/roofline.vega.json`` and ``.vega.svg`` (:func:`worklog_gen.charts.roofline_chart`).
    A notebook whose points were measured on another device than those roofs is left
    off the plot with a warning; so is an unreadable roofline file. Nothing is executed.
    """
    root = Path(root)
    store = _resolve(root, store_dir)
    sections: list[str] = []
    points, ceilings, warnings, plotted = [], None, [], []
    for topic_id, title, notebook in topics:
        source = _resolve(root, notebook)
        st = freeze.notebook_state(source, root, store)
        link = f"[{_cell(title)}](topics/{topic_id}.md)"
        record = st.record
        if record is None:
            sections.append(f"### {link}\n\nNot executed yet: `worklog-gen execute {st.path}`.")
            continue
        gpu = freeze.device_label(record) or "unknown device"
        date = str(record.get("executed_at", ""))[:10]
        figures = record.get("headline") or {}
        table = ["| Figure | Value | Unit | Description |", "| --- | ---: | --- | --- |"]
        for name, fig in sorted(figures.items()):
            fig = fig if isinstance(fig, dict) else {"value": fig}
            table.append(f"| `{name}` | {_number(fig.get('value'))} | {_cell(fig.get('unit', ''))} "
                         f"| {_cell(fig.get('description', ''))} |")
        body = "\n".join(table) if figures else "No headline figures."
        sections.append(f"### {link}\n\n{_cell(gpu)}, {date}, **{st.state}**\n\n{body}")
        path = st.entry / freeze.DATA_DIR / "roofline.json"
        if not path.is_file():
            continue
        from worklog_gen.roofline import load_roofline

        try:
            these, roofs = load_roofline(path)
        except (OSError, ValueError) as exc:
            warnings.append(f"Kernels page: roofline of {st.path} left out: {exc}")
            continue
        if ceilings is None:
            ceilings = roofs
        elif roofs.device != ceilings.device:
            warnings.append(f"Kernels page: roofline of {st.path} left out: measured on {roofs.device}, "
                            f"the plot's roofs on {ceilings.device}")
            continue
        points += [p if p.topic else dataclasses.replace(p, topic=topic_id) for p in these]
        plotted.append(link)

    parts = ["# Kernels", "The headline figures of every topic notebook, from its frozen result, "
             "with the device, the date and the state of the run.", "## Headline figures", *sections]
    files: dict[str, bytes] = {}
    if ceilings is not None:
        from worklog_gen.charts import chart_files, roofline_chart

        chart = roofline_chart(points, ceilings, title=f"Every kernel variant: {ceilings.device}", series="topic")
        files.update(chart_files(chart, "kernels/roofline"))
        parts += ["## Roofline",
                  f"Every kernel variant of {', '.join(plotted)} against the roofs measured on "
                  f"{_cell(ceilings.device)}: memory roof from a device copy, compute roofs from `torch.matmul`. "
                  "Hover a point to read it; click a topic in the legend to hide its points or show them again.",
                  "![Roofline of every kernel variant, coloured by topic](kernels/roofline.vega.svg)"]
    else:
        parts += ["## Roofline", "No notebook has saved roofline data yet (`data/roofline.json`)."]
    return RenderedPage("\n\n".join(parts) + "\n", files, warnings)
