// What Material's templates and the page's own content leave out for keyboard and screen-reader
// users (WCAG 2.1 AA):
//
// - Material's search box is a role="dialog" without an accessible name (Lighthouse's
//   aria-dialog-name audit; SC 4.1.2 Name, Role, Value): it gets one.
// - A region that scrolls sideways (a wide table, a code block, a display formula, a chart wider
//   than a phone) must be reachable by keyboard, or its right-hand part cannot be read without a
//   mouse (SC 2.1.1 Keyboard; axe's scrollable-region-focusable). Each such region gets
//   tabindex="0", role="region" and a name ("Table: Results, scrolls sideways"), and the class
//   worklog-scrolls, whose edge shadows in worklog.css show that there is more to see. Material
//   does this only for code blocks, and only on devices that hover. Checked on Material's
//   document$ (the first load and every instant navigation), on resize, when a fold opens, and
//   when katex.js or charts.js has drawn something (the worklog:drawn event); a region that no
//   longer scrolls gives back what it was given.
// (Long names in inline code get their break points at build time: worklog_gen/site/names.py.)
(function () {
  "use strict";

  var REGIONS = [
    ".md-typeset .md-typeset__scrollwrap",
    ".md-typeset table:not([class])",
    ".md-typeset pre > code",
    ".md-typeset div.arithmatex",
    ".md-typeset .worklog-chart",
    ".md-typeset p:has(> img[src$='.vega.svg'], > picture > img[src$='.vega.svg'])",
  ].join(", ");

  function nameSearch() {
    var search = document.querySelector('[data-md-component="search"][role="dialog"]');
    if (search && !search.hasAttribute("aria-label")) search.setAttribute("aria-label", "Search the site");
  }

  // What the region holds, in a few words, for its name.
  function describe(el) {
    var table = el.tagName === "TABLE" ? el : el.querySelector("table");
    if (table) {
      var caption = table.caption && table.caption.textContent.trim();
      return "Table" + (caption ? ": " + caption : headingBefore(el));
    }
    if (el.tagName === "CODE") return "Code" + headingBefore(el);
    if (el.classList.contains("arithmatex")) return "Formula";
    var chart = el.getAttribute("aria-label") || (el.querySelector("img") || {}).alt;
    return chart ? "Chart: " + chart.replace(/, scrolls sideways$/, "") : "Chart";
  }

  // ": <the nearest heading above el>", or "" when there is none.
  function headingBefore(el) {
    var headings = headingsNow || document.querySelectorAll("article h1, article h2, article h3, article h4");
    var found = null;
    for (var i = 0; i < headings.length; i++) {
      if (headings[i].compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) found = headings[i];
      else break;
    }
    if (!found) return "";
    var text = found.textContent.replace(/¶$/, "").trim();
    return text ? " under " + text : "";
  }

  // scrolls: whether el is wider than its box, measured by markAll before anything is written
  function mark(el, scrolls) {
    var marked = el.dataset.worklogScroll !== undefined;
    if (scrolls && !marked) {
      // remember what Material or the page set, to give it back when the region fits again
      el.dataset.worklogScroll = JSON.stringify({
        tabindex: el.getAttribute("tabindex"), role: el.getAttribute("role"), label: el.getAttribute("aria-label"),
      });
      if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
      if (!el.hasAttribute("role") || el.getAttribute("role") === "figure") el.setAttribute("role", "region");
      el.setAttribute("aria-label", describe(el) + ", scrolls sideways");
      el.classList.add("worklog-scrolls");
    } else if (!scrolls && marked) {
      var before = JSON.parse(el.dataset.worklogScroll);
      ["tabindex", "role"].forEach(function (name) {
        if (before[name] === null) el.removeAttribute(name); else el.setAttribute(name, before[name]);
      });
      if (before.label === null) el.removeAttribute("aria-label"); else el.setAttribute("aria-label", before.label);
      el.classList.remove("worklog-scrolls");
      delete el.dataset.worklogScroll;
    }
  }

  var headingsNow = null; // the page's headings, during one markAll

  // Every width is read first, then every attribute written: reads and writes in turn would make
  // the browser lay the page out again for each region (hundreds of code blocks on a topic page).
  // A region inside a closed fold is skipped: it cannot take focus while the fold is closed, and
  // reading its width would make the browser lay out the fold's hidden content, once per region
  // (most of a topic page's plumbing is folded); the toggle event checks it when the fold opens.
  function markAll() {
    var regions = Array.prototype.filter.call(document.querySelectorAll(REGIONS), function (el) {
      return !el.closest("details:not([open])");
    });
    var scrolls = regions.map(function (el) { return el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0; });
    headingsNow = document.querySelectorAll("article h1, article h2, article h3, article h4");
    regions.forEach(function (el, i) { mark(el, scrolls[i]); });
    headingsNow = null;
  }

  var pending = 0;
  function later() { // at most one check per frame
    if (!pending) pending = requestAnimationFrame(function () { pending = 0; markAll(); });
  }

  function setUp() {
    nameSearch();
    markAll();
  }

  window.addEventListener("resize", later);
  document.addEventListener("toggle", later, true); // a <details> fold opened or closed
  document.addEventListener("worklog:drawn", later); // a formula or a chart drawn

  if (typeof document$ !== "undefined") {
    document$.subscribe(setUp);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
