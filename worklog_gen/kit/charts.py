"""Charts: Vega-Lite specs built with Altair, and their static SVG fallbacks.

Every chart on the site is a Vega-Lite spec with its data inline, so that it can be redrawn
anywhere without a GPU: the roofline and benchmark charts of the notebooks and of the Kernels
page, and the words-per-day calendar of the worklog home. In the browser,
``docs/javascripts/charts.js`` draws a spec with vega-embed (served from the site itself,
``scripts/vendor_vega.sh``); without JavaScript, and in the Atom feed, the SVG made here
stands in for it.

**In a notebook**, importing this module enables the ``worklog`` Altair renderer: a chart put
last in a cell (or passed to ``display``) is the Jupyter output
``application/vnd.vegalite.v5+json`` that any front end draws, plus an ``image/svg+xml``
rendering of it, made on the machine that ran the notebook (vl-convert needs no browser). Both
are frozen with the executed notebook; :mod:`worklog_gen.freeze.render` turns them into a chart on
the topic page. **At build time**, :func:`chart_files` renders the charts made from frozen
data (the Kernels roofline, the heatmap) the same way.

Interaction, the same on every chart: a tooltip on every mark with its exact figures, and a
legend whose entries toggle their series (click to hide, click again to show).

The roofline model is Williams, Waterman and Patterson, "Roofline: an insightful visual
performance model for multicore architectures", CACM 52(4), 2009: attainable FLOP/s =
min(compute roof, bandwidth x arithmetic intensity).
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

import altair as alt

from worklog_gen.kit.measure import ROOFS, Ceilings
from worklog_gen.kit.roofline import RooflinePoint

VEGALITE_MIME = "application/vnd.vegalite.v5+json"
"""The Jupyter output type of a Vega-Lite 5 chart (what Altair 5 emits)."""
VEGALITE_VERSION = "5.20"
"""The Vega-Lite release vl-convert renders with: the one Altair 5.5 writes specs for
(``alt.SCHEMA_VERSION``), and the one ``scripts/vendor_vega.sh`` vendors."""
WIDTH, HEIGHT = 560, 340
"""px of the plotting area; with the legend on the right, a chart fits Material's content column."""
ROOF_COLORS = {"bf16": "#1f77b4", "tf32": "#9467bd", "fp32": "#2ca02c"}
MEMORY_COLOR = "#888888"
"""Mid grey: readable on Material's white (default) and dark blue-grey (slate) backgrounds."""
SERIES_SCHEME = "tableau10"
HIDDEN_OPACITY = 0.0
"""Opacity of a series whose legend entry was clicked off."""


# --- the legend that filters -----------------------------------------------------------------


def legend_toggle(field: str, values: Sequence[str]) -> alt.Parameter:
    """A point selection bound to the legend of ``field``: every entry starts shown, and a
    click on an entry hides its series or shows it again (``toggle: "true"``; a plain
    legend binding would instead show only the clicked entry)."""
    return alt.selection_point(fields=[field], bind="legend", toggle="true", clear=False,
                               value=[{field: v} for v in values], name=f"show_{_name(field)}")


def _name(field: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in field)


def _shown(selection: alt.Parameter, on, off):
    return alt.condition(selection, alt.value(on), alt.value(off))


# --- roofline ----------------------------------------------------------------------------------


