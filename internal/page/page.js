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
  // The charts' scripts come packed (page.go's writePage): unpacked and run
  // once echarts is there, each registers its chart, in page order.
  function charts() {
    var b64 = window.bystanderChartsPacked;
    return b64 ? window.bystanderUnpack(b64).then(function (js) { (0, eval)(js); }) : undefined;
  }
  window.bystanderEcharts().then(charts).then(drawAll, function (e) {
    var p = document.createElement("p");
    p.className = "note";
    p.textContent = "The charts cannot be drawn: " + e.message;
    document.body.insertBefore(p, document.body.firstChild);
    console.error(e);
  });
  // The ceiling calculator (section 11): workers / the slowest call against
  // peak traffic, at the share of the ceiling a server reaches.
  function calc() {
    var root = document.getElementById("calc");
    if (!root) { return; }
    var $ = function (id) { return document.getElementById(id); };
    var fmt = function (v) { return Math.round(v).toLocaleString("en-US"); };
    function update() {
      var w = Number($("calc_workers").value), ms = Number($("calc_block").value);
      var peak = Number($("calc_peak").value), share = Number($("calc_share").value) / 100;
      var out = $("calc_out");
      if (!(w >= 1) || !(ms > 0) || !(peak >= 0) || !(share > 0 && share <= 1)) {
        out.textContent = "Give workers (1 or more), the call in ms (more than 0), peak traffic (0 or more) and a share from 1 to 100 %.";
        return;
      }
      var ceiling = w / (ms / 1000), real = ceiling * share;
      var text = "Ceiling: " + fmt(w) + " / " + ms + " ms = " + fmt(ceiling) + " requests/s";
      if (share < 1) { text += "; at " + Math.round(share * 1000) / 10 + " % of it, " + fmt(real); }
      text += ". ";
      if (peak > 0) {
        var headroom = real / peak, need = Math.ceil(peak * (ms / 1000) / share);
        text += headroom >= 1 ?
          "Peak " + fmt(peak) + "/s: headroom " + headroom.toFixed(2) + "x (" + Math.round((headroom - 1) * 100) + " % to spare)." :
          "Peak " + fmt(peak) + "/s is " + (1 / headroom).toFixed(2) + "x what it can serve: it needs " + fmt(need) + " workers, or a call " + (ms * headroom).toFixed(2) + " ms long.";
        text += " If the call slows 10x (" + ms + " to " + ms * 10 + " ms), the ceiling falls to " + fmt(real / 10) + "/s" +
          (real / 10 < peak ? ", below the peak." : ".");
      }
      out.textContent = text;
    }
    root.addEventListener("input", update);
    root.querySelectorAll(".calc-preset").forEach(function (b) {
      b.addEventListener("click", function () {
        $("calc_workers").value = b.dataset.workers;
        $("calc_block").value = b.dataset.blockMs;
        $("calc_share").value = b.dataset.share;
        update();
      });
    });
    update();
  }
  calc();
})();
