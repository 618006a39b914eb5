(function () {
  "use strict";
  // Once echarts is there, draw every chart at once, in page order, so a
  // screenshot, a print or a quick scroll finds them all drawn.
  function drawAll() {
    performance.mark("echarts loaded");
    if (typeof echarts === "undefined") { return; }
    window.bystanderCharts.forEach(function (c) {
      if (c.drawn) { return; }
      c.drawn = true;
      c.draw();
      performance.mark("drawn " + c.id);
      if (!window.bystanderFirstDrawnMs) { window.bystanderFirstDrawnMs = performance.now(); }
    });
    window.bystanderAllDrawnMs = performance.now();
  }
  window.bystanderDrawAll = drawAll;
  window.bystanderEcharts().then(drawAll, function (e) {
    var p = document.createElement("p");
    p.className = "note";
    p.textContent = "The charts cannot be drawn: " + e.message;
    document.body.insertBefore(p, document.body.firstChild);
    console.error(e);
  });
})();
