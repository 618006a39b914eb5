package experiment

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// runTargets runs a short experiment on --target servers only (callers 4)
// and returns the run directory, its index and what it printed.
func runTargets(t *testing.T, edit func(o *Options)) (string, *results.Run, *bytes.Buffer) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Duration, o.Warmup, o.Servers, o.Conc, o.Out, o.Bin = time.Second, ms(200), nil, []int{4}, out, kit(t)
		edit(o)
	})
	var stdout bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, run, &stdout
}

// TestTargetNode: the Node.js example, started as a user would, measured
// with --target and nothing of the kit's: every phase that applies runs,
// and a blocked loop stalls exactly the connections on it (Node has one).
func TestTargetNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is missing in CI: .ci/run installs it (apt-get install nodejs)")
		}
		t.Skip("node is not installed (apt-get install nodejs); CI installs it")
	}
	addr := wiretest.FreeAddr(t)
	cmd := wiretest.Start(t, node, "../../examples/node/server.js", "--addr", addr, "--offload-workers", "8")
	// Node's own default block and delay are 5ms: the run asks for others,
	// and every request must carry them.
	out, run, stdout := runTargets(t, func(o *Options) {
		o.Phases, o.Block, o.StallBlock = []string{"sweep", "stall", "offload", "trace"}, blk(20), blk(60)
		o.Targets = []Target{{Name: "node", URL: "http://" + addr, Offload: 8, PID: cmd.Process.Pid}}
	})
	for _, m := range run.Measurements {
		if m.Status != "ok" {
			t.Errorf("%s: %s: %s", m.ID, m.Status, m.Reason)
		}
		if m.Server.Name != "node" || !m.Server.External || m.Server.Kind != "loop" || m.Server.Workers != 1 {
			t.Errorf("%s: server %+v", m.ID, m.Server)
		}
		if m.Cost != nil && (m.Cost.ServerNotMeasured || m.Cost.ServerCPUUsPerRequest <= 0) {
			t.Errorf("%s: with pid= the server's cost is measured: %+v", m.ID, m.Cost)
		}
	}
	if len(run.Params.Targets) != 1 || run.Params.Targets[0].URL != "http://"+addr {
		t.Errorf("params.targets %+v", run.Params.Targets)
	}
	if _, err := os.Stat(filepath.Join(out, "check-node.json")); err != nil {
		t.Errorf("the check is not kept: %v", err)
	}
	f := findings.Compute(out, run)
	if len(f.Stall) != 2 {
		t.Fatalf("stall rows %d, want k = 0 and 1", len(f.Stall))
	}
	// The phase places 3 connections on Node's one loop and expects all 3
	// to stall when it is blocked (their X-Loop), now that Node is asked
	// for the stall block (it once blocked its own 5ms default, and its
	// stall count came out 2 of 3 in one CI run).
	for _, r := range f.Stall {
		if r.Conns.Median() != 3 {
			t.Errorf("%s: %v connections, want 3", r.Step.ID, r.Conns)
		}
	}
	exactOrTooBusy(t, f)
	// Seen from outside (pid=): with its loop blocked, Node's main thread
	// is found held in its blocking call (Atomics.wait: a futex).
	for _, r := range f.Stall {
		if r.Step.K != 1 {
			continue
		}
		if len(r.Culprits) != 1 || r.Culprits[0].Thread != "node (main thread)" || r.Culprits[0].State != "futex" {
			t.Errorf("k=1: the outside view held %+v (said %q)", r.Culprits, r.Outside)
		}
		if !strings.Contains(stdout.String(), "k=1 node: held in futex: thread node (main thread)") {
			t.Errorf("the stall table does not name the held thread:\n%s", stdout.String())
		}
	}
	if len(f.Sweep) != 1 || f.Sweep[0].NominalCeiling != 50 {
		t.Errorf("sweep: ceiling %v, want 1 loop / 20ms = 50", f.Sweep)
	}
	// What the server says it blocked: the run's block in the sweep and
	// offload, the stall block in the stall and trace phases, not Node's
	// own 5ms nor the other phase's. A block never ends early; it may end
	// late on a busy machine (Atomics.wait woken late: 22.2ms for 20 beside
	// 4 noisy neighbours, which a 10 % bound failed), so the bound above
	// is half again the block, short of the other block asked (20 and 60).
	for _, g := range f.Groups {
		want := 20 * time.Millisecond
		if g.Step.Phase == "stall" || g.Step.Phase == "trace" {
			want = 60 * time.Millisecond
		}
		for _, lr := range g.Load {
			if got := time.Duration(lr.Load.MeanBlockedNs); lr.Load.BlockedSamples == 0 || got < want || got > want*3/2 {
				t.Errorf("%s: the server blocked %s (X-Blocked-Ns, %d samples), want the %s asked", g.Step.ID, got, lr.Load.BlockedSamples, want)
			}
		}
	}
	for _, want := range []string{"checking node at http://" + addr, "target node at http://" + addr, "1 loop (learned: distinct X-Loop values)", " of 3 ", "node"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the terminal lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestTargetWithoutFacts: the kit's pool server started by hand and named
// with no facts: workers unknown, so the cliff skips it and says why, and
// without pid= the server's cost says "not measured (external)".
func TestTargetWithoutFacts(t *testing.T) {
	addr, _ := wiretest.StartServer(t, "../../poolserver")
	out, run, stdout := runTargets(t, func(o *Options) {
		o.Phases, o.Targets = []string{"sweep", "cliff"}, []Target{{Name: "mine", URL: "http://" + addr}}
	})
	if len(run.Measurements) != 1 || run.Measurements[0].Status != "ok" || run.Measurements[0].Server.Kind != "other" {
		t.Fatalf("measurements %+v", run.Measurements)
	}
	m := run.Measurements[0]
	if m.Use == nil || m.Use.Server != nil {
		t.Fatalf("/proc readings %+v: want the machine's, not the server's (no pid=)", m.Use)
	}
	lr, err := results.Read(filepath.Join(out, m.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	if c := findings.CostOf(m, lr); c == nil || !c.ServerNotMeasured || c.ServerCPUUsPerRequest != 0 {
		t.Fatalf("cost %+v", c)
	}
	for _, want := range []string{"not measured (external)", "give workers=N", "no X-Loop", "unknown"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the terminal lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestTargetRefused: a server whose /slow does not block fails a check
// every phase needs: refused before any load, with the reason, exit 2.
func TestTargetRefused(t *testing.T) {
	bin := kit(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler-Start", strconv.FormatInt(time.Now().UnixNano(), 10))
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Servers, o.Targets, o.Out, o.Bin = nil, []Target{{Name: "bad", URL: srv.URL}}, out, bin
	})
	var stdout, stderr bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "slow-blocks FAIL") || !strings.Contains(stderr.String(), "does not speak the protocol") {
		t.Fatalf("the refusal does not say why:\n%s", stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run left its directory behind: it measured nothing, and report --compare trips on it")
	}
}

// TestTargetDies: a target that ends mid-run fails the measurement it was
// in, with why, and the ones after it; the run still ends with its tables.
func TestTargetDies(t *testing.T) {
	bin := kit(t)
	addr, cmd := wiretest.StartServer(t, "../../poolserver")
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Duration, o.Warmup, o.Servers, o.Phases, o.Conc = 2*time.Second, ms(200), nil, []string{"sweep"}, []int{4, 16}
		o.Targets, o.Out, o.Bin = []Target{{Name: "mine", URL: "http://" + addr, Workers: 200, PID: cmd.Process.Pid}}, out, bin
	})
	go func() {
		time.Sleep(1500 * time.Millisecond) // after the check, inside the first measurement
		_ = cmd.Process.Kill()
	}()
	var stdout bytes.Buffer
	code := runCode(context.Background(), o, &stdout, &stdout)
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, stdout.String())
	}
	if code != 1 || run.Partial {
		t.Errorf("exit %d partial %v, want 1 (nothing measured) and a finished run", code, run.Partial)
	}
	for _, m := range run.Measurements {
		if m.Status != "failed" || !strings.Contains(m.Reason, "no longer exists") {
			t.Errorf("%s: %s: %s", m.ID, m.Status, m.Reason)
		}
	}
	if !strings.Contains(stdout.String(), "Not measured") {
		t.Errorf("the tables do not say what was not measured:\n%s", stdout.String())
	}
}

