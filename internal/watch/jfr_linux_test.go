package watch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// need skips outside CI when a program is missing; CI installs them, so
// there it fails.
func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing in CI: .ci/run installs it", p)
			}
			t.Skipf("%s is missing", p)
		}
	}
}

// needRoot skips outside CI when the test is not root (it gives a file or
// a process to another user); CI runs as root, so there it fails.
func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("needs root in CI, %s", why)
	}
	t.Skip("needs root, " + why)
}

// backend is a ledger backend on loopback: each line it reads is answered
// after about 5 ms. It ends with the test.
func backend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					time.Sleep(5 * time.Millisecond)
					if _, err := io.WriteString(c, strconv.Itoa(len(line))+"\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// lineOf is the line of file that holds marker.
func lineOf(t *testing.T, file, marker string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("%s has no %q", file, marker)
	return 0
}

// startJava compiles testdata/ledger and starts LedgerService against the
// backend at addr with loops threads, as user uid unless 0; it returns its
// pid once it is ready.
func startJava(t *testing.T, addr string, loops int, uid uint32, flags ...string) int {
	t.Helper()
	dir, err := os.MkdirTemp("", "watch-java-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // another user's JVM reads its classes
		t.Fatal(err)
	}
	srcs, _ := filepath.Glob("testdata/ledger/*.java")
	if out, err := exec.Command("javac", append([]string{"-d", dir}, srcs...)...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	_, port, _ := net.SplitHostPort(addr)
	args := append(append([]string{"-Xmx64m", "-XX:TieredStopAtLevel=1"}, flags...), "-cp", dir, "LedgerService", port, strconv.Itoa(loops), "120")
	cmd := exec.Command("java", args...)
	cmd.Stderr = os.Stderr
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		cmd.Dir = dir
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = io.ErrUnexpectedEOF
		}
		ready <- err
		io.Copy(io.Discard, out)
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("LedgerService did not start: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("LedgerService not ready within 90 s")
	}
	return cmd.Process.Pid
}

// TestJFRLedger: a JVM whose four loop threads call LedgerClient.balance
// back to back (a blocking read from a backend that answers in about
// 5 ms), beside a pool's threads waiting for work in their queue, watched
// through Flight Recorder for 2 s: the frame is LedgerClient.balance at
// the read's line, the peer is the backend, the four loops are held most
// of the window and the pool's idle threads are not held.
func TestJFRLedger(t *testing.T) {
	need(t, "javac", "java", "jcmd", "jfr")
	addr := backend(t)
	pid := startJava(t, addr, 4, 0)
	s := JFR(context.Background(), pid, Options{Window: 2 * time.Second}).Clean()
	for _, l := range s.Lines() {
		t.Log(l)
	}
	if s.Source != culprit.SourceJFR || s.Role != "event-loop threads" || s.Pool || s.Serving != 4 || len(s.Holds) == 0 {
		t.Fatalf("source %q role %q pool %v serving %d holds %d; limits %q", s.Source, s.Role, s.Pool, s.Serving, len(s.Holds), s.Limits)
	}
	h := s.Holds[0]
	want := culprit.Frame{Function: "LedgerClient.balance", File: "LedgerClient.java", Line: lineOf(t, "testdata/ledger/LedgerClient.java", "// the blocking read")}
	if h.State != "in a socket read" || h.Peer != addr || h.Frames[0] != want {
		t.Errorf("held %s %s at %+v, want a socket read to %s at %+v", h.State, h.Peer, h.Frames[0], addr, want)
	}
	if h.Held != 4 || len(h.Threads) != 4 || !strings.HasPrefix(h.Threads[0], "nioEventLoopGroup-2-") {
		t.Errorf("held threads %q", h.Threads)
	}
	// Each read waits for the backend's 5 ms; the loops do little else.
	if avg := time.Duration(h.HeldNs / int64(max(h.Calls, 1))); h.Calls == 0 || avg < 4*time.Millisecond {
		t.Errorf("%d calls of %s on average, want reads of 5 ms or more", h.Calls, avg)
	}
	if share := s.Share(h); share < 0.5 {
		t.Errorf("held %.0f %% of the window, want most of it", 100*share)
	}
	for _, o := range s.Holds {
		for _, n := range o.Threads {
			if strings.Contains(n, "-exec-") {
				t.Errorf("a pool's idle thread taken for held: %s", s.HoldWords(o))
			}
		}
	}
	if !strings.HasPrefix(s.Words(), "4 of 4 event-loop threads held ") || !strings.Contains(s.Words(), "in a socket read to "+addr+" at LedgerClient.balance (LedgerClient.java:") {
		t.Errorf("said %q", s.Words())
	}
	if s.CostNs <= 0 {
		t.Errorf("watching's cost not measured: %d", s.CostNs)
	}
}

// TestJFRAnotherUser: run as root against a JVM of another user (nobody),
// jcmd attaches as that user, the JVM writes its recording into a
// directory given to it, and jfr reads it as that user: the call is named
// all the same.
func TestJFRAnotherUser(t *testing.T) {
	need(t, "javac", "java", "jcmd", "jfr")
	needRoot(t, "to start a JVM as nobody")
	addr := backend(t)
	pid := startJava(t, addr, 2, 65534)
	s := JFR(context.Background(), pid, Options{Window: time.Second}).Clean()
	for _, l := range s.Lines() {
		t.Log(l)
	}
	if len(s.Holds) == 0 || s.Holds[0].Frames[0].Function != "LedgerClient.balance" || s.Holds[0].Peer != addr {
		t.Fatalf("holds %+v; limits %q", s.Holds, s.Limits)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "bystander-jfr-*")); len(left) > 0 {
		t.Errorf("recording directories left: %q", left)
	}
}

