"""CUDA C sources beside a notebook: compiled once with torch's ``load_inline``, shown on its page.

A topic's CUDA C lives in ``notebooks/cuda/`` (llm.c keeps its kernels in ``dev/cuda/*.cu`` the
same way): the kernels in a ``.cu`` file, the PyTorch bindings in a ``.cpp`` file. Both are
covered by the notebook's source hash (:mod:`worklog_gen.freeze.source_hash` hashes every
``.cu``, ``.cuh`` and ``.cpp`` file a code cell names), so editing a kernel stales its result.

torch is imported inside the functions: importing this module is cheap.
"""

from __future__ import annotations

import inspect
import os
import re
import time
from pathlib import Path

from worklog_gen.kit.markdown import details, fence

NOTEBOOK_DIR_ENV = "WORKLOG_GEN_NOTEBOOK_DIR"
"""The folder of the running notebook (set by ``worklog-gen execute``); names are relative to it."""


def source_file(name: str) -> Path:
    """The file ``name`` (``cuda/vector_add.cu``), relative to the running notebook's folder (or
    the current folder, for a notebook run by hand from its own).

    Raises:
        FileNotFoundError: there is no such file.
    """
    path = Path(os.environ.get(NOTEBOOK_DIR_ENV, ".")) / name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such CUDA source (names are relative to the notebook's folder)")
    return path


def compile_cuda(name: str, *, cuda: str, cpp: str, functions: list[str]):
    """Compile ``cuda`` (kernels) and ``cpp`` (bindings), files named relative to the notebook, into
    a Python module with ``functions``, for this GPU's architecture (``-arch=sm_XY``, ``-O3``).

    Through ``torch.utils.cpp_extension.load_inline``; where it can skip its implicit PyTorch
    headers (``no_implicit_headers``), the files include what they need and nvcc compiles in
    seconds instead of most of a minute. Prints the compile time.

    Raises:
        FileNotFoundError: a source is missing.
        RuntimeError: nvcc or the C++ compiler fails (torch's message, with the compiler's output).
    """
    import torch
    from torch.utils.cpp_extension import load_inline

    major, minor = torch.cuda.get_device_capability()
    lean = "no_implicit_headers" in inspect.signature(load_inline).parameters
    start = time.perf_counter()
    module = load_inline(name=name, cpp_sources=source_file(cpp).read_text(), cuda_sources=source_file(cuda).read_text(),
                         functions=functions, extra_cuda_cflags=["-O3", f"-arch=sm_{major}{minor}"],
                         **({"no_implicit_headers": True} if lean else {}))
    print(f"{cuda}: compiled for sm_{major}{minor} in {time.perf_counter() - start:.1f} s")
    return module


def _function(text: str, symbol: str) -> str | None:
    """The definition of ``symbol`` in C++ ``text``, from the line of its template or return
    type to its closing brace; ``None`` if not found."""
    m = re.search(rf"^(?:template\s*<[^>]*>\s*\n)?[^\n;{{}}]*\b{re.escape(symbol)}\s*\(", text, re.M)
    if m is None:
        return None
    depth, i = 0, text.index("{", m.end())
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[m.start(): j + 1]
    return None


def show_source(name: str, *, kernels: tuple[str, ...] = ()):
    """The CUDA source ``name`` for the page, as an IPython ``Markdown`` output: each function of
    ``kernels`` open, with CUDA highlighting, and the whole file folded under them.

    Raises:
        FileNotFoundError: the file is missing.
        LookupError: a function of ``kernels`` is not in it.
    """
    from IPython.display import Markdown

    text = source_file(name).read_text()
    parts = []
    for symbol in kernels:
        found = _function(text, symbol)
        if found is None:
            raise LookupError(f"{name}: no function {symbol}")
        parts.append(fence(found, "cuda"))
    lines = text.count("\n") + 1
    parts.append(details(fence(text, "cuda"), f"The whole file, {name} ({lines} lines)"))
    return Markdown("\n\n".join(parts))
