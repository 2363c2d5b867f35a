// Occurrences per day on the problem page: a small bar chart from the JSON the page embeds.
(function () {
  "use strict";
  var element = document.getElementById("occurrence-chart");
  var source = document.getElementById("occurrence-data");
  if (!element || !source || !window.Plotly) return;
  var data = JSON.parse(source.textContent);
  if (!data.days.length) {
    element.textContent = "No dated occurrences.";
    return;
  }
  window.Plotly.newPlot(element, [{ type: "bar", x: data.days, y: data.counts, name: "incidents",
    hovertemplate: "%{x}: %{y} incident(s)<extra></extra>" }], {
    margin: { l: 40, r: 10, t: 10, b: 40 }, height: 220,
    xaxis: { type: "date" }, yaxis: { rangemode: "tozero", dtick: 1, title: { text: "incidents" } },
  }, { responsive: true, displaylogo: false, displayModeBar: false });
  element.setAttribute("data-ready", "1");
})();
