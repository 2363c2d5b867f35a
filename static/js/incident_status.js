// Live diagnosis progress on the incident page: poll the status JSON, reload when finished.
(function () {
  "use strict";
  var card = document.getElementById("progress");
  if (!card) return;
  var url = card.getAttribute("data-status-url");
  var order = ["queued", "diagnosing", "diagnosed"];
  var delay = 1000;
  var text = document.getElementById("progress-text");
  var elapsed = document.getElementById("progress-elapsed");
  var noWorker = document.getElementById("no-worker");
  var created = Date.parse(card.getAttribute("data-created") || "") || Date.now();
  // Queued this long with no worker claiming it: say so instead of spinning silently.
  var NO_WORKER_AFTER_S = Number(card.getAttribute("data-no-worker-after") || 15);

  function tick() {
    var seconds = Math.max(0, Math.round((Date.now() - created) / 1000));
    var minutes = Math.floor(seconds / 60);
    if (elapsed) elapsed.textContent = minutes + ":" + String(seconds % 60).padStart(2, "0");
    if (noWorker) noWorker.hidden = !(card.getAttribute("data-status") === "queued" && seconds >= NO_WORKER_AFTER_S);
  }
  tick();
  window.setInterval(tick, 1000);

  function show(status) {
    var position = order.indexOf(status);
    card.setAttribute("data-status", status);
    card.querySelectorAll("[data-step]").forEach(function (step) {
      var index = order.indexOf(step.getAttribute("data-step"));
      step.classList.toggle("done", index < position || status === "diagnosed");
      step.classList.toggle("current", index === position && status !== "diagnosed");
    });
    document.querySelectorAll("[data-status-badge]").forEach(function (badge) {
      badge.textContent = status.charAt(0).toUpperCase() + status.slice(1);
      badge.className = "badge status-" + status;
    });
  }

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        show(data.status);
        if (data.finished) {
          if (text) text.textContent = data.status === "failed" ? "The diagnosis failed; loading the details…" : "Diagnosed; loading the verdict…";
          window.location.reload();
          return;
        }
        delay = Math.min(delay * 1.3, 5000);
        window.setTimeout(poll, delay);
      })
      .catch(function () {
        if (text) text.textContent = "Lost contact with the server; retrying…";
        delay = Math.min(delay * 2, 15000);
        window.setTimeout(poll, delay);
      });
  }
  show(card.getAttribute("data-status"));
  window.setTimeout(poll, delay);
})();
