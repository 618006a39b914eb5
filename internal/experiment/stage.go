package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/page"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stage"
	"github.com/bystander-kit/bystander/internal/stall"
)

// stagePhases are what the stage measures; its screens show them in the
// story's order (screenOf), not the plan's.
var stagePhases = []string{"sweep", "stall", "offload", "slip"}

// The stage's six screens.
const screens = 6

// screenOf says which screen shows a step: 1 the sweep's throughput, 2
// the bystander beside /slow on the loops and on the pool, 3 one loop
// blocked seen from inside (its lag), 4 the connections as k loops are
// blocked (a slide per k: slidesOf), 5 the fix, 6 the bad afternoon
// (the call slowed at the presenter's key, a slide per server).
func screenOf(s Step) int {
	switch {
	case s.Phase == "sweep":
		return 1
	case s.Phase == "slip":
		return 6
	case s.Phase == "offload" && s.Variant == "offloaded":
		return 5
	case s.Phase == "offload":
		return 2
	case s.Phase == "stall" && s.Server.Kind == "loop" && s.K == 1:
		return 3
	}
	return 4
}

// stageHub publishes what a step sees while it runs; nil off stage.
type stageHub = stage.Hub

// stageControl is the presenter's state: paused, and the screens asked
// for; while the slip measures, the first "next" is its (onNext).
type stageControl struct {
	mu     sync.Mutex
	paused bool
	asks   []string
	wake   chan struct{}
	onNext func() bool
}

// stageKeys gives the presenter's keys from hub to a stageControl as they
// come: the page is answered 503 for a key it has no room for.
func stageKeys(hub *stage.Hub) *stageControl {
	ctl := &stageControl{wake: make(chan struct{}, 1)}
	hub.Take(ctl.take)
	return ctl
}

// hookNext gives the next "next" to f (nil: to the slides again); f says
// whether it took the key.
func (c *stageControl) hookNext(f func() bool) {
	c.mu.Lock()
	c.onNext = f
	c.mu.Unlock()
}

// take takes a key, and says whether it did: a pause at once, a key
// asking for slides in turn, stage.MaxKeys of them waiting at most (a
// repeat waiting already is not queued twice: a held-down R, or 2,000
// posted at once, measure again once).
func (c *stageControl) take(key string) bool {
	c.mu.Lock()
	if f := c.onNext; key == "next" && f != nil {
		c.onNext = nil
		c.mu.Unlock()
		if f() {
			return true
		}
		c.mu.Lock()
	}
	switch {
	case key == "pause":
		c.paused = !c.paused
	case key == "repeat" && slices.Contains(c.asks, key):
	case len(c.asks) >= stage.MaxKeys:
		c.mu.Unlock()
		return false
	default:
		c.asks = append(c.asks, key)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

func (c *stageControl) next() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asks) == 0 {
		return "", false
	}
	k := c.asks[0]
	c.asks = c.asks[1:]
	return k, true
}

func (c *stageControl) isPaused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// stagePage is the stage's page, echarts inlined as in the report (fetched
// and cached once; without it the page loads echarts from a CDN, and says so).
func stagePage(stderr io.Writer) ([]byte, error) {
	a := page.LoadAsset("", false, stderr)
	if !a.Inlined() {
		fmt.Fprintf(stderr, "run.sh: --stage: echarts is not inlined (%s); the page loads it from %s and needs the network\n", a.Why(), page.EchartsCDN)
	}
	return page.Stage(a)
}

// openStage serves the page and says where.
func openStage(ctx context.Context, o Options, h *stage.Hub, stdout io.Writer) error {
	addr, err := stage.Serve(ctx, o.StageAddr, h)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("run.sh: the stage's address %s is taken (another stage still running?): give another with --stage-addr, or --stage-addr=127.0.0.1:0 to pick a free one", o.StageAddr)
	}
	if err != nil {
		return err
	}
	h.Allow(addr)
	url := "http://" + addr + "/"
	fmt.Fprintf(stdout, "stage: %s  (Space, Right or PageDown: next; Left or PageUp: back; 1-%d: a screen; B: blank; P: pause; R: repeat; T: theme)\n", url, screens)
	fmt.Fprintf(stdout, "stage: the speaker view: %spresenter (a second window; both follow the same keys)\n", url)
	if o.Open {
		openReport(stdout, url)
	}
	return nil
}

