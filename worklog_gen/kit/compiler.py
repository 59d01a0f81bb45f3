"""Keeping the compiler's own error output out of a notebook's cells.

Triton's compiler writes to the process's stderr (file descriptor 2) from C++, around
Python's ``sys.stderr``: a pass that fails dumps its MLIR reproducer there, with the
machine's temporary paths in it, and the notebook's frozen output would keep it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def compiler_output_kept() -> Iterator[list[str]]:
    """Send what is written to file descriptor 2 to a temporary file for the duration, and
    yield a list that holds its lines once the block ends (also when it raises)."""
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines.extend(sink.read().splitlines())


def failed_pass(lines: list[str]) -> str:
    """The name of the MLIR pass whose failure ``lines`` (as kept above) report, e.g.
    ``NVGPUWarpSpecialization``; "" when they report none."""
    return next((line.split("executing [")[1].split(" on")[0].strip("`") for line in lines
                 if "Pipeline failed while executing [" in line), "")