// TestTargetNothingListens: a target where nothing listens is refused in
// one line that says so, not with a refused connection per phase.
func TestTargetNothingListens(t *testing.T) {
	addr := wiretest.FreeAddr(t)
	o := opts(t, func(o *Options) {
		quick(o)
		o.Servers, o.Targets, o.Out, o.Bin = nil, []Target{{Name: "x", URL: "http://" + addr}}, filepath.Join(t.TempDir(), "run"), kit(t)
	})
	var stdout, stderr bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "nothing is listening at "+addr) || strings.Count(stderr.String(), "refused") > 1 || strings.Contains(stderr.String(), "leave those phases out") {
		t.Errorf("the refusal:\n%s", stderr.String())
	}
}

// TestTargetWrongPID: a pid= that is not the process listening at the
// target's address (pid 1, or another process of the user's) is refused
// in one line before any load, so no figure comes from the wrong process;
// the server's own pid is taken.
func TestTargetWrongPID(t *testing.T) {
	bin := kit(t)
	addr, cmd := wiretest.StartServer(t, "../../poolserver")
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	for _, pid := range []int{1, other.Process.Pid} {
		out := filepath.Join(t.TempDir(), "run")
		o := opts(t, func(o *Options) {
			quick(o)
			o.Servers, o.Phases, o.Conc = nil, []string{"sweep"}, []int{4}
			o.Targets, o.Out, o.Bin = []Target{{Name: "mine", URL: "http://" + addr, Workers: 200, PID: pid}}, out, bin
		})
		var stdout, stderr bytes.Buffer
		if code := runCode(context.Background(), o, &stdout, &stderr); code != 2 {
			t.Fatalf("pid=%d: exit %d, want 2\n%s%s", pid, code, stdout.String(), stderr.String())
		}
		if want := fmt.Sprintf("pid=%d does not hold the listening socket at %s", pid, addr); !strings.Contains(stderr.String(), want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("pid=%d: the refusal is not one line saying %q:\n%s", pid, want, stderr.String())
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("pid=%d: a refused run left its directory", pid)
		}
	}
	if _, err := tryOpts(func(o *Options) { o.Targets = []Target{{Name: "mine", URL: "http://" + addr, PID: cmd.Process.Pid}} }); err != nil {
		t.Errorf("the server's own pid: %v", err)
	}
}

