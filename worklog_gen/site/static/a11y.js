// What Material's templates leave unnamed, named for screen readers: its search box is a
// role="dialog" without an accessible name (Lighthouse's aria-dialog-name audit).
(function () {
  "use strict";

  function name() {
    var search = document.querySelector('[data-md-component="search"][role="dialog"]');
    if (search && !search.hasAttribute("aria-label")) search.setAttribute("aria-label", "Search the site");
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(name);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", name);
  } else {
    name();
  }
})();
