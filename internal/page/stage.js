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
  // The speaker view is /presenter on the stage's server, or the talk
  // file opened with #presenter; talk says the page carries a recorded
  // talk (report --talk) and plays it from itself, with no server.
  var presenter = location.pathname === "/presenter" || location.hash === "#presenter";
  var talk = typeof window.bystanderTalk === "string";
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
  // A talk on services measured as they are (--load): the endpoints are
  // the service's own requests, named as the user gave them (text only),
  // and the screens that need the kit's protocol say why, one line each.
  function asIs() { return !!(S.info && S.info.as_is); }
  function loadName() { return asIs() ? String(S.info.load) : "/slow"; }
  function fastName() { return asIs() ? String(S.info.bystander) : "/fast"; }
  function skipOf(n) { return asIs() && S.info.skips && S.info.skips[n] ? String(S.info.skips[n]) : ""; }
  function comingOf(n) {
    if (skipOf(n)) { return "not for a service measured as it is (one line says why)"; }
    if (asIs() && n === 1) { return "throughput of " + loadName() + " as callers grow"; }
    if (asIs() && n === 2) { return fastName() + " asked while " + loadName() + " runs"; }
    return coming[n];
  }
  // twoSteps are screen 2's steps: the kit's, or each service's top step
  // of the sweep (its bystander probed while the load ran at its most).
  function twoSteps() {
    if (!asIs()) { return stepsWhere(function (s) { return s.screen === 2; }); }
    var top = {}, names = [];
    stepsWhere(function (s) { return s.phase === "sweep" && !s.variant; }).forEach(function (s) {
      if (!top[s.server]) { names.push(s.server); }
      if (!top[s.server] || s.conc > top[s.server].conc) { top[s.server] = s; }
    });
    return names.map(function (n) { return top[n]; });
  }

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
        if (ev.row.stall) { S.verdicts[ev.id] = ev.row.stall; cellsOf(S, ev.id, ev.row.stall.cells); }
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
      // A cell is its connection as seen so far: the median wait the
      // server made it (wait_ms, by the server's clock: the report's
      // figure), and its slowest answer from due (ms: the speaker's
      // notes; a recording made before wait_ms has only that). The
      // step's end puts the report's own cells in (cellsOf).
      var g = (S.grids[ev.id] = S.grids[ev.id] || {}), was = g[ev.conn];
      var ms = Math.max(ev.ms, was && was.ms !== undefined ? was.ms : 0);
      if (was && was.final) { was.ms = ms; break; }
      g[ev.conn] = {loop: ev.loop, ms: ms, wait: ev.wait_ms !== undefined ? +ev.wait_ms : undefined, stalled: ev.stalled};
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

  // cellsOf puts a stall step's end in its grid: each connection as the
  // report's heatmap gives it (internal/findings), its wait and whether it
  // stalled; its slowest answer stays from the live ones.
  function cellsOf(S, id, cells) {
    if (!cells || !cells.length) { return; }
    var g = (S.grids[id] = S.grids[id] || {});
    cells.forEach(function (c) {
      var was = g[c.conn];
      g[c.conn] = {loop: c.loop, ms: was ? was.ms : undefined, wait: +c.wait_ms, stalled: !!c.stalled, final: true};
    });
  }
  // waitsOf says whether every cell of a grid has the median wait: then
  // the cells show it, the report's figure; else (a recording made
  // before the stage sent it) each its slowest answer, and the caption
  // says which. One measure in every cell.
  function waitsOf(conns) {
    var ids = Object.keys(conns);
    return ids.length > 0 && ids.every(function (c) { return conns[c].wait !== undefined; });
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
      h[1] = [top + " callers" + (asIs() ? " of " + loadName() : "") + ": "];
      names.forEach(function (n, i) {
        var s = at.filter(function (x) { return x.server === n; })[0];
        h[1].push((i ? " \u00b7 " : "") + n + " ");
        if (s.not_read) { h[1].push(b("not read", n), notReadText(s.not_read)); return; }
        h[1].push(b(fmt(rps(s)), n), " req/s");
        if (asIs()) { return; } // its call's time is its own: no ceiling the kit knows
        var l = binds(n, s.conc, s.workers, S.info.block_ms);
        h[1].push(" of " + fmt(l.rps) + " (" + l.who + " / " + fmt(S.info.block_ms) + " ms)");
      });
    }
    // Screen 2: each server's /slow at the highest concurrency; its /fast
    // figure as the tables give it once the step ended, else the median of
    // that step's own probes so far.
    var two = twoSteps();
    if (two.length) {
      h[2] = [fastName() + " waited "];
      loopFirst(two.map(function (s) { return s.server; })).forEach(function (n, i, all) {
        var s = two.filter(function (x) { return x.server === n; })[0];
        h[2].push(b(fastOf(s) || "-", n), " on " + n + (i < all.length - 1 ? ", " : ""));
      });
      h[2].push(" (" + two[0].conc + " callers" + (asIs() ? " of " + loadName() : "") + ")");
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
      if (calls >= 2) { h[3].push(" (" + calls + " calls of " + fmt(S.info.stall_block_ms) + " ms in a row)"); }
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
    if (skipOf(n)) { return skipOf(n); }
    if (n === 1 && asIs()) {
      stepsWhere(function (s) { return s.phase === "sweep" && !s.variant && rps(s) !== undefined; }).forEach(function (s) {
        out.push(s.server + " at " + s.conc + (s.conc === 1 ? " caller" : " callers") + ": " + fmt(rps(s)) + " req/s of " + loadName() + ".");
      });
      if (out.length) { out.push("No ceiling is drawn: how many callers the service serves at once is its own; the report infers it from this sweep (the plateau times the call's own time, at 1 caller)."); }
    } else if (n === 1) {
      stepsWhere(function (s) { return s.phase === "sweep" && rps(s) !== undefined; }).forEach(function (s) {
        var c = S.info.ceiling && S.info.ceiling[s.server], last = true;
        S.order.forEach(function (id) { var x = S.steps[id]; if (x.phase === "sweep" && x.server === s.server && rps(x) !== undefined && x.conc > s.conc) { last = false; } });
        if (!last) { return; }
        var l = binds(s.server, s.conc, s.workers, S.info.block_ms);
        out.push(s.server + " at " + s.conc + " callers: " + fmt(rps(s)) + " req/s, " + fmt(100 * rps(s) / l.rps) + " % of what binds it, " + l.text +
          (c && l.rps < c ? " (its " + ((S.info.ceiling_text || {})[s.server] || fmt(c)) + " is never reached: each caller has one call in flight)" : "") + ".");
      });
      if (out.length) { out.push("The pale bands are the ceilings, the lines what was measured. A loop server levels off at its loops / the call; a pool climbs with its callers."); }
    } else if (n === 2 && asIs()) {
      twoSteps().forEach(function (s) {
        var f = fastOf(s);
        if (f) { out.push(fastName() + ", asked on " + s.server + " while " + s.conc + " callers sent " + loadName() + ", waited " + f + ": what everyone else's requests waited meanwhile."); }
      });
    } else if (n === 2) {
      stepsWhere(function (s) { return s.screen === 2; }).forEach(function (s) {
        var f = fastOf(s);
        if (f) { out.push("/fast does no work; beside /slow on " + s.server + " it waited " + f + (isLoop(s.server) ? ": it queues behind /slow on a shared loop." : ": a free worker took it.")); }
      });
    } else if (n === 3) {
      var recent = S.lag.filter(function (e) { return e.t >= lagFrom(); });
      if (recent.length) {
        var worst = recent.reduce(function (a, b) { return b.ms > a.ms ? b : a; });
        out.push("One loop runs a " + fmt(S.info.stall_block_ms) + " ms call, again and again: loop " + worst.loop + "'s beats waited up to " + fmt(worst.ms, 1) + " ms; a loop has no one else to run them.");
        if (worst.ms >= 1.5 * S.info.stall_block_ms) { out.push("A beat waits " + fmt(Math.round(worst.ms / S.info.stall_block_ms)) + " calls when the next call starts before the beat gets its turn: the loop is held throughout, one colour throughout."); }
      }
    } else if (n === 4) {
      var id = shownStall(), v = S.verdicts[id], s = S.steps[id];
      if (s && v && v.judged) {
        var exact = isLoop(s.server) && v.stalled === 3 * s.kk;
        out.push(s.server + " with " + s.kk + (isLoop(s.server) ? " of " + S.info.loops + " loops" : " callers") + " blocked: " + v.stalled + " of " + v.conns + " connections stalled" +
          (exact ? ", as many as share the " + s.kk + " blocked loop" + (s.kk > 1 ? "s" : "") + " (3 a loop)" : "") + ".");
        out.push(isLoop(s.server) ? "A connection lives on one loop and waits whenever its loop is blocked, whatever it asked for." :
          "A blocked caller holds one of " + fmt(S.info.slots) + " threads; every other connection finds one free.");
        // What a cell's number is, and why a stalled one is that big.
        var grid = S.grids[id] || {}, waits = waitsOf(grid), block = fmt(S.info.stall_block_ms) + " ms", worst = 0, lit = [], calm = [];
        Object.keys(grid).forEach(function (c) {
          var x = grid[c], v = waits ? x.wait : x.ms;
          if (x.stalled) { worst = Math.max(worst, x.ms || 0); lit.push(v); } else { calm.push(v); }
        });
        if (waits) {
          out.push("Each cell is how long the server kept that connection's requests waiting, the median, by the server's own clock: the report's heatmap, the same numbers.");
          if (calm.length) { out.push("A calm one, " + fmt(median(calm), 1) + " ms: its loop was free."); }
          if (lit.length) { out.push("A stalled one, " + fmt(median(lit), 1) + " ms of a " + block + " call: its loop runs the call again and again, so its request waits behind a call before the loop reads it and behind another before its answer goes out, about two calls (more when a call was queued ahead of it)."); }
          if (worst > S.info.stall_block_ms) {
            out.push("Timed from when each was due, later still: its slowest answer came " + fmt(worst) + " ms after it was due, as every answer also waits for the answers due before it, so a stalled connection falls further behind its schedule with every call.");
          }
        } else {
          if (worst > S.info.stall_block_ms) {
            out.push("Why " + fmt(worst) + " ms for a " + block + " call: each connection's /fast is due on a fixed schedule, and its loop runs the call again and again; every answer waits for the call in progress and for the answers due before it, so a stalled connection falls further behind its schedule with every call, " +
              fmt(worst) + " ms by the step's end.");
          }
          if (calm.length) { out.push("This recording's cells are each connection's slowest answer; the report gives each connection's median wait by the server's clock (a fraction of a ms when healthy)."); }
        }
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
  // powers of its base. Its ends are rounded outwards to as many decimals
  // as its data's ends have: echarts draws a log axis's end ticks (their
  // split lines) at its ends rounded so, and an end of 3.2 callers, for
  // callers in whole numbers, drew a line at 3, left of the plot. An end
  // that rounds to nothing (lo 1 in whole numbers: 0.8 to 0) takes one
  // decimal more (0.8), so the least point stays off the axis's edge;
  // echarts then draws its end line at 1, inside the plot.
  function logRange(lo, hi, pad) {
    var p = Math.pow(10, decimals(lo)), q = Math.pow(10, decimals(hi));
    while (Math.floor(lo / pad * p) < 1 && p < 1e6) { p *= 10; }
    return {min: Math.floor(lo / pad * p) / p, max: Math.ceil(hi * pad * q) / q};
  }
  // decimals is how many decimals v has, as echarts counts them.
  function decimals(v) {
    for (var i = 0, e = 1; i < 15; i++, e *= 10) { if (Math.round(v * e) / e === v) { return i; } }
    return 15;
  }

  // A ceiling is drawn as a wide pale band, under the measured line
  // (thin, solid, with its points): a rate at its ceiling reads as a line
  // lying in its band, never as one thick dashed bar. band is that style.
  // Its see-through is in its colour, not an opacity, which echarts would
  // pass on to the band's label.
  function band(name) {
    var h = pale(name), rgb = /^#[0-9a-f]{6}$/i.test(h) ? [1, 3, 5].map(function (i) { return parseInt(h.substr(i, 2), 16); }) : [136, 136, 136];
    return {type: "solid", width: px(16), color: "rgba(" + rgb.join(",") + ",0.55)", cap: "butt"};
  }
  // binds is what limits a load of conc callers on a server of workers:
  // its workers, or its callers where fewer (each caller has one call in
  // flight), and the ceiling that gives: who / the call.
  function binds(server, conc, workers, blockMs) {
    var w = Math.min(conc, workers || conc), who = fmt(w) + (w < (workers || 0) || !workers ? " callers" : isLoop(server) ? " loops" : " threads");
    return {w: w, who: who, rps: w * 1000 / blockMs, text: who + " / " + fmt(blockMs) + " ms = " + fmt(w * 1000 / blockMs) + " req/s"};
  }
  function draw1() {
    var series = [], servers = {}, names = [], limit = {};
    S.order.forEach(function (id) {
      var s = S.steps[id];
      if (s.phase !== "sweep" || rps(s) === undefined || (asIs() && s.variant)) { return; }
      (servers[s.server] = servers[s.server] || []).push([s.conc, Math.max(1, Math.round(rps(s)))]);
      (limit[s.server] = limit[s.server] || {})[s.conc] = binds(s.server, s.conc, s.workers, S.info.block_ms);
    });
    S.order.forEach(function (id) { var s = S.steps[id]; if (servers[s.server] && names.indexOf(s.server) < 0) { names.push(s.server); } });
    names = loopFirst(names);
    // At each callers a point's label goes under it, but for the higher
    // of two points within 30 % of each other, whose goes above: the band
    // over a point never carries its number.
    var at = {}, place = {};
    names.forEach(function (n) { servers[n].forEach(function (p) { (at[p[0]] = at[p[0]] || []).push({n: n, v: p[1]}); }); });
    Object.keys(at).forEach(function (x) {
      var ps = at[x].sort(function (a, b) { return b.v - a.v; });
      ps.forEach(function (p, i) { place[p.n + "@" + x] = i < ps.length - 1 && p.v <= 1.3 * ps[i + 1].v ? "top" : "bottom"; });
    });
    var ys = [];
    // The bands first, under the points: each server's binding ceiling at
    // each callers measured, labelled at its right end in its hue. Two
    // bands ending at about one height (both servers at 4 callers: 4 loops
    // and 4 callers, 800 each) share one label, the first's, naming both.
    var ends = [];
    names.forEach(function (n) {
      if (asIs()) { return; } // a service as it is: no ceiling the kit knows
      var pts = servers[n].map(function (p) { return p[0]; }).sort(function (a, b) { return a - b; });
      var x = pts[pts.length - 1], last = limit[n][x], with_ = ends.filter(function (e) { return Math.max(e.v, last.rps) <= 1.3 * Math.min(e.v, last.rps); })[0];
      var data = pts.map(function (c, i) {
        var l = limit[n][c];
        ys.push(l.rps);
        return {value: [c, l.rps], label: {show: i === pts.length - 1 && !with_}};
      });
      var end = {x: x, v: last.rps, parts: [{n: n, l: last}]};
      if (with_) { with_.parts.push({n: n, l: last}); } else { ends.push(end); }
      // Named apart from its server, so the legend shows the measured
      // line's style; a point too small to see carries the label.
      series.push({name: n + " ceiling", type: "line", data: data, symbol: "circle", symbolSize: 1, lineStyle: band(n), itemStyle: {color: pale(n)}, z: 1, silent: true,
        // Its label ends at the band's right end; a band of one point (the
        // first step measured) has it run rightwards, inside the chart.
        label: {show: false, position: "top", distance: px(14), align: pts.length > 1 ? "right" : "left", fontSize: px(22), fontWeight: "bold", color: hue(n),
          formatter: function () {
            if (end.parts.length === 1) { return "ceiling: " + last.text; }
            var same = end.parts.every(function (p) { return p.l.rps === last.rps; });
            return "ceiling: " + end.parts.map(function (p) { return p.n + " " + (same ? p.l.who : p.l.text); }).join(", ") + (same ? " / " + fmt(S.info.block_ms) + " ms = " + fmt(last.rps) + " req/s" : "");
          }}});
    });
    names.forEach(function (n) {
      var data = servers[n].map(function (p) {
        ys.push(p[1]);
        return {value: p, label: {position: place[n + "@" + p[0]]}};
      });
      series.push({name: n, type: "line", data: data, symbolSize: px(14), lineStyle: {width: px(4), color: hue(n)}, itemStyle: {color: hue(n)}, z: 3,
        label: {show: true, fontSize: px(22), formatter: function (p) { return fmt(p.value[1]); }}});
    });
    // The axes start near the data: callers on powers of 2, a little
    // either side; req/s from a little under the lowest point.
    // Its ends are the run's callers and every step's measured (a service
    // measured as it is adds 1 caller to --conc: its call's own time).
    var xs = S.info.conc.slice();
    names.forEach(function (n) { servers[n].forEach(function (p) { xs.push(p[0]); }); });
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
    var x = logRange(lo, hi, 1.25), y = logRange(Math.min.apply(null, ys.length ? ys : [1]), Math.max.apply(null, ys.length ? ys : [10]), 1.6);
    chart("c1").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), legend: {bottom: 0, textStyle: big(), data: names},
      grid: {left: px(130), right: px(40), top: px(40), bottom: px(110)},
      xAxis: Object.assign(axis("log", "callers"), {logBase: 2, min: x.min, max: x.max, axisLabel: Object.assign(big(), {showMinLabel: false, showMaxLabel: false})}),
      yAxis: Object.assign(axis("log", "req/s", 90), {min: y.min, max: y.max, axisLabel: Object.assign(big(), {showMinLabel: false, showMaxLabel: false})}), series: series}, {replaceMerge: ["series"]});
    return series.length > 0;
  }
  // span is a time axis from just before the first point to just after
  // the last, so the data fill it; its ticks fall on round seconds inside
  // it, and its ends carry no label of their own (spanAxis).
  function span(x0, x1) {
    var w = Math.max(x1 - x0, 0.5);
    return {min: Math.max(0, x0 - 0.03 * w), max: x1 + 0.03 * w};
  }
  function spanAxis(name, x0, x1) {
    var xs = span(x0, x1);
    return Object.assign(axis("value", name), {min: xs.min, max: xs.max, axisLabel: Object.assign(big(), {showMinLabel: false, showMaxLabel: false})});
  }
  function draw2() {
    // Screen 2's steps, one a server, on one time axis: the seconds since
    // each server's load began, so the servers' points lie side by side.
    var by = {}, x0 = Infinity, x1 = 0, y0 = Infinity, y1 = 0, ids = twoSteps().map(function (s) { return s.id; });
    S.probes.forEach(function (p) {
      var st = S.steps[p.id];
      if (!st || ids.indexOf(p.id) < 0 || st.startT === undefined) { return; }
      var x = (p.t - st.startT) / 1000, y = Math.max(p.ms, 0.01);
      (by[p.server] = by[p.server] || []).push([x, y]);
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    });
    var names = loopFirst(Object.keys(by));
    if (!names.length) { return false; }
    var series = names.map(function (n) { return {name: n, type: "scatter", symbolSize: px(12), data: by[n], itemStyle: {color: hue(n)}}; });
    var ya = logRange(y0, y1, 2.5);
    chart("c2").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), legend: {bottom: 0, textStyle: big()}, grid: {left: px(130), right: px(50), top: px(30), bottom: px(110)},
      xAxis: spanAxis("seconds since each server's load began", x0, x1),
      // A long request's name would run off the axis: the headline names it.
      yAxis: Object.assign(axis("log", "how long " + (fastName().length <= 24 ? fastName() : "it") + " waited, ms", 80), {min: ya.min, max: ya.max, axisLabel: Object.assign(big(), {showMinLabel: false, showMaxLabel: false})}),
      series: series}, {replaceMerge: ["series"]});
    return true;
  }
  // lagWindow is what screen 3 shows: the 100 ms columns from the first
  // beat after it opened to the last, so the lanes fill the axis.
  function lagWindow() {
    var from = lagFrom(), first = Infinity, last = -Infinity;
    S.lag.forEach(function (e) { if (e.t >= from && e.t <= S.t) { first = Math.min(first, e.t); last = Math.max(last, e.t); } });
    if (!isFinite(first)) { return null; }
    if (!isFinite(from)) { first = Math.max(first, last - 10000); } // no screen 3 opened: the last 10 s
    return {first: first, cols: Math.max(1, Math.floor((last - first) / 100) + 1)};
  }
  function draw3() {
    var loops = S.info.loops, w = lagWindow(), data = [];
    if (!w) { return false; }
    S.lag.forEach(function (e) {
      var x = Math.floor((e.t - w.first) / 100);
      if (x >= 0 && x < w.cols && e.t <= S.t) { data.push([x, e.loop, Math.round(e.ms * 10) / 10]); }
    });
    // Columns are named by the seconds since the first beat shown; a
    // label every half second (every second past 5 s).
    var every = w.cols > 50 ? 10 : 5, cats = [];
    for (var i = 0; i < w.cols; i++) { cats.push((i / 10).toFixed(1)); }
    var ys = []; for (var l = 0; l < loops; l++) { ys.push("loop " + l); }
    // Three colours: a loop free (its beats on time), late, and held by
    // the call (a beat waiting half the call or more): a loop held
    // throughout is one colour throughout.
    var held = S.info.stall_block_ms / 2;
    chart("c3").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), grid: {left: px(130), right: px(40), top: px(70), bottom: px(90)},
      xAxis: {type: "category", data: cats, name: "seconds since the screen opened", nameLocation: "middle", nameGap: px(52), nameTextStyle: big(),
        axisLabel: Object.assign(big(), {interval: function (i) { return i % every === 0; }}), axisTick: {interval: function (i) { return i % every === 0; }}},
      yAxis: {type: "category", data: ys, axisLabel: big()},
      visualMap: {type: "piecewise", orient: "horizontal", left: "center", top: 0, textStyle: big(), dimension: 2, itemGap: px(30),
        pieces: [{lt: 4, label: "free: beats on time", color: dark ? "#2f4f35" : "#d9f0d3"}, {gte: 4, lt: held, label: "late", color: "#fdae61"},
          {gte: held, label: "held by the " + fmt(S.info.stall_block_ms) + " ms call", color: "#a50026"}]},
      series: [{type: "heatmap", data: data}]}, {replaceMerge: ["series"]});
    return data.length > 0;
  }
  function draw4() {
    var g = document.getElementById("grid"), loops = S.info.loops, per = S.info.stall_conns / Math.max(loops, 1);
    var id = shownStall(), conns = S.grids[id] || {};
    g.style.gridTemplateColumns = "10cqw repeat(" + per + ", 1fr)";
    var rows = {}, loopless = id && S.steps[id] && S.info.servers_kind[S.steps[id].server] !== "loop", waits = waitsOf(conns);
    Object.keys(conns).sort(function (a, b) { return a - b; }).forEach(function (c, i) {
      var x = conns[c], row = loopless ? Math.floor(i / per) : x.loop;
      (rows[row] = rows[row] || []).push({conn: +c, ms: waits ? x.wait : x.ms, stalled: x.stalled});
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
        // The wait to a tenth of a ms, as the report's heatmap rounds it.
        cells.push(c ? div("cell " + (c.stalled ? "lit" : "calm"), "#" + c.conn + " \u00b7 " + fmt(c.ms, waits ? 1 : 0) + " ms") : div("cell", "-"));
      }
    }
    g.replaceChildren.apply(g, cells);
    // One measure in every cell, said: the report's (the median wait by
    // the server's clock), or in a recording made before the stage sent
    // it, the slowest answer, said as such.
    text("gridsays", waits ? "Each cell: a connection, and how long the server kept its requests waiting (median ms, as the report gives it)" :
      "Each cell: a connection, and how late its slowest /fast answer came (ms after due; an older recording: no median)");
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
    // The time axis runs from the first point to the last (or the key's
    // moment): the data fill it, and it ends on no label of its own, never
    // 11 beside 10.
    var x0 = data.length ? data[0][0] : 0, x1 = Math.max(data.length ? data[data.length - 1][0] : 0, at !== undefined ? (at - from) / 1000 : 0, x0 + 1);
    var lines = [{yAxis: c0, name: "ceiling: " + who + " / " + fmt(S.info.block_ms) + " ms = " + fmt(c0) + " req/s"}, {yAxis: c1, name: "ceiling: " + who + " / " + fmt(S.info.slip_block_ms) + " ms = " + fmt(c1) + " req/s"}];
    // Each ceiling a pale band under the measured line (band), its label
    // above it: the line lying on it never hides it. The labels go to the
    // end of the axis away from the step: live, just after the step, the
    // axis ends at it (the data end there), and the step's line and the
    // measured line falling crossed labels at the right end.
    var late = at !== undefined && (at - from) / 1000 - x0 > 0.5 * (x1 - x0);
    var marks = lines.map(function (l) { return {yAxis: l.yAxis, label: {formatter: l.name, position: late ? "insideStartTop" : "insideEndTop", distance: px(14), fontSize: px(22), fontWeight: "bold", color: hue(sl.server)}, lineStyle: band(sl.server)}; });
    // The moment the call slowed: a line, and its label at the line's top
    // beside it (to its right, or its left when the step is late), on
    // no line: centred on the line's end it read as struck through. The
    // label is a point's (an unseen one at the line's top, in no legend):
    // a markLine's label has no side of a vertical line to go to.
    var step = [];
    if (at !== undefined) {
      var ink = dark ? "#f5f5f5" : "#111111", sx = (at - from) / 1000;
      marks.push({xAxis: sx, label: {show: false}, lineStyle: {type: "solid", width: px(3), color: ink}});
      step.push({name: "the call slows", type: "line", data: [[sx, top]], symbol: "circle", symbolSize: 1, itemStyle: {color: "transparent"}, silent: true, z: 4,
        label: {show: true, formatter: "the call: " + fmt(S.info.block_ms) + " \u2192 " + fmt(S.info.slip_block_ms) + " ms", position: late ? "left" : "right", distance: px(16), verticalAlign: "top", fontSize: px(22), fontWeight: "bold", color: ink}});
    }
    chart("c6").setOption({animation: false, backgroundColor: "transparent", textStyle: big(), legend: {bottom: 0, textStyle: big(), data: [sl.server]}, grid: {left: px(130), right: px(50), top: px(50), bottom: px(110)},
      xAxis: spanAxis("seconds since the load began", x0, x1), yAxis: Object.assign(axis("value", "req/s", 90), {min: 0, max: top}),
      series: [{name: sl.server, type: "line", showSymbol: false, data: data, lineStyle: {width: px(4), color: hue(sl.server)}, itemStyle: {color: hue(sl.server)}, z: 3,
        markLine: {symbol: "none", silent: true, z: 1, data: marks}}].concat(step)}, {replaceMerge: ["series"]});
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
    keyTable.forEach(function (row) { if (row.act === "screen") { row.says = "1-" + screenCount(); } });
    text("pscreens", "1-" + screenCount());
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
    document.documentElement.classList.toggle("cover", !n);
    text("where", n ? titles[n] + "  (" + n + " of " + screenCount() + ")" : "");
    if (!n) { cover(); }
    text("state", stateText());
    if (n && S.info && typeof echarts !== "undefined") {
      // With no figure yet the headline says what the screen is about,
      // in the room's words, not its title again.
      var skip = skipOf(n), about = comingOf(n);
      if (text("headline", skip ? "Not for a service measured as it is" : hs[n].length ? hs[n] : about.charAt(0).toUpperCase() + about.slice(1) + ": measuring ...")) { fit(document.getElementById("headline")); }
      // A screen drawn empty (screen 3 just opened) is drawn again as
      // soon as something comes, not 2 s later.
      if (skip) {
        empty[n] = true;
      } else if ((dirty[n] && (!canvasScreens[n] || empty[n] || S.t - drawnAt >= redrawEvery)) || moved || S.done) {
        dirty[n] = false;
        drawnAt = S.t;
        empty[n] = !draws[n]();
        if (!empty[n]) { window.stageDrawn[n] = true; }
      }
      // Nothing to draw yet (the slide has just begun measuring): the
      // room reads what it will see, not an empty plot.
      var sec = document.getElementById("s" + n);
      sec.classList.toggle("waiting", !!empty[n]);
      sec.querySelector(".wait").textContent = skip || "Measuring now, live: the first figures come in a few seconds.";
    }
    if (presenter) { renderPresenter(hs); }
    lastShown = key;
    window.stageState = S;
    window.stageView = {view: view, screen: S.screen, focus: S.focus, blank: blank, slides: slides.length};
  }
  // cover is what the room sees before the first key: the talk's title
  // and the servers it measures, from the run's shape.
  function cover() {
    var i = L.info;
    if (!i) { return; }
    var names = loopFirst(Object.keys(i.servers_kind || {}));
    if (i.as_is) {
      text("coverwhat", names.join(" and ") + ", measured as " + (names.length > 1 ? "they are" : "it is") + ": " + String(i.load) + " under load, " + String(i.bystander) + " asked beside it.");
    } else {
      text("coverwhat", names.map(function (n) { return n + " (" + (i.servers_kind[n] === "loop" ? fmt(i.loops) + " event loops" : fmt(i.slots) + " threads") + ")"; }).join(" beside ") +
        ", each answering the same " + fmt(i.block_ms) + " ms call.");
    }
    text("coverhow", (talk ? "Recorded on the kit's stage: " : "Measured here, live: ") + screenCount() + " screens, each read in a glance.");
  }
  // stateText is for the speaker only: the live state (what is measured,
  // in words), and when looking back, which slide and how to return.
  function stateText() {
    if (talk) { return "a recorded talk: " + (view === COVER ? "its cover" : "slide " + (current() + 1) + " of " + slides.length) + (L.done ? "; the run's report was " + L.report : ""); }
    var live = L.done ? "done" + (L.report ? ": " + L.report + " written" : "") : L.state;
    return view < 0 ? live : "live: " + live + " \u00b7 looking back at screen " + S.screen + " as it ended; End returns to live";
  }
  function renderPresenter(hs) {
    var n = S.screen, next = n + 1 <= screenCount() ? titles[n + 1] + ": " + comingOf(n + 1) : "the end: the report is written";
    if (n === 4 && S.info) {
      var id = shownStall(), s = S.steps[id];
      if (s && isLoop(s.server) && s.kk < S.info.loops) { next = "4. Who stalls: " + (s.kk + 1) + " of " + S.info.loops + " loops blocked"; }
    }
    if (L.done && view === -1) { next = talk ? "the end of the talk" : "done: the report is " + (L.dir ? L.dir + "/" : "") + L.report; }
    if (!n) { next = titles[1] + ": " + comingOf(1); }
    // The clock: the time since screen 1 (a talk file: the recording's
    // time at the slide shown).
    text("pclock", L.startT >= 0 ? clock((talk ? S.t : L.t) - L.startT) : "0:00");
    text("pstate", (talk ? "recorded" : view === -1 ? "live" : "looking back (End: live)") + (blank ? " \u00b7 the room's screen is blank (B)" : ""));
    text("pnow", n ? titles[n] : "not started: press Space");
    text("popen", "O: open the room's window" + (room && !room.closed ? " (open)" : ""));
    if (text("pnotes", n ? notes(n, hs) || "measuring ..." : "")) {
      // The notes fill the space under the room's screen, and never run
      // past it: long ones are set smaller.
      var pn = document.getElementById("pnotes"), box = document.getElementById("pbelow"), size = innerWidth * 0.019;
      pn.style.fontSize = size + "px";
      while (box.scrollHeight > box.clientHeight + 1 && size > innerWidth * 0.009) { size *= 0.93; pn.style.fontSize = size + "px"; }
    }
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
    if (talk) {
      // A recorded talk measures nothing: its keys only move through it.
      var g = /^goto (\d)$/.exec(k);
      say("key not taken: " + (k === "next" ? "the end of the recorded talk" : g ? "this recording has no screen " + g[1] : "a recorded talk measures nothing (" + k + ")"));
      return;
    }
    var x = new XMLHttpRequest();
    x.open("POST", "/control");
    x.setRequestHeader("X-Bystander-Stage", "1"); // the stage takes keys only with it: no other site's page can send it unasked
    x.onload = function () { if (x.status >= 300) { say("key not taken: " + (x.responseText || x.status).toString().trim()); } };
    x.onerror = function () { say("key not taken: the stage does not answer"); };
    x.send(k);
  }
  function say(msg) { toast(msg); post({toast: msg}); }
  // show looks at slide i (-1: live).
  function show(i) {
    view = i === COVER ? COVER : i < 0 || i >= slides.length - 1 ? -1 : i;
    S = view === COVER ? coverState() : view < 0 ? L : snapshot(view);
    dirty = {1: true, 2: true, 3: true, 4: true, 5: true, 6: true};
    render();
  }
  function snapshot(i) {
    if (snaps[i]) { return snaps[i]; }
    var st = newState(), end = slides[i + 1].at;
    for (var j = 0; j < end; j++) { if (events[j].ev !== null) { st.t = events[j].t; apply(st, events[j].ev, events[j].t); } else { st.t = events[j].t; } }
    return (snaps[i] = st);
  }
  function current() { return view === COVER ? -1 : view < 0 ? slides.length - 1 : view; }
  // The talk file opens on its cover, before the first slide, as a live
  // stage does before the first key: COVER is that view.
  var COVER = -2;
  function coverState() { var st = newState(); st.info = L.info; st.t = L.t; return st; }
  // nav does what a key says, here; from says whether it came from the
  // keyboard (then it is also sent to the other windows and the stage).
  function nav(k, fromKeyboard) {
    if (fromKeyboard) { post({nav: k}); }
    var at = current();
    switch (k) {
    case "next":
      if (view === COVER) { show(0); } else if (view >= 0) { show(view + 1); } else if (fromKeyboard) { send("next"); }
      break;
    case "back":
      if (talk && at === 0) { show(COVER); } else if (at <= 0) { if (fromKeyboard) { say("key not taken: nothing before " + (slides.length ? "the first screen" : "the start")); } } else { show(at - 1); }
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
      } else if (last >= 0 && (last < slides.length - 1 || view !== -1)) {
        // Shown before: look at it as it ended (or, the live one, live).
        show(last === slides.length - 1 ? -1 : last);
      } else if (last < 0) {
        show(-1);
        if (fromKeyboard) { send("goto " + want); }
      }
    }
  }
  // The other windows of the talk: room, the one this speaker view
  // opened (O); window.opener, the speaker view that opened this one; and
  // every other on the same BroadcastChannel (two windows opened apart).
  // A message may come by two of them: each is taken once.
  var room = null, sent = 0, taken = {}, me = Math.random().toString(36).slice(2);
  var target = location.protocol === "file:" ? "*" : location.origin;
  function post(msg) {
    msg.id = me + "/" + (sent++);
    if (bc) { bc.postMessage(msg); }
    [room, window.opener].forEach(function (w) { if (w && !w.closed) { try { w.postMessage(msg, target); } catch (e) { /* a window gone */ } } });
  }
  // stageVia counts the messages taken by each way (the tests read it).
  window.stageVia = {channel: 0, window: 0};
  function receive(d, via) {
    if (!d || typeof d.id !== "string" || taken[d.id]) { return; }
    taken[d.id] = true;
    window.stageVia[via]++;
    if (d.nav) { nav(String(d.nav), false); }
    if (d.toast) { toast(String(d.toast)); }
    // A window just opened asks where the talk is; the speaker view
    // answers with its slide, theme and blank.
    if (d.ready && presenter) { post({at: view, dark: dark, blank: blank}); }
    if (d.at !== undefined && !presenter) {
      if (!!d.dark !== dark) { nav("theme", false); }
      if (!!d.blank !== blank) { nav("blank", false); }
      show(+d.at);
    }
  }
  if (bc) { bc.onmessage = function (m) { receive(m.data, "channel"); }; }
  window.addEventListener("message", function (e) {
    if (e.source && (e.source === room || e.source === window.opener)) { receive(e.data, "window"); }
  });
  // openRoom opens the room's window (the projector's) from the speaker
  // view: the same page without #presenter, driven from here.
  function openRoom() {
    var url = location.protocol === "file:" ? location.href.split("#")[0] : location.origin + "/" + location.search;
    room = window.open(url, "bystander-room");
    if (!room) { say("key not taken: the browser kept the room's window from opening (allow pop-ups here, or open " + url + " by hand)"); }
    render();
  }
  document.getElementById("popen").addEventListener("click", openRoom);

  // Every key the page takes, in one table: the handler reads it and the
  // speaker view lists it, so the two cannot differ. live: only on a stage
  // that measures (not in a recorded talk).
  var keyTable = [
    {keys: [" ", "ArrowRight", "PageDown", "ArrowDown", "Enter"], says: "Space \u2192 PgDn \u2193 Enter", act: "next", does: "next: a slide shown before, or the next measurement"},
    {keys: ["ArrowLeft", "PageUp", "Backspace", "ArrowUp"], says: "\u2190 PgUp \u2191 Backspace", act: "back", does: "the slide before, as it ended"},
    {keys: ["Home"], says: "Home", act: "home", does: "the first slide"},
    {keys: ["End"], says: "End", act: "end", does: talk ? "the last slide" : "back to live"},
    {keys: ["1", "2", "3", "4", "5", "6", "7", "8", "9"], says: "1-9", act: "screen", does: "that screen"},
    {keys: ["b", "B", "."], says: "B .", act: "blank", does: "blank the room's screen; again to come back"},
    {keys: ["p", "P"], says: "P", act: "pause", does: "pause before the next measurement", live: true},
    {keys: ["r", "R"], says: "R", act: "repeat", does: "measure the live slide again", live: true},
    {keys: ["t", "T"], says: "T", act: "theme", does: "light or dark"},
    {keys: ["o", "O"], says: "O", act: "open", does: "open the room's window from this one", speaker: true}
  ];
  window.stageKeyTable = keyTable;
  var keyOf = {};
  keyTable.forEach(function (row) { row.keys.forEach(function (k) { keyOf[k] = row; }); });
  (function () {
    var t = document.getElementById("pkeys");
    t.replaceChildren.apply(t, keyTable.filter(function (row) { return !(row.live && talk); }).map(function (row) {
      var tr = document.createElement("tr"), a = document.createElement("td"), d = document.createElement("td");
      a.textContent = row.says;
      if (row.act === "screen") { a.id = "pscreens"; } // "1-6": the talk's screens, once known
      d.textContent = row.does;
      tr.append(a, d);
      return tr;
    }));
  })();
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.altKey || e.metaKey) { return; }
    var row = keyOf[e.key];
    if (!row) { return; }
    e.preventDefault();
    switch (row.act) {
    case "pause": send("pause"); return;
    case "repeat": if (view !== -1) { say("key not taken: R measures the live screen again (End returns to it)"); } else { send("repeat"); } return;
    case "open": if (presenter) { openRoom(); } return;
    case "screen": nav("screen " + e.key, true); return;
    }
    nav(row.act, true);
  });
  window.addEventListener("resize", function () {
    Object.keys(charts).forEach(function (id) { charts[id].dispose(); delete charts[id]; });
    shown = {};
    lastShown = "";
    render();
  });

  function start() {
    var lastSeq = -Infinity;
    if (talk) {
      // A recorded talk: every frame at once, from the page itself, then
      // the cover; the keys move through the slides.
      window.bystanderUnpack(window.bystanderTalk).then(function (text) {
        text.split("\n").forEach(function (line) { if (line.trim() && line.indexOf('"schema"') < 0) { take(JSON.parse(line)); } });
        show(COVER);
        post({ready: true});
      }, function (e) { document.getElementById("headline").textContent = e.message; console.error(e); });
      return;
    }
    var es = new EventSource("/events");
    es.onopen = function () { window.stageOpens = (window.stageOpens || 0) + 1; };
    es.onmessage = function (m) { take(JSON.parse(m.data)); };
    function take(f) {
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
      if (!talk) { render(); }
    }
  }
  window.bystanderEcharts().then(start, function (e) { document.getElementById("headline").textContent = e.message; console.error(e); });
})();
