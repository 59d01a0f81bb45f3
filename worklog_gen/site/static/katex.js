// Render arithmatex's generic output with the KaTeX vendored in katex/ beside this script.
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

  function renderOne(el) {
    if (el.querySelector(".katex")) return; // already rendered
    var text = el.textContent.trim();
    var display = el.tagName === "DIV";
    for (var i = 0; i < DELIMITERS.length; i++) {
      var d = DELIMITERS[i];
      if (text.startsWith(d[0]) && text.endsWith(d[1])) {
        text = text.slice(d[0].length, text.length - d[1].length);
        display = d[2];
        break;
      }
    }
    // throwOnError: false shows a bad formula in red with KaTeX's message in its
    // title, instead of leaving the page's remaining math unrendered.
    katex.render(text, el, { displayMode: display, throwOnError: false });
  }

  function render(el) {
    loadKatex().then(function () { renderOne(el); }, function (error) { console.error(error); });
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
