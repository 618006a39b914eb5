package experiment

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestAsIsPlan: the plan adds 1 caller to the sweep of a server measured
// as it is, and only to it (the flags of --load and --bystander:
// internal/cmd/experiment's TestAsIsFlags).
func TestAsIsPlan(t *testing.T) {
	o := opts(t, func(o *Options) {
		o.Targets, o.Servers, o.Phases, o.Conc = []Target{{Name: "svc", URL: "http://127.0.0.1:8090"}}, []string{"pool"}, []string{"sweep", "stall"}, []int{4, 16}
		o.Load, o.Bystander = "POST /login", "GET /health"
	})
	p := BuildPlan(o)
	want := []string{"sweep-svc-c1", "sweep-pool-c4", "sweep-svc-c4", "sweep-pool-c16", "sweep-svc-c16",
		"stall-pool-k0", "stall-pool-k4", "stall-svc-k0", "stall-svc-k4"}
	if got := ids(p); !slices.Equal(got, want) {
		t.Fatalf("steps %v\nwant %v", got, want)
	}
	// Given its profiler, its top step is measured again, watched, right
	// after it, its warm-up the run's (a trace starts at once; a JVM's
	// Flight Recorder does not: TestAsIsNetty).
	ow := opts(t, func(o *Options) {
		o.Targets = []Target{{Name: "svc", URL: "http://127.0.0.1:8090", Pprof: "http://127.0.0.1:6060"}}
		o.Servers, o.Phases, o.Conc = nil, []string{"sweep"}, []int{4, 16}
		o.Load, o.Bystander = "POST /login", "GET /health"
	})
	pw := BuildPlan(ow)
	if got, want := ids(pw), []string{"sweep-svc-c1", "sweep-svc-c4", "sweep-svc-c16", "sweep-svc-c16-watched"}; !slices.Equal(got, want) {
		t.Fatalf("steps %v\nwant %v", got, want)
	}
	if w := pw.Steps[3]; w.Variant != results.Watched || w.Conc != 16 || w.Warmup != ow.Warmup || w.Duration != ow.Duration || w.Server.Pprof != "http://127.0.0.1:6060" {
		t.Errorf("watched step %+v", w)
	}
	var plan bytes.Buffer
	pw.Describe(&plan)
	if !strings.Contains(plan.String(), "its top step (16 callers) is measured again, watched through its execution trace from http://127.0.0.1:6060") {
		t.Errorf("the plan does not say the watch:\n%s", plan.String())
	}
	for _, s := range p.Steps {
		if s.Server.Name != "svc" {
			if s.Server.AsIs() {
				t.Errorf("%s: the kit's server is measured as it is", s.ID)
			}
			continue
		}
		if s.Server.Load != "POST /login" || s.Server.Bystander != "GET /health" || s.Block != 0 {
			t.Errorf("%s: server %+v", s.ID, s.Server)
		}
		if s.Phase == "sweep" && s.Endpoint != "POST /login" {
			t.Errorf("%s: endpoint %q", s.ID, s.Endpoint)
		}
	}
}

// service is a net/http service written without the kit in mind: a
// POST /login that takes a while, a GET /health, anything else 404; it
// keeps what it was asked.
type service struct {
	mu    sync.Mutex
	asked map[string]int
}

