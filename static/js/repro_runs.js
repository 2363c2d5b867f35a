// Live repro runs on the incident page: polls the runs JSON while a run is unfinished (or none
// started yet) and redraws the list. Text from logs goes in with textContent only, never as HTML.
(function () {
  "use strict";
  const section = document.getElementById("repro-runs");
  if (!section) return;
  const list = document.getElementById("repro-run-list");
  const url = section.dataset.runsUrl;
  let polls = 0;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function statusText(run) {
    if (!run.reproducible) return "not reproducible here";
    return run.status_label;
  }

  function render(runs) {
    if (!runs.length) return;
    list.replaceChildren();
    for (const run of runs) {
      const item = el("li", "repro-run");
      item.dataset.runId = run.id;
      item.append(el("span", "badge kind", run.kind_label), " ");
      if (run.fix_kind) item.append(el("span", "badge", "fix " + run.fix_kind), " ");
      const badge = el("span", "badge repro-status status-" + run.status, statusText(run));
      badge.dataset.field = "status";
      item.append(badge, " ");
      if (run.elapsed_s !== null) {
        const elapsed = el("span", "muted", run.elapsed_s.toFixed(1) + " s");
        elapsed.dataset.field = "elapsed";
        item.append(elapsed, " ");
      }
      if (run.peak_memory_mb) item.append(el("span", "muted", "peak " + Math.round(run.peak_memory_mb) + " MiB"));
      if (run.reason) item.append(el("p", null, run.reason));
      if (run.verdict && run.verdict.summary) item.append(el("p", "muted", run.verdict.summary));
      if (run.output_url) {
        const p = el("p");
        const link = el("a", null, "Download " + run.output_name);
        link.href = run.output_url;
        p.append(link);
        item.append(p);
      }
      const details = el("details");
      details.open = !run.finished;
      details.append(el("summary", null, "Log tail"));
      const pre = el("pre", "log-tail", run.log_tail);
      pre.dataset.field = "log";
      details.append(pre);
      item.append(details);
      list.append(item);
    }
  }

  async function poll() {
    polls += 1;
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) return;
      const body = await response.json();
      render(body.runs);
      const waiting = body.running || (!body.runs.length && polls < 90);
      if (waiting) setTimeout(poll, 1500);
    } catch (error) {
      setTimeout(poll, 5000);
    }
  }

  const unfinished = list.querySelector(".repro-status.status-running, .repro-status.status-queued");
  if (unfinished || document.getElementById("repro-none")) poll();
})();
