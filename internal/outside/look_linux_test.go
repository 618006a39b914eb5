package outside

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestLookSocketRead: a thread of this process blocked in read() on a TCP
// socket is found in read, with the socket's peer.
func TestLookSocketRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	tids := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine
		tids <- syscall.Gettid()
		buf := make([]byte, 1)
		syscall.Read(fd, buf) // blocks until the peer closes
		close(done)
	}()
	tid := <-tids
	defer func() { peer.Close(); <-done; syscall.Close(fd) }()
	want := fmt.Sprintf("socket to 127.0.0.1:%d", port)
	var th Thread
	for i := 0; i < 100; i++ { // until the read has begun
		l, limit, err := LookAt(os.Getpid())
		if err != nil || limit != "" {
			t.Fatal(err, limit)
		}
		for _, x := range l.Threads {
			if x.TID == tid {
				th = x
			}
		}
		if th.FD == want {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	nr, _ := strconv.Atoi(th.Syscall)
	if p := placeOf(th); callName(nr) != "read" && callName(nr) != "recvfrom" || th.FD != want || p.words() != callName(nr)+" on "+want {
		t.Errorf("thread %+v (%s), want a read on %s", th, placeOf(th).words(), want)
	}
}

// TestLookSleepingChild: a child asleep is found in its sleep, named.
func TestLookSleepingChild(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var l Look
	for i := 0; i < 100; i++ {
		var err error
		if l, _, err = LookAt(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if len(l.Threads) == 1 && placeOf(l.Threads[0]).kind == "call" && strings.Contains(placeOf(l.Threads[0]).call, "sleep") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(l.Threads) != 1 || l.Threads[0].Comm != "sleep" || !strings.Contains(placeOf(l.Threads[0]).words(), "nanosleep") {
		t.Errorf("%+v", l.Threads)
	}
}

// TestLookUnprivileged: a user who may not trace the process (here: not
// its owner) is told so in one line, and still sees each thread's name and
// state (the kernel hides its wait too: wchan reads 0). Run as root, it
// runs this test's binary again as nobody.
func TestLookUnprivileged(t *testing.T) {
	if pid := os.Getenv("OUTSIDE_LOOK_PID"); pid != "" { // the unprivileged side
		n, _ := strconv.Atoi(pid)
		l, limit, err := LookAt(n)
		if err != nil {
			fmt.Println("ERR", err)
			return
		}
		b, _ := json.Marshal(struct {
			Look  Look
			Limit string
		}{l, limit})
		fmt.Println(string(b))
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a side as another user")
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	// The test binary, where nobody may run it.
	dir, err := os.MkdirTemp("", "outside-nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "outside.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // into its sleep
	cmd := exec.Command(bin, "-test.run", "^TestLookUnprivileged$")
	cmd.Env = append(os.Environ(), "OUTSIDE_LOOK_PID="+strconv.Itoa(sleeper.Process.Pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got struct {
		Look  Look
		Limit string
	}
	line, _, _ := strings.Cut(string(out), "\n")
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(got.Limit, "permission denied") || len(got.Look.Threads) != 1 {
		t.Fatalf("as nobody: %+v", got)
	}
	th := got.Look.Threads[0]
	if th.Syscall != "" || th.State != "S" || th.Comm != "sleep" || th.RunNs <= 0 {
		t.Errorf("as nobody: %+v", th)
	}
	if p := placeOf(th); p.busy() {
		t.Errorf("as nobody, a sleep judged %+v", p)
	}
}

// TestNodeLoopHeld: the Node.js example's one loop, blocked by back-to-back
// /slow calls (200 ms each: a busy machine slows the callers, not the
// call), is found held in its blocking call (a futex: Atomics.wait)
// by a trace like the kit's, and nothing else is.
func TestNodeLoopHeld(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is missing in CI: .ci/run installs it")
		}
		t.Skip("node is not installed (apt-get install nodejs)")
	}
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(node, "../../examples/node/server.js", "--addr", "127.0.0.1:0", "--offload-workers", "1", "--ready-file", ready)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	var info struct{ Addr string }
	for i := 0; i < 200; i++ {
		if b, err := os.ReadFile(ready); err == nil && json.Unmarshal(b, &info) == nil && info.Addr != "" {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if info.Addr == "" {
		t.Fatal("the node server never said it was ready")
	}
	// Once it has served a request and rested, it waits for the next in
	// its event wait: the look before the blockers come sees that.
	if r, err := http.Get("http://" + info.Addr + "/fast"); err == nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	// Node starts its worker threads after it listens, its main thread
	// waiting on them (in a futex) meanwhile: seconds on a busy machine.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		l, _, err := LookAt(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(l.Threads, func(th Thread) bool { return th.TID == cmd.Process.Pid }); i >= 0 && placeOf(l.Threads[i]).kind == "idle" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node's main thread never rested in its event wait")
		}
	}
	ctx := context.Background()
	tr := New("node", cmd.Process.Pid, time.Time{})
	tr.LookBefore(ctx, 3, 20*time.Millisecond)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r, err := c.Get("http://" + info.Addr + "/slow?block=200ms"); err == nil {
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	tr.LookDuring(ctx, 8, 40*time.Millisecond, time.Time{})
	close(stop)
	wg.Wait()
	v := Decide(tr)
	if len(v.Held) != 1 || v.Held[0].Thread != "node (main thread)" || v.Held[0].State != "futex" {
		for _, l := range append(tr.Before, tr.During...) {
			for _, th := range l.Threads {
				if th.TID == tr.PID {
					t.Logf("%d: %+v %s", l.TimeNs/1e6%100000, th, placeOf(th).words())
				}
			}
		}
		t.Fatalf("held %+v\nnotes %q", v.Held, v.Notes)
	}
	t.Log(v.Held[0].Words())
}

// TestHexAddr: /proc/net/tcp's addresses, v4 and v6 (a v4-mapped one
// shown as v4).
func TestHexAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1538":                         "127.0.0.1:5432",
		"0000000000000000FFFF00000100007F:1F90": "127.0.0.1:8080",
		"00000000000000000000000001000000:0050": "[::1]:80",
	} {
		got, ok := hexAddr(in)
		if !ok || got.String() != want {
			t.Errorf("%s: %v %v, want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "zz00007F:1538", "0100007F:123456", "01:0050"} {
		if _, ok := hexAddr(bad); ok {
			t.Errorf("%q read", bad)
		}
	}
}

// TestLooksStopWithTheBlockers: no look is taken that would end after the
// blockers stop; the trace says there were fewer.
func TestLooksStopWithTheBlockers(t *testing.T) {
	tr := New("self", os.Getpid(), time.Time{})
	tr.LookDuring(context.Background(), 8, 20*time.Millisecond, time.Now().Add(70*time.Millisecond))
	if len(tr.During) == 0 || len(tr.During) >= 8 {
		t.Errorf("%d looks in 70 ms at 20 ms apart", len(tr.During))
	}
	if len(tr.Limits) != 1 || !strings.Contains(tr.Limits[0], "fewer looks") {
		t.Errorf("limits %q", tr.Limits)
	}
	if last := tr.During[len(tr.During)-1].TimeNs; last > time.Now().UnixNano() {
		t.Error("a look from the future")
	}
}