// TestTargetFrozen: a target that stops answering mid-run (SIGSTOP) fails
// the measurements it answered nothing in, saying so, and the run exits
// 1; it gave rows marked ok at 0 req/s and exit 0.
func TestTargetFrozen(t *testing.T) {
	bin := kit(t)
	addr, cmd := wiretest.StartServer(t, "../../poolserver")
	defer func() { _ = cmd.Process.Signal(syscall.SIGCONT) }()
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Duration, o.Warmup, o.Servers, o.Phases, o.Conc = time.Second, ms(200), nil, []string{"sweep"}, []int{4, 8}
		o.Targets, o.Out, o.Bin = []Target{{Name: "mine", URL: "http://" + addr, Workers: 200, PID: cmd.Process.Pid}}, out, bin
	})
	go func() {
		// Frozen once the first measurement is in.
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if run, err := results.ReadRun(out); err == nil && run.Measurements[0].Status == "ok" {
				_ = cmd.Process.Signal(syscall.SIGSTOP)
				return
			}
		}
	}()
	var stdout bytes.Buffer
	code := runCode(context.Background(), o, &stdout, &stdout)
	_ = cmd.Process.Signal(syscall.SIGCONT)
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, stdout.String())
	}
	if code != 1 {
		t.Errorf("exit %d, want 1: a measurement failed", code)
	}
	first, second := run.Measurements[0], run.Measurements[1]
	if first.Status != "ok" || second.Status != "failed" || !strings.Contains(second.Reason, "answered no request") {
		t.Errorf("first %s %q, second %s %q", first.Status, first.Reason, second.Status, second.Reason)
	}
}

// TestTargetStartingLate: a target started in the background a moment
// before the run (the walk-throughs' `server & ./run.sh --target ...`) is
// waited for, saying so, not refused as if nothing would ever listen.
func TestTargetStartingLate(t *testing.T) {
	addr := wiretest.FreeAddr(t)
	o := opts(t, func(o *Options) {
		quick(o)
		o.Servers, o.Targets, o.Out, o.Bin = nil, []Target{{Name: "x", URL: "http://" + addr}}, filepath.Join(t.TempDir(), "run"), kit(t)
	})
	go func() {
		time.Sleep(500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return // the test below says what it saw
		}
		srv := &http.Server{Handler: http.NotFoundHandler()}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}()
	var stdout, stderr bytes.Buffer
	runCode(context.Background(), o, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if strings.Contains(out, "nothing is listening") || !strings.Contains(out, "waiting for x to listen at "+addr) {
		t.Errorf("a target listening 0.5 s after the run started:\n%s", out)
	}
}
