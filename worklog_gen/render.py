"""Render frozen notebooks into site pages, without executing anything.

Reads the freeze store written by :mod:`worklog_gen.freeze`; imports neither torch
nor triton. Owned by the notebook-pipeline work; the plugin calls only the two
functions below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


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


def render_topic(topic_id: str, title: str, notebook: Path, store_dir: Path, root: Path) -> RenderedPage:
    """Render the frozen result of ``notebook`` (path relative to ``root``) as the body
    of the topic page ``topics/<topic_id>.md``."""
    raise NotImplementedError


def render_kernels_page(topics: list[tuple[str, str, Path]], store_dir: Path, root: Path) -> RenderedPage:
    """The Kernels page (``kernels.md``): every notebook's headline figures with GPU and
    date, and one roofline with every kernel variant of every notebook.
    ``topics`` holds ``(topic_id, title, notebook)``."""
    raise NotImplementedError
