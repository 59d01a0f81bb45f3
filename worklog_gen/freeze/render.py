"""Render frozen notebooks into site pages, without executing anything.

Reads the freeze store written by :mod:`worklog_gen.freeze.store`; imports neither torch
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
from dataclasses import dataclass, field
from pathlib import Path

from worklog_gen.freeze import store as freeze
from worklog_gen.freeze.record import FreezeRecord, NotebookState
from worklog_gen.freeze.store import NotebookStatus
from worklog_gen.paths import OutsideFolder, inside
from worklog_gen.freeze.source_hash import code_cells, code_fingerprint, normalise_source, read_notebook

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
    """Turn every Vega-Lite output into the chart files of :func:`worklog_gen.kit.charts.chart_files`
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
                from worklog_gen.kit.charts import chart_svg

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


def table_cell(text: str) -> str:
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


def number(value) -> str:
    """A figure for a table: 4 significant figures; thousands grouped rather than in exponent form."""
    if not isinstance(value, (int, float)):
        return table_cell(value)
    return f"{value:,.0f}" if 1e4 <= abs(value) < 1e15 else f"{value:,.4g}"


def headline_table(record: FreezeRecord) -> str:
    """The record's headline figures as a markdown table: name, value, unit, how it was measured."""
    rows = ["| Figure | Value | Unit | Description |", "| --- | ---: | --- | --- |"]
    rows += [f"| `{name}` | {number(h.value)} | {table_cell(h.unit)} | {table_cell(h.description)} |"
             for name, h in sorted(record.headline.items())]
    return "\n".join(rows)


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


def _when(stamp: str | None) -> str:
    return str(stamp or "?").replace("T", " ").replace("Z", " UTC")


def _device(record: FreezeRecord) -> str:
    if record.mode == "gpu":
        return f"{record.gpu}, driver {record.driver or 'unknown'}, CUDA {record.cuda or 'unknown'}"
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


def _provenance(st: NotebookStatus, links: str, merged: bool) -> tuple[str, list[str]]:
    """The Material admonition that says where a topic page's result comes from, and the build warnings."""
    record = st.record
    versions = ", ".join(f"{name} {value}" for name, value in
                         (("torch", record.torch), ("triton", record.triton), ("Python", record.python),
                          ("worklog-gen", record.worklog_gen)) if value)
    facts = [f"- **Ran on:** {_device(record)}",
             f"- **Date:** {_when(record.executed_at)}, {record.wall_seconds:.0f} s",
             f"- **Versions:** {versions or 'not recorded'}",
             f"- **Source hash:** `{record.source_hash[:12]}`"]
    kind, title, note, warnings = _state_note(st, merged)
    notes = [note]
    if record.mode != "gpu":
        notes.insert(0, "This run checked correctness only: its timings, bandwidths and TFLOP/s say "
                        "nothing about a GPU.")
    blocks = ["\n".join(facts), *notes, links]
    body = "\n\n".join("\n".join("    " + line for line in block.split("\n")) for block in blocks)
    return f'!!! {kind} "{title}"\n\n{body}', warnings


def _missing_page(files_dir: str, st: NotebookStatus, store: Path, root: Path,
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
        body, files = notebook_markdown(nb, files_dir)
        files[f"{files_dir}/{source.name}"] = source.read_bytes()
        text += f"\n\n    [Source ({source.name})]({files_dir}/{source.name})"
    else:
        heading, body = "", ""
        text = f"The notebook `{rel}` does not exist and has no frozen result; check the topic's `notebook:`."
    box = f'!!! warning "Not executed yet"\n    {text}'
    markdown = tidy("\n\n".join(p for p in (heading, box, body.strip()) if p))
    warning = (f"notebook {rel} has no frozen result; run worklog-gen execute {rel}" if st.source_exists
               else f"notebook {rel} does not exist; check the topic's notebook: option")
    return RenderedPage(markdown, files, [warning])


def render_topic(notebook: Path, store_dir: Path, root: Path, *, files_dir: str) -> RenderedPage:
    """Render the frozen result of ``notebook`` (path relative to ``root``) as the body of its
    topic page; the page's files go under ``files_dir``, relative to the page's folder.

    The body starts with the notebook's own ``# heading`` when it has one (otherwise the
    page adds ``# title``), then a provenance box (GPU, driver, CUDA, torch, triton,
    Python, date, short source hash, fresh/stale in words, whether it ran on the CPU
    interpreter), then the notebook. ``files`` holds the images and, for download,
    ``<files_dir>/<stem>.ipynb`` (executed) and ``<files_dir>/<stem>.py`` (source).
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
        return _missing_page(files_dir, st, store, root, source)
    try:  # the executed notebook is published: it must be a file of the store
        ipynb = inside(ipynb, store)
    except OutsideFolder as exc:
        raise ValueError(f"{st.entry / f'{stem}.ipynb'}: refused: {exc}") from exc
    try:
        frozen = nbformat.read(str(ipynb), as_version=4)
    except Exception as exc:  # nbformat raises several types for a damaged file
        raise ValueError(f"{ipynb}: cannot read the frozen notebook: {exc}") from exc
    current = read_notebook(source) if st.source_exists else None
    nb, merged = merge_current_source(current, frozen)
    heading, nb = _split_title(nb)
    body, files = notebook_markdown(nb, files_dir)

    files[f"{files_dir}/{stem}.ipynb"] = ipynb.read_bytes()
    links = f"[Executed notebook ({stem}.ipynb)]({files_dir}/{stem}.ipynb)"
    if st.source_exists:
        files[f"{files_dir}/{source.name}"] = source.read_bytes()
        links += f" · [Source ({source.name})]({files_dir}/{source.name})"
    box, warnings = _provenance(st, links, merged)
    markdown = "\n\n".join(p for p in (heading, box, body.strip()) if p)
    return RenderedPage(tidy(markdown), files, warnings)
