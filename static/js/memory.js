// Memory curves: series are downsampled on the server; capacity, OOM and estimates come as traces.
(function () {
  "use strict";
  var element = document.getElementById("memory-chart");
  if (!element || !window.Plotly) return;
  fetch(element.getAttribute("data-url"), { credentials: "same-origin" })
    .then(function (response) { return response.json(); })
    .then(function (data) {
      if (!data.has_data) {
        element.textContent = "The logs carry no memory readings.";
        return;
      }
      var layout = {
        margin: { l: 70, r: 20, t: 10, b: 50 },
        height: 460,
        xaxis: { title: { text: "time (s)" } },
        yaxis: { title: { text: "memory (" + (data.unit || "MiB") + ")" }, rangemode: "tozero" },
        legend: { orientation: "h", x: 0, y: -0.18, yanchor: "top" },
        hovermode: "x unified",
      };
      window.Plotly.newPlot(element, data.traces || [], layout, { responsive: true, displaylogo: false });
    })
    .catch(function () {
      element.textContent = "The memory chart could not be loaded.";
    });
})();
