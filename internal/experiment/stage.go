package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stage"
)

// stagePhases are what the stage measures; its screens show them in the
// story's order (screenOf), not the plan's.
var stagePhases = []string{"sweep", "stall", "offload"}

// The stage's five screens.
const screens = 5

// screenOf says which screen shows a step: 1 the sweep's throughput, 2
// the bystander beside /slow on the loops and on the pool, 3 one loop
// blocked seen from inside (its lag), 4 the connections as k loops are
// blocked, 5 the fix.
func screenOf(s Step) int {
	switch {
	case s.Phase == "sweep":
		return 1
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

// stageControl is the presenter's state: paused, and the screens asked for.
type stageControl struct {
	mu     sync.Mutex
	paused bool
	asks   []string
	wake   chan struct{}
}

func (c *stageControl) take(key string) {
	c.mu.Lock()
	if key == "pause" {
		c.paused = !c.paused
	} else {
		c.asks = append(c.asks, key)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
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

// stagePage asks the report program for the stage's page.
func stagePage(bin, dir string) ([]byte, error) {
	path := filepath.Join(dir, "stage.html")
	out, err := exec.Command(filepath.Join(bin, "report"), "--stage-page", path).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("run.sh: --stage: the report program could not write the page: %v %s", err, strings.TrimSpace(string(out)))
	}
	if len(out) > 0 {
		return nil, fmt.Errorf("run.sh: --stage: %s", strings.TrimSpace(string(out)))
	}
	return os.ReadFile(path)
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
	fmt.Fprintf(stdout, "stage: %s  (Space or Right: next, P: pause, R: repeat, T: theme)\n", url)
	if o.Open {
		openReport(stdout, url)
	}
	return nil
}

// runStage runs the measurements screen by screen, as the presenter (or
// --auto) asks, and returns what to do once the run is written up.
//
// started is called once the page is served, before the first
// measurement: a stage that cannot start leaves no run behind.
func (r *runner) runStage(ctx context.Context, stdout, stderr io.Writer, started func()) (func(), int) {
	page, err := stagePage(r.o.Bin, r.dir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, 2
	}
	hub, err := stage.NewHub(filepath.Join(r.dir, "stage.ndjson"), page)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, 2
	}
	sctx, stop := context.WithCancel(context.Background()) // outlives ctx: the page says the run was interrupted
	if err := openStage(sctx, r.o, hub, stdout); err != nil {
		stop()
		fmt.Fprintln(stderr, err)
		return nil, 2
	}
	started()
	hubDone := make(chan struct{})
	go func() { hub.Run(sctx); close(hubDone) }()
	r.hub = hub
	hub.Add(r.hello())

	ctl := &stageControl{wake: make(chan struct{}, 1)}
	go func() {
		for {
			select {
			case <-sctx.Done():
				return
			case k := <-hub.Control():
				ctl.take(k)
			}
		}
	}()
	// Where each step's first measurement sits in run.json.
	index := map[string]int{}
	for i, m := range r.run.Measurements {
		index[m.ID] = i
	}
	reps := map[string]int{}
	state := func(s string) { hub.Add(stage.Event{"k": "state", "state": s}) }
	screen := 0
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
		want := screen + 1
		if key == "repeat" && screen > 0 {
			want = screen
		}
		if want > screens {
			break
		}
		screen = want
		hub.Add(stage.Event{"k": "screen", "screen": screen})
		for _, s := range r.plan.Steps {
			if screenOf(s) != screen || ctx.Err() != nil {
				continue
			}
			for ctl.isPaused() && ctx.Err() == nil {
				state("paused: P resumes")
				select {
				case <-ctx.Done():
				case <-ctl.wake:
				}
			}
			state("measuring " + s.ID)
			reps[s.ID]++
			rep := reps[s.ID]
			r.stepEvent(s, "start", nil)
			r.prog.begin(s, rep)
			m := r.step(ctx, s, rep)
			r.prog.end(m, r.throughput(m))
			if rep == 1 {
				r.set(index[s.ID], func(mm *results.Measurement) { *mm = m })
			} else {
				r.mu.Lock()
				r.run.Measurements = append(r.run.Measurements, m)
				r.mu.Unlock()
			}
			r.save()
			r.stepEvent(s, "end", &m)
		}
		if screen == screens && r.o.Auto {
			break
		}
		if r.o.Auto {
			time.Sleep(time.Second) // a beat on each screen's last figures
			ctl.take("next")
		}
		state(fmt.Sprintf("screen %d done: Space for the next", screen))
	}
	for i, m := range r.run.Measurements {
		if m.Status == "pending" {
			r.set(i, func(mm *results.Measurement) {
				mm.Status, mm.Reason = "skipped", "the stage ended before its screen"
				if ctx.Err() != nil {
					mm.Reason = "the run was interrupted before it"
				}
			})
		}
	}
	return func() {
		hub.Add(stage.Event{"k": "done", "report": r.run.Report})
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
	}, 0
}

// hello tells the page the run's shape: what the ceilings and the
// thresholds are.
func (r *runner) hello() stage.Event {
	o := r.o
	kinds, ceil := map[string]string{}, map[string]float64{}
	for _, s := range r.plan.Steps {
		kinds[s.Server.Name] = s.Server.Kind
		if s.Phase == "sweep" {
			ceil[s.Server.Name] = findings.CeilingPerS(findings.WorkersOf(s, o.Slots), o.Block)
		}
	}
	return stage.Event{"k": "hello", "loops": o.Loops, "slots": o.Slots, "block_ms": ms(o.Block), "stall_block_ms": ms(o.StallBlock),
		"conc": o.Conc, "servers_kind": kinds, "ceiling": ceil, "stall_conns": stallConnsPerLoop * o.Loops,
		"stall_threshold_ms": ms(o.StallBlock / 2), "engines": o.Engines}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// stepEvent says a step began or ended, with its figures when it ended.
func (r *runner) stepEvent(s Step, state string, m *results.Measurement) {
	ev := stage.Event{"k": "step", "id": s.ID, "phase": s.Phase, "server": s.Server.Name, "conc": s.Conc, "kk": s.K, "variant": s.Variant,
		"endpoint": s.Endpoint, "state": state, "screen": screenOf(s),
		"workers": findings.WorkersOf(s, r.o.Slots), "ceiling": findings.CeilingPerS(findings.WorkersOf(s, r.o.Slots), time.Duration(s.Server.BlockNs))}
	if m != nil {
		ev["status"] = m.Status
		if m.LoadFile != "" {
			if lr, err := results.Read(filepath.Join(r.dir, m.LoadFile)); err == nil && lr.Load != nil && s.Phase != "stall" {
				ev["rps"] = lr.Load.ThroughputPerS
			}
		}
		if m.ProbeFile != "" {
			if pr, err := results.Read(filepath.Join(r.dir, m.ProbeFile)); err == nil && pr.Probe != nil {
				ev["fast_p50_ms"] = pr.Probe.Corrected.P50Us / 1e3
			}
		}
	}
	r.hub.Add(ev)
}

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
		var hist []struct{ ms, n int64 }
		return args, r.tapLive(path, func(line []byte) {
			var v struct {
				Ms       int64 `json:"ms"`
				Answered int64 `json:"answered"`
			}
			if json.Unmarshal(line, &v) != nil {
				return
			}
			hist = append(hist, struct{ ms, n int64 }{v.Ms, v.Answered})
			// The rate over the last second (or since the start).
			first := hist[0]
			for _, h := range hist {
				if h.ms >= v.Ms-1000 {
					first = h
					break
				}
			}
			if v.Ms > first.ms {
				r.hub.Add(stage.Event{"k": "tp", "id": s.ID, "rps": float64(v.Answered-first.n) * 1000 / float64(v.Ms-first.ms)})
			}
		})
	case "fast":
		return args, r.tapLive(path, func(line []byte) {
			var v struct {
				Ms     float64 `json:"ms"`
				Failed bool    `json:"failed"`
			}
			if json.Unmarshal(line, &v) == nil && !v.Failed {
				r.hub.Add(stage.Event{"k": "probe", "id": s.ID, "server": s.Server.Name, "ms": v.Ms})
			}
		})
	default: // perconn
		return args, r.tapLive(path, func(line []byte) {
			var v struct {
				Conn, Loop int
				Ms         float64
			}
			if json.Unmarshal(line, &v) == nil {
				r.hub.AddMax(fmt.Sprintf("conn/%s/%d", s.ID, v.Conn), stage.Event{"k": "conn", "id": s.ID, "conn": v.Conn, "loop": v.Loop, "ms": v.Ms}, "ms")
			}
		})
	}
}