func startService(t *testing.T, login time.Duration) (*service, *httptest.Server) {
	svc := &service{asked: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc.mu.Lock()
		svc.asked[r.Method+" "+r.URL.Path]++
		svc.mu.Unlock()
		switch {
		case r.Method == "POST" && r.URL.Path == "/login":
			time.Sleep(login)
			fmt.Fprintln(w, `{"token":"t"}`)
		case r.Method == "GET" && r.URL.Path == "/health":
			fmt.Fprintln(w, "ok")
		default:
			http.Error(w, "no such page: "+r.URL.Path, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return svc, srv
}

// TestTargetAsIs: a service that speaks no protocol, measured as it is:
// checked by answering each request once, swept at 1 caller and at
// --conc with its own POST, its bystander probed every 50 ms and on 12
// connections meanwhile, in one window; the phases that need the
// protocol skip it, one line each; run.json says what was asked.
func TestTargetAsIs(t *testing.T) {
	svc, srv := startService(t, 2*time.Millisecond)
	// pprof= names a listener that answers no trace (the service's own,
	// which answers 404): the watched step says so in one line and the run
	// goes on.
	out, run, stdout := runTargets(t, func(o *Options) {
		o.Phases, o.Conc, o.Targets = []string{"sweep", "stall"}, []int{3}, []Target{{Name: "svc", URL: srv.URL, Pprof: srv.URL}}
		o.Load, o.Bystander = "POST /login", "GET /health"
	})
	said := stdout.String()
	for _, line := range []string{"as it is", "the stall phase skips it: it needs the protocol", "loop placement by X-Loop is skipped"} {
		if !strings.Contains(said, line) {
			t.Errorf("the run does not say %q:\n%s", line, said)
		}
	}
	var sweeps []string
	for _, m := range run.Measurements {
		if m.Server.Load != "POST /login" || m.Server.Bystander != "GET /health" {
			t.Errorf("%s: server %+v", m.ID, m.Server)
		}
		switch m.Phase {
		case "stall":
			if m.Status != "skipped" || !strings.Contains(m.Reason, "protocol") {
				t.Errorf("%s: %s: %s", m.ID, m.Status, m.Reason)
			}
			continue
		}
		sweeps = append(sweeps, m.ID)
		if m.Status != "ok" || m.LoadFile == "" || m.ProbeFile == "" || m.PerConnFile == "" {
			t.Fatalf("%s: %s %s, files %q %q %q", m.ID, m.Status, m.Reason, m.LoadFile, m.ProbeFile, m.PerConnFile)
		}
		if m.Use == nil || m.Use.Conns == nil || m.Use.Conns.CPUNs <= 0 {
			t.Errorf("%s: the 12-connection prober's use was not read: %+v", m.ID, m.Use)
		}
		lr, err := results.ReadResultIn(out, m.LoadFile)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := results.ReadResultIn(out, m.PerConnFile)
		if err != nil {
			t.Fatal(err)
		}
		fast, err := results.ReadResultIn(out, m.ProbeFile)
		if err != nil {
			t.Fatal(err)
		}
		if lr.Params.Request != "POST /login" || lr.Params.Conns != m.Conc || lr.Load.Requests == 0 || results.TotalErrors(lr.Errors) != 0 {
			t.Errorf("%s: load %q at %d, %d requests, errors %v", m.ID, lr.Params.Request, lr.Params.Conns, lr.Load.Requests, lr.Errors)
		}
		if pc.Params.Request != "GET /health" || len(pc.PerConn.Conns) != 12 || pc.Params.DelayNs != 0 {
			t.Errorf("%s: perconn %q, %d conns, delay %d", m.ID, pc.Params.Request, len(pc.PerConn.Conns), pc.Params.DelayNs)
		}
		if fast.Params.Request != "GET /health" || fast.Probe.Completed == 0 {
			t.Errorf("%s: interval %q, %d answered", m.ID, fast.Params.Request, fast.Probe.Completed)
		}
		// One window for the three: the clocks were given one moment.
		if pc.Params.StartAtUnixNs == 0 || pc.Params.StartAtUnixNs != lr.Params.StartAtUnixNs || fast.Params.StartAtUnixNs != lr.Params.StartAtUnixNs {
			t.Errorf("%s: start-at %d, %d, %d", m.ID, lr.Params.StartAtUnixNs, fast.Params.StartAtUnixNs, pc.Params.StartAtUnixNs)
		}
	}
	if !slices.Equal(sweeps, []string{"sweep-svc-c1", "sweep-svc-c3", "sweep-svc-c3-watched"}) {
		t.Errorf("sweep steps %v, want 1 caller added to --conc 3, and its top step watched", sweeps)
	}
	// The limit, once at once and once in the tables, in one line; the
	// watched step's figures kept.
	limit := "watch: no Go execution trace: GET " + srv.URL + "/debug/pprof/trace?seconds="
	if n := strings.Count(said, limit); n != 2 || !strings.Contains(said, "answered 404 Not Found: no such page: /debug/pprof/trace") {
		t.Errorf("the limit said %d times, want 2:\n%s", n, said)
	}
	f, err := findings.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if w, lines := f.AsIs[0].Watch, prose.AsIsWatchLines(f.AsIs[0]); w.Watched() || w.Step == nil || !w.Step.Throughput.OK() || len(lines) != 1 || !strings.HasPrefix(lines[0], limit) {
		t.Errorf("watch %q", lines)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	for k := range svc.asked {
		if k != "POST /login" && k != "GET /health" && !strings.HasPrefix(k, "GET /debug/pprof/") { // pprof= asked for those
			t.Errorf("the service was asked %s, which no flag asked for", k)
		}
	}
}

// TestTargetAsIsRefused: a request the service does not answer 2xx or 3xx
// at the check is one line with its status, before any load, and the run
// leaves nothing behind.
func TestTargetAsIsRefused(t *testing.T) {
	_, srv := startService(t, 0)
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Servers, o.Targets, o.Load, o.Bystander = nil, []Target{{Name: "svc", URL: srv.URL}}, "POST /logon", "GET /health"
		o.Out, o.Bin = out, kit(t)
	})
	var stdout, stderr bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", code, stdout.String(), stderr.String())
	}
	line := strings.TrimSuffix(stderr.String(), "\n")
	if !strings.Contains(line, `--target svc: --load's request POST /logon was answered 404: "no such page: /logon": give requests`) || strings.Contains(line, "\n") {
		t.Errorf("the refusal: %q", line)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run left its directory behind")
	}
}

// TestTargetAsIsCloses: a service that closes the connection after every
// answer is refused at the check, in one line that says so and what to
// do: the bystanders' connections would each be a new one, on whatever
// thread the service deals it, and no connection could be said to stall.
func TestTargetAsIsCloses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Servers, o.Targets, o.Load, o.Bystander = nil, []Target{{Name: "svc", URL: srv.URL}}, "GET /a", "GET /b"
		o.Out, o.Bin = out, kit(t)
	})
	var stdout, stderr bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", code, stdout.String(), stderr.String())
	}
	line := strings.TrimSuffix(stderr.String(), "\n")
	if !strings.Contains(line, "--target svc: it closed the connection after every answer") || !strings.Contains(line, "keep-alive") || strings.Contains(line, "\n") {
		t.Errorf("the refusal: %q", line)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run left its directory behind")
	}
}

