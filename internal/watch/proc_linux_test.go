package watch

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/outside"
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

// procLooksOf is ten looks 20 ms apart of a process (pid 100) whose main
// thread spins, two "worker" threads (sharing a name) of which one reads
// a socket at every look and the other waits for work, and a thread in a
// futex; its CPU times at the first and last look.
func procLooksOf() []outside.Look {
	read, futex, epoll := strconv.Itoa(unix.SYS_READ), strconv.Itoa(unix.SYS_FUTEX), strconv.Itoa(unix.SYS_EPOLL_PWAIT)
	var looks []outside.Look
	for i := range 10 {
		ms := int64(i) * 20e6
		looks = append(looks, outside.Look{TimeNs: 1e9 + ms, Threads: []outside.Thread{
			{TID: 100, Comm: "app", Syscall: "running", RunNs: ms},
			{TID: 101, Comm: "worker", Syscall: read, FD: "socket to 127.0.0.1:5432", RunNs: ms / 100},
			{TID: 102, Comm: "worker", Syscall: epoll},
			{TID: 103, Comm: "pool", Syscall: futex},
		}})
	}
	return looks
}

// TestProcHolds: the main thread on a CPU for its CPU time, the reading
// worker in its read for the whole window, its peer apart and its name
// told from its namesake's by its id; a wait for work and a futex are not
// holds. Looking at the main thread alone names only it.
func TestProcHolds(t *testing.T) {
	looks := procLooksOf()
	window := looks[9].TimeNs - looks[0].TimeNs
	got := map[string]culprit.Hold{}
	for _, h := range procHolds(looks, 100, 0, window) {
		if len(h.Threads) != 1 {
			t.Fatalf("%+v", h)
		}
		got[h.Threads[0]+": "+h.State] = h
	}
	cpu, read := got["app (main thread): on a CPU"], got["worker (tid 101): in a system call (read)"]
	if len(got) != 2 || cpu.HeldNs != window || read.HeldNs != window || read.Peer != "127.0.0.1:5432" {
		t.Errorf("holds %+v", got)
	}
	if hs := procHolds(looks, 100, 100, window); len(hs) != 1 || hs[0].State != "on a CPU" {
		t.Errorf("the main thread alone: %+v", hs)
	}
}

// TestProcSteps: the steps of procHolds on their own: the CPU time over
// the window of the threads there at both ends, names with an id where
// the kernel's are shared, and the looks but the last counted by place.
func TestProcSteps(t *testing.T) {
	looks := procLooksOf()
	first, last := looks[0], looks[9]
	last.Threads = append(last.Threads, outside.Thread{TID: 104, Comm: "late", RunNs: 5e6})
	if ran := cpuOver(first, last); len(ran) != 4 || ran[100] != 180e6 || ran[101] != 18e5 || ran[104] != 0 {
		t.Errorf("cpu %v", ran)
	}
	names := threadNames(last, 100)
	if names[100] != "app (main thread)" || names[101] != "worker (tid 101)" || names[102] != "worker (tid 102)" || names[104] != "late" {
		t.Errorf("names %v", names)
	}
	found := spotsIn(looks, 0)
	sp := spot{state: "in a system call (read)", peer: "127.0.0.1:5432"}
	if len(found) != 1 || found[101][sp] != 9 {
		t.Errorf("spots %v", found)
	}
	looks[0].Threads[1].FD = "/var/log/app.log"
	if found := spotsIn(looks, 0); found[101][spot{state: "in a system call (read) on /var/log/app.log"}] != 1 {
		t.Errorf("a file's read: %v", found)
	}
}
