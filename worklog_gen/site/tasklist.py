"""Python-Markdown extension ``worklog_gen.site.tasklist``: each task-list checkbox named.

``pymdownx.tasklist`` writes ``- [x] Port the kernel`` as a list item that starts with a
checkbox, ``<input type="checkbox" disabled checked/>``, inside a ``<label>`` that holds no text
(Material draws the box from an empty ``<span>``). A checkbox without a name fails WCAG 2.1
SC 4.1.2 (axe-core's ``label`` rule): a screen reader says "checkbox, checked" and not what is
done. This extension gives each one the name the Tasks page gives the state, ``aria-label="done"``
or ``"open"``; the item's text follows it. It runs once the stashed HTML is back in the page and
before :mod:`worklog_gen.site.sanitize`.
"""

from __future__ import annotations

import re

from markdown import Extension
from markdown.postprocessors import Postprocessor

_CHECKBOX = re.compile(r'<input type="checkbox"(?P<disabled> disabled)?(?P<checked> checked)?/>')
"""A checkbox as ``pymdownx.tasklist`` writes it (``get_checkbox``), with or without its label."""


def name_checkboxes(page_html: str) -> str:
    """``page_html`` with each task-list checkbox (:data:`_CHECKBOX`) given an ``aria-label``:
    ``"done"`` when checked, else ``"open"``."""
    return _CHECKBOX.sub(_named, page_html) if "checkbox" in page_html else page_html


def _named(m: re.Match) -> str:
    state = "done" if m["checked"] else "open"
    return f'<input type="checkbox"{m["disabled"] or ""}{m["checked"] or ""} aria-label="{state}"/>'


class TaskListNamesExtension(Extension):
    """Registers :func:`name_checkboxes` as a postprocessor after Python-Markdown's raw HTML
    (priority 30) and before the sanitiser's (-1000)."""

    def extendMarkdown(self, md) -> None:  # noqa: N802 - Python-Markdown's name
        md.postprocessors.register(_Named(md), "worklog_tasklist_names", 20)


class _Named(Postprocessor):
    def run(self, text: str) -> str:
        return name_checkboxes(text)


def makeExtension(**kwargs) -> TaskListNamesExtension:  # noqa: N802 - the name Python-Markdown looks up
    """The extension, as Python-Markdown loads it by the module's name."""
    return TaskListNamesExtension(**kwargs)