// AutoWait is how long --auto waits for a page to open before it starts
// without one; autoSettle the beat a page that opened gets before the
// first measurement, so that none runs beside a browser still starting.
const (
	AutoWait   = time.Minute
	autoSettle = time.Second
)

// waitForPage is --auto's start: it waits for a page (--auto-wait) and
// says so, and says when none came.
func waitForPage(ctx context.Context, o Options, hub *stage.Hub, stdout io.Writer) {
	if !o.Auto || o.AutoWait <= 0 {
		return
	}
	fmt.Fprintf(stdout, "stage: --auto starts once a page is open (waiting %s at most)\n", o.AutoWait)
	if hub.WaitPage(ctx, o.AutoWait) {
		select {
		case <-ctx.Done():
		case <-time.After(autoSettle):
		}
		return
	}
	if ctx.Err() == nil {
		fmt.Fprintf(stdout, "stage: no page opened within %s: starting without one (--auto-wait sets how long)\n", o.AutoWait)
	}
}

// runStage runs the measurements screen by screen, as the presenter (or
// --auto) asks, and returns what to do once the run is written up.
//
// started is called once the page is served, before the first
// measurement: a stage that cannot start leaves no run behind.
func (r *runner) runStage(ctx context.Context, stdout io.Writer, started func()) (func(), error) {
	b, err := stagePage(stdout)
	if err != nil {
		return nil, refused(err)
	}
	hub, err := stage.NewHub(filepath.Join(r.dir, "stage.ndjson"), b)
	if err != nil {
		return nil, refused(err)
	}
	ctl := stageKeys(hub)
	sctx, stop := context.WithCancel(context.Background()) // outlives ctx: the page says the run was interrupted
	if err := openStage(sctx, r.o, hub, stdout); err != nil {
		stop()
		return nil, refused(err)
	}
	started()
	hubDone := make(chan struct{})
	go func() { hub.Run(sctx); close(hubDone) }()
	r.hub = hub
	hub.Add(r.hello())
	waitForPage(ctx, r.o, hub, stdout)

	r.stageScreens(ctx, hub, ctl)
	r.skipPending(ctx, "the stage ended before its screen")
	return func() {
		hub.Add(stage.Done{Report: r.run.Report, Dir: r.dir})
		if !r.o.Auto && ctx.Err() == nil {
			fmt.Fprintln(stdout, "stage: done; the page stays up until Ctrl-C (10 minutes at most)")
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Minute):
			}
		} else {
			time.Sleep(2 * stage.Every) // the page gets the last frame
		}
		stop()
		<-hubDone
		_ = hub.Close()
	}, nil
}

// slide is what one key shows: a screen, or on screen 4 one k of one
// server (focus). steps are what it measures; a focus is measured when
// shown unless an earlier slide measured it (k = 1 of a loop server: its
// lag is screen 3, its connections the first slide of screen 4).
type slide struct {
	screen int
	focus  *Step
	steps  []Step
}

func (s slide) focusID() string {
	if s.focus == nil {
		return ""
	}
	return s.focus.ID
}

// slidesOf is the talk: screens 1 to 6 in order; screen 4 a slide per k
// from 1 up, the loop servers' first (3 of 12 stall, then 6, 9, 12), then
// the servers without loops (as many blocked, none stalls); screen 6 a
// slide per server's slip, the loops' first.
func slidesOf(steps []Step) []slide {
	var out []slide
	for n := 1; n <= screens; n++ {
		// Screens 4 and 6 show one step a slide: each k of the stall from
		// 1 up, each server's slip; the loop servers' first.
		one := map[int]string{4: "stall", 6: "slip"}[n]
		if one != "" {
			for _, loops := range []bool{true, false} {
				for i, s := range steps {
					if s.Phase == one && (s.Phase != "stall" || s.K > 0) && (s.Server.Kind == "loop") == loops {
						out = append(out, slide{screen: n, focus: &steps[i]})
					}
				}
			}
			continue
		}
		sl := slide{screen: n}
		for _, s := range steps {
			if screenOf(s) == n {
				sl.steps = append(sl.steps, s)
			}
		}
		if len(sl.steps) > 0 {
			out = append(out, sl)
		}
	}
	return out
}

