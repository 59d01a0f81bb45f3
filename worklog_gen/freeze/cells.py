"""An executed notebook's cells as site markdown: code folded where its author says, outputs a
reader can scan, images and charts as files beside the page.

nbconvert's ``MarkdownExporter`` with a small template (:data:`TEMPLATE`) does the conversion:
markdown cells as they are, code as fenced ``python`` blocks, text outputs as fenced ``text``
blocks, ``text/markdown`` and HTML outputs passed through, images as files (never base64),
errors shown.

**Folding** follows Jupyter Book's cell tags, set in jupytext's cell header
(``# %% tags=["hide-input"] summary="Imports and settings"``):

- ``hide-input``: the code in a closed ``<details>`` (pymdownx.details ``???``) whose summary says
  what the cell does (the ``summary`` metadata, else the cell's first comment line), its output
  shown; ``hide-output``: the output folded; ``hide-cell``, or both of those tags: code and output
  in one fold;
- ``remove-input``, ``remove-output``, ``remove-cell``: left out of the page.

A code cell longer than :data:`MAX_VISIBLE_LINES` is folded all the same, and a text output
longer than that shows its first :data:`HEAD_LINES` lines with the rest folded behind them, so
no open block is longer than a screen. ``<details>`` works without JavaScript, and in MkDocs,
ProperDocs and Zensical.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from worklog_gen.kit.markdown import details, fence

MAX_VISIBLE_LINES = 60
"""The longest code or output block shown open."""
HEAD_LINES = 12
"""Lines of a long text output shown above its fold."""
MAX_OUTPUT_LINES = 400
"""Text outputs longer than this keep their first and last lines even folded (see :func:`trim_output`)."""
MAX_OUTPUT_CHARS = 40_000
"""Text outputs longer than this many characters are cut too."""

TEMPLATE = r"""
{%- extends 'markdown/index.md.j2' -%}

{% block codecell scoped %}
{%- set rendered = super() -%}
{{ rendered | fold_cell(cell) }}
{% endblock codecell %}

{% block input %}
{{ cell | code_block }}
{% endblock input %}

{% block outputs scoped %}
{%- set body = super() -%}
{{ body | fold_outputs(cell) }}
{% endblock outputs %}

{% block stream %}
{{ output.text | strip_ansi | text_block }}
{% endblock stream %}

{% block data_text scoped %}
{{ output.data['text/plain'] | strip_ansi | text_block }}
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

{% block data_markdown scoped %}

{{ output.data['text/markdown'] | trim }}

{% endblock data_markdown %}

{% block data_javascript %}
{% endblock data_javascript %}
"""
"""nbconvert template: the stock markdown one with fenced code and output blocks, folds, and
image files instead of inline base64."""


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def summary(cell) -> str:
    """What a folded code cell does: its ``summary`` metadata, else its first comment line, else
    its length."""
    given = cell.get("metadata", {}).get("summary")
    if given:
        return str(given)
    lines = cell.source.strip().split("\n")
    if lines and lines[0].startswith("# "):
        return lines[0][2:].strip()
    return f"Code, {len(lines)} lines"


def _code_lines(cell) -> int:
    return cell.source.strip().count("\n") + 1


def _whole(cell) -> bool:
    """Code and output folded together: ``hide-cell``, or both ``hide-input`` and ``hide-output``."""
    tags = _tags(cell)
    return "hide-cell" in tags or {"hide-input", "hide-output"} <= tags


def fold_cell(rendered: str, cell) -> str:
    """A whole cell (code, then output) in one closed fold when :func:`_whole`."""
    if not _whole(cell) or not rendered.strip():
        return rendered
    return details(rendered, f"{summary(cell)} ({_code_lines(cell)} lines of code, and what it shows)")


def code_block(cell) -> str:
    """The cell's source as a fenced block, folded when tagged ``hide-input`` or longer than
    :data:`MAX_VISIBLE_LINES` (and by :func:`fold_cell` when the whole cell folds)."""
    block = fence(cell.source, "python")
    lines = _code_lines(cell)
    if _whole(cell):
        return block
    if "hide-input" in _tags(cell) or lines > MAX_VISIBLE_LINES:
        return details(block, f"{summary(cell)} ({lines} lines of code)")
    return block


def fold_outputs(body: str, cell) -> str:
    """A cell's rendered outputs, folded when tagged ``hide-output`` (and by :func:`fold_cell` when
    the whole cell folds)."""
    if body.strip() and "hide-output" in _tags(cell) and not _whole(cell):
        return details(body, f"Output of: {summary(cell)}")
    return body


def text_block(text: str) -> str:
    """A text output as a fenced block; a long one shows its first :data:`HEAD_LINES` lines and
    folds the rest."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= MAX_VISIBLE_LINES:
        return fence(text, "text")
    head, rest = "\n".join(lines[:HEAD_LINES]), "\n".join(lines[HEAD_LINES:])
    return fence(head, "text") + "\n\n" + details(fence(rest, "text"), f"{len(lines) - HEAD_LINES} more lines")


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
            from worklog_gen.kit.charts import chart_image

            svg = svg if isinstance(svg, str) else "".join(svg)
            files[f"{stem}.vega.json"] = json.dumps(spec, separators=(",", ":"), sort_keys=True).encode()
            files[f"{stem}.vega.svg"] = svg.encode()
            alt = output.get("metadata", {}).get("worklog_alt", "chart")
            output["data"] = {"text/markdown": chart_image(alt, f"{stem}.vega.svg", svg)}
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


