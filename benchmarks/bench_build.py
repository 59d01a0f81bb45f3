"""How much the ``worklog`` plugin adds to a build.

Builds a synthetic 1,000-entry log twice with ``mkdocs build`` in a fresh process
each time (Material theme, search, the project's markdown extensions):

* **plugin**: ``worklog/log.md`` and the ``worklog`` plugin, which parses the log and
  generates every page during the build;
* **plain**: the very pages the plugin generated (and its nav), written beforehand as
  plain markdown files, built without the plugin.

It prints both wall times (median of ``--repeat`` runs, interleaved) and their
ratio, of medians and of minimums (the minimum is the least disturbed by other
work on a shared machine, as ``timeit``'s documentation advises); the target is a
ratio of at most 1.3. Run from the repository root::

    python benchmarks/bench_build.py --entries 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

WORDS = (
    "kernel tile warp block shared memory bandwidth roofline matmul GEMM softmax vector add Triton "
    "CUDA register occupancy latency throughput coalescing bank conflict pipeline num_warps "
    "num_stages BLOCK_SIZE GROUP_SIZE_M L2 cache HBM TFLOP/s arithmetic intensity ridge point "
    "read wrote measured profiled learned first principles today tomorrow notes the a of and to in"
).split()

BASE_CONFIG = {
    "site_name": "Benchmark log",
    "theme": {"name": "material", "features": ["navigation.sections", "navigation.indexes"]},
    "markdown_extensions": [
        "admonition", "attr_list", "md_in_html", "tables", {"toc": {"permalink": True}},
        "pymdownx.highlight", "pymdownx.superfences", "pymdownx.details",
    ],
}
TOPICS = [
    {"id": "vector-add", "title": "Vector add", "aliases": ["vector add", "vector addition", "vecadd"]},
    {"id": "tiled-matmul", "title": "Tiled matmul", "aliases": ["matmul", "GEMM", "matrix multiplication"]},
    {"id": "online-softmax", "title": "Online softmax", "aliases": ["softmax", "online softmax"]},
]


def synthetic_log(entries: int, seed: int = 0) -> str:
    """A log of ``entries`` days in the real log's format: prose, links, lists, tasks,
    some skipped days; about 150 words per entry."""
    rng = random.Random(seed)
    start = dt.date(2023, 1, 1)
    target = start + dt.timedelta(days=int(entries * 1.2) + 30)
    out = ["Ruthless work-ethic\n\nDocument the work each day.\n"]
    day = start
    for i in range(entries):
        day += dt.timedelta(days=1 + (rng.random() < 0.15))

        def sentence(n: int) -> str:
            return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

        out.append(f"{day:%m/%d/%y} (T - {(target - day).days})\n")
        out.append(f"[{sentence(6)[:-1]}](https://example.org/posts/{i % 300}/)\n")
        out.append(" ".join(sentence(rng.randint(8, 16)) for _ in range(4)) + "\n")
        out.append("Notes;\n" + "\n".join(f"- {sentence(rng.randint(6, 12))}" for _ in range(4)) + "\n")
        out.append(f"{sentence(5)[:-1]} - Done;\n")
        if rng.random() < 0.3:
            out.append(f"{sentence(5)[:-1]} -> Tmr;\n")
    return "\n".join(out)


def write_project(root: Path, config: dict, docs: dict[str, str | bytes]) -> Path:
    for name, content in docs.items():
        path = root / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root / "mkdocs.yml"


def timed_build(mkdocs_yml: Path, site: Path) -> float:
    """Wall seconds of ``mkdocs build`` in a fresh process (imports included)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(mkdocs_yml), "-d", str(site)], check=True
    )
    return time.perf_counter() - start


def generated_pages(mkdocs_yml: Path) -> tuple[dict[str, str | bytes], list, float]:
    """Build once in-process to collect the plugin's pages and nav; also time the
    plugin's own ``on_files`` work (parse and page text)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    config = load_config(str(mkdocs_yml))
    plugin = config.plugins["worklog"]
    on_files = plugin.on_files
    spent = []

    def timed_on_files(files, config):
        t0 = time.perf_counter()
        result = on_files(files, config=config)
        spent.append(time.perf_counter() - t0)
        return result

    plugin.on_files = timed_on_files
    config.plugins.events["files"] = [timed_on_files if f == on_files else f for f in config.plugins.events["files"]]
    build(config)
    return plugin.generated, config.nav, spent[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with_plugin = tmp / "plugin"
        (with_plugin / "worklog").mkdir(parents=True)
        (with_plugin / "worklog" / "log.md").write_text(synthetic_log(args.entries), encoding="utf-8")
        config = {**BASE_CONFIG, "plugins": ["search", {"worklog": {"topics": TOPICS}}]}
        plugin_yml = write_project(with_plugin, config, {"index.md": "# Home\n"})

        pages, nav, on_files_s = generated_pages(plugin_yml)
        plain_yml = write_project(
            tmp / "plain", {**BASE_CONFIG, "plugins": ["search"], "nav": nav}, {"index.md": "# Home\n", **pages}
        )
        n_pages = sum(name.endswith(".md") for name in pages) + 1

        times = {"plugin": [], "plain": []}
        for _ in range(args.repeat):  # interleaved, so that load on the machine hits both alike
            times["plugin"].append(timed_build(plugin_yml, tmp / "site-plugin"))
            times["plain"].append(timed_build(plain_yml, tmp / "site-plain"))

    plugin_s, plain_s = statistics.median(times["plugin"]), statistics.median(times["plain"])
    print(f"entries: {args.entries}, pages: {n_pages}, runs: {args.repeat} each (median wall seconds)")
    print(f"plugin build: {plugin_s:7.2f} s   runs: {', '.join(f'{t:.2f}' for t in times['plugin'])}")
    print(f"plain build:  {plain_s:7.2f} s   runs: {', '.join(f'{t:.2f}' for t in times['plain'])}")
    print(f"plugin on_files (parse + page text, in-process): {on_files_s:.2f} s")
    print(f"ratio plugin/plain: {plugin_s / plain_s:.3f} of medians, "
          f"{min(times['plugin']) / min(times['plain']):.3f} of minimums (target <= 1.3)")


if __name__ == "__main__":
    main()
