// Copy buttons for corrected commands and environment variables.
(function () {
  "use strict";
  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (error) { ok = false; }
    document.body.removeChild(area);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy failed"));
  }
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return fallbackCopy(text); });
    }
    return fallbackCopy(text);
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.copy");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy-target"));
    if (!source) return;
    var label = button.textContent;
    copy(source.textContent.trim()).then(function () {
      button.textContent = "Copied";
      button.classList.add("copied");
    }, function () {
      button.textContent = "Select and copy by hand";
    }).then(function () {
      window.setTimeout(function () { button.textContent = label; button.classList.remove("copied"); }, 2500);
    });
  });
})();
