"""GitHub's alerts and Obsidian's callouts, written as Material's admonitions.

GitHub (https://docs.github.com/en/get-started/writing-on-github/getting-started-with-writing-and-formatting-on-github/basic-writing-and-formatting-syntax#alerts)
and Obsidian (https://help.obsidian.md/callouts) draw a block quote that starts with a type in
brackets as a box of that type::

    > [!NOTE] Why grouped ordering
    > Tiles of B stay in L2.

``> [!TIP]-`` folds it, closed (``+``: open). Python-Markdown shows the ``[!NOTE]`` as text. On a
page, :func:`admonitions` writes each as the admonition Material draws
(``!!! note "Why grouped ordering"``; folded, ``???`` with ``pymdownx.details``), GitHub's and
Obsidian's other names as Material's (``important`` is a tip, ``caution`` a warning), through
mkdocs-callouts' parser; in a code block it stays text. In plain text (a summary) the type goes
and the title stays (:func:`without_types`).
"""

from __future__ import annotations

import re

_TYPE = re.compile(r"^([ \t]*(?:>[ \t]?)+)[ \t]*\[![^\]\n]*\][-+]?[ \t]*", re.MULTILINE)
"""The ``[!NOTE]`` (with its fold sign) that opens a callout's first line, after its ``>``."""


def admonitions(markdown: str) -> str:
    """``markdown`` with each callout written as a Material admonition (see the module docstring)."""
    if "[!" not in markdown:
        return markdown
    from mkdocs_callouts.utils import CalloutParser

    return CalloutParser().parse(markdown)


def without_types(markdown: str) -> str:
    """``markdown`` with each callout's ``[!TYPE]`` left out, its title and text kept as a quote."""
    return _TYPE.sub(r"\1", markdown) if "[!" in markdown else markdown
