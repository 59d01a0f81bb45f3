// Typeset arithmatex's generic output with the KaTeX vendored in katex/ beside this script.
//
// Without JavaScript the formulas already read: the build writes each one as MathML. KaTeX
// only improves them (TeX's fonts and spacing), reading the TeX the MathML keeps.
//
// pymdownx.arithmatex (generic: true) turns $...$ into <span class="arithmatex">\(...\)</span>
// and $$...$$ into <div class="arithmatex">\[...\]</div>. Only those elements are
// rendered, so a stray dollar sign in prose stays text. Material's document$ emits on
// the first load and after every instant navigation, so math renders on both.
//
// Fast on a phone: KaTeX (its script, its style sheet and its fonts) loads only on a page
// with math, when the first formula comes within a screen of the viewport, and each formula
// is rendered as it comes near, so text never moves under the reader's eyes.
(function () {
  "use strict";

  var here = document.currentScript ? document.currentScript.src : document.baseURI;
  var ASSETS = new URL("katex/", here);
  var DELIMITERS = [
    ["\\(", "\\)", false],
    ["\\[", "\\]", true],
  ];
  var loading = null;

  function loadKatex() {
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var style = document.createElement("link");
        style.rel = "stylesheet";
        style.href = new URL("katex.min.css", ASSETS).href;
        document.head.appendChild(style);
        var script = document.createElement("script");
        script.src = new URL("katex.min.js", ASSETS).href;
        script.onload = resolve;
        script.onerror = function () { reject(new Error("katex.js: cannot load " + script.src)); };
        document.head.appendChild(script);
      });
    }
    return loading;
  }

  // The formula's TeX: the build writes each formula as MathML (worklog_gen/site/math.py), which
  // the browser draws with no script, and keeps its TeX as the MathML's x-tex annotation; a
  // formula the build could not convert is still its TeX between delimiters.
  function texOf(el) {
    var annotation = el.querySelector('annotation[encoding="application/x-tex"]');
    if (annotation) return { text: annotation.textContent, display: el.tagName === "DIV" };
    var text = el.textContent.trim();
    for (var i = 0; i < DELIMITERS.length; i++) {
      var d = DELIMITERS[i];
      if (text.startsWith(d[0]) && text.endsWith(d[1])) {
        return { text: text.slice(d[0].length, text.length - d[1].length), display: d[2] };
      }
    }
    return { text: text, display: el.tagName === "DIV" };
  }

  function renderOne(el) {
    if (el.querySelector(".katex")) return; // already rendered
    var tex = texOf(el);
    // throwOnError: false shows a bad formula in red with KaTeX's message in its
    // title, instead of leaving the page's remaining math unrendered.
    katex.render(tex.text, el, { displayMode: tex.display, throwOnError: false });
    // a11y.js checks again whether the formula's box now scrolls sideways
    el.dispatchEvent(new CustomEvent("worklog:drawn", { bubbles: true }));
  }

  // Formulas wait in a queue and are typeset a few milliseconds' worth at a time, each batch in a
  // task of its own: the formulas of a screen, typeset in the task that loaded KaTeX, made one task
  // long enough to hold up a phone's taps (Lighthouse's Total Blocking Time).
  var SLICE_MS = 8;
  var queue = [];
  var draining = false;

  function drain() {
    var start = performance.now();
    while (queue.length && performance.now() - start < SLICE_MS) renderOne(queue.shift());
    if (queue.length) setTimeout(drain, 0);
    else draining = false;
  }

  function render(el) {
    queue.push(el);
    if (draining) return;
    draining = true;
    loadKatex().then(function () { setTimeout(drain, 0); }, function (error) {
      draining = false;
      queue.length = 0;
      console.error(error);
    });
  }

  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) {
        observer.unobserve(entry.target);
        render(entry.target);
      }
    });
  }, { rootMargin: "100% 0px" }) : null;

  function renderAll(root) {
    var nodes = (root || document).querySelectorAll(".arithmatex");
    for (var i = 0; i < nodes.length; i++) {
      if (observer) observer.observe(nodes[i]); else render(nodes[i]);
    }
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(function () { renderAll(document); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { renderAll(document); });
  } else {
    renderAll(document);
  }
})();
