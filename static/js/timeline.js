// Per-rank timeline in time: the server sends ready Plotly traces (lanes already collapsed,
// texts already escaped); this draws the first-failure marker, its label and the cascade shading.
(function () {
  "use strict";
  var element = document.getElementById("timeline-chart");
  if (!element || !window.Plotly) return;

  function cssVar(name, fallback) {
    var value = window.getComputedStyle(document.documentElement).getPropertyValue(name);
    return (value && value.trim()) || fallback;
  }

  fetch(element.getAttribute("data-url"), { credentials: "same-origin" })
    .then(function (response) { return response.json(); })
    .then(function (data) {
      var lanes = (data.lanes || []).map(function (lane) { return lane.label; });
      var narrow = element.clientWidth < 600;
      var height = Math.max(260, Math.min(1600, 150 + lanes.length * (narrow ? 44 : 34)));
      element.style.height = height + "px";
      element.style.minHeight = height + "px";
      element.setAttribute("data-x-mode", data.x_mode || "");
      var fg = cssVar("--fg", "#111827");
      var muted = cssVar("--muted", "#4b5563");
      var grid = cssVar("--line", "#d1d5db");
      var shapes = [];
      var annotations = [];
      if (data.failing_lane) {
        // The y axis lists lanes bottom-up, so the failing lane's position is counted from the end.
        var position = lanes.length - 1 - lanes.indexOf(data.failing_lane);
        shapes.push({ type: "rect", xref: "paper", x0: 0, x1: 1, yref: "y", y0: position - 0.45, y1: position + 0.45,
          fillcolor: "rgba(220,38,38,0.10)", line: { width: 0 }, layer: "below" });
      }
      if (data.cascade) {
        shapes.push({ type: "rect", xref: "x", x0: data.cascade.x0, x1: data.cascade.x1, yref: "paper", y0: 0, y1: 1,
          fillcolor: "rgba(219,39,119,0.08)", line: { width: 0 }, layer: "below" });
        annotations.push({ xref: "x", x: data.cascade.x1, yref: "paper", y: 0, xanchor: "right", yanchor: "bottom",
          text: "cascade after the first failure", showarrow: false, font: { size: 11, color: muted } });
      }
      if (data.first_failure) {
        var first = data.first_failure;
        shapes.push({ type: "line", xref: "x", x0: first.x, x1: first.x, yref: "paper", y0: 0, y1: 1,
          line: { color: "#dc2626", width: 2, dash: "dot" } });
        var lane = lanes.indexOf(first.lane);
        annotations.push({ xref: "x", x: first.x, yref: "y", y: lane < 0 ? 0 : lanes.length - 1 - lane,
          text: first.label + (data.x_mode === "wall" || data.x_mode === "elapsed" ? " at " + Math.round(first.x) + " s" : ""),
          showarrow: true, arrowcolor: "#dc2626", ax: 30, ay: narrow ? 20 : -28, xanchor: "left",
          font: { size: 12, color: "#dc2626" }, bgcolor: cssVar("--card", "#fff"), bordercolor: "#dc2626" });
      }
      if (narrow) {
        // On a phone each lane's name is written above it, across the full width, not squeezed to its left.
        lanes.forEach(function (label, index) {
          annotations.push({ xref: "paper", x: 0, yref: "y", y: lanes.length - 1 - index, yshift: 13, xanchor: "left",
            yanchor: "bottom", text: label, showarrow: false, font: { size: 10, color: muted } });
        });
      }
      var layout = {
        margin: { l: narrow ? 8 : 190, r: narrow ? 8 : 16, t: narrow ? 30 : 50, b: 60 },
        height: height,
        width: narrow ? element.clientWidth : undefined,
        paper_bgcolor: "rgba(0,0,0,0)",
        plot_bgcolor: "rgba(0,0,0,0)",
        font: { color: fg, size: narrow ? 11 : 12 },
        xaxis: { title: { text: (narrow ? data.x_title_short : data.x_title) || "", font: { size: narrow ? 11 : 13 } },
          zeroline: false,
          gridcolor: grid, rangemode: "tozero" },
        // On a phone the lane labels sit inside the plot, so the chart never grows wider than the screen.
        yaxis: { type: "category", categoryorder: "array", categoryarray: lanes.slice().reverse(), automargin: !narrow,
          showticklabels: !narrow, gridcolor: grid },
        legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
        showlegend: !narrow,
        hovermode: "closest",
        hoverlabel: { align: "left" },
        shapes: shapes,
        annotations: annotations,
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
