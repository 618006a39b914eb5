package experiment

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stage"
	"github.com/bystander-kit/bystander/internal/stall"
)

// TestLiveWaitIsTheReports: the wait a stall screen's cell shows live is
// the one the report gives for the same connection, one computation: the
// prober records each answered probe's wait in its histogram and findings
// take its p50 (stall.From); the stage's judge, fed the same probes as the
// prober's --live-out lines, ends on the same number for each connection.
// The waits are chosen where an exact median and the histogram's part
// (an even count, and values past the histogram's 1 us steps).
func TestLiveWaitIsTheReports(t *testing.T) {
	waits := map[int][]time.Duration{
		0: {250 * time.Microsecond, 310 * time.Microsecond, 280*time.Microsecond + 400, 9 * time.Millisecond},
		1: {903123456, 851234567, 98765432, 120000001, 450000000, 451000000},
		2: {},
	}
	judge := newLiveJudge(Step{ID: "stall-x-k1"})
	last := map[int]*float64{}
	pc := &results.PerConn{}
	for conn := range 3 {
		h := hist.New() // as the prober records it
		for _, w := range waits[conn] {
			h.Record(w)
			ev, _ := judge.add(live.Probe{Conn: conn, Loop: conn, WaitMs: float64(w) / 1e6}) // as the prober writes its line
			if ev.Conn != conn || ev.ID != "stall-x-k1" {
				t.Fatalf("probe on %d: event %+v", conn, ev)
			}
			last[conn] = ev.WaitMs
		}
		if len(waits[conn]) == 0 { // answered nothing: failed probes
			ev, _ := judge.add(live.Probe{Conn: conn, Loop: conn, Failed: true})
			last[conn] = ev.WaitMs
		}
		pc.Conns = append(pc.Conns, results.ConnStat{Conn: conn, Loop: conn, ServerWait: h.Summary()})
	}
	for i, c := range stall.From(pc) {
		got := last[c.ID]
		if !c.FromServer {
			if got != nil {
				t.Errorf("connection %d: the server said no wait, the stage shows %v ms", c.ID, *got)
			}
			continue
		}
		want := float64(c.Wait) / 1e6
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("connection %d: the stage ends on %v ms, the report on %v ms (%d waits)", c.ID, got, want, len(waits[i]))
		}
	}
}

