// Draw the site's Vega-Lite charts with vega-embed, served from vega/ beside this script (no CDN).
//
// A chart is written into a page as its static SVG, ![alt](<stem>.vega.svg){ width height },
// with its spec beside it as <stem>.vega.json (worklog_gen.kit.charts.chart_files); the plugin
// puts the image in a <picture> with a narrow SVG for phones, <stem>.vega.narrow.svg
// (worklog_gen.site.fallback). Here each such image (or its picture) gets the drawn chart in its
// place: a tooltip on every mark, a legend whose entries hide and show their series. Without
// JavaScript, or if drawing fails, the SVG stays.
//
// Fast on a phone: nothing loads until a chart comes within a screen of the viewport (an
// IntersectionObserver); then the three libraries (about 280 KB gzipped) load once. The drawn
// chart's box keeps the image's size while it draws, so the page does not move.
//
// Charts fit their column by layout, not by scaling: each is drawn from a copy of its spec with
// Vega-Lite's container width (width "container", autosize fit-x), so that its text keeps its
// size at any width; no chart text is smaller than MIN_FONT_PX; under NARROW_PX a legend goes
// below the plot and a long title wraps. The words-per-day calendar keeps its width (a square
// per day) and scrolls sideways in its own box instead (a11y.js makes that box focusable).
//
// Charts follow Material's palette: the axis, legend and title colours are read from its CSS
// custom properties, and a change of scheme (the toggle sets data-md-color-scheme on <body>)
// draws every chart again, without a reload.
(function () {
  "use strict";

  var here = document.currentScript ? document.currentScript.src : document.baseURI;
  var ASSETS = new URL("vega/", here);
  var LIBRARIES = ["vega.min.js", "vega-lite.min.js", "vega-embed.min.js"];
  var SELECTOR = 'img[src$=".vega.svg"]';
  var MIN_FONT_PX = 11; // the smallest chart text, in CSS px, at any width
  var NARROW_PX = 600; // a column narrower than this (a phone) puts the legend under the plot
  var loading = null;
  var charts = []; // {img, container, spec, result}

  function loadScript(url) {
    return new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      script.src = url;
      script.onload = resolve;
      script.onerror = function () { reject(new Error("charts.js: cannot load " + url)); };
      document.head.appendChild(script);
    });
  }

  function loadLibraries() {
    if (!loading) {
      // in order: vega-lite needs vega, vega-embed needs both
      loading = LIBRARIES.reduce(function (done, name) {
        return done.then(function () { return loadScript(new URL(name, ASSETS).href); });
      }, Promise.resolve());
    }
    return loading;
  }

  function scheme() {
    return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "light";
  }

  function themeConfig() {
    var style = getComputedStyle(document.body);
    function css(name, fallback) { return style.getPropertyValue(name).trim() || fallback; }
    var dark = scheme() === "dark";
    var fg = css("--md-default-fg-color", dark ? "#e2e4e9" : "#000000de");
    var light = css("--md-default-fg-color--light", dark ? "#e2e4e999" : "#0000008a");
    var lightest = css("--md-default-fg-color--lightest", dark ? "#e2e4e91f" : "#00000012");
    var axis = {
      labelColor: light, titleColor: fg, domainColor: light, tickColor: light, gridColor: lightest,
      labelFontSize: MIN_FONT_PX, titleFontSize: MIN_FONT_PX + 1,
    };
    return {
      background: null, // the page's own background shows through
      axis: axis,
      legend: { labelColor: fg, titleColor: fg, labelFontSize: MIN_FONT_PX, titleFontSize: MIN_FONT_PX + 1 },
      title: { color: fg, subtitleColor: light, fontSize: MIN_FONT_PX + 3, subtitleFontSize: MIN_FONT_PX + 1 },
      text: { color: fg, fontSize: MIN_FONT_PX },
      view: { stroke: lightest },
    };
  }

  // Every explicit font size of the spec raised to MIN_FONT_PX (a roof's label is written at 10 px,
  // a month of the calendar at 9), in place.
  function raiseFonts(node) {
    if (Array.isArray(node)) { node.forEach(raiseFonts); return; }
    if (!node || typeof node !== "object") return;
    Object.keys(node).forEach(function (key) {
      var value = node[key];
      if (/fontsize$/i.test(key) && typeof value === "number" && value < MIN_FONT_PX) node[key] = MIN_FONT_PX;
      else if (key !== "data" && key !== "datasets" && key !== "values") raiseFonts(value);
    });
  }

  // A title's text in lines of at most `chars` characters, broken between words.
  function wrap(text, chars) {
    if (typeof text !== "string" || text.length <= chars) return text;
    var lines = [""];
    text.split(" ").forEach(function (word) {
      var line = lines[lines.length - 1];
      if (line && (line + " " + word).length > chars) lines.push(word);
      else lines[lines.length - 1] = line ? line + " " + word : word;
    });
    return lines;
  }

  // The spec as it is drawn in `width` CSS px: a copy, laid out to the container's width (the
  // calendar aside), its fonts at least MIN_FONT_PX, and on a narrow column its legend below the
  // plot and its title wrapped.
  function layout(spec, width) {
    var copy = JSON.parse(JSON.stringify(spec));
    raiseFonts(copy);
    var kind = ((copy.usermeta || {}).worklog || {}).kind;
    if (kind !== "heatmap") {
      copy.width = "container";
      copy.autosize = { type: "fit-x", contains: "padding" };
    }
    if (width < NARROW_PX) {
      copy.config = copy.config || {};
      copy.config.legend = Object.assign({}, copy.config.legend, { orient: "bottom", direction: "vertical" });
      var chars = Math.max(20, Math.floor(width / (0.6 * (MIN_FONT_PX + 3))));
      if (typeof copy.title === "string") copy.title = { text: copy.title };
      if (copy.title) {
        copy.title.text = wrap(copy.title.text, chars);
        if (copy.title.subtitle) copy.title.subtitle = wrap(copy.title.subtitle, Math.floor(chars * 1.2));
      }
    }
    return copy;
  }

  // The element the chart takes the place of: the image's <picture>, or the image.
  function figure(img) {
    return img.parentNode && img.parentNode.nodeName === "PICTURE" ? img.parentNode : img;
  }

  function specURL(img) {
    return img.src.replace(/\.vega\.svg(?=$|[?#])/, ".vega.json");
  }

  function draw(chart) {
    if (chart.result) chart.result.finalize();
    if (!chart.container.isConnected) {
      // in the image's place, at the image's height until the chart is drawn: nothing moves
      chart.container.style.minHeight = chart.img.getBoundingClientRect().height + "px";
      var place = figure(chart.img);
      place.parentNode.insertBefore(chart.container, place);
    }
    var theme = scheme();
    var width = chart.container.clientWidth;
    chart.narrow = width < NARROW_PX;
    return vegaEmbed(chart.container, layout(chart.spec, width), {
      renderer: "svg",
      config: themeConfig(),
      // no actions menu: its <details> takes Material's admonition style, and its editor link
      // leaves the site; the static SVG beside the chart is the export
      actions: false,
      tooltip: { theme: theme },
      loader: { target: "_self" }, // a heatmap day opens its page in this tab
    }).then(function (result) {
      chart.result = result;
      chart.container.dataset.scheme = theme;
      chart.img.hidden = true;
      chart.container.style.minHeight = "";
      // a11y.js checks again whether the chart's box scrolls sideways
      chart.container.dispatchEvent(new CustomEvent("worklog:drawn", { bubbles: true }));
    });
  }

  function setUp(img) {
    var container = document.createElement("div");
    container.className = "worklog-chart";
    container.setAttribute("role", "figure");
    container.setAttribute("aria-label", img.alt);
    img.dataset.chart = "pending";
    return fetch(specURL(img))
      .then(function (response) {
        if (!response.ok) throw new Error("charts.js: " + response.status + " for " + response.url);
        return response.json();
      })
      .then(function (spec) {
        var meta = (spec.usermeta || {}).worklog || {};
        if (meta.kind) container.dataset.kind = meta.kind; // "roofline", "benchmark", "heatmap"
        var chart = { img: img, container: container, spec: spec, result: null };
        charts.push(chart);
        return draw(chart);
      })
      .then(function () { img.dataset.chart = "drawn"; })
      .catch(function (error) {
        if (container.isConnected) container.remove(); // the static SVG stays in place
        img.dataset.chart = "failed";
        console.error(error);
      });
  }

  function drawOne(img) {
    if (img.dataset.chart) return;
    img.dataset.chart = "near";
    loadLibraries().then(function () { return setUp(img); }, function (error) { console.error(error); });
  }

  // Each chart is drawn when it comes within a screen of the viewport; browsers without
  // IntersectionObserver draw them all at once.
  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) {
        observer.unobserve(entry.target);
        drawOne(entry.target);
      }
    });
  }, { rootMargin: "100% 0px" }) : null;

  function drawAll() {
    Array.prototype.forEach.call(document.querySelectorAll(SELECTOR), function (img) {
      if (img.dataset.chart) return;
      if (observer) observer.observe(img); else drawOne(img);
    });
  }

  // Redraw when the column crosses NARROW_PX (a phone turned sideways): the legend moves.
  var resizing = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      charts.forEach(function (chart) {
        if (chart.result && chart.container.isConnected && (chart.container.clientWidth < NARROW_PX) !== chart.narrow) {
          draw(chart).catch(function (error) { console.error(error); });
        }
      });
    }, 200);
  });

  // Redraw on a change of palette.
  new MutationObserver(function () {
    charts.forEach(function (chart) {
      if (chart.container.dataset.scheme !== scheme() && chart.container.isConnected) {
        draw(chart).catch(function (error) { console.error(error); });
      }
    });
  }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });

  if (typeof document$ !== "undefined") {
    document$.subscribe(function () { drawAll(); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
