package experiment

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stage"
)

// TestProgressObserver: the terminal's progress lines from a scripted run
// of events, no servers: a line per measurement with its count, phase,
// label and figure (or why it failed), the run's own lines between them,
// and the time left going down to 0.
func TestProgressObserver(t *testing.T) {
	o := opts(t, func(o *Options) {
		o.Servers, o.Phases, o.Conc, o.Loops = []string{"loop", "pool"}, []string{"sweep", "stall"}, []int{4}, 2
	})
	plan := BuildPlan(o)
	var out bytes.Buffer
	p := newProgress(&out, plan) // not a terminal: plain lines
	ended := func(s Step, status, reason string) results.Measurement {
		return results.Measurement{Step: s, Repeat: 1, Status: status, Reason: reason}
	}
	src := newPlanSteps(plan)
	var ids []string
	for {
		job, ok := src.Next(context.Background())
		if !ok {
			break
		}
		ids = append(ids, job.Step.ID)
		p.Observe(StepStarted{Step: job.Step, Rep: job.Rep})
		switch job.Step.ID {
		case "sweep-pool-c4":
			p.Observe(StepEnded{M: ended(job.Step, "failed", "the server did not start: boom")})
			p.Observe(Said{Line: "bystander: a line of the run's"})
		case "sweep-loop-gnet-c4":
			p.Observe(StepEnded{M: ended(job.Step, "ok", ""), Said: "1234 req/s"})
		default:
			p.Observe(StepEnded{M: ended(job.Step, "ok", "")})
		}
	}
	p.Observe(Finished{})
	want := []string{"sweep-loop-gnet-c4", "sweep-pool-c4", "stall-loop-gnet-k0", "stall-loop-gnet-k1", "stall-loop-gnet-k2", "stall-pool-k0", "stall-pool-k2"}
	if !slices.Equal(ids, want) {
		t.Fatalf("the plan's steps came as %q, want %q", ids, want)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	wantLines := []string{
		`[1/7 sweep] loop-gnet 4 callers: 1234 req/s (took `,
		`[2/7 sweep] pool 4 callers: failed: the server did not start: boom (took `,
		`bystander: a line of the run's`,
		`[3/7 stall] loop-gnet k=0: ok (took `,
		`[4/7 stall] loop-gnet k=1: ok (took `,
		`[5/7 stall] loop-gnet k=2: ok (took `,
		`[6/7 stall] pool k=0: ok (took `,
		`[7/7 stall] pool k=2: ok (took `,
	}
	if len(lines) != len(wantLines) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wantLines), out.String())
	}
	left := regexp.MustCompile(`, about (\S+) left\)$`)
	last := plan.Expected() + time.Hour
	for i, w := range wantLines {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to begin %q", i+1, lines[i], w)
		}
		if w == wantLines[2] {
			continue
		}
		m := left.FindStringSubmatch(lines[i])
		if m == nil {
			t.Errorf("line %d says no time left: %q", i+1, lines[i])
			continue
		}
		d, err := time.ParseDuration(m[1])
		if err != nil || d > last {
			t.Errorf("line %d: %q left after %s", i+1, m[1], last)
		}
		last = d
	}
	if last != 0 {
		t.Errorf("%s left at the end, want 0", last)
	}
}

// stageEvent is what TestStageObserver reads of the stage's events.
type stageEvent struct {
	K      string `json:"k"`
	Screen int    `json:"screen"`
	Focus  string `json:"focus"`
	State  string `json:"state"`
	ID     string `json:"id"`
	Status string `json:"status"`
}

