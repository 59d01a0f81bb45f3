// Render arithmatex's generic output with the KaTeX vendored under assets/katex/.
//
// pymdownx.arithmatex (generic: true) turns $...$ into <span class="arithmatex">\(...\)</span>
// and $$...$$ into <div class="arithmatex">\[...\]</div>. Only those elements are
// rendered, so a stray dollar sign in prose stays text. Material's document$ emits on
// the first load and after every instant navigation, so math renders on both.
(function () {
  "use strict";

  var DELIMITERS = [
    ["\\(", "\\)", false],
    ["\\[", "\\]", true],
  ];

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

  function renderAll(root) {
    var nodes = (root || document).querySelectorAll(".arithmatex");
    for (var i = 0; i < nodes.length; i++) renderOne(nodes[i]);
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(function () { renderAll(document); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { renderAll(document); });
  } else {
    renderAll(document);
  }
})();
