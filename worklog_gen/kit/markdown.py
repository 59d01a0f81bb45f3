"""Markdown a notebook displays: tables instead of long prints, and folded blocks.

A notebook ends a result with ``display(table(rows, ...))`` rather than a page of ``print``
lines: the output is ``text/markdown``, which Jupyter shows as a table and the site renders as
one (:mod:`worklog_gen.freeze.cells` passes it through). :func:`details` is the fold the site's
pages use (pymdownx.details, a ``<details>`` element).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def fence(text: str, lang: str = "") -> str:
    """``text`` as a fenced code block, with a fence longer than any run of backticks in it."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def details(body: str, summary: str, kind: str = "fold") -> str:
    """``body`` (markdown) in a closed pymdownx.details block, ``??? kind "summary"``."""
    title = summary.replace("\\", "\\\\").replace('"', "&quot;")
    indented = "\n".join(("    " + line) if line.strip() else "" for line in body.strip("\n").split("\n"))
    return f'??? {kind} "{title}"\n\n{indented}\n'


def _cell(value, fmt: str | None) -> str:
    if value is None or value == "":
        return "—"
    if fmt and isinstance(value, (int, float)) and not isinstance(value, bool):
        text = format(value, fmt)
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Mapping], columns: Mapping[str, str] | Sequence[str] | None = None,
                   formats: Mapping[str, str] | None = None) -> str:
    """``rows`` as a markdown table. ``columns`` picks and orders the keys, as a list or as
    ``{key: header}``; default every key of the first row. ``formats`` gives a format spec per key
    (``{"tflops": ".0f"}``); numbers are right-aligned. A missing value shows as an em dash."""
    if not rows:
        return "*(no rows)*"
    columns = columns or list(rows[0])
    headers = dict(columns) if isinstance(columns, Mapping) else {c: c for c in columns}
    formats = formats or {}
    numeric = {k: all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)
                      for r in rows if r.get(k) is not None) for k in headers}
    lines = ["| " + " | ".join(headers.values()) + " |",
             "| " + " | ".join("---:" if numeric[k] else "---" for k in headers) + " |"]
    lines += ["| " + " | ".join(_cell(r.get(k), formats.get(k)) for k in headers) + " |" for r in rows]
    return "\n".join(lines)


def table(rows: Sequence[Mapping], columns: Mapping[str, str] | Sequence[str] | None = None,
          formats: Mapping[str, str] | None = None, caption: str = ""):
    """:func:`markdown_table` as an IPython ``Markdown`` output (with ``caption`` in italics under
    it), for ``display``."""
    from IPython.display import Markdown

    text = markdown_table(rows, columns, formats)
    return Markdown(text + (f"\n\n*{caption}*" if caption else ""))


def prose(text: str):
    """A conclusion as an IPython ``Markdown`` output, for ``display``: prose, not ``print`` lines."""
    from IPython.display import Markdown

    return Markdown(text)


def python_source(fn):
    """The source of ``fn`` (a function, or a ``@triton.jit`` one) as an IPython ``Markdown``
    output, for ``display``: how a notebook shows a kernel it imports from the kit, so that
    the lines its lesson is about stay on the page."""
    import inspect

    from IPython.display import Markdown

    return Markdown(fence(inspect.getsource(getattr(fn, "fn", fn)), "python"))
