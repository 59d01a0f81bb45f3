"""Compiling a notebook's CUDA C source to PTX for the kernel tests (no GPU needed)."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest


def notebook_constant(notebook: Path, name: str) -> str:
    """The string literal assigned to ``name`` at ``notebook``'s top level.

    Raises:
        LookupError: no such assignment.
    """
    for node in ast.parse(notebook.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{notebook}: no top-level {name} = ...")


def notebook_ptx(notebook: Path, folder: Path) -> str:
    """PTX of ``notebook``'s ``CUDA_SRC``, compiled by nvcc for sm_90 in ``folder``.
    Skips the test where nvcc is missing; fails it on a compile error."""
    nvcc = shutil.which("nvcc") or next((p for p in ["/usr/local/cuda/bin/nvcc"] if Path(p).exists()), None)
    if nvcc is None:
        pytest.skip("nvcc not installed")
    (folder / "cuda.cu").write_text(notebook_constant(notebook, "CUDA_SRC"))
    result = subprocess.run([nvcc, "-std=c++17", "-O3", "-arch=sm_90", "-ptx", "cuda.cu", "-o", "cuda.ptx"],
                            cwd=folder, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return (folder / "cuda.ptx").read_text()
