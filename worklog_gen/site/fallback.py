"""A chart's static fallback at a phone's width: a narrow SVG beside the wide one.

Every chart is served as ``<stem>.vega.json`` (its Vega-Lite spec) and ``<stem>.vega.svg`` (a
static SVG about 700 px wide, :func:`worklog_gen.kit.charts.chart_files`); ``charts.js`` draws the
spec in its place when JavaScript runs. Without JavaScript the SVG is what a reader sees, and on a
phone's column it is wider than the column, its text 10 px (Vega-Lite's default). So each chart
also gets ``<stem>.vega.narrow.svg``, rendered here at build time with vl-convert from a copy of
its spec laid out as ``charts.js`` lays it out on a narrow column (:func:`narrow_spec`):
:data:`NARROW_WIDTH` px wide in all, every text at least :data:`MIN_FONT_PX` px, the legend under
the plot, a long title wrapped; the data untouched. Each page shows the two as a ``<picture>``
(:func:`with_pictures`) whose narrow source is chosen on a screen too narrow for the wide one.

vl-convert takes a few hundred milliseconds a chart, so a narrow SVG is kept in a cache folder
(``cache_dir``, ``.cache/plugin/worklog`` by default, as Material's social plugin keeps its
cards in ``.cache/plugin/social``), named by a hash of the spec and of everything that shapes it
here (:func:`cache_key`); a later build reads it back, and deletes the renderings it no longer uses
(:func:`prune_cache`).
"""

from __future__ import annotations

import copy
import hashlib
import html
import json
import os
import posixpath
import re
import tempfile
from pathlib import Path
from typing import Mapping

NARROW_WIDTH = 300
"""px: the narrow SVG's whole width (axes, legend and padding included). It fits every chart's
column on a screen 360 px wide or wider: 302 px in a fold at 360 px (328 px outside one), 332 px
in a fold at 390 px (358 px outside)."""
MIN_FONT_PX = 11
"""The smallest text of a narrow SVG, in px (``charts.js``'s ``MIN_FONT_PX``)."""
PHONE_PX = 600
"""A screen narrower than this is a phone's: it gets the narrow SVG (``charts.js``'s ``NARROW_PX``)."""
PAGE_MARGINS_PX = 58
"""px of a screen that a chart's column does not get at a phone's or a tablet's width (Material's
side margins and a fold's padding and border): the wide SVG fits a screen this much wider than it."""
SUFFIX, NARROW_SUFFIX, SPEC_SUFFIX = ".vega.svg", ".vega.narrow.svg", ".vega.json"
CACHE_VERSION = 1
"""Part of every cache key: raised when the same narrowed spec would give other bytes (a change in
how an SVG is written once vl-convert has drawn it); a change of :func:`narrow_spec` needs none."""


# --- the spec at a phone's width -------------------------------------------------------------


