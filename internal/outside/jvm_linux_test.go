package outside

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/examples/java"
)

// TestArtNetty: a Netty server written without the kit in mind
// (testdata/art: its own thread names, longer than /proc keeps, and a
// legacy call asleep on its loop), looked at from outside while one
// keep-alive caller keeps one of its two loops blocked: the blocked loop is
// named whole, in Thread.sleep at the server's own frame, beside the other
// loop free; the dump's pause is said.
func TestArtNetty(t *testing.T) {
	if m := java.Missing(); m != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: .ci/run installs them", m)
		}
		t.Skip(m)
	}
	needJcmd(t)
	pid, base := startArt(t)
	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	get := func(path string) error {
		r, err := c.Get(base + path)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, r.Body)
		return r.Body.Close()
	}
	if err := get("/"); err != nil { // the connection's loop exists, and rests
		t.Fatal(err)
	}
	// A second connection, on the other loop (Netty starts a loop's thread
	// when it is first given a connection): the bystander.
	other := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	if r, err := other.Get(base + "/"); err != nil {
		t.Fatal(err)
	} else {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	time.Sleep(300 * time.Millisecond)
	ctx := context.Background()
	tr := New("art", pid, time.Time{})
	tr.LookBefore(ctx, 3, 20*time.Millisecond)
	tr.DumpJVMBefore(ctx, 10*time.Second)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // one keep-alive caller: one loop blocked, back to back
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := get("/stock"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	tr.LookDuring(ctx, 8, 40*time.Millisecond, time.Time{})
	tr.DumpJVM(ctx, 10*time.Second, time.Now().Add(30*time.Second))
	close(stop)
	<-done
	v := Decide(tr)
	if len(v.Held) != 1 {
		t.Fatalf("held %+v\ngroups %q\nnotes %q", v.Held, v.Groups, v.Notes)
	}
	r := v.Held[0]
	if !strings.HasPrefix(r.Thread, "art-netty-event-loop-") || r.State != "Thread.sleep" || r.Looks != 8 ||
		r.Culprit().Short() != "ArtServer$Inventory.lookupStock (ArtServer.java:55)" {
		t.Errorf("held: %s", r.Words())
	}
	if len(r.Frames) < 2 || r.Frames[1].Function != "ArtServer$Inventory.channelRead0" {
		t.Errorf("frames %+v", r.Frames)
	}
	if len(v.Groups) != 1 || !strings.HasPrefix(v.Groups[0], "1 of 2 art-netty-event-loop-") || !strings.HasSuffix(v.Groups[0], "the other 1 free (waiting for work)") {
		t.Errorf("groups %q", v.Groups)
	}
	if c := v.Cost(); !strings.Contains(c, "stopped the JVM") {
		t.Errorf("the pause is not said: %q", c)
	}
	t.Log(r.Words())
}

// startArt compiles and starts testdata/art's server, stopped when t
// ends: its pid and its base URL, once it has written its port.
func startArt(t *testing.T) (int, string) {
	t.Helper()
	dir := t.TempDir()
	var cp []string
	for _, j := range []string{"common", "buffer", "resolver", "transport", "codec", "codec-http"} {
		cp = append(cp, filepath.Join(java.Jars(), "netty-"+j+".jar"))
	}
	jars := strings.Join(cp, ":")
	if out, err := exec.Command("javac", "-cp", jars, "-d", dir, "testdata/art/ArtServer.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	portFile := filepath.Join(dir, "port")
	cmd := exec.Command("java", "-cp", dir+":"+jars, "ArtServer", portFile)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var port string
	for deadline := time.Now().Add(60 * time.Second); port == ""; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(portFile); err == nil && len(b) > 0 {
			port = string(b)
		}
		if time.Now().After(deadline) {
			t.Fatal("ArtServer never wrote its port")
		}
	}
	return cmd.Process.Pid, "http://127.0.0.1:" + port
}

// TestDumpJVMFails: jcmd against a process that is not a JVM, or one that
// does not answer in time, says so in one line and gives no stacks.
func TestDumpJVMFails(t *testing.T) {
	needJcmd(t)
	cmd := exec.Command("sleep", "30")
	cmd.Dir = t.TempDir() // where jcmd asks a JVM to attach: it must leave nothing there
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if IsJVM(cmd.Process.Pid) {
		t.Error("sleep taken for a JVM")
	}
	j := DumpJVM(context.Background(), cmd.Process.Pid, 3*time.Second) // jcmd waits ~10 s for a process that never answers
	if j.Err == "" || j.Dump != "" || !strings.Contains(j.Err, "no Java stacks") {
		t.Errorf("not a JVM: %+v", j)
	}
	j = DumpJVM(context.Background(), cmd.Process.Pid, time.Millisecond)
	if !strings.Contains(j.Err, "did not answer within 1ms") || j.EndNs < j.StartNs {
		t.Errorf("no time: %+v", j)
	}
	// jcmd asks for an attach with a file in the process's directory (or
	// its /tmp); one that gave up leaves it there, in a user's tree.
	left, _ := filepath.Glob(filepath.Join(cmd.Dir, ".attach_pid*"))
	tmp, _ := filepath.Glob(fmt.Sprintf("/tmp/.attach_pid%d", cmd.Process.Pid))
	if len(left)+len(tmp) > 0 {
		t.Errorf("jcmd's attach files left behind: %q", append(left, tmp...))
	}
}

// needJcmd skips outside CI when the JDK's jcmd is missing; CI installs
// it, so there it fails.
func needJcmd(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("jcmd"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("jcmd is missing in CI: .ci/run installs the JDK")
		}
		t.Skip("jcmd is missing (it comes with the JDK)")
	}
}

