"""The scripts, styles and vendored libraries every worklog site needs, shipped as package data.

They live in ``worklog_gen/site/static/`` and are published under :data:`SITE_FOLDER` on every
build, by the MkDocs plugin (generated files plus ``extra_css`` / ``extra_javascript`` entries,
as mkdocs-jupyter and mkdocstrings add theirs) and by ``worklog-gen generate``, so that a user's
``mkdocs.yml`` names the plugin and nothing else:

- ``charts.js`` draws the Vega-Lite charts with the vendored ``vega/`` (vega 5.33, vega-lite 5.20,
  vega-embed 6.29; ``scripts/vendor_vega.sh``), loaded only as a chart comes near the viewport;
- ``katex.js`` typesets ``pymdownx.arithmatex`` (generic) output with the vendored ``katex/``
  (``scripts/vendor_katex.sh``), loaded only on a page with math; without it the formulas are the
  MathML the build wrote (:mod:`worklog_gen.site.math`);
- ``a11y.js`` names what Material's templates leave unnamed, and makes every region that scrolls
  sideways focusable and named;
- ``worklog.css`` styles charts, folds and data-dense tables, fixes contrast in both palettes,
  shows focus and the edges of what scrolls.

Each script finds its libraries relative to its own URL, so the folder can live anywhere.
"""

from __future__ import annotations

from importlib import resources

SITE_FOLDER = "assets/worklog-gen"
"""Where the files are published, relative to the docs folder (and so to the site root)."""
STYLESHEETS = ("worklog.css",)
"""Added to ``extra_css``, in this order."""
SCRIPTS = ("katex.js", "charts.js", "a11y.js")
"""Added to ``extra_javascript``, in this order."""


def static_files() -> dict[str, bytes]:
    """Every file of ``worklog_gen/site/static/``: docs path (``assets/worklog-gen/vega/vega.min.js``)
    -> bytes. About 1.8 MB, of which the browser loads the libraries only on pages that need them."""
    out: dict[str, bytes] = {}

    def walk(folder, rel: str) -> None:
        for item in sorted(folder.iterdir(), key=lambda p: p.name):
            if item.is_dir():
                walk(item, f"{rel}/{item.name}")
            elif not item.name.startswith("."):
                out[f"{rel}/{item.name}"] = item.read_bytes()

    walk(resources.files("worklog_gen.site") / "static", SITE_FOLDER)
    return out


def stylesheet_paths() -> list[str]:
    """The docs paths to add to ``extra_css``."""
    return [f"{SITE_FOLDER}/{name}" for name in STYLESHEETS]


def script_paths() -> list[str]:
    """The docs paths to add to ``extra_javascript``."""
    return [f"{SITE_FOLDER}/{name}" for name in SCRIPTS]
