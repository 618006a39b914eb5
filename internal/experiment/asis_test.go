package experiment

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
	"github.com/bystander-kit/bystander/internal/results"
)

// TestAsIsFlags: --load and --bystander go together, with a --target,
// without --sweep-endpoint or --stage; a bad REQUEST is one line (a
// targets file's with its line number) before anything runs; the plan
// adds 1 caller to the sweep of a server measured as it is, and only to
// it.
func TestAsIsFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("GET /a\n\nGET /b\nX-Tag 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nobody := filepath.Join(dir, "nobody.txt")
	if err := os.WriteFile(nobody, []byte("POST /login\n@missing.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tgt := []string{"--target", "svc=http://127.0.0.1:8090"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--load", "POST /login"}, "--load goes with --bystander"},
		{[]string{"--bystander", "GET /health"}, "--bystander goes with --load"},
		{[]string{"--load", "POST /login", "--bystander", "GET /health", "--sweep-endpoint", "/slow"}, "--load goes without --sweep-endpoint"},
		{[]string{"--load", "POST /login", "--bystander", "GET /health", "--stage"}, "your service alone: add --servers="},
		{[]string{"--load", "@" + bad, "--bystander", "GET /health"}, "bad.txt:4:"},
		{[]string{"--load", "GET /x", "--bystander", "GET https://127.0.0.1:8090/h"}, "plain http://"},
		{[]string{"--load", "GET http://127.0.0.1:9/x", "--bystander", "GET /h"}, "not the target"},
		{[]string{"--load", "@" + nobody, "--bystander", "GET /h"}, "nobody.txt:2: "},
		{[]string{"--load", "GET /x", "--bystander", "GET /h", "--target", "tls=https://127.0.0.1:8443"}, "plain HTTP"},
	} {
		_, err := ParseFlags(append(slices.Clone(tgt), tc.args...), io.Discard, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "run.sh: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
	}
	// pprof=: a Go service's profiler, by its listener, under the
	// target's URL's rules, with --load only.
	for _, tc := range []struct{ target, want string }{
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060", ""},
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060/debug/pprof/", ""},
		{"svc=http://127.0.0.1:8090,pprof=https://127.0.0.1:6060", "plain http:// port"},
		{"svc=http://127.0.0.1:8090,pprof=http://u:secret@127.0.0.1:6060", "credentials"},
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060/debug/vars", "the listener that serves /debug/pprof/"},
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060?seconds=9", "the listener that serves /debug/pprof/"},
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1", "the listener that serves /debug/pprof/"},
		{"svc=http://127.0.0.1:8090,pprof=", "the listener that serves /debug/pprof/"},
		{"svc=http://127.0.0.1:8090,pprof=http://10.1.2.3:6060", "not a loopback address"},
	} {
		o, err := ParseFlags([]string{"--target", tc.target, "--load", "GET /x", "--bystander", "GET /h"}, io.Discard, now)
		switch {
		case tc.want == "" && (err != nil || o.Targets[0].Server.Pprof != "http://127.0.0.1:6060" && o.Targets[0].Server.Pprof != "http://127.0.0.1:6060/debug/pprof"):
			t.Errorf("%s: %v, targets %+v", tc.target, err, o.Targets)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "run.sh: ") || strings.Contains(err.Error(), "secret")):
			t.Errorf("%s: %v, want one line with %q", tc.target, err, tc.want)
		}
	}
	if _, err := ParseFlags([]string{"--target", "svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060"}, io.Discard, now); err == nil || !strings.Contains(err.Error(), "pprof= watches a service measured as it is") {
		t.Errorf("pprof= without --load: %v", err)
	}
	if _, err := ParseFlags([]string{"--load", "GET /x", "--bystander", "GET /h"}, io.Discard, now); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("--load without a --target: %v", err)
	}

	o, err := ParseFlags(append(slices.Clone(tgt), "--servers", "pool", "--phases", "sweep,stall", "--conc", "4,16",
		"--load", "POST /login", "--bystander", "GET /health"), io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	p := BuildPlan(o)
	want := []string{"sweep-svc-c1", "sweep-pool-c4", "sweep-svc-c4", "sweep-pool-c16", "sweep-svc-c16",
		"stall-pool-k0", "stall-pool-k4", "stall-svc-k0", "stall-svc-k4"}
	if got := ids(p); !slices.Equal(got, want) {
		t.Fatalf("steps %v\nwant %v", got, want)
	}
	// Given its profiler, its top step is measured again, watched, right
	// after it, its warm-up the run's (a trace starts at once; a JVM's
	// Flight Recorder does not: TestAsIsNetty).
	ow, err := ParseFlags([]string{"--target", "svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060", "--servers=", "--phases", "sweep", "--conc", "4,16",
		"--load", "POST /login", "--bystander", "GET /health"}, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
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
	out, run, stdout := runTargets(t, "--phases", "sweep,stall", "--conc", "3", "--target", "svc="+srv.URL+",pprof="+srv.URL,
		"--load", "POST /login", "--bystander", "GET /health")
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
	if w := f.AsIs[0].Watch; w.Watched() || w.Step == nil || !w.Step.Throughput.OK() || len(w.Lines()) != 1 || !strings.HasPrefix(w.Lines()[0], limit) {
		t.Errorf("watch %q", w.Lines())
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
	o, err := ParseFlags([]string{"--quick", "--servers=", "--target", "svc=" + srv.URL, "--load", "POST /logon", "--bystander", "GET /health",
		"--out", out, "--bin", kit(t)}, io.Discard, time.Now())
	if err != nil {
		t.Fatal(err)
	}
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
	o, err := ParseFlags([]string{"--quick", "--servers=", "--target", "svc=" + srv.URL, "--load", "GET /a", "--bystander", "GET /b",
		"--out", out, "--bin", kit(t)}, io.Discard, time.Now())
	if err != nil {
		t.Fatal(err)
	}
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
	out, run, stdout := runTargets(t, "--phases", "sweep", "--conc", "2", "--target", "svc="+srv.URL, "--load", "POST /login", "--bystander", "GET /health")
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
