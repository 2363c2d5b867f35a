// Memory: measured curves (they own their y-axis) and, separately, the estimate before/after each fix as bars.
(function () {
  "use strict";
  var curves = document.getElementById("memory-chart");
  var bars = document.getElementById("memory-estimate-chart");
  var any = curves || bars;
  if (!any || !window.Plotly) return;
  var config = { responsive: true, displaylogo: false };
  fetch(any.getAttribute("data-url"), { credentials: "same-origin" })
    .then(function (response) { return response.json(); })
    .then(function (data) {
      if (curves) {
        if (!data.has_data) {
          curves.textContent = "The logs carry no memory readings.";
        } else {
          window.Plotly.newPlot(curves, data.traces || [], {
            margin: { l: 70, r: 20, t: 10, b: 50 },
            height: 420,
            xaxis: { title: { text: data.x_title || "seconds since the first reading" } },
            yaxis: { title: { text: "measured memory (" + (data.unit || "MiB") + ")" }, rangemode: "tozero" },
            legend: { orientation: "h", x: 0, y: -0.18, yanchor: "top" },
            hovermode: "x unified",
          }, config);
          var note = document.getElementById("memory-chart-note");
          if (note) note.textContent = data.left_out_note || "";
        }
      }
      if (bars && data.estimate_has_data) {
        window.Plotly.newPlot(bars, data.estimate_traces || [], {
          margin: { l: 70, r: 20, t: 10, b: 90 },
          height: 300,
          yaxis: { title: { text: "estimated per GPU (GiB)" }, rangemode: "tozero" },
          showlegend: true,
          legend: { orientation: "h", x: 0, y: -0.35, yanchor: "top" },
        }, config);
      }
    })
    .catch(function () {
      any.textContent = "The memory chart could not be loaded.";
    });
})();