// nowText says in words what a step measures, for the footer: "now:
// pool at 64 callers", "now: loop-gnet, 2 of 4 loops blocked".
func nowText(s Step, loops int) string {
	n := s.Server.Name
	switch {
	case s.Phase == "stall" && s.Server.Kind == "loop":
		if s.Server.Workers > 0 {
			loops = s.Server.Workers // a server's own loops (Netty's, a --target's)
		}
		return fmt.Sprintf("now: %s, %d of %d loops blocked", n, s.K, loops)
	case s.Phase == "stall":
		return fmt.Sprintf("now: %s, %d callers blocked", n, s.K)
	case s.Phase == "offload" && s.Variant == "blocking":
		return fmt.Sprintf("now: %s, the call on its loops, %d callers", n, s.Conc)
	case s.Phase == "offload" && s.Variant == "offloaded":
		return fmt.Sprintf("now: %s, the call offloaded, %d callers", n, s.Conc)
	case s.Phase == "slip":
		return fmt.Sprintf("now: %s at %d callers, the call %s: \u2192 slows it to %s", n, s.Conc, s.Block.D(), s.SlipBlock.D())
	}
	return fmt.Sprintf("now: %s at %d callers", n, s.Conc)
}

// stageScreens shows the slides as the keys ask: next, goto N (the first
// slide of screen N), repeat (the slide shown, measured again). Each slide
// measures its steps.
func (r *runner) stageScreens(ctx context.Context, hub *stage.Hub, ctl *stageControl) {
	// Where each step's first measurement sits in run.json.
	index := map[string]int{}
	for i, m := range r.run.Measurements {
		index[m.ID] = i
	}
	reps := map[string]int{}
	state := func(s string) { hub.Add(stage.State{State: s}) }
	slides := slidesOf(r.plan.Steps)
	pos := -1
	if r.o.Auto {
		ctl.take("next")
	}
	state("waiting: press Space")
	for ctx.Err() == nil {
		key, ok := ctl.next()
		if !ok {
			select {
			case <-ctx.Done():
			case <-ctl.wake:
			}
			continue
		}
		want := pos + 1
		switch g, isGoto := stage.GotoScreen(key); {
		case key == "repeat" && pos >= 0:
			want = pos
		case isGoto:
			want = slices.IndexFunc(slides, func(s slide) bool { return s.screen == g })
			if want < 0 {
				state(fmt.Sprintf("no screen %d in this run: Space for the next", g))
				continue
			}
		}
		if want >= len(slides) {
			break
		}
		pos = want
		sl := slides[pos]
		hub.Add(stage.Screen{Screen: sl.screen, Focus: sl.focusID()})
		todo := sl.steps
		if f := sl.focus; f != nil && (reps[f.ID] == 0 || key == "repeat") {
			todo = []Step{*f}
		}
		for _, s := range todo {
			if ctx.Err() != nil {
				break
			}
			for ctl.isPaused() && ctx.Err() == nil {
				state("paused: P resumes")
				select {
				case <-ctx.Done():
				case <-ctl.wake:
				}
			}
			state(nowText(s, r.o.Loops)) // in words, not the step's id
			reps[s.ID]++
			if s.Phase == "slip" {
				// The presenter's next key slows the call (the plan's
				// moment at the latest); the one after is the next slide.
				told := slipTold(r.dir, s)
				_ = os.Remove(told) // a repeat's key is its own
				var mu sync.Mutex
				said, over := false, false
				tell := func() bool {
					mu.Lock()
					defer mu.Unlock()
					if said || over {
						return said
					}
					said = r.tellSlip(s, told)
					return said
				}
				ctl.hookNext(tell)
				// --auto rehearses the key: a side into the window, give or
				// take the server's start.
				var auto *time.Timer
				if r.o.Auto {
					auto = time.AfterFunc(startDelay+s.Warmup+time.Second+s.Duration/(stageSlipWait+1), func() { tell() })
				}
				r.stageStep(ctx, s, reps[s.ID], index[s.ID])
				if auto != nil {
					auto.Stop()
				}
				ctl.hookNext(nil)
				mu.Lock()
				over = true
				mu.Unlock()
				_ = os.Remove(told)
				continue
			}
			r.stageStep(ctx, s, reps[s.ID], index[s.ID])
		}
		if r.o.Auto {
			if pos == len(slides)-1 {
				break
			}
			time.Sleep(time.Second) // a beat on each slide's last figures
			ctl.take("next")
		}
		state(fmt.Sprintf("screen %d done: Space for the next", sl.screen))
	}
}

