/* grpo-doctor HTML report: draws the charts described in the JSON block #grpo-data with uPlot (inlined above).
   Every text from the run reaches the page as text: canvas fillText or textContent, never as markup. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("grpo-data").textContent);
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  var SEV = {error: "#c62828", warning: "#b26a00", info: "#1565c0", end: "#555555"};

  var TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800];
  var STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000, 100000];

  function tick(v) {
    if (v === null) return "";
    var a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 1e5 || a < 1e-3) return v.toExponential(1);
    return String(Number(v.toPrecision(3)));
  }

  /* seconds on a GPU chart as people read them: 45s, 12m, 2h05 */
  function dur(v) {
    if (v === null) return "";
    var a = Math.abs(v);
    if (a < 120) return Math.round(v) + "s";
    if (a < 3600) return Math.round(v / 60) + "m";
    var h = Math.floor(a / 3600), m = Math.round((a - h * 3600) / 60);
    if (m === 60) { h += 1; m = 0; }
    return (v < 0 ? "-" : "") + h + "h" + (m < 10 ? "0" : "") + m;
  }

  function num(v) {
    if (typeof v === "number") return v;
    return null; /* "nan", "inf", "-inf", null: a gap (the non-finite points are listed as markers) */
  }

  function markerPlugin(markers) {
    return {
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx;
          var top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
          markers.forEach(function (m, i) {
            if (m.x === null || m.x === undefined) return;
            var x = Math.round(u.valToPos(m.x, "x", true));
            if (x < u.bbox.left - 1 || x > u.bbox.left + u.bbox.width + 1) return;
            ctx.save();
            ctx.strokeStyle = SEV[m.kind] || "#555";
            ctx.fillStyle = SEV[m.kind] || "#555";
            ctx.lineWidth = 2 * devicePixelRatio;
            if (m.kind === "end") ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, bottom);
            ctx.stroke();
            ctx.font = (11 * devicePixelRatio) + "px sans-serif";
            ctx.textAlign = x > u.bbox.left + u.bbox.width * 0.7 ? "right" : "left";
            var pad = ctx.textAlign === "right" ? -4 * devicePixelRatio : 4 * devicePixelRatio;
            ctx.fillText(m.label, x + pad, top + (12 + 13 * (i % 4)) * devicePixelRatio);
            ctx.restore();
          });
        }]
      }
    };
  }

  /* one logged x (a run that stopped after its first step, one snapshot): the values as text, not empty axes */
  function single(el, chart, aligned, count) {
    var p = document.createElement("p");
    p.className = "single";
    var x = aligned[0][0];
    var bits = chart.series.map(function (s, k) {
      var v = aligned[k + 1] ? aligned[k + 1][0] : null;
      return s.label + " " + (v === null || v === undefined ? "-" : tick(v));
    });
    var at = chart.x === "step" ? "step " + x : (chart.x.indexOf("seconds") === 0 ? dur(x) : chart.x + " " + x);
    p.textContent = "Only one point (" + at + "): " + bits.join(", ");
    el.querySelector(".plot").appendChild(p);
    el.setAttribute("data-points", String(count));
    el.setAttribute("data-drawn", "1");
  }

  function draw(el, chart) {
    var tables = chart.series.map(function (s) {
      return [s.points.map(function (p) { return p[0]; }), s.points.map(function (p) { return num(p[1]); })];
    });
    var aligned = tables.length === 1 ? tables[0] : uPlot.join(tables);
    var count = 0;
    for (var i = 1; i < aligned.length; i++) {
      for (var j = 0; j < aligned[i].length; j++) if (aligned[i][j] !== null && aligned[i][j] !== undefined) count++;
    }
    if (aligned[0].length <= 1) return single(el, chart, aligned, count);
    var few = aligned[0].length < 60;
    var series = [{label: chart.x}];
    chart.series.forEach(function (s, k) {
      series.push({label: s.label, stroke: COLORS[k % COLORS.length], width: 1.5, spanGaps: false,
                   dash: s.dash ? [5, 3] : undefined, points: {show: few, size: 5}});
    });
    var xs = aligned[0].slice();
    chart.markers.forEach(function (m) { if (typeof m.x === "number") xs.push(m.x); });
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
    if (!(hi > lo)) { lo -= 1; hi += 1; }
    var width = Math.max(300, Math.min(el.clientWidth || 520, 1100));
    var seconds = chart.x.indexOf("seconds") === 0;
    var opts = {
      width: width, height: 190, series: series,
      scales: {x: {time: false, range: function () { return [lo, hi]; }},
               y: {range: function (u, min, max) {
                 if (min === null || max === null) return [0, 1];
                 if (min === max) return [min - (Math.abs(min) || 1) * 0.5, max + (Math.abs(max) || 1) * 0.5];
                 var pad = (max - min) * 0.08;
                 return [min - pad, max + pad];
               }}},
      axes: [{label: seconds ? "time since the first sample" : chart.x, incrs: chart.x === "step" ? STEP_INCRS : (seconds ? TIME_INCRS : undefined),
              values: seconds ? function (u, vals) {
                var shown = vals.map(dur);
                el.setAttribute("data-x-ticks", shown.join("|"));
                return shown;
              } : undefined},
             {size: 64, values: function (u, vals) { return vals.map(tick); }}],
      legend: {live: true},
      plugins: [markerPlugin(chart.markers)]
    };
    new uPlot(opts, aligned, el.querySelector(".plot"));
    el.setAttribute("data-points", String(count));
    el.setAttribute("data-drawn", "1");
  }

  data.charts.forEach(function (chart, i) {
    var el = document.getElementById("chart-" + i);
    if (!el) return;
    try {
      draw(el, chart);
    } catch (e) {
      var p = document.createElement("p");
      p.className = "err";
      p.textContent = "chart could not be drawn: " + e;
      el.appendChild(p);
    }
  });
  document.body.setAttribute("data-charts-done", String(data.charts.length));
})();
