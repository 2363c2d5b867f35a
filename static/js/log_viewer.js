// Log viewer: bring the requested line into view and give it keyboard focus.
(function () {
  "use strict";
  var params = new URLSearchParams(window.location.search);
  var target = window.location.hash ? window.location.hash.slice(1) : (params.get("line") ? "L" + params.get("line") : "");
  if (!target) return;
  var line = document.getElementById(target);
  if (!line) return;
  line.classList.add("hit");
  line.scrollIntoView({ block: "center" });
})();
