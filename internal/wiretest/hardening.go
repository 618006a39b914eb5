package wiretest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/proc"
)

// What every server the kit starts must survive, whatever library it is
// built on: one hostile client or a machine out of descriptors. Each
// server's tests run these on each of its engines; a library that cannot
// be made to pass one is kept out of the defaults, and its tests say why.

// PeakRSS is a process's peak resident set (VmHWM), in bytes.
func PeakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// cpuOver is the CPU process pid used over d (its own, not the machine's:
// a busy machine does not inflate it).
func cpuOver(t testing.TB, pid int, d time.Duration) time.Duration {
	t.Helper()
	before, _, err := proc.Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	after, _, err := proc.Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(after.CPUNs() - before.CPUNs())
}

// calm waits (up to a minute) until process pid uses under a tenth of a
// core over a second, and fails the test with what it used when it never
// does: a server left spinning on a connection that is gone, or on one
// that sends nothing.
func calm(t testing.TB, pid int, what string) {
	t.Helper()
	var used time.Duration
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if used = cpuOver(t, pid, time.Second); used < 100*time.Millisecond {
			return
		}
	}
	t.Fatalf("%s: the server still used %s of CPU a second, a minute on", what, used)
}

// CheckClientNeverReads: a client pipelines /fast as fast as it can for up
// to 8 s and never reads an answer. The server must not buffer without
// bound (gnet grew by about 4 MB per MiB sent; netpoll by 190 MB a second,
// to 4 GB): it cuts the client off (stops reading, or closes), its peak
// memory stays within 64 MB of what it was; it goes on serving others; and
// once the client is gone it calms down (netpoll went on answering the
// backlog at 2 cores, to 8 GB).
func CheckClientNeverReads(t *testing.T, addr string, pid int) {
	t.Helper()
	checkClientNeverReads(t, addr, pid, false)
}

// CheckClientNeverReadsHeld is CheckClientNeverReads for a server whose
// library reads every connection's input into a buffer of its own, whatever
// the handler does (netpoll): what the client sent is held there until the
// server's own code runs and closes the connection, and on a busy machine
// that code can run late (beside 4 noisy neighbours a client sent 64 MiB
// first). So its peak may grow by what the client sent, plus 64 MB, and no
// more: nothing the server does multiplies it, and it still cuts the
// client off.
func CheckClientNeverReadsHeld(t *testing.T, addr string, pid int) {
	t.Helper()
	checkClientNeverReads(t, addr, pid, true)
}

func checkClientNeverReads(t *testing.T, addr string, pid int, held bool) {
	t.Helper()
	Dial(t, addr).MustGet("/fast")
	before := PeakRSS(t, pid)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n", 2048)) // 64 KiB
	var sent int64
	cutOff := false
	stop := time.Now().Add(8 * time.Second)
	for sent < 300<<20 && time.Now().Before(stop) {
		_ = c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := c.Write(chunk)
		sent += int64(n)
		if err != nil {
			cutOff = true // the server stopped reading, or closed the connection
			break
		}
	}
	after := PeakRSS(t, pid)
	t.Logf("sent %d MiB without reading; peak RSS %d MB -> %d MB", sent>>20, before>>20, after>>20)
	if !cutOff {
		c.Close()
		t.Fatalf("the server took all %d MiB a client sent in %s without reading an answer, and went on", sent>>20, 8*time.Second)
	}
	bound := int64(64 << 20)
	if held {
		bound += sent
	}
	if after-before > bound {
		c.Close()
		t.Fatalf("peak RSS grew by %d MB while a client sent %d MiB and read nothing (at most %d MB)", (after-before)>>20, sent>>20, bound>>20)
	}
	other := Dial(t, addr)
	other.C.SetDeadline(time.Now().Add(30 * time.Second))
	if a, err := other.Get("/fast"); err != nil || a.Status != 200 {
		t.Fatalf("another client, while one never reads: %v %v", a.Status, err)
	}
	c.Close()
	calm(t, pid, "after a client that never read closed")
	if grew := PeakRSS(t, pid) - before; grew > bound {
		t.Fatalf("peak RSS grew by %d MB after the client that never read closed (at most %d MB)", grew>>20, bound>>20)
	}
}

