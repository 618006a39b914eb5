(function () {
  "use strict";
  var S = {info: null, screen: 0, screenAt: 0, state: "waiting", steps: {}, order: [], probes: [], lag: [], conns: {}, verdicts: {}, where: {}, stallStep: "", t: 0, done: false, report: "", dir: ""};
  var titles = ["", "1. Throughput against the ceiling", "2. The bystander", "3. The loops, from inside", "4. Who stalls", "5. The fix"];
  window.stageState = S;
  window.stageFrames = 0;
  window.stageDrawn = {};
  window.stageHeadlines = ["", "", "", "", "", ""];
  var charts = {};
  // A screen is drawn again only when something it shows changed (or its
  // time window slides), so the page costs the measuring machine little.
  // Charts redraw at most every 2 s: a browser on the machine that
  // measures takes CPU from the measurement, and the charts'
  // redraws were a third of what the page cost (docs/measurements.md). The
  // headline's number and the grid of screen 4 follow every frame.
  var dirty = {1: true, 2: true, 3: true, 4: true, 5: true}, lastShown = -1, lastProbeT = -1e9, lastLagT = -1e9, shown = {}, drawnAt = -1e9, empty = {};
  var redrawEvery = 2000, canvasScreens = {1: true, 2: true, 3: true, 5: true};
  var marks = {hello: [1, 2, 3, 4, 5], step: [1, 2, 4, 5], tp: [1, 5], probe: [2], lag: [3], conn: [4], verdict: [4]};
  var dark = /theme=dark/.test(location.search);
  document.documentElement.classList.toggle("dark", dark);

  function fmt(v, d) { return v === undefined || v === null || isNaN(v) ? "-" : Number(v).toLocaleString("en-US", {maximumFractionDigits: d || 0}); }
  function median(a) { if (!a.length) { return NaN; } var s = a.slice().sort(function (x, y) { return x - y; }); var m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; }
  function stepOf(id) { return S.steps[id] || (S.steps[id] = {id: id}); }
  function isLoop(name) { return S.info && S.info.servers_kind && S.info.servers_kind[name] === "loop"; }
  // Each server's hue, the report's (internal/palette).
  function hue(name) { return (S.info && S.info.colors && S.info.colors[name]) || "#888888"; }
  function pale(name) { return (S.info && S.info.pale && S.info.pale[name]) || hue(name); }

  function apply(ev) {
    (marks[ev.k] || []).forEach(function (n) { dirty[n] = true; });
    switch (ev.k) {
    case "hello": S.info = ev; break;
    case "screen": S.screen = ev.screen; S.screenAt = S.t; break;
    case "state": S.state = ev.state; break;
    case "step":
      var st = stepOf(ev.id);
      Object.keys(ev).forEach(function (k) { st[k] = ev[k]; });
      if (S.order.indexOf(ev.id) < 0) { S.order.push(ev.id); }
      // Its end carries the figures the tables and the report give.
      if (ev.row) {
        if (ev.row.not_read) {
          st.not_read = String(ev.row.not_read);
          if (ev.phase === "stall") { S.verdicts[ev.id] = {id: ev.id, final: true, judged: false, not_read: st.not_read}; }
        }
        if (ev.row.rps !== undefined) { st.rps = ev.row.rps; }
        if (ev.row.fast_p50_ms !== undefined) { st.fast_p50_ms = ev.row.fast_p50_ms; st.fast_at_least = !!ev.row.fast_at_least; }
        if (ev.row.stall) { S.verdicts[ev.id] = ev.row.stall; }
      }
      break;
    case "tp": stepOf(ev.id).rps_live = ev.rps; break;
    case "probe": S.probes.push({t: S.t, id: ev.id, server: ev.server, ms: ev.ms}); lastProbeT = S.t; break;
    case "conn":
      // A new stall step's grid replaces the last once its first probes
      // are back, so the audience never looks at an empty grid.
      if (ev.id !== S.stallStep) { S.stallStep = ev.id; S.conns = {}; S.where = {}; }
      S.conns[ev.conn] = {loop: ev.loop, ms: ev.ms, stalled: ev.stalled};
      break;
    case "verdict":
      // The stall rule's verdict (internal/stall), live; a final one (the
      // step's end, as the tables say it) is never replaced by a live one.
      if (!(S.verdicts[ev.id] && S.verdicts[ev.id].final)) { S.verdicts[ev.id] = ev; }
      break;
    case "lag": S.lag.push({t: ev.at !== undefined ? ev.at : S.t, loop: ev.loop, ms: ev.ms, blocked: ev.blocked}); lastLagT = S.t;
      if (ev.where) { S.where[ev.server + "\u0000" + ev.loop] = {server: ev.server, loop: ev.loop, where: String(ev.where), ms: +ev.held_ms || 0}; }
      break;
    case "done": S.done = true; S.report = ev.report || ""; S.dir = ev.dir || ""; break;
    }
  }

  // A step whose files were not read has no figure: not its live rate,
  // not a 0.
  // notReadText is which file was not read, short enough for a headline
  // ('its load_file "x.json"'); the tables and the recording keep why.
  function notReadText(why) {
    var m = /its \w+ "[^"]*"/.exec(why);
    return " (" + (m ? m[0] : why) + ")";
  }
  function rps(st) { return st.not_read ? undefined : st.rps !== undefined ? st.rps : st.rps_live; }
  // fastText is a step's /fast p50 as the tables give it: "at least" when
  // the bystander saturated (its queue grew for as long as the run lasted).
  function fastText(st) { return (st.fast_at_least ? "at least " : "") + fmt(st.fast_p50_ms, 1) + " ms"; }

  // The headlines carry the live number; computed for every screen at
  // every frame, the same from a recording as live. A headline is a list
  // of pieces: a string is text, {b: ...} a number set large; names in
  // them come from the frames, so they reach the page as text only.
  function b(v) { return {b: String(v)}; }
  function headlines() {
    var h = [[], [], [], [], [], []];
    var sweep = S.order.map(function (id) { return S.steps[id]; }).filter(function (s) { return s.phase === "sweep" && (rps(s) !== undefined || s.not_read); });
    if (sweep.length && sweep[sweep.length - 1].not_read) {
      var nr = sweep[sweep.length - 1];
      h[1] = [nr.server + " at " + nr.conc + " callers: ", b("not read"), notReadText(nr.not_read)];
    } else if (sweep.length) {
      var last = sweep[sweep.length - 1];
      var ct = S.info.ceiling_text && S.info.ceiling_text[last.server];
      h[1] = [last.server + " at " + last.conc + " callers: ", b(fmt(rps(last))), " req/s; ceiling " + (ct || fmt(last.ceiling) + " (" + last.workers + " workers / " + S.info.block_ms + " ms)")];
    }
    // Screen 2: each server's /slow at the highest concurrency; its /fast
    // figure as the tables give it once the step ended, else the median of
    // that step's own probes so far.
    var two = S.order.map(function (id) { return S.steps[id]; }).filter(function (s) { return s.screen === 2; });
    if (two.length) {
      h[2] = ["/fast waited "];
      two.forEach(function (s, i) {
        var v;
        if (s.fast_p50_ms !== undefined) { v = fastText(s); } else {
          var mine = S.probes.filter(function (p) { return p.id === s.id; }).map(function (p) { return p.ms; });
          v = mine.length ? fmt(median(mine), 1) + " ms so far" : "-";
        }
        h[2].push(b(v), " on " + s.server + (i < two.length - 1 ? ", " : ""));
      });
      h[2].push(" (median from due, " + two[0].conc + " callers)");
    }
    // Screen 3 speaks of what happened since it opened, never of the
    // screens before it.
    var recent = S.lag.filter(function (e) { return e.t >= Math.max(S.t - 2000, lagFrom()); });
    if (recent.length) {
      var worst = recent.reduce(function (a, b) { return b.ms > a.ms ? b : a; });
      var others = recent.filter(function (e) { return e.loop !== worst.loop; }).reduce(function (a, e) { return Math.max(a, e.ms); }, 0);
      h[3] = ["loop ", b(worst.loop), " held up to ", b(fmt(worst.ms, 1) + " ms"), "; the other loops " + fmt(others, 1) + " ms (last 2 s)"];
      // A beat can wait behind more than one call: say how many, so that
      // 200 ms held with a 100 ms block needs no question.
      var calls = Math.round(worst.ms / S.info.stall_block_ms);
      if (calls >= 2) { h[3].push(": a beat waited behind " + calls + " back-to-back " + fmt(S.info.stall_block_ms) + " ms calls"); }
    }
    if (S.stallStep) {
      var ss = S.steps[S.stallStep], v = S.verdicts[S.stallStep];
      if (!v) {
        h[4] = [ss.server + ", k = ", b(ss.kk), " blocked: measuring ..."];
      } else if (v.not_read) {
        h[4] = [ss.server + ", k = ", b(ss.kk), " blocked: ", b("not read"), notReadText(v.not_read)];
      } else if (v.judged) {
        h[4] = [ss.server + ", k = ", b(ss.kk), " blocked: ", b(v.stalled + " of " + v.conns), " connections stalled" + (v.final ? "" : " so far")];
      } else {
        h[4] = [ss.server + ", k = ", b(ss.kk), " blocked: ", b("machine too busy to judge")];
      }
    }
    var off = S.order.map(function (id) { return S.steps[id]; }).filter(function (s) { return s.phase === "offload" && s.rps !== undefined && !s.not_read; });
    var blocking = off.filter(function (s) { return s.variant === "blocking"; })[0], offloaded = off.filter(function (s) { return s.variant === "offloaded"; })[0];
    if (offloaded && blocking) {
      h[5] = ["offloaded: ", b(fmt(offloaded.rps)), " req/s, ", b(fmt(offloaded.rps / blocking.rps, 1) + "\u00d7"), " blocking; /fast " + fastText(offloaded)];
    } else if (off.length) {
      h[5] = [off.map(function (s) { return s.variant + " " + fmt(s.rps) + " req/s"; }).join(", ")];
    }
    return h;
  }

  // lagFrom is when screen 3's lanes begin: when it opened (or the start).
  function lagFrom() { return S.screen === 3 ? S.screenAt : -Infinity; }

  function chart(id) {
    if (!charts[id]) { charts[id] = echarts.init(document.getElementById(id), dark ? "dark" : null, {renderer: "canvas"}); }
    return charts[id];
  }
  var big = {fontSize: 22};
  function axis(type, name, gap) { return {type: type, name: name, nameTextStyle: big, axisLabel: big, nameLocation: "middle", nameGap: gap || 48}; }

  function draw1() {
    var series = [], servers = {}, names = [];
    S.order.forEach(function (id) { var s = S.steps[id]; if (s.phase === "sweep" && rps(s) !== undefined) { (servers[s.server] = servers[s.server] || []).push([s.conc, Math.max(1, Math.round(rps(s)))]); } });
    S.order.forEach(function (id) { var s = S.steps[id]; if (servers[s.server] && names.indexOf(s.server) < 0) { names.push(s.server); } });
    var lo = Math.min.apply(null, S.info.conc), hi = Math.max.apply(null, S.info.conc);
    // A loop server's labels go below its points (its ceiling's label is
    // above the line), the others' above; at the same callers, labels on
    // one side within 30 % of each other are one, so none covers another.
    var shown = {};
    names.forEach(function (n) {
      var side = isLoop(n) ? "bottom" : "top";
      var data = servers[n].map(function (p) {
        var key = side + p[0], first = (shown[key] || []).every(function (v) { return Math.max(v, p[1]) > 1.3 * Math.min(v, p[1]); });
        (shown[key] = shown[key] || []).push(p[1]);
        return {value: p, label: {show: first}};
      });
      series.push({name: n, type: "line", data: data, symbolSize: 16, lineStyle: {width: 5, color: hue(n)}, itemStyle: {color: hue(n)},
        label: {show: true, fontSize: 22, position: side, formatter: function (p) { return fmt(p.value[1]); }}});
    });
    // Each ceiling on its own line, labelled on it in its server's hue;
    // servers that share one share the line and the label.
    var ceilings = {}, order = [];
    names.forEach(function (n) {
      var t = S.info.ceiling_text && S.info.ceiling_text[n];
      if (!t) { return; }
      if (!ceilings[t]) { ceilings[t] = {names: [], value: S.info.ceiling[n], hue: hue(n)}; order.push(t); }
      ceilings[t].names.push(n);
    });
    order.forEach(function (t) {
      var c = ceilings[t];
      series.push({name: c.names[0], type: "line", data: [[lo, c.value], {value: [hi, c.value], label: {show: true}}], symbol: "circle", symbolSize: 1,
        lineStyle: {type: "dashed", width: 3, color: c.hue}, itemStyle: {color: c.hue},
        label: {show: false, position: "top", align: "right", fontSize: 22, fontWeight: "bold", color: c.hue, formatter: "ceiling of " + c.names.join(", ") + ": " + t}});
    });
    chart("c1").setOption({animation: false, backgroundColor: "transparent", textStyle: big, legend: {bottom: 0, textStyle: big, data: names}, grid: {left: 130, right: 40, top: 40, bottom: 110},
      xAxis: axis("log", "callers"), yAxis: axis("log", "req/s", 80), series: series}, {replaceMerge: ["series"]});
    return series.length > 0;
  }
  function draw2() {
    var by = {};
    S.probes.forEach(function (p) { if (p.t >= S.t - 30000) { (by[p.server] = by[p.server] || []).push([(p.t - S.t) / 1000, Math.max(p.ms, 0.01)]); } });
    var series = Object.keys(by).sort().map(function (n) { return {name: n, type: "scatter", symbolSize: 10, data: by[n], itemStyle: {color: hue(n)}}; });
    chart("c2").setOption({animation: false, backgroundColor: "transparent", textStyle: big, legend: {bottom: 0, textStyle: big}, grid: {left: 130, right: 40, top: 30, bottom: 110},
      xAxis: Object.assign(axis("value", "seconds ago"), {min: -30, max: 0}), yAxis: axis("log", "/fast latency from due, ms", 80), series: series}, {replaceMerge: ["series"]});
    return series.length > 0;
  }
  function draw3() {
    var loops = S.info.loops, cols = 100, data = [];
    S.lag.forEach(function (e) {
      if (e.t < lagFrom()) { return; }
      var x = Math.floor((e.t - (S.t - 10000)) / 100);
      if (x >= 0 && x < cols) { data.push([x, e.loop, Math.round(e.ms * 10) / 10]); }
    });
    var cats = []; for (var i = 0; i < cols; i++) { cats.push(((i - cols) / 10).toFixed(1)); }
    var ys = []; for (var l = 0; l < loops; l++) { ys.push("loop " + l); }
    chart("c3").setOption({animation: false, backgroundColor: "transparent", textStyle: big, grid: {left: 130, right: 40, top: 70, bottom: 80},
      xAxis: {type: "category", data: cats, name: "seconds ago", nameLocation: "middle", nameGap: 48, nameTextStyle: big, axisLabel: {fontSize: 18, interval: 19}},
      yAxis: {type: "category", data: ys, axisLabel: big},
      visualMap: {type: "piecewise", orient: "horizontal", left: "center", top: 0, textStyle: big, dimension: 2,
        pieces: [{lt: 1, label: "< 1 ms", color: "#d9f0d3"}, {gte: 1, lt: 4, label: "1-4 ms", color: "#fee08b"}, {gte: 4, lt: 20, label: "4-20 ms", color: "#fdae61"},
          {gte: 20, lt: 100, label: "20-100 ms", color: "#f46d43"}, {gte: 100, label: ">= 100 ms", color: "#a50026"}]},
      series: [{type: "heatmap", data: data}]}, {replaceMerge: ["series"]});
    return data.length > 0;
  }
  function draw4() {
    var g = document.getElementById("grid"), loops = S.info.loops, per = S.info.stall_conns / Math.max(loops, 1);
    g.style.gridTemplateColumns = "160px repeat(" + per + ", 1fr)";
    var rows = {}, loopless = S.stallStep && S.info.servers_kind[S.steps[S.stallStep].server] !== "loop";
    Object.keys(S.conns).sort(function (a, b) { return a - b; }).forEach(function (c, i) {
      var x = S.conns[c], row = loopless ? Math.floor(i / per) : x.loop;
      (rows[row] = rows[row] || []).push({conn: +c, ms: x.ms, stalled: x.stalled});
    });
    var cells = [];
    function div(cls, text) { var d = document.createElement("div"); d.className = cls; d.textContent = text; return d; }
    for (var l = 0; l < loops; l++) {
      cells.push(div("looplabel", loopless ? "conns" : "loop " + l));
      var r = (rows[l] || []).sort(function (a, b) { return a.conn - b.conn; });
      for (var i = 0; i < per; i++) {
        var c = r[i];
        // "#3 · 679 ms": a room read "#3 679 ms" as 3,679 ms.
        cells.push(c ? div("cell" + (c.stalled ? " lit" : ""), "#" + c.conn + " \u00b7 " + fmt(c.ms) + " ms") : div("cell", "-"));
      }
    }
    g.replaceChildren.apply(g, cells);
    // Under the grid: where the server's detector saw each blocked loop
    // held (its own servers: loopwatch).
    var w = document.getElementById("heldat"), server = S.stallStep ? S.steps[S.stallStep].server : "";
    // One line a place: "loops 1, 2 held 100 ms in syscall at block.nanosleep (block/block.go:82)".
    var places = [], by = {};
    Object.keys(S.where).map(function (k) { return S.where[k]; })
      .filter(function (x) { return x.server === server; }).sort(function (a, b) { return a.loop - b.loop; })
      .forEach(function (x) {
        if (!by[x.where]) { by[x.where] = {loops: [], ms: 0}; places.push(x.where); }
        by[x.where].loops.push(x.loop); by[x.where].ms = Math.max(by[x.where].ms, x.ms);
      });
    var lines = places.map(function (p) {
      var g = by[p];
      return div("heldline", (g.loops.length > 1 ? "loops " : "loop ") + g.loops.join(", ") + " held " + fmt(g.ms, g.ms < 10 ? 1 : 0) + " ms " + p);
    });
    // A server the kit looked at from outside (/proc, a JVM's stacks): what
    // it found held, once the step ended.
    var v = S.verdicts[S.stallStep];
    if (!lines.length && v && v.seen && v.seen.length) {
      lines = v.seen.slice(0, 3).map(function (l, i) { return div("heldline", (i ? "" : "seen from outside: ") + String(l)); });
    }
    w.replaceChildren.apply(w, lines);
    return Object.keys(S.conns).length > 0;
  }
  function draw5() {
    var off = S.order.map(function (id) { return S.steps[id]; }).filter(function (s) { return s.phase === "offload" && rps(s) !== undefined; });
    chart("c5").setOption({animation: false, backgroundColor: "transparent", textStyle: big, grid: {left: 150, right: 40, top: 110, bottom: 100},
      xAxis: {type: "category", data: off.map(function (s) { return s.variant + "\n" + s.server + " " + s.endpoint; }), axisLabel: {fontSize: 22, lineHeight: 30, interval: 0}},
      yAxis: axis("value", "req/s", 100),
      // Each bar in its server's hue; offloaded, paler.
      series: [{type: "bar", data: off.map(function (s) { return {value: Math.round(rps(s)), itemStyle: {color: s.variant === "offloaded" ? pale(s.server) : hue(s.server)}}; }), barWidth: "40%",
        label: {show: true, position: "top", fontSize: 28, lineHeight: 36, formatter: function (p) { var s = off[p.dataIndex]; return fmt(p.value) + " req/s" + (s.fast_p50_ms !== undefined ? "\n/fast " + fastText(s) : ""); }}}]}, {replaceMerge: ["series"]});
    return off.length > 0;
  }
  var draws = [null, draw1, draw2, draw3, draw4, draw5];

  // text puts v in the element id: a string as its text, a headline's
  // pieces as text and <b> elements; nothing is ever parsed as markup.
  function text(id, v) {
    var key = JSON.stringify(v);
    if (shown[id] === key) { return; }
    shown[id] = key;
    var el = document.getElementById(id);
    if (typeof v === "string") { el.textContent = v; return; }
    el.replaceChildren.apply(el, v.map(function (p) {
      if (typeof p === "string") { return document.createTextNode(p); }
      var e = document.createElement("b");
      e.textContent = p.b;
      return e;
    }));
  }
  function render() {
    var hs = headlines();
    window.stageHeadlines = hs.map(function (h) { return h.map(function (p) { return typeof p === "string" ? p : p.b; }).join(""); });
    var n = S.screen;
    if (S.t - lastProbeT < 30000) { dirty[2] = true; } // the window slides
    if (S.t - lastLagT < 10000) { dirty[3] = true; }
    if (n !== lastShown) {
      for (var i = 1; i <= 5; i++) { document.getElementById("s" + i).classList.toggle("on", i === n); }
      Object.keys(charts).forEach(function (id) { charts[id].resize(); });
    }
    text("where", n ? titles[n] + "  (" + n + " of 5)" : "bystander: what one blocking call does to everyone else");
    text("state", S.done ? "done" + (S.report ? ": the report is " + (S.dir ? S.dir + "/" : "") + S.report : "") : S.state);
    if (n && S.info && typeof echarts !== "undefined") {
      text("headline", hs[n].length ? hs[n] : titles[n] + ": measuring ...");
      // A screen drawn empty (screen 3 just opened) is drawn again as
      // soon as something comes, not 2 s later.
      if ((dirty[n] && (!canvasScreens[n] || empty[n] || S.t - drawnAt >= redrawEvery)) || n !== lastShown || S.done) {
        dirty[n] = false;
        drawnAt = S.t;
        empty[n] = !draws[n]();
        if (!empty[n]) { window.stageDrawn[n] = true; }
      }
    }
    lastShown = n;
  }

  function key(k) {
    var x = new XMLHttpRequest();
    x.open("POST", "/control");
    x.setRequestHeader("X-Bystander-Stage", "1"); // the stage takes keys only with it: no other site's page can send it unasked
    x.send(k);
  }
  document.addEventListener("keydown", function (e) {
    if (e.key === " " || e.key === "ArrowRight") { e.preventDefault(); key("next"); }
    else if (e.key === "p" || e.key === "P") { key("pause"); }
    else if (e.key === "r" || e.key === "R") { key("repeat"); }
    else if (e.key === "t" || e.key === "T") {
      dark = !dark;
      document.documentElement.classList.toggle("dark", dark);
      Object.keys(charts).forEach(function (id) { charts[id].dispose(); delete charts[id]; });
      lastShown = -1;
      render();
    }
  });
  window.addEventListener("resize", function () { Object.keys(charts).forEach(function (id) { charts[id].resize(); }); });

  function start() {
    var es = new EventSource("/events");
    es.onmessage = function (m) {
      var f = JSON.parse(m.data);
      S.t = f.t;
      f.events.forEach(apply);
      window.stageFrames++;
      window.stageLastT = f.t;
      render();
    };
  }
  window.bystanderEcharts().then(start, function (e) { document.getElementById("headline").textContent = e.message; console.error(e); });
})();