// TestDumpJVMBounded: a jcmd whose child keeps its output open (one that
// never exits, one that exits at once) costs its limit and no more, plus
// a small delay, and its child does not outlive it (a stall step took 69 s
// against a 1.5 s limit: the wait for jcmd's output had no bound).
func TestDumpJVMBounded(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	const limit = 500 * time.Millisecond
	for name, tail := range map[string]string{"never exits": "exec sleep 20", "exits at once": "exit 1"} {
		t.Run(name, func(t *testing.T) {
			child := filepath.Join(dir, "child")
			os.Remove(child)
			script := fmt.Sprintf("#!/bin/sh\necho \"$1:\"\nsleep 20 &\necho $! > %s\n%s\n", child, tail)
			if err := os.WriteFile(filepath.Join(dir, "jcmd"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			j := DumpJVM(context.Background(), os.Getpid(), limit)
			took := time.Since(began)
			if took > limit+3*time.Second || j.Err == "" || j.Dump != "" {
				t.Errorf("took %s against a limit of %s: %+v", took, limit, j)
			}
			b, err := os.ReadFile(child)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			for deadline := time.Now().Add(2 * time.Second); pid > 0; time.Sleep(20 * time.Millisecond) {
				st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				if err != nil || bytes.Contains(st, []byte(") Z ")) {
					break // gone, or ended and not yet reaped by its new parent
				}
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("jcmd's child %d outlived it", pid)
					break
				}
			}
		})
	}
}

// refusingJcmd is what the JDK 17's jcmd prints, and its status, against a
// JVM started with -XX:+DisableAttachMechanism.
const refusingJcmd = `#!/bin/sh
echo "$1:"
echo "com.sun.tools.attach.AttachNotSupportedException: The VM does not support the attach mechanism"
echo "	at jdk.attach/sun.tools.attach.HotSpotAttachProvider.testAttachable(HotSpotAttachProvider.java:154)"
echo "	at jdk.attach/sun.tools.attach.AttachProviderImpl.attachVirtualMachine(AttachProviderImpl.java:56)"
echo "	at jdk.attach/com.sun.tools.attach.VirtualMachine.attach(VirtualMachine.java:207)"
echo "	at jdk.jcmd/sun.tools.jcmd.JCmd.executeCommandForPid(JCmd.java:113)"
echo "	at jdk.jcmd/sun.tools.jcmd.JCmd.main(JCmd.java:97)"
exit 1
`

// TestDumpJVMRefused: a JVM that refuses attach is said with jcmd's
// reason (it was "failed (exit status 1: PID:)", the reason lost), and
// the trace says it was refused (not a time-out: asking again will not
// help).
func TestDumpJVMRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jcmd"), []byte(refusingJcmd), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	tr := New("x", os.Getpid(), time.Time{})
	tr.BeforeJVM = DumpJVM(context.Background(), os.Getpid(), 5*time.Second)
	if e := tr.BeforeJVM.Err; !strings.Contains(e, "AttachNotSupportedException: The VM does not support the attach mechanism") || strings.Contains(e, "\n") {
		t.Errorf("refused: %q", e)
	}
	if !tr.Refused() {
		t.Error("a refusal not told from a time-out")
	}
	v := Decide(tr)
	if n := strings.Count(strings.Join(v.Notes, "\n"), "does not support the attach"); n != 1 {
		t.Errorf("the refusal said %d times in %q", n, v.Notes)
	}
	if tr := (&Trace{JVM: []JVM{*DumpJVM(context.Background(), os.Getpid(), time.Millisecond)}}); tr.Refused() {
		t.Error("a time-out taken for a refusal")
	}
}