// TestLiveLinesToFrames: the live road whole, from the tools' --live-out
// lines and a server's /lag events to the stage's frames, no servers:
// loadgen's lines as the rate over the last second (its last line, after
// the window, not), the /fast prober's answered probes, each stall
// connection as seen so far (the newest of a frame's) and the stall
// rule's verdict on them, each loop's lag on the stage's clock with where
// a block that began in the last second held it (a starved loop's not).
func TestLiveLinesToFrames(t *testing.T) {
	o := opts(t, func(o *Options) { onStage(o); o.Servers, o.Loops = []string{"loop", "pool"}, 2 })
	dir := t.TempDir()
	rec := filepath.Join(dir, "stage.ndjson")
	hub, err := stage.NewHub(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := liveRunner(t, o, dir, hub)
	write := func(path string, lines ...string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outOf := func(args []string) string {
		for i, a := range args {
			if a == "--live-out" && i+1 < len(args) {
				return args[i+1]
			}
		}
		t.Fatalf("no --live-out in %q", args)
		return ""
	}
	sweep := Step{ID: "sweep-loop-gnet-c4", Phase: "sweep", Server: Server{Name: "loop-gnet"}}
	args, stop := r.liveArgs(sweep, "load", []string{"--quiet"})
	write(outOf(args), `{"ms":0,"answered":0}`, `{"ms":500,"answered":100}`, `{"ms":1000,"answered":300}`, `{"ms":1500,"answered":600}`, `{"ms":1600,"answered":650,"end":true}`)
	stop()
	args, stop = r.liveArgs(sweep, "fast", nil)
	write(outOf(args), `{"conn":0,"loop":0,"due_ms":10,"ms":1.5}`, `{"conn":0,"loop":0,"due_ms":20,"ms":2.5,"failed":true}`, `not a line`, `{"conn":0,"loop":0,"due_ms":30,"ms":3}`)
	stop()
	st := Step{ID: "stall-loop-gnet-k1", Phase: "stall", Server: Server{Name: "loop-gnet"}, Block: blk(20)}
	args, stop = r.liveArgs(st, "conns", nil)
	write(outOf(args), `{"conn":0,"loop":0,"due_ms":10,"ms":2,"wait_ms":1}`, `{"conn":1,"loop":1,"due_ms":10,"ms":50,"wait_ms":40}`, `{"conn":0,"loop":0,"due_ms":20,"ms":5,"wait_ms":3}`)
	stop()
	now := time.Now()
	held := &culprit.Record{Loop: 0, StartNs: now.Add(-300 * time.Millisecond).UnixNano(), HeldNs: 250e6, Cause: culprit.Blocked, State: "syscall",
		Frames: []culprit.Frame{{Function: "github.com/bystander-kit/bystander/internal/block.nanosleep", File: "/x/internal/block/block.go", Line: 82}}}
	starved := &culprit.Record{Loop: 1, StartNs: now.Add(-300 * time.Millisecond).UnixNano(), HeldNs: 30e6, Cause: culprit.Starved, State: "running", Frames: held.Frames}
	r.lagEvent("loop-gnet")(lag.Event{TimeNs: now.UnixNano(), Loops: []lag.LoopEvent{
		{Loop: 0, LagMaxNs: 251500000, BlockedNow: true, Culprit: held},
		{Loop: 1, LagMaxNs: 31000000, Culprit: starved},
	}})
	hub.Flush()
	if err := hub.Close(); err != nil {
		t.Fatal(err)
	}
	h := hist.New()
	h.Record(time.Millisecond)
	h.Record(3 * time.Millisecond)
	wait0, _ := json.Marshal(float64(h.P50()) / 1e6)
	h = hist.New()
	h.Record(40 * time.Millisecond)
	wait1, _ := json.Marshal(float64(h.P50()) / 1e6)
	clean := held.Clean()
	where, _ := json.Marshal(clean.Where())
	at, _ := json.Marshal(hub.Ms(now))
	heldMs, _ := json.Marshal(float64(clean.HeldNs) / 1e6)
	want := []string{
		`{"k":"tp","id":"sweep-loop-gnet-c4","rps":200}`,
		`{"k":"tp","id":"sweep-loop-gnet-c4","rps":300}`,
		`{"k":"tp","id":"sweep-loop-gnet-c4","rps":500}`,
		`{"k":"probe","id":"sweep-loop-gnet-c4","server":"loop-gnet","ms":1.5}`,
		`{"k":"probe","id":"sweep-loop-gnet-c4","server":"loop-gnet","ms":3}`,
		`{"k":"conn","id":"stall-loop-gnet-k1","conn":0,"loop":0,"ms":5,"wait_ms":` + string(wait0) + `,"stalled":false}`,
		`{"k":"verdict","id":"stall-loop-gnet-k1","judged":true,"stalled":0,"conns":1}`,
		`{"k":"conn","id":"stall-loop-gnet-k1","conn":1,"loop":1,"ms":50,"wait_ms":` + string(wait1) + `,"stalled":`, // as the rule last judged
		`{"k":"lag","server":"loop-gnet","loop":0,"ms":251.5,"blocked":true,"at":` + string(at) + `,"where":` + string(where) + `,"held_ms":` + string(heldMs) + `}`,
		`{"k":"lag","server":"loop-gnet","loop":1,"ms":31,"blocked":false,"at":` + string(at) + `}`,
	}
	frames := stageFrames(t, rec)
	if len(frames) != 1 {
		t.Fatalf("%d frames, want the one flushed: %q", len(frames), frames)
	}
	var got []string
	for _, e := range frames[0] {
		if !strings.HasPrefix(e, `{"k":"state"`) && !strings.HasPrefix(e, `{"k":"verdict"`) || e == want[6] {
			got = append(got, e) // a later verdict, if the machine took 250 ms between two lines, is the rule's too
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the frame holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) || !strings.HasSuffix(w, ":") && got[i] != w {
			t.Errorf("event %d:\n%s\nwant\n%s", i+1, got[i], w)
		}
	}
}

// liveHeard is an observer that takes the live samples, and keeps them.
type liveHeard struct {
	mu    sync.Mutex
	heard []Live
}

func (*liveHeard) Observe(Event) {}

func (h *liveHeard) ObserveLive(ev Live) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.heard = append(h.heard, ev)
}

// stepsHeard is an observer of the steps only.
type stepsHeard struct{ n int }

func (s *stepsHeard) Observe(Event) { s.n++ }

// TestLiveOnlyWhenObserved: the runner asks a tool for its live lines
// (--live-out), tails them, and makes samples of the server's /lag
// events as they come only when an observer takes live samples (the
// stage; the terminal does not), and tells it each as its typed sample: the rate, a connection
// with how many of its probes were due, the lag with the window's end.
func TestLiveOnlyWhenObserved(t *testing.T) {
	dir := t.TempDir()
	s := Step{ID: "stall-loop-gnet-k1", Phase: "stall", Server: Server{Name: "loop-gnet"}, Block: blk(20)}
	r := &runner{dir: dir, observers: []Observer{&stepsHeard{}}}
	args, stop := r.liveArgs(s, "conns", []string{"--quiet"})
	stop()
	if strings.Join(args, " ") != "--quiet" {
		t.Errorf("no observer takes live samples, and the prober is asked %q", args)
	}
	if r.lagEvent("loop-gnet") != nil {
		t.Error("no observer takes live samples, and the /lag events are made samples")
	}
	heard := &liveHeard{}
	r.observers = append(r.observers, heard)
	args, stop = r.liveArgs(s, "conns", []string{"--quiet"})
	path := filepath.Join(dir, "stall", "stall-loop-gnet-k1.live-conns.ndjson")
	if strings.Join(args, " ") != "--quiet --live-out "+path {
		t.Fatalf("the prober is asked %q, want its live lines in %s", args, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"conn":2,"loop":1,"due_ms":10,"ms":2}`+"\n"+`{"conn":2,"loop":1,"due_ms":20,"ms":1,"failed":true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop()
	end := time.Now()
	r.lagEvent("loop-gnet")(lag.Event{TimeNs: end.UnixNano(), Loops: []lag.LoopEvent{{Loop: 1, LagMaxNs: 2e6}}})
	want := []string{
		fmt.Sprint(LiveConn{ID: s.ID, Conn: 2, Loop: 1, Ms: 2, Due: 1}),
		fmt.Sprint(LiveVerdict{ID: s.ID, Judged: true, Conns: 1}),
		fmt.Sprint(LiveConn{ID: s.ID, Conn: 2, Loop: 1, Ms: 2, Due: 2}),
		fmt.Sprint(LiveLag{Server: "loop-gnet", Loop: 1, Ms: 2, At: time.Unix(0, end.UnixNano())}),
	}
	var got []string
	for i, ev := range heard.heard {
		if _, ok := ev.(LiveVerdict); ok && i > 1 {
			continue // a second verdict, 250 ms on, on a starved machine
		}
		got = append(got, fmt.Sprint(ev))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the observer heard\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := r.observers[0].(*stepsHeard).n; n != 0 {
		t.Errorf("the steps' observer was told %d live samples as events", n)
	}
}

// stageFrames reads a stage recording's frames, each its events as
// recorded.
func stageFrames(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var fr stage.Frame
		if json.Unmarshal(sc.Bytes(), &fr) != nil || fr.Events == nil {
			continue // the schema line
		}
		var evs []string
		for _, raw := range fr.Events {
			evs = append(evs, string(raw))
		}
		out = append(out, evs)
	}
	return out
}

// liveRunner is a runner whose live data goes to the stage's hub.
func liveRunner(t *testing.T, o Options, dir string, hub *stage.Hub) *runner {
	t.Helper()
	return &runner{o: o, dir: dir, observers: []Observer{newStageSteps(o, dir, hub, stageKeys(hub), nil, nil, nil)}}
}

// TestLiveStalledByConnection: a connection first heard of after a verdict
// (a lower number than those judged) takes no other connection's stalled
// flag, and those judged keep their own until the next verdict. The flags
// were the last verdict's by position in the sorted connections, so one
// new connection shifted every flag after it by one.
func TestLiveStalledByConnection(t *testing.T) {
	judge := newLiveJudge(Step{ID: "stall-x-k1", Block: results.Block(100 * time.Millisecond)})
	// Connections 3-11 on loops 0-2 (3 to a loop); loop 1's (4, 7, 10)
	// wait the call, the others a fraction of a millisecond.
	for range 5 {
		for conn := 3; conn < 12; conn++ {
			w := 0.2
			if conn%3 == 1 {
				w = 150
			}
			judge.add(live.Probe{Conn: conn, Loop: conn % 3, WaitMs: w})
		}
	}
	judge.last = time.Time{} // the next probe brings a verdict
	if _, v := judge.add(live.Probe{Conn: 5, Loop: 2, WaitMs: 0.2}); v == nil || !v.Judged || v.Stalled != 3 {
		t.Fatalf("verdict %+v: want loop 1's 3 connections stalled", v)
	}
	judge.last = time.Now() // no verdict for what follows
	if ev, v := judge.add(live.Probe{Conn: 0, Loop: 0, WaitMs: 0.2}); v != nil || ev.Stalled {
		t.Errorf("connection 0, new since the verdict: stalled %v (verdict %+v): it was not judged", ev.Stalled, v)
	}
	for conn := 3; conn < 12; conn++ {
		ev, _ := judge.add(live.Probe{Conn: conn, Loop: conn % 3, WaitMs: 0.2})
		if want := conn%3 == 1; ev.Stalled != want {
			t.Errorf("connection %d after connection 0 came: stalled %v, the verdict said %v", conn, ev.Stalled, want)
		}
	}
}