def roofline_chart(points: Sequence[RooflinePoint], ceilings: Ceilings, *,
                   roofs: Sequence[str] = ("bf16", "tf32", "fp32"), title: str | None = None,
                   series: str | None = None) -> alt.LayerChart:
    """Roofline chart: arithmetic intensity (FLOP/byte) against TFLOP/s, log-log.

    The measured roofs are solid lines, labelled: the memory roof (slope
    ``ceilings.copy_gbps``, GB/s) up to each compute roof in ``roofs`` (flat from its ridge
    point). The datasheet roofs, when ``ceilings.datasheet`` is known, are dashed. Each point
    has a tooltip: variant, topic, size, dtype, FLOP/byte, TFLOP/s, GB/s and the fraction of
    the roofline bound it reaches (:meth:`RooflinePoint.fraction_of_roof`). Points are
    coloured by ``series`` (``"topic"`` or ``"variant"``; default: topic when the points come
    from more than one topic, else variant), and a click on a legend entry hides or shows
    that series' points.

    Args:
        points: kernel variants; may be empty.
        ceilings: measured roofs (and datasheet) of the device the points ran on.
        roofs: compute roofs to draw, from ``"bf16"``, ``"tf32"``, ``"fp32"``.
        title: chart title; default names the device.
        series: the legend's field, ``"topic"`` or ``"variant"``.

    Returns:
        An Altair layer chart (Vega-Lite 5), data inline.

    Raises:
        ValueError: unknown roof or series.
    """
    for roof in roofs:
        if roof not in ROOFS:
            raise ValueError(f"unknown roof {roof!r}; expected one of {', '.join(ROOFS)}")
    topics = list(dict.fromkeys(p.topic for p in points))
    series = series or ("topic" if len(topics) > 1 else "variant")
    if series not in ("topic", "variant"):
        raise ValueError(f"series must be 'topic' or 'variant', got {series!r}")
    sheet = ceilings.datasheet

    # Limits: every point, ridge point and roof, with a decade of room.
    ridges = [ceilings.ridge_point(r) for r in roofs]
    sheet_ridges = [sheet.ridge_point(r) for r in roofs] if sheet is not None else []
    xs = [p.intensity for p in points] + ridges + sheet_ridges or [1.0]
    xmin, xmax = min(xs) / 3, max(xs) * 8
    peaks = [ceilings.roof_tflops(r) for r in roofs] + ([sheet.roof_tflops(r) for r in roofs] if sheet else [])
    ys = [p.tflops for p in points] + peaks or [ceilings.copy_gbps * xmax / 1e3]
    ymax = max(ys) * 2
    ymin = max(min([p.tflops for p in points] + [min(peaks or ys) / 100]) / 3, ymax / 1e7)

    lines = []  # one row per end of a roof segment; "roof" names the line

    def segment(name: str, source: str, color: str, x0: float, y0: float, x1: float, y1: float) -> None:
        lines.extend({"roof": name, "source": source, "color": color, "intensity": x, "tflops": y}
                     for x, y in ((x0, y0), (x1, y1)))

    top = max(ridges, default=xmax)
    segment(f"copy {ceilings.copy_gbps:,.0f} GB/s", "measured", MEMORY_COLOR,
            xmin, ceilings.copy_gbps * xmin / 1e3, top, ceilings.copy_gbps * top / 1e3)
    labels = [{"text": f"copy {ceilings.copy_gbps:,.0f} GB/s", "color": MEMORY_COLOR,
               "intensity": xmin * 1.15, "tflops": ceilings.copy_gbps * xmin * 1.15 / 1e3 * 1.25}]
    for roof in roofs:
        peak, ridge, color = ceilings.roof_tflops(roof), ceilings.ridge_point(roof), ROOF_COLORS[roof]
        segment(f"{roof} {peak:,.4g} TFLOP/s", "measured", color, ridge, peak, xmax, peak)
        labels.append({"text": f"{roof} {peak:,.4g} TFLOP/s, ridge {ridge:,.3g} FLOP/B",
                       "color": color, "intensity": ridge * 1.1, "tflops": peak})
    if sheet is not None:
        stop = max(sheet_ridges, default=xmax)
        segment(f"datasheet {sheet.hbm_gbps:,.0f} GB/s", "datasheet", MEMORY_COLOR,
                xmin, sheet.hbm_gbps * xmin / 1e3, stop, sheet.hbm_gbps * stop / 1e3)
        for roof in roofs:
            peak = sheet.roof_tflops(roof)
            segment(f"datasheet {roof} {peak:,.4g} TFLOP/s", "datasheet", ROOF_COLORS[roof],
                    sheet.ridge_point(roof), peak, xmax, peak)

    x_scale = alt.Scale(type="log", domain=[xmin, xmax], nice=False)
    y_scale = alt.Scale(type="log", domain=[ymin, ymax], nice=False)
    x = alt.X("intensity:Q", scale=x_scale, title="arithmetic intensity (FLOP/byte, compulsory bytes)",
              axis=alt.Axis(format="~g"))
    y = alt.Y("tflops:Q", scale=y_scale, title="performance (TFLOP/s)", axis=alt.Axis(format="~g"))

    # Roofs and their labels are coloured through stroke and fill, not color: a second use of
    # the color channel in the layer would take the legend's click binding away (Vega-Lite 5.20).
    roof_lines = alt.Chart(alt.Data(values=lines)).mark_line(clip=True).encode(
        x=x, y=y, detail="roof:N",
        stroke=alt.Stroke("color:N", scale=None),
        strokeDash=alt.StrokeDash("source:N", scale=alt.Scale(domain=["measured", "datasheet"],
                                                              range=[[1, 0], [6, 4]]), legend=None),
        strokeWidth=alt.condition(alt.datum.source == "measured", alt.value(2), alt.value(1.4)),
        opacity=alt.condition(alt.datum.source == "measured", alt.value(1.0), alt.value(0.7)),
        tooltip=[alt.Tooltip("roof:N", title="roof"), alt.Tooltip("source:N", title="from")],
    )
    # each label starts at the left end of its roof, just above the line
    roof_labels = alt.Chart(alt.Data(values=labels)).mark_text(
        fontSize=10, align="left", baseline="bottom", dy=-2, clip=True).encode(
        x=x, y=y, text="text:N", fill=alt.Fill("color:N", scale=None))

    rows = []
    for p in points:
        rows.append({"variant": p.label, "topic": p.topic or "", "size": p.size or "", "dtype": p.dtype or p.roof,
                     "roof": p.roof, "intensity": p.intensity, "tflops": p.tflops, "gbps": p.gbps,
                     "ms": p.ms, "fraction": p.fraction_of_roof(ceilings)})
    field = series
    values = list(dict.fromkeys(r[field] for r in rows))
    show = legend_toggle(field, values)
    legend_title = "topic" if field == "topic" else "variant"
    dots = alt.Chart(alt.Data(values=rows)).mark_point(filled=True, size=70, stroke="black", strokeWidth=0.6).encode(
        x=x, y=y,
        color=alt.Color(f"{field}:N", scale=alt.Scale(scheme="tableau20" if len(values) > 10 else SERIES_SCHEME,
                                                    domain=values),
                        legend=alt.Legend(title=legend_title, labelLimit=260, symbolLimit=0, columns=1)),
        shape=alt.Shape("topic:N", legend=None) if len(topics) > 1 else alt.value("circle"),
        opacity=_shown(show, 1.0, HIDDEN_OPACITY),
        size=_shown(show, 70, 0),
        tooltip=[alt.Tooltip("variant:N"), alt.Tooltip("topic:N"), alt.Tooltip("size:N"),
                 alt.Tooltip("dtype:N"), alt.Tooltip("intensity:Q", title="FLOP/byte", format=",.3~g"),
                 alt.Tooltip("tflops:Q", title="TFLOP/s", format=",.4~g"),
                 alt.Tooltip("gbps:Q", title="GB/s", format=",.0f"),
                 alt.Tooltip("ms:Q", title="ms (median)", format=",.4~g"),
                 alt.Tooltip("fraction:Q", title="of the roof", format=".0%"),
                 alt.Tooltip("roof:N", title="held against")],
    ).add_params(show).properties(name="points")  # named: Altair numbers unnamed views per process

    chart = alt.layer(roof_lines, roof_labels, dots).properties(
        width=WIDTH, height=HEIGHT,
        title=alt.Title(title if title is not None else f"Roofline: {ceilings.device}",
                        subtitle="solid: roofs measured on this GPU" + ("; dashed: its datasheet" if sheet else "")),
        usermeta={"worklog": {"kind": "roofline", "series": field}},
    )
    return chart