// slipTold is the file whose making tells the slip's load to slow the
// call (loadgen --switch-when).
func slipTold(dir string, s Step) string { return filepath.Join(dir, s.Phase, s.ID+".slow-now") }

// tellSlip slows the slip's call now: it makes the file the load watches
// and tells the page when; false when the file cannot be made (the key
// then goes to the slides).
func (r *runner) tellSlip(s Step, told string) bool {
	if err := os.WriteFile(told, nil, 0o644); err != nil {
		r.hub.Add(stage.State{State: "the call could not be slowed: " + err.Error()})
		return false
	}
	r.hub.Add(stage.Slip{ID: s.ID, At: r.hub.Ms(time.Now())})
	r.hub.Add(stage.State{State: fmt.Sprintf("now: %s, the call slowed to %s", s.Server.Name, s.SlipBlock.D())})
	return true
}

// stageStep measures step s (its rep-th time) on stage; the first time
// in its place in run.json, again after it.
func (r *runner) stageStep(ctx context.Context, s Step, rep, at int) {
	r.stepEvent(s, "start", nil)
	r.prog.begin(s, rep)
	m := r.step(ctx, s, rep)
	r.prog.end(m, r.said(m))
	if rep == 1 {
		r.set(at, func(mm *results.Measurement) { *mm = m })
	} else {
		r.mu.Lock()
		r.run.Measurements = append(r.run.Measurements, m)
		r.mu.Unlock()
	}
	r.save()
	r.stepEvent(s, "end", &m)
}

// skipPending records the measurements never reached as skipped, and why.
func (r *runner) skipPending(ctx context.Context, why string) {
	for i, m := range r.run.Measurements {
		if m.Status == "pending" {
			r.set(i, func(mm *results.Measurement) {
				mm.Status, mm.Reason = "skipped", why
				if ctx.Err() != nil {
					mm.Reason = "the run was interrupted before it"
				}
			})
		}
	}
}

// hello tells the page the run's shape: what the ceilings are, and the
// stall rule in words.
func (r *runner) hello() stage.Hello {
	o := r.o
	h := stage.Hello{Loops: o.Loops, Slots: o.Slots, BlockMs: o.Block.Ms(), StallBlockMs: o.StallBlock.Ms(), Conc: o.Conc,
		ServersKind: map[string]string{}, Ceiling: map[string]float64{}, CeilingText: map[string]string{}, StallConns: stallConnsPerLoop * o.Loops,
		Engines: o.Engines, Rule: stall.Rule, Screens: screens - 1}
	var servers []palette.Server
	for _, s := range r.plan.Steps {
		h.ServersKind[s.Server.Name] = s.Server.Kind
		servers = append(servers, palette.Server{Name: s.Server.Name, Kind: s.Server.Kind})
		if s.Phase == "sweep" {
			_, h.Ceiling[s.Server.Name] = findings.StepCeiling(s, o.Slots)
			h.CeilingText[s.Server.Name] = findings.StepCeilingText(s, o.Slots)
		}
		if s.Phase == "slip" {
			h.Screens, h.SlipBlockMs = screens, s.SlipBlock.Ms()
		}
	}
	h.Colors, h.Pale = palette.Of(servers), map[string]string{}
	for name, c := range h.Colors {
		h.Pale[name] = palette.Tint(c, palette.Pale)
	}
	return h
}

// stepEvent says a step began or ended; at its end, with its figures as
// internal/findings computes them for the tables and the report.
func (r *runner) stepEvent(s Step, state string, m *results.Measurement) {
	workers, ceiling := findings.StepCeiling(s, r.o.Slots)
	ev := stage.Step{ID: s.ID, Phase: s.Phase, Server: s.Server.Name, Conc: s.Conc, K: s.K, Variant: s.Variant,
		Endpoint: s.Endpoint, State: state, Screen: screenOf(s), Workers: workers, Ceiling: ceiling}
	if m != nil {
		ev.Status = m.Status
		if m.Status == "ok" {
			ev.Row = r.stepRow(*m)
		}
	}
	r.hub.Add(ev)
}