// TestTargetAsIsAnswersFail: a service that answers its own request 503
// once in three under the load is measured all the same: the answers that
// failed are counted apart and said, the measurement is kept, and its
// figures are the answered requests'.
func TestTargetAsIsAnswersFail(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" && n.Add(1)%3 == 0 {
			http.Error(w, "overloaded, try later", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	out, run, stdout := runTargets(t, func(o *Options) {
		o.Phases, o.Conc, o.Targets = []string{"sweep"}, []int{2}, []Target{{Name: "svc", URL: srv.URL}}
		o.Load, o.Bystander = "POST /login", "GET /health"
	})
	for _, m := range run.Measurements {
		if m.Status != "ok" || m.LoadFile == "" {
			t.Fatalf("%s: %s: %s", m.ID, m.Status, m.Reason)
		}
		lr, err := results.ReadResultIn(out, m.LoadFile)
		if err != nil {
			t.Fatal(err)
		}
		if bad := results.TotalErrors(lr.Errors); bad == 0 || lr.Load.Requests == 0 {
			t.Errorf("%s: %d answered, %d not", m.ID, lr.Load.Requests, bad)
		}
		if !slices.ContainsFunc(m.Notes, func(s string) bool { return strings.Contains(s, "bad_status") }) {
			t.Errorf("%s: the notes do not say the failed answers: %q", m.ID, m.Notes)
		}
	}
	if !strings.Contains(stdout.String(), "not answered 2xx or 3xx") {
		t.Errorf("the tables do not say the failed answers:\n%s", stdout.String())
	}
}
