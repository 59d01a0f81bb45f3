"""The source hash of a topic notebook: what a frozen result depends on.

**The contract.** A frozen result is stale exactly when something that can change what the
notebook computes has changed:

- its **code cells**, and
- the **code of the ``worklog_gen`` modules it imports** (the kit, :mod:`worklog_gen.kit`), followed
  through their own imports;
- the **CUDA C files its code cells name** (``"cuda/vector_add.cu"``), as text, and the **notebooks
  they name** (``import_cells("flash_attention.py", ...)``: another topic's cells, run as a module), as code;
- the **Python modules beside the notebook that its code cells import** (``import
  collectives_workers``: the workers a notebook on several GPUs starts), as code.

Each is hashed as a normalised syntax tree (:func:`code_fingerprint`): comments, docstrings,
blank lines and formatting are left out, and so are markdown cells, cell metadata (the fold
tags of a page) and the package version. The package's own ``__init__.py`` (its version lookup
and public names) is not hashed: it runs nothing a notebook's result depends on. So rewording a
docstring, adding a comment, retagging a cell or releasing a new version keeps results fresh;
changing a statement, in a cell or in a kit module, stales exactly the notebooks that run it.
jupyter-cache hashes a normalised notebook the same way; Quarto's freeze hashes the file.

Each part has its own hash (:class:`~worklog_gen.freeze.record.SourceHashes`), so a stale result
can say which cells or modules changed (:func:`explain_change`).

Nothing heavy is imported at module level (jupytext only when a notebook is read); torch and
triton are never imported.
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from worklog_gen.freeze.record import SourceHashes

PACKAGE = "worklog_gen"
HASH_SCHEME = 3
"""Bumped when what is hashed changes: every result then needs one re-run, and ``worklog-gen
status`` says so. 3: syntax trees dumped alike on every Python (3.12 added fields)."""
HASH_VERSION = f"worklog-gen source hash v{HASH_SCHEME}\n".encode()
UNHASHED = frozenset({f"{PACKAGE}/__init__.py"})
"""Imported modules left out of the hash (see the module docstring)."""
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".h", ".py")
"""Files a code cell names by a string (``"cuda/vector_add.cu"``, relative to the notebook's folder)
that the hash covers too: the CUDA C a notebook compiles (:mod:`worklog_gen.kit.cuda`) and the
notebooks whose cells it imports (:mod:`worklog_gen.kit.cells`)."""


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
    """A cell's source as compared when its code is not Python: trailing whitespace stripped from
    every line, leading and trailing blank lines dropped, ``\\n`` line ends."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def code_cells(nb) -> list:
    """The non-empty code cells of ``nb``, in order: the cells the hash covers."""
    return [c for c in nb.cells if c.cell_type == "code" and normalise_source(c.source)]


def _parse(source: str) -> ast.Module | None:
    # IPython magics and shell escapes (``%matplotlib``, ``!nvidia-smi``) are not Python: blanked
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _dump(node) -> str:
    """A syntax tree as text, the same on every Python version that parses it alike: node names
    and their fields, leaving out fields that are None or empty. Newer Pythons add such fields
    (3.12's ``type_params`` on every function), which ``ast.dump`` would print."""
    if isinstance(node, ast.AST):
        fields = [(name, getattr(node, name, None)) for name in node._fields]
        inner = ",".join(f"{name}={_dump(value)}" for name, value in fields if value is not None and value != [])
        return f"{type(node).__name__}({inner})"
    if isinstance(node, list):
        return "[" + ",".join(_dump(item) for item in node) + "]"
    return repr(node)


@functools.lru_cache(maxsize=1024)
def code_fingerprint(source: str) -> str:
    """sha256 of ``source``'s code: its syntax tree without docstrings, positions or comments
    (:func:`_dump`), with IPython magic lines kept as text beside it. Source that is not Python
    (a ``%%bash`` cell) is hashed as :func:`normalise_source` text.

    The same source gives the same fingerprint on Python 3.10 to 3.13 (tests/test_freeze_contract.py)."""
    tree = _parse(source)
    if tree is None:
        payload = "text\0" + normalise_source(source)
    else:
        magics = [line.strip() for line in source.split("\n") if line.lstrip().startswith(("%", "!"))]
        payload = "ast\0" + _dump(_without_docstrings(tree)) + "\0" + "\n".join(magics)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def package_dir(root: str | Path) -> Path:
    """The ``worklog_gen`` package a notebook run from ``root`` imports: the one in
    ``root`` when there is one (the repository), otherwise the installed one."""
    local = Path(root) / PACKAGE
    if (local / "__init__.py").is_file():
        return local.resolve()
    return Path(__file__).resolve().parent.parent


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


def named_sources(sources: list[str], notebook_dir: Path) -> list[Path]:
    """Files of :data:`SOURCE_SUFFIXES` that ``sources`` (code cells) name in a string constant,
    relative to ``notebook_dir``, that exist. Sorted."""
    found: set[Path] = set()
    for source in sources:
        tree = _parse(source)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.endswith(SOURCE_SUFFIXES) and (notebook_dir / node.value).is_file():
                found.add((notebook_dir / node.value).resolve())
    return sorted(found)


def sibling_modules(sources: list[str], notebook_dir: Path) -> list[Path]:
    """Files ``<notebook_dir>/<name>.py`` of the top-level modules that ``sources`` (code cells)
    import by an absolute import (``import collectives_workers as cw``), that exist. Sorted."""
    found: set[Path] = set()
    for source in sources:
        tree = _parse(source)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                path = notebook_dir / (name.split(".")[0] + ".py")
                if name.split(".")[0] != PACKAGE and path.is_file():
                    found.add(path.resolve())
    return sorted(found)


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
            continue  # an attribute (``from worklog_gen.kit.notebook import headline``), not a module
        files.add(path)
        is_package = path.name == "__init__.py"
        package = name if is_package else ".".join(parts[:-1]) or None
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        todo |= _imported_names(tree, package) - seen
    return sorted(files)


@dataclass(frozen=True)
class SourceHash:
    """The source hash of a notebook (``hexdigest``) and its parts (``parts``)."""

    hexdigest: str
    parts: SourceHashes

    @property
    def files(self) -> tuple[str, ...]:
        """The hashed ``worklog_gen`` files, relative to the package's parent."""
        return tuple(path for path, _ in self.parts.modules)


def source_hash(notebook: str | Path, root: str | Path) -> SourceHash:
    """sha256 over :data:`HASH_VERSION`, the :func:`code_fingerprint` of each non-empty code
    cell of ``notebook`` in order, that of each ``worklog_gen`` module they import
    (:func:`imported_modules`, without :data:`UNHASHED`), by path, that of each CUDA source
    they name (:func:`named_sources`) and that of each module beside the notebook they import
    (:func:`sibling_modules`). See the module docstring.

    Raises:
        FileNotFoundError: ``notebook`` does not exist.
        ValueError: jupytext cannot read it.
    """
    sources = [c.source for c in code_cells(read_notebook(notebook))]
    pkg = package_dir(root)
    cells = tuple(code_fingerprint(s) for s in sources)
    modules = []
    for path in imported_modules(sources, pkg):
        rel = path.relative_to(pkg.parent).as_posix()
        if rel not in UNHASHED:
            modules.append((rel, code_fingerprint(path.read_text(encoding="utf-8"))))
    beside = Path(notebook).parent
    for path in dict.fromkeys([*named_sources(sources, beside), *sibling_modules(sources, beside)]):
        try:
            rel = path.relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            rel = path.as_posix()
        modules.append((rel, code_fingerprint(path.read_text(encoding="utf-8"))))
    digest = hashlib.sha256(HASH_VERSION)
    for h in cells:
        digest.update(b"cell\0" + h.encode() + b"\0")
    for rel, h in modules:
        digest.update(b"module\0" + rel.encode() + b"\0" + h.encode() + b"\0")
    return SourceHash(digest.hexdigest(), SourceHashes(cells, tuple(modules), HASH_SCHEME))


def explain_change(recorded: SourceHashes | None, current: SourceHashes, cell_lines: list[int | None]) -> list[str]:
    """Why a result is stale, one reason per line: the code cells changed, added or removed
    (cells compared in order, as :mod:`difflib` aligns them; lines from ``cell_lines``, the
    1-based line of each current code cell in the ``.py``), and each imported module changed,
    newly imported or no longer imported. ``recorded`` ``None``: the record predates per-file
    hashes."""
    if recorded is None:
        return ["the frozen record has no per-file hashes (written before source hash v2)"]
    if recorded.version != current.version:
        return [f"the frozen record was hashed by source hash v{recorded.version}, this worklog-gen hashes by "
                f"v{current.version}"]
    reasons = []

    def where(j: int) -> str:
        line = cell_lines[j] if j < len(cell_lines) else None
        return f"code cell {j + 1}" + (f" (line {line})" if line else "")

    matcher = difflib.SequenceMatcher(a=recorded.cells, b=current.cells, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op in ("replace", "insert"):
            verb = "changed" if op == "replace" else "added"
            reasons += [f"{where(j)} {verb}" for j in range(j1, j2)]
            if op == "replace" and i2 - i1 > j2 - j1:
                reasons.append(f"{i2 - i1 - (j2 - j1)} code cell(s) removed there")
        else:
            reasons.append(f"{i2 - i1} code cell(s) removed after " + (where(j1 - 1) if j1 else "the start"))
    before, now = recorded.module_hashes, current.module_hashes
    for rel in sorted(before.keys() | now.keys()):
        noun, used = ("module", "imported") if rel.endswith(".py") else ("file", "used")
        if rel not in now:
            reasons.append(f"{noun} {rel} no longer {used}")
        elif rel not in before:
            reasons.append(f"{noun} {rel} newly {used}")
        elif before[rel] != now[rel]:
            reasons.append(f"{noun} {rel} changed")
    return reasons or ["the hash scheme changed"]
