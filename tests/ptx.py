"""Compiling a notebook's CUDA C source (``notebooks/cuda/*.cu``) to PTX for the kernel tests (no GPU needed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CUDA_DIR = Path(__file__).resolve().parents[1] / "notebooks" / "cuda"


def cuda_ptx(source: str, folder: Path) -> str:
    """PTX of ``notebooks/cuda/<source>``, compiled by nvcc for sm_90 in ``folder``.
    Skips the test where nvcc is missing; fails it on a compile error."""
    nvcc = shutil.which("nvcc") or next((p for p in ["/usr/local/cuda/bin/nvcc"] if Path(p).exists()), None)
    if nvcc is None:
        pytest.skip("nvcc not installed")
    result = subprocess.run([nvcc, "-std=c++17", "-O3", "-arch=sm_90", "-ptx", str(CUDA_DIR / source), "-o", "cuda.ptx"],
                            cwd=folder, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return (folder / "cuda.ptx").read_text()