// TestStageObserver: the stage as step source and observer, from
// scripted keys and a scripted runner, no servers: the slides' steps in
// the talk's order (a slide's focus measured once unless repeated), a
// step measured again recorded after the plan's, a screen the run lacks
// said, each step shown as it starts and ends, and the slip's key slowing
// the call (the file loadgen watches made, removed at the step's end)
// instead of going to the slides.
func TestStageObserver(t *testing.T) {
	o := opts(t, func(o *Options) { onStage(o); o.Servers, o.Loops = []string{"loop", "pool"}, 2 })
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "slip"), 0o755); err != nil {
		t.Fatal(err)
	}
	plan := BuildPlan(o)
	var ms []results.Measurement
	for _, s := range plan.Steps {
		ms = append(ms, results.Measurement{Step: s, Repeat: 1, Status: "pending"})
	}
	rec := filepath.Join(dir, "stage.ndjson")
	hub, err := stage.NewHub(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl := stageKeys(hub)
	for _, k := range []string{"next", "goto 9", "next", "next", "next", "next", "next", "next", "next", "next", "repeat", "goto 2"} {
		if !ctl.take(k) {
			t.Fatalf("key %q not taken", k)
		}
	}
	rows := 0
	st := newStageSteps(o, dir, hub, ctl, plan.Steps, ms, func(results.Measurement) *stage.StepRow { rows++; return &stage.StepRow{RPS: 1} })
	// A source that waits for a key it will not get ends with ctx: at
	// the last step expected, or, if the steps went wrong, in 20 s.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type given struct {
		id        string
		rep, slot int
	}
	var got []given
	for {
		job, ok := st.Next(ctx)
		if !ok {
			break
		}
		got = append(got, given{job.Step.ID, job.Rep, job.Slot})
		st.Observe(StepStarted{Step: job.Step, Rep: job.Rep})
		told := slipTold(dir, job.Step)
		if (job.SlipWhen == told) != (job.Step.Phase == "slip") {
			t.Errorf("%s: loadgen is told to slow the call when %q is made", job.Step.ID, job.SlipWhen)
		}
		if job.Step.Phase == "slip" && job.Rep == 1 {
			if !ctl.take("next") {
				t.Fatal("the slip's key was not taken")
			}
			if _, err := os.Stat(told); err != nil {
				t.Errorf("%s: the key did not slow the call: %v", job.Step.ID, err)
			}
		}
		st.Observe(StepEnded{M: results.Measurement{Step: job.Step, Repeat: job.Rep, Status: "ok"}})
		if _, err := os.Stat(told); err == nil {
			t.Errorf("%s: %s left after the step", job.Step.ID, told)
		}
		if len(got) == 17 {
			cancel() // the keys are all taken
		}
	}
	index := func(id string) int {
		return slices.IndexFunc(plan.Steps, func(s Step) bool { return s.ID == id })
	}
	var want []given
	for _, id := range []string{"sweep-loop-gnet-c4", "sweep-pool-c4", "sweep-loop-gnet-c16", "sweep-pool-c16", "sweep-loop-gnet-c64", "sweep-pool-c64",
		"offload-loop-gnet-blocking", "offload-pool-pool", "stall-loop-gnet-k1", "stall-loop-gnet-k2", "stall-pool-k2",
		"offload-loop-gnet-offloaded", "slip-loop-gnet", "slip-pool"} {
		want = append(want, given{id, 1, index(id)})
	}
	want = append(want, given{"slip-pool", 2, -1}, given{"offload-loop-gnet-blocking", 2, -1}, given{"offload-pool-pool", 2, -1})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the stage gave\n%v\nwant\n%v", got, want)
	}
	if st.Unreached() != "the stage ended before its screen" {
		t.Errorf("unreached: %q", st.Unreached())
	}
	if rows != len(got) {
		t.Errorf("%d rows for %d steps ended", rows, len(got))
	}
	hub.Flush()
	if err := hub.Close(); err != nil {
		t.Fatal(err)
	}
	evs := readStage(t, rec)
	var said []string
	for _, e := range evs {
		switch e.K {
		case "screen":
			said = append(said, fmt.Sprintf("screen %d %s", e.Screen, e.Focus))
		case "step":
			said = append(said, e.State+" "+e.ID)
		case "slip":
			said = append(said, "slip "+e.ID)
		case "state":
			if strings.HasPrefix(e.State, "waiting") || strings.HasPrefix(e.State, "no screen") {
				said = append(said, e.State)
			}
		}
	}
	text := strings.Join(said, "\n")
	for _, w := range []string{
		"waiting: press Space\nscreen 1 \nstart sweep-loop-gnet-c4\nend sweep-loop-gnet-c4\nstart sweep-pool-c4",
		"end sweep-pool-c64\nno screen 9 in this run: Space for the next\nscreen 2 \nstart offload-loop-gnet-blocking",
		"screen 4 stall-loop-gnet-k1\nscreen 4 stall-loop-gnet-k2\nstart stall-loop-gnet-k2",
		"screen 6 slip-loop-gnet\nstart slip-loop-gnet\nslip slip-loop-gnet\nend slip-loop-gnet",
		"screen 6 slip-pool\nstart slip-pool\nslip slip-pool\nend slip-pool\nscreen 6 slip-pool\nstart slip-pool\nend slip-pool\nscreen 2 \nstart offload-loop-gnet-blocking",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("the page was not told\n%s\n\nit was told\n%s", w, text)
		}
	}
}

