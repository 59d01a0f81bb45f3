"""How a whole site build grows with the log: time, site size and the largest day page.

Writes T-minus logs of consecutive days (1,000, 4,000 and 10,000 entries by default) into a
temporary folder, each entry one of a few realistic texts cycled through the log (reading
notes with links to the Triton tutorials, the CUDA C++ Programming Guide and the FlashAttention
paper, ``Done`` and ``-> Tmr`` task lines, code spans), beside a minimal ``mkdocs.yml``
(``site_name``, ``theme: material``, the ``worklog`` plugin; ``--search`` adds the ``search``
plugin). Each log is built once with
``mkdocs build`` in a fresh process, and the script prints per size the wall time, the size of
the site, the largest day page's HTML, and the ratios of time and size between 4,000 and 1,000
entries.

Goals on a 2-core machine: 10,000 entries build in at most 90 s; 4,000 entries take at most
4.8 times the time and the site size of 1,000 (a build linear in the log gives 4); no day page
over 60 KB. Wall time counts what else the machine runs; CPU time (user and system) less so, and
both are printed. Run from the repository root::

    python benchmarks/bench_site_scale.py --sizes 1000 4000 10000
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
START = dt.date(2020, 1, 1)

ENTRIES = [
    """\
Read the [Triton tutorial on vector addition](https://triton-lang.org/main/getting-started/tutorials/01-vector-add.html);
wrote my first kernel with `BLOCK_SIZE = 1024` and `tl.program_id(axis=0)`.
- masks guard the tail: `offsets < n_elements`
- the kernel is memory bound: 12 bytes per FLOP in fp32

Time the vector add against `torch.add` - Done;
Plot it on the roofline -> Tmr
""",
    """\
Read [CUDA C++ Programming Guide, the memory hierarchy](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#memory-hierarchy)
and the part on [shared memory](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#shared-memory).

Notes;
- a warp's 32 loads coalesce into as few 128-byte lines as the addresses allow
- bank conflicts: 32 banks of 4 bytes; pad the tile by one column
- `__syncthreads()` before reading what another thread wrote

Tiled GEMM in CUDA C, 32x32 tiles - Done;
""",
    """\
Read the [FlashAttention paper](https://arxiv.org/abs/2205.14135) again, section 3.1:
the online softmax keeps a running max `m_i` and sum `l_i`, so the $N \\times N$ scores never
reach HBM. Arithmetic intensity goes from O(1) to O(d) FLOP/byte.

Also [Online normalizer calculation for softmax](https://arxiv.org/abs/1805.02867).

Write the forward kernel in Triton -> Tmr;
Review the backward pass notes - Done
""",
    """\
Coded the [Triton matmul tutorial](https://triton-lang.org/main/getting-started/tutorials/03-matrix-multiplication.html)
from memory. `GROUP_SIZE_M = 8` reorders the tiles for L2 reuse; `num_warps = 8`,
`num_stages = 3` on the H100.

| BLOCK_M | BLOCK_N | TFLOP/s |
| --- | --- | --- |
| 128 | 128 | 612 |
| 128 | 256 | 701 |

Autotune over `num_stages` - Done;
Compare with cuBLAS at 4096 - Done;
""",
    """\
Short day. Read [Making Deep Learning Go Brrrr From First Principles](https://horace.io/brrr_intro.html):
compute, memory bandwidth and overhead; a ridge point of about 300 FLOP/byte on an H100.

Slides for the reading group -> Tmr
""",
    """\
Fused softmax from the [Triton tutorials](https://triton-lang.org/main/getting-started/tutorials/02-fused-softmax.html):
one row per program, `BLOCK_SIZE = triton.next_power_of_2(n_cols)`.

```python
row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float("inf"))
row_minus_max = row - tl.max(row, axis=0)
```

Measured 2.9 TB/s of 3.35 TB/s at 4096 columns.
- Time the online softmax at 8192 rows - Done;
- Write up the reduction notes -> Tmr
""",
]


def t_minus_log(entries: int) -> str:
    """A T-minus log of ``entries`` consecutive days from :data:`START`, counting down to the
    day after the last one, cycling through :data:`ENTRIES`."""
    target = START + dt.timedelta(days=entries)
    out = ["Ruthless work-ethic\n\nDocument the work each day.\n"]
    for i in range(entries):
        day = START + dt.timedelta(days=i)
        out.append(f"{day:%m/%d/%y} (T - {(target - day).days})\n\n{ENTRIES[i % len(ENTRIES)]}")
    return "\n".join(out)


def site_size(site: Path) -> tuple[int, int]:
    """Bytes of every file of ``site``, and of its largest day page (``worklog/<date>/index.html``)."""
    day = re.compile(r"\d{4}-\d\d-\d\d")
    total = largest = 0
    for path in site.rglob("*"):
        if path.is_file():
            size = path.stat().st_size
            total += size
            if path.name == "index.html" and day.fullmatch(path.parent.name):
                largest = max(largest, size)
    return total, largest


def build(root: Path, entries: int, search: bool = False) -> tuple[float, float, int, int]:
    """Write the project (with the ``search`` plugin when ``search``), build it with ``mkdocs
    build`` in a fresh process (importing this repository's ``worklog_gen``); wall seconds, CPU seconds (user and system, of the build's
    process), site bytes and largest day page bytes."""
    (root / "worklog").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (root / "worklog" / "log.md").write_text(t_minus_log(entries), encoding="utf-8")
    plugins = ["search"] * search + [{"worklog": {"worklog_dir": "worklog"}}]
    config = {"site_name": "Scale", "theme": "material", "plugins": plugins}
    (root / "mkdocs.yml").write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    cpu = _children_cpu()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(root / "mkdocs.yml")], check=True, env=env)
    seconds = time.perf_counter() - start
    return (seconds, _children_cpu() - cpu, *site_size(root / "site"))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 10000], help="entries per log")
    parser.add_argument("--search", action="store_true", help="add MkDocs' search plugin (Material's search index)")
    args = parser.parse_args()
    results = {}
    print(f"{'entries':>8} {'wall s':>7} {'CPU s':>7} {'site MB':>8} {'largest day page KB':>20}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            wall, cpu, total, largest = build(Path(tmp) / str(n), n, args.search)
            results[n] = (wall, cpu, total)
            print(f"{n:>8} {wall:>7.1f} {cpu:>7.1f} {total / 1e6:>8.1f} {largest / 1e3:>20.1f}", flush=True)
    if 1000 in results and 4000 in results:
        (w1, c1, s1), (w4, c4, s4) = results[1000], results[4000]
        print(f"4k/1k: wall {w4 / w1:.2f}x, CPU {c4 / c1:.2f}x, site size {s4 / s1:.2f}x (goal: at most 4.8x)")
    if 10000 in results:
        print(f"10k: {results[10000][0]:.1f} s wall, {results[10000][1]:.1f} s CPU (goal: at most 90 s)")


if __name__ == "__main__":
    main()