// lagEvent gives the stage each loop's largest lag in a /lag event.
func (r *runner) lagEvent(server string) func(lag.Event) {
	if r.hub == nil {
		return nil
	}
	return func(ev lag.Event) {
		at := r.hub.Ms(time.Unix(0, ev.TimeNs)) // the window's end, on the stage's clock
		for _, l := range ev.Loops {
			r.hub.Add(stage.Event{"k": "lag", "server": server, "loop": l.Loop, "ms": float64(l.LagMaxNs) / 1e6, "blocked": l.BlockedNow, "at": at})
		}
	}
}

// runReplay plays a recorded stage (--stage --replay RUN_DIR) on the same
// page, at its real pace, without servers.
func runReplay(ctx context.Context, o Options, stdout, stderr io.Writer) int {
	rec := filepath.Join(o.Replay, "stage.ndjson")
	if _, err := os.Stat(rec); err != nil {
		fmt.Fprintf(stderr, "run.sh: --replay %s: no stage recording there (%v): record one with ./run.sh --stage\n", o.Replay, err)
		return 2
	}
	tmp, err := os.MkdirTemp("", "bystander-replay")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	page, err := stagePage(o.Bin, tmp)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	hub, err := stage.NewHub("", page)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := openStage(sctx, o, hub, stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprintf(stdout, "stage: replaying %s at its real pace (P pauses)\n", rec)
	n, err := stage.Replay(ctx, rec, hub)
	if err != nil {
		if ctx.Err() != nil {
			return 130
		}
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "stage: replayed %d frames\n", n)
	if o.Auto {
		time.Sleep(2 * stage.Every)
		return 0
	}
	fmt.Fprintln(stdout, "stage: the page stays up until Ctrl-C (10 minutes at most)")
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Minute):
	}
	return 0
}