# --- benchmark sweeps --------------------------------------------------------------------------


def benchmark_chart(rows: Sequence[Mapping], *, x: str, y: str, provider: str = "provider",
                    y_lo: str | None = None, y_hi: str | None = None, xlabel: str, ylabel: str,
                    title: str | None = None, logx: bool = True, logy: bool = False,
                    rules: Sequence[tuple[float, str]] = (),
                    x_rules: Sequence[tuple[float, str]] = ()) -> alt.LayerChart:
    """Benchmark sweep: ``y`` (e.g. GB/s or TFLOP/s) against size ``x``, a line per provider.

    Args:
        rows: dicts as saved with ``save_data("....csv", rows)``: one per (provider, size).
        x, y: keys of the size and the measured rate (at the median time).
        provider: key naming the implementation (``"triton"``, ``"torch"``, ...); its legend
            entries hide or show their line on a click.
        y_lo, y_hi: keys of the quantile band (the rate at the 80th and 20th percentile
            times, :func:`worklog_gen.kit.measure.bench`); drawn as a shaded band when both are given.
        xlabel, ylabel: axis titles, with units.
        logx, logy: log axes; a log x axis uses base 2 when every size is a power of two.
        rules: horizontal reference lines, ``(y value, label)`` (e.g. the measured copy roof).
        x_rules: vertical reference lines, ``(x value, label)`` (e.g. a ridge point).

    Returns:
        An Altair layer chart; the tooltip gives every field of the row.

    Raises:
        KeyError: a row lacks ``x``, ``y``, ``provider`` or a band key (message names the row).
    """
    data = []
    for n, row in enumerate(rows):
        for key in (x, y, provider, y_lo, y_hi):
            if key is not None and key not in row:
                raise KeyError(f"row {n} has no {key!r} (keys: {', '.join(map(str, row))})")
        data.append({k: (v if isinstance(v, (int, float, str, bool)) or v is None else str(v))
                     for k, v in row.items()} | {provider: str(row[provider])})
    names = list(dict.fromkeys(r[provider] for r in data))
    sizes = [float(r[x]) for r in data]
    powers_of_two = bool(sizes) and all(s > 0 and s.is_integer() and (int(s) & (int(s) - 1)) == 0 for s in sizes)
    x_enc = alt.X(f"{x}:Q", title=xlabel,
                  scale=alt.Scale(type="log", base=2 if powers_of_two else 10, nice=False) if logx
                  else alt.Scale(zero=False),
                  # sizes in full ("16,384"); other values in SI form ("2.5k")
                  axis=alt.Axis(format=",d" if powers_of_two else "~s", labelOverlap="greedy"))
    y_scale = alt.Scale(type="log") if logy else alt.Scale(zero=True)
    # a log axis names its decades plainly ("0.2", "1000"); a linear one keeps Vega's own format
    y_enc = alt.Y(f"{y}:Q", title=ylabel, scale=y_scale, axis=alt.Axis(format="~g") if logy else alt.Axis())
    show = legend_toggle(provider, names)
    colors = alt.Scale(scheme="tableau20" if len(names) > 10 else SERIES_SCHEME, domain=names)
    color = alt.Color(f"{provider}:N", scale=colors, legend=alt.Legend(title=provider, labelLimit=260, symbolLimit=0))
    first = data[0] if data else {}
    fields = dict.fromkeys([provider, x, y, *(k for k in (y_lo, y_hi) if k), *first])
    tooltip = [_tooltip(k, first.get(k)) for k in fields]
    base = alt.Chart(alt.Data(values=data))
    layers = []
    if y_lo is not None and y_hi is not None:
        layers.append(base.mark_area(opacity=0.2).encode(
            x=x_enc, y=alt.Y(f"{y_lo}:Q", scale=y_scale), y2=alt.Y2(f"{y_hi}:Q"), color=color,
            # the band carries the legend's selection too: a layer before the line's that used the
            # color channel without it would take the legend's click binding away (Vega-Lite 5.20)
            opacity=_shown(show, 0.2, HIDDEN_OPACITY)).add_params(show).properties(name="bands"))
    layers.append(base.mark_line(point=alt.OverlayMarkDef(size=30, filled=True), strokeWidth=1.8).encode(
        x=x_enc, y=y_enc, color=color, opacity=_shown(show, 1.0, HIDDEN_OPACITY), tooltip=tooltip,
    ).add_params(show).properties(name="lines"))  # named: Altair numbers unnamed views per process
    for channel, marks in (("y", rules), ("x", x_rules)):
        if not marks:
            continue
        rule = alt.Chart(alt.Data(values=[{"value": v, "label": label} for v, label in marks]))
        position = {channel: alt.X("value:Q") if channel == "x" else alt.Y("value:Q")}
        layers.append(rule.mark_rule(strokeDash=[4, 3], color=MEMORY_COLOR).encode(
            **position, tooltip=[alt.Tooltip("label:N"), alt.Tooltip("value:Q", format=",.4~g")]))
        text = (dict(align="left", baseline="bottom", dx=4, dy=-2) if channel == "y"
                else dict(align="left", baseline="top", dx=4, dy=4))
        layers.append(rule.mark_text(fontSize=10, color=MEMORY_COLOR, **text).encode(
            **position, **{"y" if channel == "x" else "x": alt.value(0)}, text="label:N"))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title or "",
                                         usermeta={"worklog": {"kind": "benchmark", "series": provider}})