// TestJFRRefused: a JVM whose Flight Recorder is disabled (jcmd answers,
// status 0, and starts nothing) and one that refuses attach
// (-XX:+DisableAttachMechanism: jcmd fails with the exception) are each
// said in one line with jcmd's reason; nothing is watched and no
// directory is left.
func TestJFRRefused(t *testing.T) {
	need(t, "jfr")
	for name, c := range map[string]struct{ script, want string }{
		"disabled": {"#!/bin/sh\necho \"$1:\"\necho 'Flight Recorder is disabled.'\necho\n", "Flight Recorder did not start in pid %d: Flight Recorder is disabled."},
		"attach refused": {"#!/bin/sh\necho \"$1:\"\necho 'com.sun.tools.attach.AttachNotSupportedException: The VM does not support the attach mechanism'\n" +
			"echo '\tat jdk.attach/sun.tools.attach.HotSpotAttachProvider.testAttachable(HotSpotAttachProvider.java:154)'\nexit 1\n",
			"Flight Recorder not started: jcmd %d JFR.start failed (exit status 1): AttachNotSupportedException: The VM does not support the attach mechanism"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "jcmd"), []byte(c.script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			s := JFR(context.Background(), os.Getpid(), Options{Window: time.Millisecond})
			want := "watch: " + fmt.Sprintf(c.want, os.Getpid())
			if s.WindowNs != 0 || len(s.Holds) != 0 || len(s.Limits) != 1 || s.Limits[0] != want {
				t.Errorf("window %d, limits %q\nwant %q", s.WindowNs, s.Limits, want)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestOtherUser: a JVM of another user is said in one line, before jcmd
// is asked (it could not attach); the kit's own, or any as root, is not.
func TestOtherUser(t *testing.T) {
	pid, me := os.Getpid(), os.Geteuid()
	if l := otherUser(pid, me); l != "" {
		t.Errorf("own process: %q", l)
	}
	if l := otherUser(pid, 0); l != "" {
		t.Errorf("as root: %q", l)
	}
	if l := otherUser(pid, me+12345); !strings.Contains(l, fmt.Sprintf("pid %d is another user's (uid %d)", pid, me)) || !strings.Contains(l, "as that user, or as root") {
		t.Errorf("another user's: %q", l)
	}
}

// TestDigestCutAtAnItemsEnd: a digest (here a stand-in for java that
// writes the fixture's digest) past the cap where an item ends is said
// cut, not taken as read whole.
func TestDigestCutAtAnItemsEnd(t *testing.T) {
	b, err := os.ReadFile("testdata/ledger-digest.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("testdata/ledger-digest.jsonl")
	java := filepath.Join(t.TempDir(), "java")
	if err := os.WriteFile(java, []byte("#!/bin/sh\nexec cat '"+abs+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := maxPrint
	defer func() { maxPrint = saved }()
	maxPrint = int64(strings.IndexByte(string(b), '\n') + 1)
	r, _, err := digest(context.Background(), java, []string{"JfrDigest.java"}, "recording.jfr", 0, 0, time.Time{}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "read up to") || r == nil || !r.cut {
		t.Errorf("a digest past the cap at an item's end: %v", err)
	}
	maxPrint = int64(len(b))
	if r, _, err := digest(context.Background(), java, []string{"JfrDigest.java"}, "recording.jfr", 0, 0, time.Time{}, time.Now()); err != nil || r.cut || r.events != 5 {
		t.Errorf("a digest of the cap's size: %v", err)
	}
}
