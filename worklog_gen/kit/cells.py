"""One notebook's code, imported by another: the cells it tags, run as a module.

A topic that builds on another (the FlashAttention backward on its forward) needs the other's
kernels, and a copy would drift. :func:`import_cells` runs the code cells of the other notebook
that carry a tag, in order, in a fresh module, and returns it: one place for the code, and the
lesson that teaches it keeps it in view on its own page.

Each cell is compiled under the notebook's own path, at its own lines, so a traceback names the
``.py`` file and line, and :func:`inspect.getsource` (which ``@triton.jit`` calls) reads the
functions from the file itself. The source hash of the importing notebook covers the imported
notebook's code, since the cell names its file (:mod:`worklog_gen.freeze.source_hash`).
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

from worklog_gen.kit.cuda import NOTEBOOK_DIR_ENV


def _cell_lines(lines: list[str], source: list[str], start: int) -> int:
    """The 0-based line of ``lines`` at or after ``start`` where ``source`` begins; -1 if none."""
    for i in range(start, len(lines) - len(source) + 1):
        if lines[i:i + len(source)] == source:
            return i
    return -1


def import_cells(notebook: str, tag: str) -> types.ModuleType:
    """Run the code cells of the jupytext notebook ``notebook`` tagged ``tag``, in order, in a new
    module named after the file's stem, and return the module.

    ``notebook`` is relative to the running notebook's folder (``WORKLOG_GEN_NOTEBOOK_DIR``, set by
    ``worklog-gen execute``; otherwise the current folder, for a notebook run from its own).
    The cells run with ``__name__`` set to the module's name, so nothing guarded by
    ``if __name__ == "__main__"`` runs.

    Raises:
        FileNotFoundError: there is no such notebook.
        ValueError: no code cell of it carries ``tag``, or a tagged cell is not found verbatim
            in the file (a cell jupytext rewrote, such as a magic), with the file and tag named.
        Exception: whatever a tagged cell raises, with its traceback at the notebook's own lines.
    """
    import jupytext

    path = Path(os.environ.get(NOTEBOOK_DIR_ENV, ".")) / notebook
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such notebook (names are relative to the notebook's folder)")
    text = path.read_text(encoding="utf-8")
    cells = [c for c in jupytext.reads(text, fmt="py:percent").cells
             if c.cell_type == "code" and tag in c.metadata.get("tags", [])]
    if not cells:
        raise ValueError(f"{path}: no code cell is tagged {tag!r}")
    lines = text.splitlines()
    module = types.ModuleType(path.stem)
    module.__file__ = str(path.resolve())
    sys.modules[path.stem] = module  # dataclasses and pickle look their module up by name
    at = 0
    for cell in cells:
        source = cell.source.splitlines()
        at = _cell_lines(lines, source, at)
        if at < 0:
            raise ValueError(f"{path}: a cell tagged {tag!r} is not in the file as written "
                             f"(it begins {source[0][:60]!r})")
        code = compile("\n" * at + cell.source + "\n", module.__file__, "exec")
        exec(code, module.__dict__)
        at += len(source)
    return module