def _tooltip(key: str, sample) -> alt.Tooltip:
    """A tooltip field typed from a sample value: numbers quantitative, to 4 figures."""
    if isinstance(sample, (int, float)) and not isinstance(sample, bool):
        return alt.Tooltip(f"{key}:Q", format=",.4~g")
    return alt.Tooltip(f"{key}:N")


# --- files and the notebook renderer -------------------------------------------------------------


def chart_spec(chart: alt.TopLevelMixin | Mapping) -> dict:
    """The chart's Vega-Lite spec as a dict (data inline)."""
    return dict(chart) if isinstance(chart, Mapping) else chart.to_dict()


def chart_svg(spec: Mapping) -> str:
    """A static SVG of a Vega-Lite spec, rendered by vl-convert (no browser), light theme; the
    same spec gives the same bytes.

    Raises:
        ValueError: vl-convert rejects the spec (its message kept).
    """
    import re

    import vl_convert

    svg = vl_convert.vegalite_to_svg(dict(spec), vl_version=VEGALITE_VERSION)
    # Vega numbers clip paths (and gradients) per process; number them per SVG, so that the same
    # spec gives the same bytes in every build
    ids = {old: f"{kind}{i}" for i, (old, kind) in
           enumerate(dict.fromkeys(re.findall(r'id="((clip|gradient_)\d+)"', svg)), start=1)}
    return re.sub(r'\b(?:clip|gradient_)\d+\b', lambda m: ids.get(m.group(0), m.group(0)), svg) if ids else svg