// CheckBigPipelineAnswered: a client that pipelines far more answers than
// the server keeps waiting for it, then reads, gets every one, in order.
func CheckBigPipelineAnswered(t *testing.T, addr string) {
	t.Helper()
	c := Dial(t, addr)
	const n = 20000 // about 3 MB of answers
	req := strings.Repeat("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n", n)
	errc := make(chan error, 1)
	go func() {
		_, err := c.C.Write([]byte(req))
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond) // the answers pile up unread
	start := time.Now()
	for i := range n {
		a, err := c.Read("GET", start)
		if err != nil || a.Status != 200 {
			t.Fatalf("answer %d of %d: %v %v", i+1, n, a.Status, err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// CheckPartialRequest: connections that send a request line and nothing
// more cost the server nothing while they wait (netpoll went to a core
// each, at once), are closed at the header timeout (the server is started
// with --header-timeout 1s), and cost nothing after their client has gone
// (netpoll spun on, its socket in CLOSE-WAIT); others are served meanwhile.
func CheckPartialRequest(t *testing.T, addr string, pid int) {
	t.Helper()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 4 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("GET /fast HTTP/1.1\r\n")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	if used := cpuOver(t, pid, 500*time.Millisecond); used > 100*time.Millisecond {
		t.Errorf("4 connections waiting with half a request cost the server %s of CPU in 500 ms", used)
	}
	if a, err := Dial(t, addr).Get("/fast"); err != nil || a.Status != 200 {
		t.Fatalf("another client, beside 4 half requests: %v %v", a.Status, err)
	}
	for i, c := range conns {
		if !closedWithin(c, 10*time.Second) {
			t.Fatalf("half request %d was still held 10 s on, past its 1 s header timeout", i)
		}
	}
	// A client that goes before the timeout leaves nothing that spins.
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("GET /fast HTTP/1.1\r\n"))
	time.Sleep(100 * time.Millisecond)
	c.Close()
	calm(t, pid, "after a client with half a request closed")
}

// StartLimited starts a server command with both descriptor limits at
// nofile (as `prlimit --nofile=N:N` would, so Go cannot raise them) on a
// free loopback port with no admin listener.
func StartLimited(t *testing.T, bin string, nofile int, args ...string) (string, *exec.Cmd) {
	t.Helper()
	addr := FreeAddr(t)
	script := "ulimit -n " + strconv.Itoa(nofile) + ` && exec "$0" "$@"`
	cmd := Start(t, "/bin/sh", append([]string{"-c", script, bin, "--addr", addr, "--admin", ""}, args...)...)
	return addr, cmd
}

// CheckOutOfDescriptors: 1,100 connections against a server started with
// a limit of 1,024 descriptors (StartLimited). It keeps serving the
// connections it holds, turns away or leaves waiting the ones past what it
// can hold instead of dying (gnet's engine stopped, and fasthttp's Serve
// returned, on "too many open files"), and serves new connections once
// the others close.
func CheckOutOfDescriptors(t *testing.T, addr string, cmd *exec.Cmd) {
	t.Helper()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 1100 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	// The last connection is past what the server can hold: it is not
	// answered (closed at once, or left in the backlog) while the others
	// are open.
	last := conns[len(conns)-1]
	_, _ = last.Write([]byte("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n"))
	_ = last.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := last.Read(make([]byte, 512)); err == nil {
		t.Fatalf("connection 1,100 of a 1,024-descriptor server was answered (%d bytes)", n)
	}
	if cmd.ProcessState != nil || !processRuns(cmd.Process.Pid) {
		t.Fatalf("the server exited: %v", cmd.ProcessState)
	}
	// The first connections were accepted and are served.
	for i := range 3 {
		if _, err := conns[i].Write([]byte("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 512)
		_ = conns[i].SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := conns[i].Read(buf)
		if err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
			t.Fatalf("connection %d, held before the limit: %q %v", i, buf[:n], err)
		}
	}
	// Close them all: a new connection is served again.
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := Dial(t, addr)
		_ = c.C.SetDeadline(time.Now().Add(5 * time.Second))
		a, err := c.Get("/fast")
		c.C.Close()
		if err == nil && a.Status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new connection served after the others closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if cmd.ProcessState != nil || !processRuns(cmd.Process.Pid) {
		t.Fatalf("the server exited: %v", cmd.ProcessState)
	}
}

// processRuns says whether pid is alive and not a zombie.
func processRuns(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}
