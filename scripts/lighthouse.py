"""Lighthouse's mobile audit of a built site, served gzipped as any host serves it, several runs.

Usage (from the repository, after ``mkdocs build``; needs Node's ``npx`` and a Chromium):

    python scripts/lighthouse.py site topics/flash-attention/ worklog/ --runs 5

For each page it prints every run's performance and accessibility scores and Total Blocking
Time, and their medians. Lighthouse's default mobile settings simulate a mid-range phone (4x CPU
slowdown, slow 4G), so one run on a busy machine can differ from the next by several points:
compare medians, and run what you compare in the same call (``--runs`` alternates the pages).

The ``lighthouse`` package comes from the npm registry through ``npx`` (pinned below) unless
``--lighthouse`` names an installed command.
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

LIGHTHOUSE = ["npx", "--yes", "lighthouse@12.8.2"]
COMPRESSED = ("text/", "application/javascript", "application/json", "image/svg+xml", "application/xml")


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; text, scripts, JSON and SVG gzipped when the browser accepts it."""

    def log_message(self, *args) -> None:
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):
            path = path / "index.html"
        kind = self.guess_type(str(path))
        if not (path.is_file() and kind.startswith(COMPRESSED) and "gzip" in self.headers.get("Accept-Encoding", "")):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def audit(command: list[str], url: str, chrome: str, out: Path) -> dict:
    """One Lighthouse run of ``url`` (mobile, its defaults). Returns scores (0-100) and TBT (ms)."""
    subprocess.run([*command, url, "--quiet", "--output=json", f"--output-path={out}",
                    "--only-categories=performance,accessibility",
                    "--chrome-flags=--headless=new --no-sandbox"],
                   check=True, env={**os.environ, "CHROME_PATH": chrome}, stdout=subprocess.DEVNULL)
    report = json.loads(out.read_text())
    categories, audits = report["categories"], report["audits"]
    return {"performance": round(100 * categories["performance"]["score"]),
            "accessibility": round(100 * categories["accessibility"]["score"]),
            "tbt_ms": round(audits["total-blocking-time"]["numericValue"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built site's folder")
    parser.add_argument("pages", nargs="+", help="paths below the site's root, e.g. topics/flash-attention/")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chrome", default=shutil.which("chromium") or shutil.which("google-chrome") or "")
    parser.add_argument("--lighthouse", help="an installed lighthouse command instead of npx")
    args = parser.parse_args(argv)
    if not args.chrome:
        parser.error("no Chromium found: pass --chrome")
    if not (args.site / "index.html").is_file():
        parser.error(f"{args.site}: no index.html (build the site first)")
    handler = lambda *a, **k: GzipHandler(*a, directory=str(args.site), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    command = [args.lighthouse] if args.lighthouse else LIGHTHOUSE
    results: dict[str, list[dict]] = {page: [] for page in args.pages}
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            for page in args.pages:
                url = f"http://127.0.0.1:{server.server_address[1]}/{page.lstrip('/')}"
                results[page].append(audit(command, url, args.chrome, Path(folder) / "report.json"))
                print(f"run {run + 1} {page}: {results[page][-1]}", file=sys.stderr)
    server.shutdown()
    for page, runs in results.items():
        line = "  ".join(f"{key} {[r[key] for r in runs]} median {statistics.median(r[key] for r in runs):g}"
                         for key in ("performance", "accessibility", "tbt_ms"))
        print(f"{page}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