def _raise_fonts(node) -> None:
    """Every explicit font size in ``node`` (``fontSize``, ``labelFontSize``, ...) raised to
    :data:`MIN_FONT_PX`, in place; the data (``data``, ``datasets``, ``values``) is not entered."""
    if isinstance(node, list):
        for item in node:
            _raise_fonts(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key.lower().endswith("fontsize") and isinstance(value, (int, float)) and not isinstance(value, bool):
                if value < MIN_FONT_PX:
                    node[key] = MIN_FONT_PX
            elif key not in ("data", "datasets", "values"):
                _raise_fonts(value)


def _at_least(config: dict, part: str, **sizes: int) -> None:
    """``config[part]`` with each font size in ``sizes`` set where it is unset or smaller."""
    section = dict(config.get(part) or {})
    for key, size in sizes.items():
        if not isinstance(section.get(key), (int, float)) or section[key] < size:
            section[key] = size
    config[part] = section


def _wrap(text, chars: int):
    """A title's text in lines of at most ``chars`` characters, broken between words (a list of
    lines, which Vega draws one under another); a short text, or one that is not a string, as it is."""
    if not isinstance(text, str) or len(text) <= chars:
        return text
    lines = [""]
    for word in text.split(" "):
        if lines[-1] and len(lines[-1]) + 1 + len(word) > chars:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return lines


def _title_chars(font_px: float, width: int) -> int:
    """Characters of a title line in ``width`` px at ``font_px`` (a character is about 0.6 em)."""
    return max(20, int(width / (0.6 * font_px)))


def narrow_spec(spec: Mapping, width: int | None = None) -> dict:
    """A copy of a Vega-Lite spec laid out for a phone's column, as ``charts.js`` draws it there:

    - every explicit font size raised to :data:`MIN_FONT_PX`, and the config's axis, legend,
      header, mark text and title fonts at least that (titles a step or three larger);
    - a single or layered view ``width`` px wide in all (:data:`NARROW_WIDTH` unless given;
      ``autosize: fit-x``, axes and legend included), unless its width is a step per item (the
      words-per-day calendar: a square per day, which keeps its width and scrolls sideways on a
      phone, as it does when ``charts.js`` draws it);
    - the legend under the plot, its entries one under another; a title, and an x axis's title,
      longer than a line wrapped; the title from the chart's left edge, the x axis's title ending
      at the plot's right edge, and the x axis's last label inside the picture; an axis's labels at
      most 40% of the width (a bar chart's long row names would leave its bars no room).

    The data (``data``, ``datasets``, inline ``values``) is left as it is."""
    width = NARROW_WIDTH if width is None else width
    out = copy.deepcopy(dict(spec))
    _raise_fonts(out)
    config = out["config"] = dict(out.get("config") or {})
    axis = {"labelFontSize": MIN_FONT_PX, "titleFontSize": MIN_FONT_PX + 1}
    _at_least(config, "header", **axis)  # a facet's row and column labels
    _at_least(config, "axis", **axis, labelSeparation=3)  # labels closer than 3 px: one of them dropped
    _at_least(config, "legend", labelFontSize=MIN_FONT_PX, titleFontSize=MIN_FONT_PX + 1)
    _at_least(config, "title", fontSize=MIN_FONT_PX + 3, subtitleFontSize=MIN_FONT_PX + 1)
    _at_least(config, "text", fontSize=MIN_FONT_PX)
    stepped = isinstance(out.get("width"), Mapping) and "step" in out["width"]
    if ("layer" in out or "mark" in out) and not stepped:
        out["width"] = width
        out["autosize"] = {"type": "fit-x", "contains": "padding"}
    if not stepped:  # the calendar's legend is a row of squares under it already, and it scrolls
        config["legend"] = {**config["legend"], "orient": "bottom", "direction": "vertical"}
    # a title starts at the chart's left edge (not centred over a plot that long axis labels push
    # right), an x axis's title ends at the plot's right edge, and its labels within 25 px of an
    # end are aligned to end there (Vega's fit leaves a label centred on the last tick half out)
    config["title"] = {"anchor": "start", "frame": "bounds", **config["title"]}
    config["axisX"] = {"titleAnchor": "end", "labelFlush": 25, **(config.get("axisX") or {})}
    config["axis"] = {"labelLimit": round(0.4 * width), **config["axis"]}
    _wrap_x_titles(out, _title_chars(MIN_FONT_PX + 1, width - 20))
    title = out.get("title")
    if isinstance(title, str) or (isinstance(title, list) and title):
        title = out["title"] = {"text": title}
    if isinstance(title, Mapping):
        title = out["title"] = dict(title)
        size = title.get("fontSize") or config["title"]["fontSize"]
        title["text"] = _wrap(title.get("text"), _title_chars(size, width))
        if "subtitle" in title:
            sub = title.get("subtitleFontSize") or config["title"]["subtitleFontSize"]
            title["subtitle"] = _wrap(title["subtitle"], _title_chars(sub, width))
    return out


def _wrap_x_titles(node, chars: int) -> None:
    """Every x axis title in ``node`` (an encoding's ``x`` or ``x2`` title, or its axis's) wrapped
    at ``chars`` characters, in place; the data is not entered."""
    if isinstance(node, list):
        for item in node:
            _wrap_x_titles(item, chars)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "encoding" and isinstance(value, dict):
                for channel in ("x", "x2"):
                    enc = value.get(channel)
                    if isinstance(enc, dict):
                        if "title" in enc:
                            enc["title"] = _wrap(enc["title"], chars)
                        if isinstance(enc.get("axis"), dict) and "title" in enc["axis"]:
                            enc["axis"]["title"] = _wrap(enc["axis"]["title"], chars)
            elif key not in ("data", "datasets", "values"):
                _wrap_x_titles(value, chars)


# --- rendered once, then read from the cache --------------------------------------------------


def cache_key(narrowed: Mapping) -> str:
    """The cache name of a narrow SVG: a SHA-256 of the spec as :func:`narrow_spec` wrote it (the
    chart's spec with every narrowing setting applied, so a change of either is a new key) and of
    the renderer (vl-convert's release and the Vega-Lite version it renders with, :data:`CACHE_VERSION`)."""
    import vl_convert

    from worklog_gen.kit.charts import VEGALITE_VERSION

    text = json.dumps({"spec": narrowed, "vl_convert": vl_convert.__version__, "vega_lite": VEGALITE_VERSION,
                       "version": CACHE_VERSION}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def narrow_svg(spec: Mapping, cache_dir: Path | None = None) -> str:
    """The SVG of :func:`narrow_spec`, rendered by vl-convert (:func:`worklog_gen.kit.charts.chart_svg`),
    or read from ``cache_dir/<key>.svg`` (:func:`cache_key`) when an earlier build rendered it; a
    new rendering is written there. A cache folder that cannot be written is passed over.

    Raises:
        ValueError: vl-convert rejects the narrowed spec (its message kept).
    """
    return _narrow_svg(spec, cache_dir)[1]


def _narrow_svg(spec: Mapping, cache_dir: Path | None) -> tuple[str, str]:
    """:func:`narrow_svg`, with its cache key: ``(key, svg)``."""
    narrowed = narrow_spec(spec)
    key = cache_key(narrowed)
    path = Path(cache_dir) / f"{key}.svg" if cache_dir is not None else None
    if path is not None:
        try:
            return key, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
    from worklog_gen.kit.charts import chart_svg

    svg = chart_svg(narrowed)
    if path is not None:
        try:  # whole or not at all: another build may read it at the same time
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, suffix=".tmp",
                                             delete=False) as tmp:
                tmp.write(svg)
            os.replace(tmp.name, path)
        except OSError:
            pass
    return key, svg


CACHE_NAME = re.compile(r"[0-9a-f]{64}\.svg")
"""How :func:`narrow_svg` names a cached SVG: its :func:`cache_key` and ``.svg``."""


def prune_cache(cache_dir: Path, keep: set[str]) -> int:
    """Delete the cached SVGs of ``cache_dir`` whose key is not in ``keep`` (the keys one build
    used): a chart whose data changed leaves its old rendering behind, and the words-per-day
    calendar changes with every log entry, so without this the folder grows with every build.
    Only files named as :data:`CACHE_NAME` names them are touched; one that cannot be deleted is
    passed over. Returns how many were deleted."""
    try:
        names = [entry.name for entry in os.scandir(cache_dir) if entry.is_file()]
    except OSError:
        return 0
    deleted = 0
    for name in names:
        if CACHE_NAME.fullmatch(name) and name[:-4] not in keep:
            try:
                os.remove(Path(cache_dir) / name)
                deleted += 1
            except OSError:
                pass
    return deleted


def narrow_files(files: Mapping[str, str | bytes], cache_dir: Path | None = None) -> tuple[dict[str, bytes], list[str]]:
    """``<stem>.vega.narrow.svg`` for every chart of ``files`` (docs path -> content): every
    ``<stem>.vega.json`` served with its ``<stem>.vega.svg``. Returns those files and a note for
    each chart vl-convert could not render narrow (its page then shows the wide SVG alone).
    ``cache_dir`` keeps only this build's renderings afterwards (:func:`prune_cache`)."""
    out: dict[str, bytes] = {}
    notes: list[str] = []
    used: set[str] = set()
    for path, data in sorted(files.items()):
        if not path.endswith(SPEC_SUFFIX):
            continue
        stem = path[: -len(SPEC_SUFFIX)]
        if stem + SUFFIX not in files:
            continue
        try:
            key, svg = _narrow_svg(json.loads(data), cache_dir)
        except ValueError as exc:  # vl-convert's error, or a spec that is not JSON
            notes.append(f"worklog: {path}: no narrow SVG for phones, the wide one stands alone ({exc})")
            continue
        out[stem + NARROW_SUFFIX] = svg.encode()
        used.add(key)
    if cache_dir is not None:
        prune_cache(cache_dir, used)
    return out, notes


# --- the page: a <picture> of the two --------------------------------------------------------


def svg_size(svg: str | bytes) -> tuple[int, int] | None:
    """The ``width`` and ``height`` of an SVG's root element, rounded to px; ``None`` without them."""
    text = svg.decode(errors="replace") if isinstance(svg, bytes) else svg
    root = re.search(r"<svg\b[^>]*>", text)
    size = dict(re.findall(r'\b(width|height)="(\d+(?:\.\d+)?)"', root.group(0))) if root else {}
    return (round(float(size["width"])), round(float(size["height"]))) if len(size) == 2 else None


def narrow_sizes(files: Mapping[str, str | bytes]) -> dict[str, tuple[int, int, int]]:
    """For each chart of ``files`` that has a narrow SVG: the docs path of its wide SVG -> the
    wide one's width and the narrow one's width and height (what :func:`with_pictures` needs)."""
    sizes = {}
    for path, data in files.items():
        if path.endswith(NARROW_SUFFIX):
            wide = path[: -len(NARROW_SUFFIX)] + SUFFIX
            wide_size, narrow_size = svg_size(files.get(wide, b"")), svg_size(data)
            if wide_size and narrow_size:
                sizes[wide] = (wide_size[0], *narrow_size)
    return sizes


def media(wide_width: int) -> str:
    """The media query of a chart's narrow SVG: a screen too narrow for the wide SVG's column
    (:data:`PAGE_MARGINS_PX`), or a phone's (:data:`PHONE_PX`)."""
    return f"(max-width: {max(wide_width + PAGE_MARGINS_PX, PHONE_PX) - 0.02:g}px)"


_IMG = re.compile(r"<img\b[^>]*>")
_ATTR = re.compile(r'([\w:-]+)="([^"]*)"')
_IN_PICTURE = re.compile(r"<(?:picture|source)\b[^>]*>\s*\Z")


def with_pictures(content: str, page_url: str, sizes: Mapping[str, tuple[int, int, int]]) -> str:
    """A page's HTML with each chart image that has a narrow SVG (``sizes``, :func:`narrow_sizes`)
    in a ``<picture>``: a ``<source>`` of the narrow SVG, with its size, for the screens of
    :func:`media`, then the image as it was (the wide SVG, its size, ``loading="lazy"``, its alt
    text), which every other screen, and a browser without ``<picture>``, shows. ``page_url`` is
    the page's URL relative to the site (``topics/x/``, ``topics/x.html``, ``./``), against which the
    image's ``src`` is resolved to a docs path."""
    if SUFFIX not in content or not sizes:
        return content
    from urllib.parse import unquote, urlsplit

    url = unquote(page_url)
    base = url if url.endswith("/") or not url else posixpath.dirname(url) + "/"

    def picture(match: re.Match) -> str:
        img = match.group(0)
        src = html.unescape(dict(_ATTR.findall(img)).get("src", ""))
        parts = urlsplit(src)
        if parts.scheme or parts.netloc or src.startswith("/") or not parts.path.endswith(SUFFIX):
            return img
        found = sizes.get(posixpath.normpath(posixpath.join(base, unquote(parts.path))))
        if found is None or _IN_PICTURE.search(content, max(0, match.start() - 500), match.start()):
            return img  # not a chart, or already in a <picture>
        wide_width, width, height = found
        # a srcset splits at commas and spaces: those of a path are written %-encoded
        narrow = html.escape((parts.path[: -len(SUFFIX)] + NARROW_SUFFIX).replace(" ", "%20").replace(",", "%2C"))
        return (f'<picture><source media="{media(wide_width)}" srcset="{narrow}" type="image/svg+xml" '
                f'width="{width}" height="{height}" />{img}</picture>')

    return _IMG.sub(picture, content)
