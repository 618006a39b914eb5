package watch

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// TestProcBusy: any process (a shell spinning) watched through /proc: its
// thread on a CPU most of the window, no frame, the hint for a runtime the
// kit does not know, and the line that says every busy thread is named.
func TestProcBusy(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 30000000 ]; do i=$((i+1)); done") // a CPU, for some tens of seconds
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	s := Watch(context.Background(), Target{PID: cmd.Process.Pid}, Options{Window: 500 * time.Millisecond})
	for _, l := range s.Lines() {
		t.Log(l)
	}
	if s.Source != culprit.SourceProc || s.Role != "threads" || s.Serving != 0 || len(s.Holds) == 0 || s.WindowNs < int64(400*time.Millisecond) {
		t.Fatalf("%+v", s)
	}
	if h := s.Holds[0]; h.State != "on a CPU" || len(h.Frames) != 0 || !strings.HasSuffix(h.Threads[0], "(main thread)") {
		t.Errorf("%s", s.Words())
	}
	if !strings.Contains(s.Hint, "perf top") || len(s.Limits) != 1 || !strings.Contains(s.Limits[0], "not known from /proc") {
		t.Errorf("hint %q, limits %q", s.Hint, s.Limits)
	}
	if s = Watch(context.Background(), Target{}, Options{}); len(s.Limits) != 1 || !strings.Contains(s.Limits[0], "pid=N") {
		t.Errorf("nothing to watch: %q", s.Limits)
	}
}

// TestWatchJVMRefusingAttach: a JVM started with -XX:+DisableAttachMechanism
// (LedgerService: 2 loops reading from the backend) cannot be recorded:
// that is said in one line, and /proc watches it instead: its loops in a
// read from the backend's peer.
func TestWatchJVMRefusingAttach(t *testing.T) {
	need(t, "javac", "java", "jcmd", "jfr")
	addr := backend(t)
	pid := startJava(t, addr, 2, 0, "-XX:+DisableAttachMechanism")
	s := Watch(context.Background(), Target{PID: pid}, Options{Window: time.Second})
	for _, l := range s.Lines() {
		t.Log(l)
	}
	if s.Source != culprit.SourceProc || len(s.Limits) == 0 || !strings.Contains(s.Limits[0], "does not support the attach mechanism") {
		t.Fatalf("source %q, limits %q", s.Source, s.Limits)
	}
	found := false
	for _, h := range s.Holds {
		if h.State == "in a system call (read)" && h.Peer == addr && h.Held == 2 && strings.HasPrefix(h.Threads[0], "nioEventLoopGro (tid ") {
			found = true
		}
	}
	if !found || !strings.Contains(s.Hint, "Flight Recorder") {
		t.Errorf("the loops' read from %s not found, or no hint: %q", addr, s.Lines())
	}
}