def chart_files(chart, stem: str) -> dict[str, bytes]:
    """The two files a chart is served from: ``<stem>.vega.json`` (the spec, data inline) and
    ``<stem>.vega.svg`` (its static fallback). A page shows ``![alt](<stem>.vega.svg)``, and
    ``charts.js`` draws the spec beside it in its place."""
    spec = chart_spec(chart)
    return {f"{stem}.vega.json": json.dumps(spec, separators=(",", ":"), sort_keys=True).encode(),
            f"{stem}.vega.svg": chart_svg(spec).encode()}


def chart_image(alt: str, href: str, svg: str | bytes) -> str:
    """Markdown for a chart's static SVG at ``href``: the image with its size from the SVG, so the
    page reserves the chart's space before anything loads (no layout shift), and lazy loading
    (attr_list: ``![alt](x.vega.svg){ width="600" height="300" loading="lazy" }``). ``alt`` is
    used as it is (brackets must already be safe)."""
    import re

    text = svg.decode() if isinstance(svg, bytes) else svg
    root = re.search(r"<svg\b[^>]*>", text)
    size = dict(re.findall(r'\b(width|height)="(\d+(?:\.\d+)?)"', root.group(0))) if root else {}
    attrs = " ".join(f'{k}="{round(float(size[k]))}"' for k in ("width", "height") if k in size)
    return f"![{alt}]({href}){{ {attrs + ' ' if attrs else ''}loading=\"lazy\" }}"


def _renderer(spec: dict, **metadata) -> dict:
    """Altair renderer ``worklog``: the Vega-Lite output plus its SVG (see the module docstring)."""
    title = spec.get("title")
    title = title.get("text") if isinstance(title, Mapping) else title
    return {VEGALITE_MIME: spec, "image/svg+xml": chart_svg(spec),
            "text/plain": f"<Vega-Lite chart{': ' + str(title) if title else ''}>"}


alt.renderers.register("worklog", _renderer)
alt.renderers.enable("worklog")
alt.data_transformers.disable_max_rows()  # a sweep has a few hundred rows; keep them all inline

__all__ = ["VEGALITE_MIME", "benchmark_chart", "chart_files", "chart_image", "chart_spec", "chart_svg",
           "legend_toggle", "roofline_chart"]
