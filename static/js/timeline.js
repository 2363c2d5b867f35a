// Per-rank timeline: the server sends ready Plotly traces (lanes already collapsed).
(function () {
  "use strict";
  var element = document.getElementById("timeline-chart");
  if (!element || !window.Plotly) return;
  fetch(element.getAttribute("data-url"), { credentials: "same-origin" })
    .then(function (response) { return response.json(); })
    .then(function (data) {
      var lanes = (data.lanes || []).map(function (lane) { return lane.label; });
      var height = Math.max(280, Math.min(1600, 130 + lanes.length * 34));
      element.style.height = height + "px";
      var shapes = [];
      if (data.failing_lane) {
        // The y axis lists lanes bottom-up, so the failing lane's position is counted from the end.
        var position = lanes.length - 1 - lanes.indexOf(data.failing_lane);
        shapes.push({ type: "rect", xref: "paper", x0: 0, x1: 1, yref: "y", y0: position - 0.45, y1: position + 0.45,
          fillcolor: "rgba(185,28,28,0.10)", line: { width: 0 }, layer: "below" });
      }
      var layout = {
        margin: { l: 190, r: 20, t: 40, b: 50 },
        height: height,
        xaxis: { title: { text: data.x_title || "" }, zeroline: false },
        yaxis: { type: "category", categoryorder: "array", categoryarray: lanes.slice().reverse(), automargin: true },
        legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
        hovermode: "closest",
        shapes: shapes,
      };
      window.Plotly.newPlot(element, data.traces || [], layout, { responsive: true, displaylogo: false });
      // Clicking an event opens the log at its line (URLs are the server's own, relative paths).
      element.on("plotly_click", function (event) {
        var point = event && event.points && event.points[0];
        var url = point && point.customdata;
        if (typeof url === "string" && url.charAt(0) === "/" && url.charAt(1) !== "/") window.location.assign(url);
      });
    })
    .catch(function () {
      element.textContent = "The timeline could not be loaded.";
    });
})();