// stepRow is a finished measurement's row, from internal/findings: the
// figures the tables and the report give for it.
func (r *runner) stepRow(m results.Measurement) *stage.StepRow {
	r.mu.Lock()
	one := &results.Run{Schema: results.RunSchema, Params: r.run.Params, Manifest: r.run.Manifest, Measurements: []results.Measurement{m}}
	r.mu.Unlock()
	f := findings.Compute(r.dir, one)
	row := &stage.StepRow{}
	if len(f.Unread) > 0 {
		row.NotRead = f.Unread[0].String()
		return row
	}
	load := func(l findings.LoadRow) {
		row.RPS = l.Throughput.Median()
		if l.Fast.P50.OK() {
			row.FastP50Ms, row.FastAtLeast = l.Fast.P50.Median()/1e3, l.Fast.Saturated || l.Fast.CensoredText() != ""
		}
	}
	switch {
	case len(f.Sweep) == 1:
		load(f.Sweep[0].LoadRow)
	case len(f.Offload) == 1:
		load(f.Offload[0])
	case len(f.Stall) == 1:
		row.Stall = verdictOf(m.ID, f.Stall[0])
	case len(f.Slip) == 1:
		if sl := f.Slip[0]; sl.Before.PerS.OK() && sl.After.PerS.OK() {
			row.SlipBefore, row.SlipAfter, row.SlipAtMs = sl.Before.PerS.Median(), sl.After.PerS.Median(), float64(sl.At)/1e6
		}
	}
	return row
}

// verdictOf is a stall row's verdict for the stage: the count the tables
// give, or why it could not be judged.
func verdictOf(id string, st findings.StallRow) *stage.Verdict {
	v := &stage.Verdict{ID: id, Final: true, Judged: st.Judged > 0, Conns: int(st.Conns.Median())}
	if v.Judged {
		v.Stalled = int(st.Stalled.Median())
	} else if len(st.Unjudged) > 0 {
		v.Why = st.Unjudged[0]
	}
	if o := st.Seen; o != nil { // seen from outside: a few lines, for a projector
		names := make([]string, len(o.Held))
		for i, h := range o.Held {
			names[i] = h.Thread
		}
		for _, p := range culprit.Places(o.Held, names) {
			v.Seen = append(v.Seen, "held "+p.Where+": "+strings.Join(p.Who, ", ")) // the place first: a long line is cut at its end
		}
		v.Seen = append(v.Seen, o.Groups...)
		if len(v.Seen) > maxSeenLines {
			v.Seen = v.Seen[:maxSeenLines]
		}
	}
	return v
}

// maxSeenLines is how many lines of the outside view a stall screen shows.
const maxSeenLines = 3

// tapLive tails a tool's --live-out file into the stage while a step
// runs; the returned stop reads what is left and ends.
func (r *runner) tapLive(path string, fn func(line []byte)) func() {
	if r.hub == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		live.Tail(ctx, path, 50*time.Millisecond, fn)
		close(done)
	}()
	return func() { cancel(); <-done }
}

// liveArgs adds --live-out to a tool's arguments on stage, and the tail
// that turns its lines into events.
func (r *runner) liveArgs(s Step, kind string, args []string) ([]string, func()) {
	if r.hub == nil {
		return args, func() {}
	}
	path := filepath.Join(r.dir, s.Phase, s.ID+".live-"+kind+".ndjson")
	args = append(args, "--live-out", path)
	switch kind {
	case "load":
		var hist []live.Load
		return args, r.tapLive(path, func(line []byte) {
			var v live.Load
			if json.Unmarshal(line, &v) != nil || v.End {
				return // the last line comes after the window: its rate would fall as the load stops
			}
			hist = append(hist, v)
			// The rate over the last second (or since the start).
			first := hist[0]
			for _, h := range hist {
				if h.Ms >= v.Ms-1000 {
					first = h
					break
				}
			}
			if v.Ms > first.Ms {
				r.hub.Add(stage.Throughput{ID: s.ID, RPS: float64(v.Answered-first.Answered) * 1000 / float64(v.Ms-first.Ms)})
			}
		})
	case "fast":
		return args, r.tapLive(path, func(line []byte) {
			var v live.Probe
			if json.Unmarshal(line, &v) == nil && !v.Failed {
				r.hub.Add(stage.Probe{ID: s.ID, Server: s.Server.Name, Ms: v.Ms})
			}
		})
	default: // perconn: the stall rule, live, on what each connection saw so far
		judge := newLiveJudge(s)
		return args, r.tapLive(path, func(line []byte) {
			var v live.Probe
			if json.Unmarshal(line, &v) != nil {
				return
			}
			stalled, verdict := judge.add(v)
			r.hub.AddMax(fmt.Sprintf("conn/%s/%d", s.ID, v.Conn), stage.Conn{ID: s.ID, Conn: v.Conn, Loop: v.Loop, Ms: v.Ms, Stalled: stalled}, v.Ms)
			if verdict != nil {
				r.hub.Add(*verdict)
			}
		})
	}
}

