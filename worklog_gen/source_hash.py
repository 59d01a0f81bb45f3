"""Topic notebooks read with jupytext, and their source hash.

The **source hash** (:func:`source_hash`) covers the notebook's code cells and the
``worklog_gen`` modules they import, not its markdown cells: prose edits need no
GPU re-run. The freeze store (:mod:`worklog_gen.freeze`) compares it with the hash
recorded when a notebook was executed (:mod:`worklog_gen.execute`) to tell fresh
results from stale ones.

Nothing heavy is imported at module level (jupytext only when a notebook is read);
torch and triton are never imported.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "worklog_gen"
_HASH_VERSION = b"worklog-gen source hash v1\n"


def read_notebook(path: str | Path):
    """Read a jupytext percent-format notebook into an ``nbformat`` v4 notebook.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: jupytext cannot read it, with the file named.
    """
    import jupytext

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        return jupytext.reads(text, fmt="py:percent")
    except Exception as exc:  # jupytext raises several types; name the file
        raise ValueError(f"{path}: not a readable jupytext percent notebook: {exc}") from exc


def normalise_source(source: str) -> str:
    """A cell's source as hashed and compared: trailing whitespace stripped from every
    line, leading and trailing blank lines dropped, ``\\n`` line ends."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def code_sources(nb) -> list[str]:
    """Normalised sources of the non-empty code cells of ``nb``, in order."""
    sources = (normalise_source(c.source) for c in nb.cells if c.cell_type == "code")
    return [s for s in sources if s]


def package_dir(root: str | Path) -> Path:
    """The ``worklog_gen`` package a notebook run from ``root`` imports: the one in
    ``root`` when there is one (the repository), otherwise the installed one."""
    local = Path(root) / PACKAGE
    if (local / "__init__.py").is_file():
        return local.resolve()
    return Path(__file__).resolve().parent


def _parse(source: str) -> ast.AST | None:
    # IPython magics and shell escapes (``%matplotlib``, ``!nvidia-smi``) are not Python
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None  # the cell itself is still hashed; it will fail when executed


def _imported_names(tree: ast.AST, package: str | None) -> set[str]:
    """Dotted names that ``tree`` imports from ``worklog_gen`` (``from a import b`` gives
    both ``a`` and ``a.b``: b may be a module or an attribute). ``package`` resolves
    relative imports."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None:
                    continue
                parts = package.split(".")
                keep = len(parts) - (node.level - 1)
                if keep <= 0:
                    continue
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    return {n for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")}


def _module_file(name: str, pkg_dir: Path) -> Path | None:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    for candidate in (pkg_dir / rel / "__init__.py", pkg_dir / rel.with_suffix(".py") if rel.parts else None):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def imported_modules(sources: list[str], pkg_dir: Path) -> list[Path]:
    """Files of the ``worklog_gen`` modules that ``sources`` (code cells) import, found
    with ``ast``, transitively through those modules' own ``worklog_gen`` imports
    (absolute and relative, at any depth in the file), with the ``__init__.py`` of
    every package on the way. Sorted; empty when nothing from ``worklog_gen`` is used."""
    todo: set[str] = set()
    for source in sources:
        tree = _parse(source)
        if tree is not None:
            todo |= _imported_names(tree, None)
    seen: set[str] = set()
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.update(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run too
        path = _module_file(name, pkg_dir)
        if path is None:
            continue  # an attribute (``from worklog_gen.notebook import headline``), not a module
        files.add(path)
        is_package = path.name == "__init__.py"
        package = name if is_package else ".".join(parts[:-1]) or None
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        todo |= _imported_names(tree, package) - seen
    return sorted(files)


@dataclass(frozen=True)
class SourceHash:
    """The source hash of a notebook and the ``worklog_gen`` files it covers
    (relative to the package's parent, e.g. ``worklog_gen/notebook.py``)."""

    hexdigest: str
    files: tuple[str, ...]


def source_hash(notebook: str | Path, root: str | Path) -> SourceHash:
    """sha256 over the notebook's normalised code cells (:func:`code_sources`) and the
    source of the ``worklog_gen`` modules they import (:func:`imported_modules`).

    Markdown cells and empty code cells are left out, so prose edits keep a frozen
    result fresh; editing a code cell, or a module it uses, makes it stale.

    Raises:
        FileNotFoundError: ``notebook`` does not exist.
        ValueError: jupytext cannot read it.
    """
    sources = code_sources(read_notebook(notebook))
    pkg = package_dir(root)
    digest = hashlib.sha256(_HASH_VERSION)
    for source in sources:
        digest.update(b"cell\0" + source.encode("utf-8") + b"\0")
    rels = []
    for path in imported_modules(sources, pkg):
        rel = path.relative_to(pkg.parent).as_posix()
        text = path.read_text(encoding="utf-8")  # universal newlines
        digest.update(b"module\0" + rel.encode("utf-8") + b"\0" + text.encode("utf-8") + b"\0")
        rels.append(rel)
    return SourceHash(digest.hexdigest(), tuple(rels))
