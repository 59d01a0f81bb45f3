"""Write the README's chart: the Kernels page's roofline SVG, from the committed freeze store.

The same SVG the site build makes (worklog_gen.site.kernels.kernels_page, rendered by
vl-convert without a browser), copied to docs/assets/screenshots/roofline.svg so that the
README on GitHub shows every kernel variant. Run it after re-freezing a notebook:

    python scripts/readme_charts.py
"""

from __future__ import annotations

from pathlib import Path

import yaml

from worklog_gen.site.kernels import kernels_page

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "assets" / "screenshots" / "roofline.svg"


def main() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # !ENV tags kept as text
    plugin = next(p["worklog"] for p in config["plugins"] if isinstance(p, dict) and "worklog" in p)
    topics = [(t["id"], t["title"], Path(t["notebook"])) for t in plugin.get("topics", []) if t.get("notebook")]
    page = kernels_page(topics, Path(plugin.get("freeze_dir", "notebooks/_freeze")), ROOT)
    OUT.write_bytes(page.files["kernels/roofline.vega.svg"])
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
