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
  var day = 24 * 3600 * 1000;
  var first = Date.parse(data.days[0]) - day;
  var last = Date.parse(data.days[data.days.length - 1]) + day;
  var most = Math.max.apply(null, data.counts);
  window.Plotly.newPlot(element, [{ type: "bar", x: data.days, y: data.counts, name: "incidents",
    width: data.days.map(function () { return day * 0.8; }),
    hovertemplate: "%{x|%Y-%m-%d}: %{y} incident(s)<extra></extra>" }], {
    margin: { l: 40, r: 10, t: 10, b: 40 }, height: 220,
    xaxis: { type: "date", range: [first, last], tickformat: "%Y-%m-%d", nticks: 8,
      dtick: last - first <= 14 * day ? day : null },
    yaxis: { rangemode: "tozero", dtick: most > 10 ? null : 1, title: { text: "incidents" } },
  }, { responsive: true, displaylogo: false, displayModeBar: false });
  element.setAttribute("data-ready", "1");
})();