def trim_output(text: str, max_lines: int = MAX_OUTPUT_LINES, max_chars: int = MAX_OUTPUT_CHARS) -> str:
    """Shorten a very long text output: keep the first two thirds of ``max_lines`` lines and
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


_INSTALLED = re.compile(r"(?<![^\s\"'(\[=])(?:[A-Za-z]:)?[/\\][^\s\"'<>|]*?[/\\](?:site|dist)-packages[/\\]")
"""An absolute path up to and including an environment's ``site-packages`` (or Debian's
``dist-packages``) folder, POSIX or Windows, starting where a path may start (the text's start, a
space, a quote, a bracket or ``=``): a relative path is left whole."""


def short_paths(text: str) -> str:
    """``text`` with every installed module's path cut to the module's own (``.../site-packages/torch/x.py``
    becomes ``torch/x.py``), as in the warnings and tracebacks a notebook prints: the folder an
    environment sits in belongs to the machine that ran it, not to the page (it may name a user's home)."""
    return _INSTALLED.sub("", text)


def _edit_outputs(nb, text, traceback_line) -> None:
    """Replace, in place, each stream's text and each result's ``text/plain`` of ``nb`` by
    ``text(it)``, and each line of each traceback by ``traceback_line(it)``."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                output["text"] = text(output["text"])
            elif "text/plain" in output.get("data", {}):
                output["data"]["text/plain"] = text(output["data"]["text/plain"])
            elif output.get("output_type") == "error":
                output["traceback"] = [traceback_line(line) for line in output.get("traceback", [])]


def _tidy_outputs(nb) -> None:
    """Each text output of ``nb`` as a page shows it: installed modules' paths cut
    (:func:`short_paths`), then very long text shortened (:func:`trim_output`). IPython colours a
    traceback's paths, so its lines lose their colours first."""
    from nbconvert.filters import strip_ansi

    _edit_outputs(nb, lambda t: trim_output(short_paths(t)), lambda line: short_paths(strip_ansi(line)))


def downloadable_notebook(nb, raw: bytes) -> bytes:
    """The executed notebook a page offers for download, from ``raw`` (the frozen file's bytes) and
    ``nb`` (those bytes read by nbformat; not changed): ``raw`` itself, or, where an output names
    an installed module's path (a GPU machine's environment folder), the notebook with those paths
    cut (:func:`short_paths`; a traceback line that names one loses its colours) and every output
    otherwise whole (nothing is trimmed: the page's outputs point here for the rest)."""
    import nbformat
    from nbconvert.filters import strip_ansi

    def traceback_line(line: str) -> str:
        plain = strip_ansi(line)
        short = short_paths(plain)
        return short if short != plain else line

    edited = copy.deepcopy(nb)
    _edit_outputs(edited, short_paths, traceback_line)
    return raw if edited == nb else nbformat.writes(edited).encode("utf-8")


def notebook_markdown(nb, files_dir: str) -> tuple[str, dict[str, bytes]]:
    """Convert an executed notebook to site markdown with nbconvert and :data:`TEMPLATE`.

    Images (PNG, JPEG, SVG, PDF outputs) are extracted to ``<files_dir>/cell_<i>_<j>.<ext>``
    and linked by that relative path; Vega-Lite charts become ``<files_dir>/chart_<i>_<j>.vega.json``
    and ``.vega.svg`` (:func:`_extract_charts`). Returns the markdown and those files.
    """
    from jinja2 import DictLoader
    from nbconvert import MarkdownExporter
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor, TagRemovePreprocessor

    nb = copy.deepcopy(nb)
    CoalesceStreamsPreprocessor().preprocess(nb, {})  # one block for a cell's run of prints, as Jupyter shows it
    _tidy_outputs(nb)
    _label_figures(nb)
    charts = _extract_charts(nb, files_dir)
    exporter = MarkdownExporter(
        extra_loaders=[DictLoader({"worklog.md.j2": TEMPLATE})],
        template_file="worklog.md.j2",
        filters={"fence": fence, "image_link": _image_link, "code_block": code_block,
                 "fold_outputs": fold_outputs, "fold_cell": fold_cell, "text_block": text_block},
    )
    exporter.register_preprocessor(TagRemovePreprocessor(
        remove_cell_tags={"remove-cell"}, remove_input_tags={"remove-input"},
        remove_all_outputs_tags={"remove-output"}, enabled=True), enabled=True)
    body, resources = exporter.from_notebook_node(nb, resources={"output_files_dir": files_dir,
                                                                 "unique_key": "cell"})
    files = {Path(name).as_posix(): data for name, data in sorted(resources.get("outputs", {}).items())}
    return body.strip() + "\n", files | charts
