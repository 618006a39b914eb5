(function () {
  "use strict";
  // The page's state is a fold of the frames' events (apply): the live
  // state L takes every event as it comes; a slide shown before is that
  // fold stopped where the slide ended, so going back shows a screen as it
  // showed then while the measurement goes on.
  function newState() {
    return {info: null, screen: 0, screenAt: 0, focus: "", state: "waiting", steps: {}, order: [], probes: [], lag: [], grids: {}, verdicts: {}, where: {},
      stallStep: "", lastStall: "", t: 0, startT: -1, done: false, report: "", dir: "", tps: {}, slips: {}};
  }
  var L = newState(), S = L;
  var titles = ["", "1. Throughput against the ceiling", "2. The bystander", "3. The loops, from inside", "4. Who stalls", "5. The fix", "6. The bad afternoon"];
  // What each screen will show, for the speaker view's "next".
  var coming = ["", "throughput as callers grow, against each server's ceiling", "an endpoint that does no work, beside the blocking one",
    "one loop blocked, seen from inside: its beats wait", "k loops blocked, one key each: which connections stall", "the same call moved off the loop",
    "the call slows tenfold at a key: the loops fall with it"];
  var presenter = location.pathname === "/presenter";
  window.stageState = S;
  window.stageLive = L;
  window.stageFrames = 0;
  window.stageDrawn = {};
  window.stageHeadlines = ["", "", "", "", "", "", ""];
  window.stageView = {view: -1, screen: 0, focus: "", blank: false, slides: 0};
  var charts = {};
  // A screen is drawn again only when something it shows changed (or its
  // time window slides), so the page costs the measuring machine little.
  // Charts redraw at most every 2 s: a browser on the machine that
  // measures takes CPU from the measurement, and the charts'
  // redraws were a third of what the page cost (docs/measurements.md). The
  // headline's number and the grid of screen 4 follow every frame.
  var dirty = {1: true, 2: true, 3: true, 4: true, 5: true, 6: true}, lastShown = "", lastProbeT = -1e9, lastLagT = -1e9, shown = {}, drawnAt = -1e9, empty = {};
  var redrawEvery = 2000, canvasScreens = {1: true, 2: true, 3: true, 5: true, 6: true};
  var marks = {hello: [1, 2, 3, 4, 5, 6], step: [1, 2, 4, 5, 6], tp: [1, 5, 6], probe: [2], lag: [3, 4], conn: [4], verdict: [4], screen: [4, 6], slip: [6]};
  var dark = /theme=dark/.test(location.search);
  document.documentElement.classList.toggle("dark", dark);
  document.documentElement.classList.toggle("presenter", presenter);

  // Every event so far, and the slides shown: a slide begins at a
  // "screen" event (a screen, or on screen 4 one k) and ends where the
  // next begins. view is the slide looked at (-1: the live one).
  var events = [], slides = [], view = -1, blank = false, snaps = {};

  function fmt(v, d) { return v === undefined || v === null || isNaN(v) ? "-" : Number(v).toLocaleString("en-US", {maximumFractionDigits: d || 0}); }
  function median(a) { if (!a.length) { return NaN; } var s = a.slice().sort(function (x, y) { return x - y; }); var m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; }
  function isLoop(name) { return S.info && S.info.servers_kind && S.info.servers_kind[name] === "loop"; }
  // Each server's hue, the report's (internal/palette).
  function hue(name) { return (S.info && S.info.colors && S.info.colors[name]) || "#888888"; }
  function pale(name) { return (S.info && S.info.pale && S.info.pale[name]) || hue(name); }
  // loopFirst orders servers as every headline speaks of them: the loop
  // servers first, then as they came.
  function loopFirst(names) { return names.slice().sort(function (a, b) { return (isLoop(b) ? 1 : 0) - (isLoop(a) ? 1 : 0) || names.indexOf(a) - names.indexOf(b); }); }
  function screenCount() { return (S.info && S.info.screens) || 5; }

  function apply(S, ev, t) {
    function stepOf(id) { return S.steps[id] || (S.steps[id] = {id: id}); }
    switch (ev.k) {
    case "hello": S.info = ev; break;
    case "screen":
      if (S.screen === 3 && ev.screen !== 3) { S.lag3 = {from: S.screenAt, to: t}; } // screen 3's headline keeps to its own time
      S.screen = ev.screen; S.screenAt = t; S.focus = ev.focus || "";
      if (S.startT < 0) { S.startT = t; }
      break;
    case "state": S.state = ev.state; break;
    case "step":
      var st = stepOf(ev.id);
      Object.keys(ev).forEach(function (k) { st[k] = ev[k]; });
      if (S.order.indexOf(ev.id) < 0) { S.order.push(ev.id); }
      if (ev.phase === "stall" && ev.state === "start") { S.lastStall = ev.id; S.where[ev.id] = {}; }
      if (ev.state === "start") { st.startT = t; st.slip = undefined; S.tps[ev.id] = []; delete S.slips[ev.id]; }
      // Its end carries the figures the tables and the report give.
      if (ev.row) {
        if (ev.row.not_read) {
          st.not_read = String(ev.row.not_read);
          if (ev.phase === "stall") { S.verdicts[ev.id] = {id: ev.id, final: true, judged: false, not_read: st.not_read}; }
        }
        if (ev.row.rps !== undefined) { st.rps = ev.row.rps; }
        if (ev.row.fast_p50_ms !== undefined) { st.fast_p50_ms = ev.row.fast_p50_ms; st.fast_at_least = !!ev.row.fast_at_least; }
        if (ev.row.stall) { S.verdicts[ev.id] = ev.row.stall; }
        if (ev.row.slip_before) { st.slip = {before: ev.row.slip_before, after: ev.row.slip_after, atMs: ev.row.slip_at_ms}; }
      }
      break;
    case "tp": stepOf(ev.id).rps_live = ev.rps; (S.tps[ev.id] = S.tps[ev.id] || []).push([t, ev.rps]); break;
    case "slip": S.slips[ev.id] = t; break;
    case "probe": S.probes.push({t: t, id: ev.id, server: ev.server, ms: ev.ms}); break;
    case "conn":
      // Each stall step keeps its own grid; a recording without a slide's
      // focus shows the newest grid once its first probes are back, so the
      // audience never looks at an empty one.
      S.stallStep = ev.id;
      (S.grids[ev.id] = S.grids[ev.id] || {})[ev.conn] = {loop: ev.loop, ms: ev.ms, stalled: ev.stalled};
      break;
    case "verdict":
      // The stall rule's verdict (internal/stall), live; a final one (the
      // step's end, as the tables say it) is never replaced by a live one.
      if (!(S.verdicts[ev.id] && S.verdicts[ev.id].final)) { S.verdicts[ev.id] = ev; }
      break;
    case "lag": S.lag.push({t: ev.at !== undefined ? ev.at : t, server: ev.server, loop: ev.loop, ms: ev.ms, blocked: ev.blocked});
      if (ev.where) { (S.where[S.lastStall] = S.where[S.lastStall] || {})[ev.server + "\u0000" + ev.loop] = {server: ev.server, loop: ev.loop, where: String(ev.where), ms: +ev.held_ms || 0}; }
      break;
    case "done": S.done = true; S.report = ev.report || ""; S.dir = ev.dir || ""; break;
    }
  }

  // The stall step a screen 4 slide shows: its focus, or (a recording
  // made before slides had one) the newest grid.
  function shownStall() { return S.screen === 4 && S.focus && S.steps[S.focus] ? S.focus : S.stallStep; }

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
  function fastOf(s) {
    if (s.fast_p50_ms !== undefined) { return fastText(s); }
    var mine = S.probes.filter(function (p) { return p.id === s.id; }).map(function (p) { return p.ms; });
    return mine.length ? fmt(median(mine), 1) + " ms so far" : "";
  }
  function stepsWhere(f) { return S.order.map(function (id) { return S.steps[id]; }).filter(f); }

  // slipOf is a slip step's rate before and after its call slowed: at its
  // end the findings' (each side on its own, the drain on neither), before
  // that the live rate before the key and since.
  function slipOf(st) {
    if (st.slip) { return {before: st.slip.before, after: st.slip.after, final: true}; }
    var tps = S.tps[st.id] || [], at = S.slips[st.id], before, after;
    tps.forEach(function (p) { if (at === undefined || p[0] <= at) { before = p[1]; } else { after = p[1]; } });
    return {before: before, after: after, final: false};
  }

  // slipBinds is what binds a slip step: its workers (the loops), or its
  // callers where fewer (a closed load has no more in flight), in words.
  function slipBinds(st) {
    var w = Math.min(st.workers || st.conc, st.conc);
    return {w: w, who: fmt(w) + (isLoop(st.server) ? " loops" : w < (st.workers || 0) ? " callers" : " workers")};
  }

  // The headlines carry the live number; computed for every screen at
  // every frame, the same from a recording as live. A headline is a list
  // of pieces: a string is text, {b: ..., s: server} a number set large in
  // that server's hue; names in them come from the frames, so they reach
  // the page as text only. Each speaks of the loop servers first.
  function b(v, server) { return {b: String(v), s: server}; }
  function headlines() {
    var h = [[], [], [], [], [], [], []];
    var sweep = stepsWhere(function (s) { return s.phase === "sweep" && (rps(s) !== undefined || s.not_read); });
    if (sweep.length) {
      // The highest callers the loop servers reached (or, without one,
      // any server), every server measured there.
      var loops = sweep.filter(function (s) { return isLoop(s.server); });
      var top = Math.max.apply(null, (loops.length ? loops : sweep).map(function (s) { return s.conc; }));
      var at = sweep.filter(function (s) { return s.conc === top; });
      var names = loopFirst(at.map(function (s) { return s.server; }));
      h[1] = [top + " callers: "];
      names.forEach(function (n, i) {
        var s = at.filter(function (x) { return x.server === n; })[0];
        h[1].push((i ? " \u00b7 " : "") + n + " ");
        if (s.not_read) { h[1].push(b("not read", n), notReadText(s.not_read)); return; }
        h[1].push(b(fmt(rps(s)), n), " req/s");
        var c = S.info.ceiling && S.info.ceiling[n];
        if (c) { h[1].push(", ceiling " + fmt(c)); }
      });
    }
    // Screen 2: each server's /slow at the highest concurrency; its /fast
    // figure as the tables give it once the step ended, else the median of
    // that step's own probes so far.
    var two = stepsWhere(function (s) { return s.screen === 2; });
    if (two.length) {
      h[2] = ["/fast waited "];
      loopFirst(two.map(function (s) { return s.server; })).forEach(function (n, i, all) {
        var s = two.filter(function (x) { return x.server === n; })[0];
        h[2].push(b(fastOf(s) || "-", n), " on " + n + (i < all.length - 1 ? ", " : ""));
      });
      h[2].push(" (" + two[0].conc + " callers)");
    }
    // Screen 3 speaks of what happened since it opened, never of the
    // screens before it.
    var win = S.screen === 3 || !S.lag3 ? {from: lagFrom(), to: S.t} : S.lag3;
    var recent = S.lag.filter(function (e) { return e.t >= Math.max(win.to - 2000, win.from) && e.t <= win.to; });
    if (recent.length) {
      var worst = recent.reduce(function (a, b) { return b.ms > a.ms ? b : a; });
      var others = recent.filter(function (e) { return e.loop !== worst.loop; }).reduce(function (a, e) { return Math.max(a, e.ms); }, 0);
      h[3] = ["loop " + worst.loop + " held ", b(fmt(worst.ms, 1) + " ms", worst.server)];
      // A beat can wait behind more than one call: say how many, so that
      // 200 ms held with a 100 ms block needs no question.
      var calls = Math.round(worst.ms / S.info.stall_block_ms);
      if (calls >= 2) { h[3].push(" (" + calls + " calls)"); }
      h[3].push("; the other loops " + fmt(others, 1) + " ms");
    }
    var id = shownStall();
    if (id && S.steps[id]) {
      var ss = S.steps[id], v = S.verdicts[id], kk = b(ss.kk, ss.server);
      var who = isLoop(ss.server) ? [ss.server + ": ", kk, " of " + S.info.loops + " loops blocked, "] : [ss.server + ": ", kk, " callers blocked, "];
      if (!v) {
        h[4] = who.concat(["measuring ..."]);
      } else if (v.not_read) {
        h[4] = who.concat([b("not read", ss.server), notReadText(v.not_read)]);
      } else if (v.judged) {
        h[4] = who.concat([b(v.stalled + " of " + v.conns, ss.server), " stalled" + (v.final ? "" : " so far")]);
      } else {
        h[4] = who.concat([b("too busy to judge", ss.server)]);
      }
    }
    var off = stepsWhere(function (s) { return s.phase === "offload" && s.rps !== undefined && !s.not_read; });
    var blocking = off.filter(function (s) { return s.variant === "blocking"; })[0], offloaded = off.filter(function (s) { return s.variant === "offloaded"; })[0];
    if (offloaded && blocking) {
      h[5] = ["offloaded: ", b(fmt(offloaded.rps), offloaded.server), " req/s, ", b(fmt(offloaded.rps / blocking.rps, 1) + "\u00d7", offloaded.server), " blocking; /fast " + fastText(offloaded)];
    } else if (off.length) {
      h[5] = [off.map(function (s) { return s.variant + " " + fmt(s.rps) + " req/s"; }).join(", ")];
    }
    var sl = S.screen === 6 && S.focus ? S.steps[S.focus] : stepsWhere(function (s) { return s.phase === "slip" && s.state; }).pop();
    if (sl) {
      var sw = slipOf(sl), slow = fmt(S.info.slip_block_ms) + " ms", was = fmt(S.info.block_ms) + " ms";
      if (sl.not_read) {
        h[6] = [sl.server + ": ", b("not read", sl.server), notReadText(sl.not_read)];
      } else if (sw.after !== undefined) {
        h[6] = [sl.server + ": ", b(fmt(sw.before), sl.server), " \u2192 ", b(fmt(sw.after), sl.server), " req/s" + (sw.final ? "" : " so far") + ", the call " + was + " \u2192 " + slow];
      } else if (sw.before !== undefined) {
        h[6] = [sl.server + ": ", b(fmt(sw.before), sl.server), " req/s, the call " + was + (sl.state === "end" ? "" : " \u00b7 \u2192 slows it to " + slow)];
      }
    }
    return h;
  }

  // notes are what the speaker view says of a screen, a sentence or two,
  // from the same figures: the live ones the stage judged with the kit's
  // one rule, and at each step's end the findings the report gives.
  function notes(n, hs) {
    var out = [];
    if (n === 1) {
      stepsWhere(function (s) { return s.phase === "sweep" && rps(s) !== undefined; }).forEach(function (s) {
        var c = S.info.ceiling && S.info.ceiling[s.server], last = true;
        S.order.forEach(function (id) { var x = S.steps[id]; if (x.phase === "sweep" && x.server === s.server && rps(x) !== undefined && x.conc > s.conc) { last = false; } });
        if (!last) { return; }
        out.push(s.server + " at " + s.conc + " callers: " + fmt(rps(s)) + " req/s" + (c ? ", " + fmt(100 * rps(s) / c) + " % of its ceiling, " + ((S.info.ceiling_text || {})[s.server] || fmt(c)) : "") + ".");
      });
      if (out.length) { out.push("A loop server levels off at its loops / the call; a pool climbs with its callers."); }
    } else if (n === 2) {
      stepsWhere(function (s) { return s.screen === 2; }).forEach(function (s) {
        var f = fastOf(s);
        if (f) { out.push("/fast does no work; beside /slow on " + s.server + " it waited " + f + (isLoop(s.server) ? ": it queues behind /slow on a shared loop." : ": a free worker took it.")); }
      });
    } else if (n === 3) {
      var recent = S.lag.filter(function (e) { return e.t >= lagFrom(); });
      if (recent.length) {
        var worst = recent.reduce(function (a, b) { return b.ms > a.ms ? b : a; });
        out.push("One loop runs a " + fmt(S.info.stall_block_ms) + " ms call: loop " + worst.loop + "'s beats waited up to " + fmt(worst.ms, 1) + " ms; a loop has no one else to run them.");
      }
    } else if (n === 4) {
      var id = shownStall(), v = S.verdicts[id], s = S.steps[id];
      if (s && v && v.judged) {
        var exact = isLoop(s.server) && v.stalled === 3 * s.kk;
        out.push(s.server + " with " + s.kk + (isLoop(s.server) ? " of " + S.info.loops + " loops" : " callers") + " blocked: " + v.stalled + " of " + v.conns + " connections stalled" +
          (exact ? ", as many as share the " + s.kk + " blocked loop" + (s.kk > 1 ? "s" : "") + " (3 a loop)" : "") + ".");
        out.push(isLoop(s.server) ? "A connection lives on one loop and waits whenever its loop is blocked, whatever it asked for." :
          "A blocked caller holds one of " + fmt(S.info.slots) + " threads; every other connection finds one free.");
      } else if (s && v && !v.judged) {
        out.push("Not judged: " + (v.why || v.not_read || "the machine was too busy") + ".");
      }
    } else if (n === 6) {
      var sl = S.focus ? S.steps[S.focus] : null, sw = sl ? slipOf(sl) : {};
      if (sl && sw.after !== undefined) {
        var bw = slipBinds(sl);
        out.push(sl.server + " answered " + fmt(sw.before) + " req/s with the call at " + fmt(S.info.block_ms) + " ms and " + fmt(sw.after) + (sw.final ? "" : " so far") + " at " + fmt(S.info.slip_block_ms) + " ms.");
        out.push("Its ceiling fell with the call: " + bw.who + " / " + fmt(S.info.slip_block_ms) + " ms = " + fmt(bw.w * 1000 / S.info.slip_block_ms) + " req/s; on a loop, every connection waits the longer call.");
      } else if (sl) {
        out.push("The call takes " + fmt(S.info.block_ms) + " ms; \u2192 makes it " + fmt(S.info.slip_block_ms) + " ms, as a slow database does on a bad afternoon.");
      }
    } else if (n === 5) {
      if (hs[5].length) { out.push(plain(hs[5]) + "."); }
    }
    return out.join(" ");
  }

  // lagFrom is when screen 3's lanes begin: when it opened (or the start).
  function lagFrom() { return S.screen === 3 ? S.screenAt : -Infinity; }

  // Sizes follow the stage, which follows the viewport: px(x) is x at a
  // 1600 px wide stage.
  function px(x) { var w = document.getElementById("stage").clientWidth || 1600; return Math.max(8, Math.round(x * w / 1600)); }
  function chart(id) {
    if (!charts[id]) { charts[id] = echarts.init(document.getElementById(id), dark ? "dark" : null, {renderer: "canvas"}); }
    return charts[id];
  }
  function big() { return {fontSize: px(22)}; }
  // An axis line never sits "on zero" (a log axis has none: it drew
  // beside the plot).
  function axis(type, name, gap) { return {type: type, name: name, nameTextStyle: big(), axisLabel: big(), nameLocation: "middle", nameGap: px(gap || 48), axisLine: {onZero: false}}; }
  // logRange is a log axis that starts and ends near its data: a
  // little under the lowest point and over the highest, its ticks on
  // powers of its base.
  function logRange(lo, hi, pad) { return {min: lo / pad, max: hi * pad}; }

  function draw1() {
    var series = [], servers = {}, names = [];
    S.order.forEach(function (id) { var s = S.steps[id]; if (s.phase === "sweep" && rps(s) !== undefined) { (servers[s.server] = servers[s.server] || []).push([s.conc, Math.max(1, Math.round(rps(s)))]); } });
    S.order.forEach(function (id) { var s = S.steps[id]; if (servers[s.server] && names.indexOf(s.server) < 0) { names.push(s.server); } });
    names = loopFirst(names);
    var lo = Math.min.apply(null, S.info.conc), hi = Math.max.apply(null, S.info.conc);
    // At each callers, the highest point's label goes above it, the
    // lowest's below; one between shows only where it lies clear of both
    // (30 % apart), so no label covers another.
    var at = {};
    names.forEach(function (n) { servers[n].forEach(function (p) { (at[p[0]] = at[p[0]] || []).push({n: n, v: p[1]}); }); });
    var place = {};
    Object.keys(at).forEach(function (x) {
      var ps = at[x].sort(function (a, b) { return b.v - a.v; });
      ps.forEach(function (p, i) {
        var side = i === 0 ? "top" : i === ps.length - 1 ? "bottom" : "right";
        var clear = i === 0 || i === ps.length - 1 || (ps[i - 1].v > 1.3 * p.v && p.v > 1.3 * ps[i + 1].v);
        place[p.n + "@" + x] = clear ? side : "";
      });
    });
    var ys = [];
    names.forEach(function (n) {
      var data = servers[n].map(function (p) {
        ys.push(p[1]);
        var side = place[n + "@" + p[0]];
        return {value: p, label: {show: side !== "", position: side || "top"}};
      });
      series.push({name: n, type: "line", data: data, symbolSize: px(16), lineStyle: {width: px(5), color: hue(n)}, itemStyle: {color: hue(n)},
        label: {show: true, fontSize: px(22), formatter: function (p) { return fmt(p.value[1]); }}});
    });
    // Each ceiling on its own line, labelled on it in its server's hue;
    // servers that share one share the line and the label.
    var ceilings = {}, order = [];
    names.forEach(function (n) {
      var t = S.info.ceiling_text && S.info.ceiling_text[n];
      if (!t) { return; }
      if (!ceilings[t]) { ceilings[t] = {names: [], value: S.info.ceiling[n], hue: hue(n)}; order.push(t); ys.push(S.info.ceiling[n]); }
      ceilings[t].names.push(n);
    });
    order.forEach(function (t) {
      var c = ceilings[t];
      series.push({name: c.names[0], type: "line", data: [[lo, c.value], {value: [hi, c.value], label: {show: true}}], symbol: "circle", symbolSize: 1,
        lineStyle: {type: "dashed", width: px(3), color: c.hue}, itemStyle: {color: c.hue},
        label: {show: false, position: "top", align: "right", fontSize: px(22), fontWeight: "bold", color: c.hue, formatter: "ceiling of " + c.names.join(", ") + ": " + t}});
    });
    // The axes start near the data: callers on powers of 2, a little
    // either side; req/s from the power of 10 under the lowest point.
    var x = logRange(lo, hi, 1.25), y = logRange(Math.min.apply(null, ys.length ? ys : [1]), Math.max.apply(null, ys.length ? ys : [10]), 1.6);
    chart("c1").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), legend: {bottom: 0, textStyle: big(), data: names},
      grid: {left: px(130), right: px(40), top: px(40), bottom: px(110)},
      xAxis: Object.assign(axis("log", "callers"), {logBase: 2, min: x.min, max: x.max, axisLabel: Object.assign(big(), {showMinLabel: false, showMaxLabel: false})}),
      yAxis: Object.assign(axis("log", "req/s", 90), {min: y.min, max: y.max, axisLabel: Object.assign(big(), {showMinLabel: false, showMaxLabel: false})}), series: series}, {replaceMerge: ["series"]});
    return series.length > 0;
  }
  function draw2() {
    // The window fits what was measured since the screen opened: 5 s at
    // least, 30 at most.
    var span = Math.min(30, Math.max(5, Math.ceil((S.t - (S.screen === 2 ? S.screenAt : S.t - 30000)) / 1000)));
    var by = {};
    S.probes.forEach(function (p) { if (p.t >= S.t - span * 1000) { (by[p.server] = by[p.server] || []).push([(p.t - S.t) / 1000, Math.max(p.ms, 0.01)]); } });
    var series = loopFirst(Object.keys(by)).map(function (n) { return {name: n, type: "scatter", symbolSize: px(10), data: by[n], itemStyle: {color: hue(n)}}; });
    chart("c2").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), legend: {bottom: 0, textStyle: big()}, grid: {left: px(130), right: px(40), top: px(30), bottom: px(110)},
      xAxis: Object.assign(axis("value", "seconds ago"), {min: -span, max: 0}), yAxis: axis("log", "/fast latency from due, ms", 80), series: series}, {replaceMerge: ["series"]});
    return series.length > 0;
  }
  // lagCols is how many 100 ms columns screen 3 shows: what came since it
  // opened, 3 s at least, 10 at most.
  function lagCols() { return Math.min(100, Math.max(30, Math.ceil((S.t - (isFinite(lagFrom()) ? lagFrom() : S.t - 10000)) / 100))); }
  function draw3() {
    var loops = S.info.loops, cols = lagCols(), data = [];
    S.lag.forEach(function (e) {
      if (e.t < lagFrom()) { return; }
      var x = Math.floor((e.t - (S.t - cols * 100)) / 100);
      if (x >= 0 && x < cols) { data.push([x, e.loop, Math.round(e.ms * 10) / 10]); }
    });
    var cats = []; for (var i = 0; i < cols; i++) { cats.push(((i - cols) / 10).toFixed(1)); }
    var ys = []; for (var l = 0; l < loops; l++) { ys.push("loop " + l); }
    chart("c3").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), grid: {left: px(130), right: px(40), top: px(70), bottom: px(80)},
      xAxis: {type: "category", data: cats, name: "seconds ago", nameLocation: "middle", nameGap: px(48), nameTextStyle: big(), axisLabel: {fontSize: px(18), interval: function (i) { return (cols - i) % 10 === 0; }}},
      yAxis: {type: "category", data: ys, axisLabel: big()},
      visualMap: {type: "piecewise", orient: "horizontal", left: "center", top: 0, textStyle: big(), dimension: 2,
        pieces: [{lt: 1, label: "< 1 ms", color: "#d9f0d3"}, {gte: 1, lt: 4, label: "1-4 ms", color: "#fee08b"}, {gte: 4, lt: 20, label: "4-20 ms", color: "#fdae61"},
          {gte: 20, lt: 100, label: "20-100 ms", color: "#f46d43"}, {gte: 100, label: ">= 100 ms", color: "#a50026"}]},
      series: [{type: "heatmap", data: data}]}, {replaceMerge: ["series"]});
    return data.length > 0;
  }
  function draw4() {
    var g = document.getElementById("grid"), loops = S.info.loops, per = S.info.stall_conns / Math.max(loops, 1);
    var id = shownStall(), conns = S.grids[id] || {};
    g.style.gridTemplateColumns = "10cqw repeat(" + per + ", 1fr)";
    var rows = {}, loopless = id && S.steps[id] && S.info.servers_kind[S.steps[id].server] !== "loop";
    Object.keys(conns).sort(function (a, b) { return a - b; }).forEach(function (c, i) {
      var x = conns[c], row = loopless ? Math.floor(i / per) : x.loop;
      (rows[row] = rows[row] || []).push({conn: +c, ms: x.ms, stalled: x.stalled});
    });
    var cells = [];
    function div(cls, text) { var d = document.createElement("div"); d.className = cls; d.textContent = text; return d; }
    for (var l = 0; l < loops; l++) {
      cells.push(div("looplabel", loopless ? "conns" : "loop " + l));
      var r = (rows[l] || []).sort(function (a, b) { return a.conn - b.conn; });
      for (var i = 0; i < per; i++) {
        var c = r[i];
        // "#3 · 679 ms": a room read "#3 679 ms" as 3,679 ms. Healthy
        // cells calm, stalled ones loud.
        cells.push(c ? div("cell " + (c.stalled ? "lit" : "calm"), "#" + c.conn + " \u00b7 " + fmt(c.ms) + " ms") : div("cell", "-"));
      }
    }
    g.replaceChildren.apply(g, cells);
    // Under the grid: where the server's detector saw each blocked loop
    // held (its own servers: loopwatch).
    var w = document.getElementById("heldat"), server = id && S.steps[id] ? S.steps[id].server : "";
    // One line a place: "loops 1, 2 held 100 ms in syscall at block.nanosleep (block/block.go:82)".
    var places = [], by = {}, mine = S.where[id] || {};
    Object.keys(mine).map(function (k) { return mine[k]; })
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
    var v = S.verdicts[id];
    if (!lines.length && v && v.seen && v.seen.length) {
      lines = v.seen.slice(0, 3).map(function (l, i) { return div("heldline", (i ? "" : "seen from outside: ") + String(l)); });
    }
    w.replaceChildren.apply(w, lines);
    return Object.keys(conns).length > 0;
  }
  function draw5() {
    var off = stepsWhere(function (s) { return s.phase === "offload" && rps(s) !== undefined; });
    chart("c5").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), grid: {left: px(150), right: px(40), top: px(110), bottom: px(100)},
      xAxis: {type: "category", data: off.map(function (s) { return s.variant + "\n" + s.server + " " + s.endpoint; }), axisLabel: {fontSize: px(22), lineHeight: px(30), interval: 0}},
      yAxis: axis("value", "req/s", 100),
      // Each bar in its server's hue; offloaded, paler.
      series: [{type: "bar", data: off.map(function (s) { return {value: Math.round(rps(s)), itemStyle: {color: s.variant === "offloaded" ? pale(s.server) : hue(s.server)}}; }), barWidth: "40%",
        label: {show: true, position: "top", fontSize: px(28), lineHeight: px(36), formatter: function (p) { var s = off[p.dataIndex]; return fmt(p.value) + " req/s" + (s.fast_p50_ms !== undefined ? "\n/fast " + fastText(s) : ""); }}}]}, {replaceMerge: ["series"]});
    return off.length > 0;
  }
  // draw6: the slip's live throughput from its start, the moment the
  // call slowed, and the ceiling before and after (the workers that bind:
  // the loops, or the callers where fewer).
  function draw6() {
    var sl = S.focus ? S.steps[S.focus] : null;
    if (!sl || sl.startT === undefined) { return false; }
    var from = sl.startT, data = (S.tps[sl.id] || []).map(function (p) { return [(p[0] - from) / 1000, Math.round(p[1])]; });
    var bw = slipBinds(sl), w = bw.w, who = bw.who, c0 = w * 1000 / S.info.block_ms, c1 = w * 1000 / S.info.slip_block_ms, at = S.slips[sl.id];
    var top = Math.max(c0 * 1.1, Math.max.apply(null, data.map(function (d) { return d[1]; }).concat([1])) * 1.15);
    var unit = Math.pow(10, Math.floor(Math.log10(top))) / 2;
    top = Math.ceil(top / unit) * unit; // a round top: 900, not 891
    var xmax = Math.max(5, Math.ceil((S.t - from) / 1000));
    var lines = [{yAxis: c0, name: "ceiling " + who + " / " + fmt(S.info.block_ms) + " ms = " + fmt(c0)}, {yAxis: c1, name: "ceiling " + who + " / " + fmt(S.info.slip_block_ms) + " ms = " + fmt(c1)}];
    var marks = lines.map(function (l) { return {yAxis: l.yAxis, label: {formatter: l.name, position: "insideEndTop", fontSize: px(20), color: hue(sl.server)}, lineStyle: {type: "dashed", width: px(3), color: hue(sl.server)}}; });
    if (at !== undefined) {
      marks.push({xAxis: (at - from) / 1000, label: {formatter: "the call: " + fmt(S.info.block_ms) + " \u2192 " + fmt(S.info.slip_block_ms) + " ms", position: "end", fontSize: px(22), fontWeight: "bold", color: dark ? "#f5f5f5" : "#111111"},
        lineStyle: {type: "solid", width: px(3), color: dark ? "#f5f5f5" : "#111111"}});
    }
    chart("c6").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), legend: {bottom: 0, textStyle: big()}, grid: {left: px(130), right: px(40), top: px(50), bottom: px(110)},
      xAxis: Object.assign(axis("value", "seconds from the start"), {min: 0, max: xmax}), yAxis: Object.assign(axis("value", "req/s", 90), {min: 0, max: top}),
      series: [{name: sl.server, type: "line", showSymbol: false, data: data, lineStyle: {width: px(5), color: hue(sl.server)}, itemStyle: {color: hue(sl.server)},
        markLine: {symbol: "none", silent: true, data: marks}}]}, {replaceMerge: ["series"]});
    return data.length > 0;
  }
  var draws = [null, draw1, draw2, draw3, draw4, draw5, draw6];

  // text puts v in the element id: a string as its text, a headline's
  // pieces as text and <b> elements in a server's hue; nothing is ever
  // parsed as markup.
  function text(id, v) {
    var key = JSON.stringify(v);
    if (shown[id] === key) { return false; }
    shown[id] = key;
    var el = document.getElementById(id);
    if (typeof v === "string") { el.textContent = v; return true; }
    el.replaceChildren.apply(el, v.map(function (p) {
      if (typeof p === "string") { return document.createTextNode(p); }
      var e = document.createElement("b");
      e.textContent = p.b;
      if (p.s) { e.style.color = hue(p.s); }
      return e;
    }));
    return true;
  }
  // fit shrinks the headline's type until it stands on one line: no
  // headline wraps, whatever the projector.
  function fit(el) {
    el.style.fontSize = "";
    var size = parseFloat(getComputedStyle(el).fontSize), s = size;
    while (el.scrollWidth > el.clientWidth && s > size * 0.5) { s *= 0.93; el.style.fontSize = s + "px"; }
  }
  function plain(h) { return h.map(function (p) { return typeof p === "string" ? p : p.b; }).join(""); }
  function clock(ms) { var s = Math.max(0, Math.floor(ms / 1000)); return Math.floor(s / 60) + ":" + ("0" + s % 60).slice(-2); }

  function render() {
    var hs = headlines();
    window.stageHeadlines = hs.map(plain);
    var n = S.screen, key = view + "/" + n + "/" + S.focus;
    if (S.t - lastProbeT < 30000) { dirty[2] = true; } // the window slides
    if (S.t - lastLagT < 10000) { dirty[3] = true; }
    var moved = key !== lastShown;
    if (moved) {
      for (var i = 1; i <= 6; i++) { document.getElementById("s" + i).classList.toggle("on", i === n); }
      Object.keys(charts).forEach(function (id) { charts[id].resize(); });
    }
    text("where", n ? titles[n] + "  (" + n + " of " + screenCount() + ")" : "bystander: what one blocking call does to everyone else");
    text("state", stateText());
    text("keys", keysText());
    if (n && S.info && typeof echarts !== "undefined") {
      if (text("headline", hs[n].length ? hs[n] : titles[n] + ": measuring ...")) { fit(document.getElementById("headline")); }
      // A screen drawn empty (screen 3 just opened) is drawn again as
      // soon as something comes, not 2 s later.
      if ((dirty[n] && (!canvasScreens[n] || empty[n] || S.t - drawnAt >= redrawEvery)) || moved || S.done) {
        dirty[n] = false;
        drawnAt = S.t;
        empty[n] = !draws[n]();
        if (!empty[n]) { window.stageDrawn[n] = true; }
      }
    }
    if (presenter) { renderPresenter(hs); }
    lastShown = key;
    window.stageState = S;
    window.stageView = {view: view, screen: S.screen, focus: S.focus, blank: blank, slides: slides.length};
  }
  // stateText is the footer's right: the live state (what is measured, in
  // words), and when looking back, which slide and how to return.
  function stateText() {
    var live = L.done ? "done" + (L.report ? ": " + L.report + " written" : "") : L.state;
    return view < 0 ? live : "live: " + live;
  }
  // keysText is the footer's left: the keys, or when looking back, how
  // to return.
  function keysText() {
    return view < 0 ? "\u2192 next \u00b7 \u2190 back \u00b7 1-" + screenCount() + " a screen \u00b7 B blank \u00b7 P pause \u00b7 R repeat \u00b7 T theme" :
      "looking back: screen " + S.screen + " as it ended \u00b7 End returns to live";
  }
  function renderPresenter(hs) {
    var n = S.screen, next = n + 1 <= screenCount() ? titles[n + 1] + ": " + coming[n + 1] : "the end: the report is written";
    if (n === 4 && S.info) {
      var id = shownStall(), s = S.steps[id];
      if (s && isLoop(s.server) && s.kk < S.info.loops) { next = "4. Who stalls: " + (s.kk + 1) + " of " + S.info.loops + " loops blocked"; }
    }
    if (L.done && view < 0) { next = "done: the report is " + (L.dir ? L.dir + "/" : "") + L.report; }
    text("pclock", L.startT >= 0 ? clock(L.t - L.startT) : "0:00");
    text("pstate", (view < 0 ? "live" : "looking back (End: live)") + (blank ? " \u00b7 the screen is blank (B)" : ""));
    text("pnow", n ? titles[n] : "not started: press Space");
    text("pnotes", n ? notes(n, hs) || "measuring ..." : "");
    text("pnext", "next: " + next);
  }

  // Keys. Those that measure go to the stage (POST /control); the rest
  // move this window and every other open on the stage (the speaker
  // view and the projector), through a BroadcastChannel.
  var bc = typeof BroadcastChannel !== "undefined" ? new BroadcastChannel("bystander-stage") : null;
  var toastTimer = 0;
  function toast(msg) {
    var el = document.getElementById("toast");
    el.textContent = msg;
    el.classList.add("on");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { el.classList.remove("on"); }, 2500);
    window.stageToasts = (window.stageToasts || []).concat([msg]);
  }
  function send(k) {
    var x = new XMLHttpRequest();
    x.open("POST", "/control");
    x.setRequestHeader("X-Bystander-Stage", "1"); // the stage takes keys only with it: no other site's page can send it unasked
    x.onload = function () { if (x.status >= 300) { say("key not taken: " + (x.responseText || x.status).toString().trim()); } };
    x.onerror = function () { say("key not taken: the stage does not answer"); };
    x.send(k);
  }
  function say(msg) { toast(msg); if (bc) { bc.postMessage({toast: msg}); } }
  // show looks at slide i (-1: live).
  function show(i) {
    view = i < 0 || i >= slides.length - 1 ? -1 : i;
    S = view < 0 ? L : snapshot(view);
    dirty = {1: true, 2: true, 3: true, 4: true, 5: true, 6: true};
    render();
  }
  function snapshot(i) {
    if (snaps[i]) { return snaps[i]; }
    var st = newState(), end = slides[i + 1].at;
    for (var j = 0; j < end; j++) { if (events[j].ev !== null) { st.t = events[j].t; apply(st, events[j].ev, events[j].t); } else { st.t = events[j].t; } }
    return (snaps[i] = st);
  }
  function current() { return view < 0 ? slides.length - 1 : view; }
  // nav does what a key says, here; from says whether it came from the
  // keyboard (then it is also sent to the other windows and the stage).
  function nav(k, fromKeyboard) {
    if (fromKeyboard && bc) { bc.postMessage({nav: k}); }
    var at = current();
    switch (k) {
    case "next":
      if (view >= 0) { show(view + 1); } else if (fromKeyboard) { send("next"); }
      break;
    case "back":
      if (at <= 0) { if (fromKeyboard) { say("key not taken: nothing before " + (slides.length ? "the first screen" : "the start")); } } else { show(at - 1); }
      break;
    case "home": if (slides.length > 1) { show(0); } break;
    case "end": show(-1); break;
    case "blank": blank = !blank; document.documentElement.classList.toggle("blank", blank); render(); break;
    case "theme":
      dark = !dark;
      document.documentElement.classList.toggle("dark", dark);
      Object.keys(charts).forEach(function (id) { charts[id].dispose(); delete charts[id]; });
      lastShown = "";
      render();
      break;
    default:
      var m = /^screen (\d)$/.exec(k);
      if (!m) { break; }
      var want = +m[1], last = -1;
      slides.forEach(function (s, i) { if (s.screen === want) { last = i; } });
      if (want < 1 || want > screenCount()) {
        if (fromKeyboard) { say("key not taken: there is no screen " + want + " (1 to " + screenCount() + ")"); }
      } else if (last >= 0 && (last < slides.length - 1 || view >= 0)) {
        // Shown before: look at it as it ended (or, the live one, live).
        show(last === slides.length - 1 ? -1 : last);
      } else if (last < 0) {
        show(-1);
        if (fromKeyboard) { send("goto " + want); }
      }
    }
  }
  if (bc) {
    bc.onmessage = function (m) {
      if (m.data && m.data.nav) { nav(String(m.data.nav), false); }
      if (m.data && m.data.toast) { toast(String(m.data.toast)); }
    };
  }
  var keys = {" ": "next", "ArrowRight": "next", "PageDown": "next", "ArrowDown": "next", "Enter": "next",
    "ArrowLeft": "back", "PageUp": "back", "Backspace": "back", "ArrowUp": "back",
    "Home": "home", "End": "end", "b": "blank", "B": "blank", ".": "blank", "t": "theme", "T": "theme"};
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.altKey || e.metaKey) { return; }
    var k = keys[e.key];
    if (/^[0-9]$/.test(e.key)) { k = "screen " + e.key; }
    if (e.key === "p" || e.key === "P") { e.preventDefault(); send("pause"); return; }
    if (e.key === "r" || e.key === "R") { e.preventDefault(); if (view >= 0) { say("key not taken: R measures the live screen again (End returns to it)"); } else { send("repeat"); } return; }
    if (!k) { return; }
    e.preventDefault();
    nav(k, true);
  });
  window.addEventListener("resize", function () {
    Object.keys(charts).forEach(function (id) { charts[id].dispose(); delete charts[id]; });
    shown = {};
    lastShown = "";
    render();
  });

  function start() {
    var es = new EventSource("/events"), lastSeq = -Infinity;
    es.onopen = function () { window.stageOpens = (window.stageOpens || 0) + 1; };
    es.onmessage = function (m) {
      var f = JSON.parse(m.data);
      // A stream that reconnects is sent every frame again: each is taken
      // once.
      if (typeof f.seq === "number") {
        if (f.seq <= lastSeq) { return; }
        lastSeq = f.seq;
      }
      L.t = f.t;
      events.push({t: f.t, ev: null});
      f.events.forEach(function (ev) {
        (marks[ev.k] || []).forEach(function (n) { dirty[n] = true; });
        if (ev.k === "screen") { slides.push({screen: ev.screen, focus: ev.focus || "", at: events.length}); }
        if (ev.k === "probe") { lastProbeT = f.t; }
        if (ev.k === "lag") { lastLagT = f.t; }
        events.push({t: f.t, ev: ev});
        apply(L, ev, f.t);
      });
      window.stageFrames++;
      window.stageLastT = f.t;
      render();
    };
  }
  window.bystanderEcharts().then(start, function (e) { document.getElementById("headline").textContent = e.message; console.error(e); });
})();