// TestStageLiveObserver: the stage as the observer of the live samples,
// from scripted ones, no servers and no tools: each as the page's event
// of its kind with its values, a stall connection's newest of a frame
// (the most probes due) in the place of its first, a loop's lag on the
// stage's clock; and the runner's live verdicts come at most once a
// frame.
func TestStageLiveObserver(t *testing.T) {
	if liveEvery != stage.Every {
		t.Errorf("the live verdicts come every %s, the stage's frames every %s", liveEvery, stage.Every)
	}
	o := opts(t, func(o *Options) { onStage(o); o.Servers, o.Loops = []string{"loop", "pool"}, 2 })
	rec := filepath.Join(t.TempDir(), "stage.ndjson")
	hub, err := stage.NewHub(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := newStageSteps(o, t.TempDir(), hub, stageKeys(hub), nil, nil, nil)
	var lo LiveObserver = st
	wait := 1.25
	at := time.Now().Add(1500 * time.Millisecond)
	for _, ev := range []Live{
		LiveRate{ID: "sweep-loop-gnet-c4", RPS: 1234.5},
		LiveProbe{ID: "sweep-loop-gnet-c4", Server: "loop-gnet", Ms: 0.75},
		LiveConn{ID: "stall-loop-gnet-k1", Conn: 3, Loop: 1, Ms: 2, Due: 1},
		LiveVerdict{ID: "stall-loop-gnet-k1", Judged: true, Stalled: 1, Conns: 12},
		LiveConn{ID: "stall-loop-gnet-k1", Conn: 4, Loop: 2, Ms: 40, WaitMs: &wait, Stalled: true, Due: 1},
		LiveConn{ID: "stall-loop-gnet-k1", Conn: 3, Loop: 1, Ms: 9, WaitMs: &wait, Stalled: true, Due: 2},
		LiveVerdict{ID: "stall-pool-k2", Why: "the machine was too busy to judge"},
		LiveLag{Server: "loop-gnet", Loop: 1, Ms: 251.5, Blocked: true, At: at, Where: "in syscall at block.nanosleep (block/block.go:82)", HeldMs: 250},
		LiveLag{Server: "pool", Loop: 0, Ms: 0.5, At: at},
	} {
		lo.ObserveLive(ev)
	}
	hub.Flush()
	if err := hub.Close(); err != nil {
		t.Fatal(err)
	}
	atMs := fmt.Sprint(hub.Ms(at))
	want := []string{
		`{"k":"state","state":"waiting: press Space"}`,
		`{"k":"tp","id":"sweep-loop-gnet-c4","rps":1234.5}`,
		`{"k":"probe","id":"sweep-loop-gnet-c4","server":"loop-gnet","ms":0.75}`,
		`{"k":"conn","id":"stall-loop-gnet-k1","conn":3,"loop":1,"ms":9,"wait_ms":1.25,"stalled":true}`,
		`{"k":"verdict","id":"stall-loop-gnet-k1","judged":true,"stalled":1,"conns":12}`,
		`{"k":"conn","id":"stall-loop-gnet-k1","conn":4,"loop":2,"ms":40,"wait_ms":1.25,"stalled":true}`,
		`{"k":"verdict","id":"stall-pool-k2","judged":false,"stalled":0,"conns":0,"why":"the machine was too busy to judge"}`,
		`{"k":"lag","server":"loop-gnet","loop":1,"ms":251.5,"blocked":true,"at":` + atMs + `,"where":"in syscall at block.nanosleep (block/block.go:82)","held_ms":250}`,
		`{"k":"lag","server":"pool","loop":0,"ms":0.5,"blocked":false,"at":` + atMs + `}`,
	}
	frames := stageFrames(t, rec)
	if len(frames) != 1 || strings.Join(frames[0], "\n") != strings.Join(want, "\n") {
		t.Errorf("the stage recorded\n%q\nwant one frame of\n%s", frames, strings.Join(want, "\n"))
	}
}

// readStage reads a stage recording's events, frame by frame.
func readStage(t *testing.T, path string) []stageEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []stageEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var fr stage.Frame
		if json.Unmarshal(sc.Bytes(), &fr) != nil {
			continue // the schema line
		}
		for _, raw := range fr.Events {
			var e stageEvent
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
	}
	return out
}
