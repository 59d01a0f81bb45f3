"""A chart's narrow SVG for phones (worklog_gen.site.fallback): the spec laid out for a phone's
column with its data untouched, its rendering kept in the cache, and the <picture> that serves it.

What a phone shows without JavaScript is checked in the browser (test_a11y.py); here, what the
narrowed spec says, what vl-convert draws from it, when the cache answers, and the page's HTML.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re

import pytest

from worklog_gen.kit import charts
from worklog_gen.kit.charts import benchmark_chart, chart_files, chart_spec, roofline_chart
from worklog_gen.site import fallback
from worklog_gen.site.fallback import MIN_FONT_PX, NARROW_WIDTH, narrow_spec, narrow_svg, with_pictures
from worklog_gen.site.heatmap import heatmap_cells, heatmap_chart


def _data(node) -> list:
    """Every piece of data in a spec (``data``, ``datasets``, inline ``values``), in order."""
    if isinstance(node, list):
        return [d for item in node for d in _data(item)]
    if isinstance(node, dict):
        return [d for key, value in node.items()
                for d in ([value] if key in ("data", "datasets", "values") else _data(value))]
    return []


def _font_sizes(node) -> list[float]:
    """Every explicit font size in a spec, outside its data."""
    if isinstance(node, list):
        return [s for item in node for s in _font_sizes(item)]
    if isinstance(node, dict):
        return [s for key, value in node.items() if key not in ("data", "datasets", "values")
                for s in ([value] if key.lower().endswith("fontsize") else _font_sizes(value))]
    return []


def _svg_fonts(svg: str) -> list[float]:
    return [float(s) for s in re.findall(r'font-size="([\d.]+)px"', svg)]


def _svg_width(svg: str) -> float:
    return float(re.search(r'<svg\b[^>]*\bwidth="([\d.]+)"', svg).group(1))


@pytest.fixture
def roofline(points, ceilings) -> dict:
    return chart_spec(roofline_chart(points, ceilings, title="Every kernel variant on a GPU with a long name"))


def test_the_narrow_spec_sets_fonts_and_width_and_leaves_the_data_as_it_is(roofline):
    before = copy.deepcopy(roofline)
    narrow = narrow_spec(roofline)
    assert roofline == before  # a copy is narrowed
    assert _data(narrow) == _data(roofline) and _data(narrow)  # every row, as it was
    assert narrow["width"] == NARROW_WIDTH and narrow["autosize"] == {"type": "fit-x", "contains": "padding"}
    config = narrow["config"]
    assert config["axis"]["labelFontSize"] >= MIN_FONT_PX and config["axis"]["titleFontSize"] >= MIN_FONT_PX
    assert config["legend"]["labelFontSize"] >= MIN_FONT_PX and config["legend"]["titleFontSize"] >= MIN_FONT_PX
    assert config["title"]["fontSize"] >= MIN_FONT_PX and config["title"]["subtitleFontSize"] >= MIN_FONT_PX
    assert config["text"]["fontSize"] >= MIN_FONT_PX and config["legend"]["orient"] == "bottom"
    assert 10 in _font_sizes(roofline)  # the roofs' labels are written at 10 px ...
    assert min(_font_sizes(narrow)) >= MIN_FONT_PX  # ... and raised
    assert isinstance(narrow["title"]["text"], list)  # wrapped: too long for one line of a phone's chart


def test_the_calendar_keeps_a_square_per_day():
    cells = heatmap_cells({dt.date(2025, 12, d): 100 * d for d in range(1, 20)})
    spec = chart_spec(heatmap_chart(cells, lambda day: None))
    narrow = narrow_spec(spec)
    assert narrow["width"] == spec["width"] == {"step": 14} and "autosize" not in narrow
    assert _data(narrow) == _data(spec)
    assert min(_font_sizes(narrow)) >= MIN_FONT_PX  # its months are written at 9 px


def test_the_narrow_svg_is_as_wide_as_a_phones_chart_with_no_text_under_11_px(roofline, tmp_path):
    wide = charts.chart_svg(roofline)
    assert min(_svg_fonts(wide)) < MIN_FONT_PX and _svg_width(wide) > 2 * NARROW_WIDTH  # what a phone got
    svg = narrow_svg(roofline, tmp_path)
    assert _svg_width(svg) == NARROW_WIDTH
    assert _svg_fonts(svg) and min(_svg_fonts(svg)) >= MIN_FONT_PX
    assert "tiled matmul" in svg and "vector add" in svg  # the legend, under the plot


def test_a_cached_narrow_svg_is_read_back_and_a_changed_spec_or_setting_renders_again(roofline, tmp_path,
                                                                                     monkeypatch):
    rendered = []
    real = charts.chart_svg
    monkeypatch.setattr(charts, "chart_svg", lambda spec: rendered.append(spec) or real(spec))
    first = narrow_svg(roofline, tmp_path)
    (cached,) = tmp_path.iterdir()
    assert cached.name == f"{fallback.cache_key(narrow_spec(roofline))}.svg" and cached.read_text() == first
    assert narrow_svg(copy.deepcopy(roofline), tmp_path) == first and len(rendered) == 1  # a hit: not rendered
    changed = copy.deepcopy(roofline)
    changed["layer"][-1]["data"]["values"][0]["tflops"] *= 2
    narrow_svg(changed, tmp_path)
    monkeypatch.setattr(fallback, "NARROW_WIDTH", NARROW_WIDTH + 40)
    assert _svg_width(narrow_svg(roofline, tmp_path)) == NARROW_WIDTH + 40
    assert len(rendered) == 3 and len(list(tmp_path.iterdir())) == 3  # each a key of its own


def test_without_a_writable_cache_the_svg_is_still_made(roofline, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert _svg_width(narrow_svg(roofline, blocked / "cache")) == NARROW_WIDTH


def test_every_chart_of_the_files_gets_its_narrow_svg(roofline, tmp_path):
    rows = [{"provider": p, "size": 2**n, "gbps": 100.0 * n} for p in ("a", "b") for n in range(10, 14)]
    files = {**chart_files(benchmark_chart(rows, x="size", y="gbps", xlabel="size", ylabel="GB/s"), "t/chart_1_0"),
             "t/data.json": b"{}", "t/orphan.vega.json": json.dumps(roofline).encode()}  # no SVG: not a chart
    narrow, notes = fallback.narrow_files(files, tmp_path)
    assert set(narrow) == {"t/chart_1_0.vega.narrow.svg"} and not notes
    assert _svg_width(narrow["t/chart_1_0.vega.narrow.svg"].decode()) == NARROW_WIDTH
    sizes = fallback.narrow_sizes({**files, **narrow})
    (wide_width, width, height), = sizes.values()
    assert list(sizes) == ["t/chart_1_0.vega.svg"] and width == NARROW_WIDTH and wide_width > width and height > 0


def test_a_build_keeps_only_its_own_renderings_in_the_cache(tmp_path):
    """The calendar changes with every entry: each build's narrow SVG replaces the last one's,
    and nothing in the folder that the cache did not name is touched."""
    def files(words: int) -> dict:
        rows = [{"provider": "a", "size": 2**n, "gbps": float(words * n)} for n in range(10, 13)]
        return chart_files(benchmark_chart(rows, x="size", y="gbps", xlabel="size", ylabel="GB/s"), "t/chart_1_0")

    mine = tmp_path / "notes.svg"
    mine.write_text("<svg/>")
    other = tmp_path / ("0" * 64 + ".svg.bak")
    other.write_text("kept")
    fallback.narrow_files(files(100), tmp_path)
    first = set(tmp_path.glob("*[0-9a-f].svg")) - {mine}
    narrow, _ = fallback.narrow_files(files(200), tmp_path)
    second = set(tmp_path.glob("*[0-9a-f].svg")) - {mine}
    assert len(first) == len(second) == 1 and first != second  # the old rendering is gone
    assert second.pop().read_bytes() == narrow["t/chart_1_0.vega.narrow.svg"]
    assert mine.read_text() == "<svg/>" and other.read_text() == "kept"
    assert fallback.prune_cache(tmp_path / "missing", set()) == 0


IMG = ('<p><img alt="Figure 1: a &quot;chart&quot;" height="399" loading="lazy" src="{src}" width="704" /></p>')


@pytest.mark.parametrize("page_url, src", [
    ("topics/x/", "chart_1_0.vega.svg"),  # directory URLs: the page is topics/x/index.html
    ("topics/x.html", "x/chart_1_0.vega.svg"),
    ("./", "topics/x/chart_1_0.vega.svg"),
    ("worklog/", "../topics/x/chart_1_0.vega.svg"),
])
def test_a_chart_image_goes_in_a_picture_with_its_narrow_svg(page_url, src):
    sizes = {"topics/x/chart_1_0.vega.svg": (704, 300, 561)}
    page = with_pictures(IMG.format(src=src), page_url, sizes)
    narrow = src.replace(".vega.svg", ".vega.narrow.svg")
    assert page == (f'<p><picture><source media="(max-width: 761.98px)" srcset="{narrow}" type="image/svg+xml" '
                    f'width="300" height="561" />{IMG.format(src=src)[3:-4]}</picture></p>')
    assert with_pictures(page, page_url, sizes) == page  # once


def test_other_images_are_left_as_they_are():
    sizes = {"topics/x/chart_1_0.vega.svg": (704, 300, 561)}
    for src in ("fig.png", "other.vega.svg", "https://example.org/topics/x/chart_1_0.vega.svg",
                "/topics/x/chart_1_0.vega.svg"):
        page = IMG.format(src=src)
        assert with_pictures(page, "topics/x/", sizes) == page


def test_a_narrow_chart_of_a_small_calendar_is_still_for_phones_only():
    assert fallback.media(442) == "(max-width: 599.98px)"  # 442 px fits a tablet: the phone's text size decides
    assert fallback.media(845) == "(max-width: 902.98px)"