// liveJudge keeps what each connection of a stall measurement has seen
// and applies the stall rule to it, as the tables will to the whole.
type liveJudge struct {
	s     Step
	conns map[int]*liveConn
	order []int
	last  time.Time
	v     stall.Verdict
}

type liveConn struct {
	loop          int
	waits         []time.Duration
	due, answered int64
}

func newLiveJudge(s Step) *liveJudge { return &liveJudge{s: s, conns: map[int]*liveConn{}} }

// add takes a probe; it returns whether the probe's connection stalled as
// the rule last judged, and a verdict at most every 250 ms.
func (j *liveJudge) add(p live.Probe) (bool, *stage.Verdict) {
	c := j.conns[p.Conn]
	if c == nil {
		c = &liveConn{}
		j.conns[p.Conn] = c
		j.order = append(j.order, p.Conn)
		slices.Sort(j.order)
	}
	c.loop = p.Loop
	c.due++
	if !p.Failed {
		c.answered++
		c.waits = append(c.waits, time.Duration(p.WaitMs*1e6))
	}
	var out *stage.Verdict
	if now := time.Now(); now.Sub(j.last) >= stage.Every {
		j.last = now
		var conns []stall.Conn
		for _, id := range j.order {
			k := j.conns[id]
			conns = append(conns, stall.Conn{ID: id, Loop: k.loop, Due: k.due, Answered: k.answered, Wait: medianDuration(k.waits), FromServer: true})
		}
		j.v = stall.Judge(conns, j.s.Block.D(), stall.Machine{})
		out = &stage.Verdict{ID: j.s.ID, Judged: j.v.Judged, Stalled: j.v.Count, Conns: len(conns), Why: j.v.Why}
	}
	i := slices.Index(j.order, p.Conn)
	return i < len(j.v.Stalled) && j.v.Stalled[i], out
}

func medianDuration(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// lagEvent gives the stage each loop's largest lag in a /lag event.
func (r *runner) lagEvent(server string) func(lag.Event) {
	if r.hub == nil {
		return nil
	}
	return func(ev lag.Event) {
		at := r.hub.Ms(time.Unix(0, ev.TimeNs)) // the window's end, on the stage's clock
		for _, l := range ev.Loops {
			where, heldMs := "", 0.0
			// A block that began in the last second: its record grows
			// from "so far" to its whole length as the events go by.
			if c := l.Culprit; c != nil && c.StartNs >= ev.TimeNs-int64(time.Second) && c.Cause != culprit.Starved && c.Cause != culprit.WaitingForP && len(c.Frames) > 0 {
				clean := c.Clean()
				where, heldMs = clean.Where(), float64(clean.HeldNs)/1e6
			}
			r.hub.Add(stage.Lag{Server: server, Loop: l.Loop, Ms: float64(l.LagMaxNs) / 1e6, Blocked: l.BlockedNow, At: at, Where: where, HeldMs: heldMs})
		}
	}
}

// runReplay plays a recorded stage (--stage --replay RUN_DIR) on the same
// page, at its real pace, without servers.
func runReplay(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	rec := filepath.Join(o.Replay, "stage.ndjson")
	if _, err := os.Stat(rec); err != nil {
		return refused(fmt.Errorf("run.sh: --replay %s: no stage recording there (%v): record one with ./run.sh --stage", o.Replay, err))
	}
	b, err := stagePage(stderr)
	if err != nil {
		return refused(err)
	}
	hub, err := stage.NewHub("", b)
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := openStage(sctx, o, hub, stdout); err != nil {
		return refused(err)
	}
	waitForPage(ctx, o, hub, stdout)
	fmt.Fprintf(stdout, "stage: replaying %s at its real pace (P pauses)\n", rec)
	n, err := stage.Replay(ctx, rec, hub)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	fmt.Fprintf(stdout, "stage: replayed %d frames\n", n)
	if o.Auto {
		time.Sleep(2 * stage.Every)
		return nil
	}
	fmt.Fprintln(stdout, "stage: the page stays up until Ctrl-C (10 minutes at most)")
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Minute):
	}
	return nil
}
