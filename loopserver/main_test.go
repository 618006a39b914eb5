package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/wiretest"
)

// TestPortInUse: a taken port is one clear line on stderr and exit status 1.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, eng := range engines {
		cmd := exec.Command(wiretest.Build(t, "."), "--engine", eng, "--addr", ln.Addr().String(), "--admin", "")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: exit %v, want status 1", eng, err)
		}
		msg := strings.TrimSpace(stderr.String())
		if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "already in use") || !strings.Contains(msg, ln.Addr().String()) {
			t.Fatalf("%s: stderr %q, want one line naming the address", eng, msg)
		}
	}
}

// TestSignalStops: SIGINT and SIGTERM stop the server within 1 s, even with a
// loop held by a 5 s block and connections open.
func TestSignalStops(t *testing.T) {
	for _, eng := range engines {
		for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
			addr := wiretest.FreeAddr(t)
			cmd := exec.Command(wiretest.Build(t, "."), "--engine", eng, "--addr", addr, "--admin", "127.0.0.1:0")
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if line, _ := bufio.NewReader(out).ReadString('\n'); !strings.Contains(line, "listening on") {
				t.Fatalf("%s: %q", eng, line)
			}
			c := wiretest.Dial(t, addr)
			c.MustGet("/fast")
			_, _ = c.C.Write([]byte("GET /slow?block=5s HTTP/1.1\r\nHost: t\r\n\r\n"))
			time.Sleep(100 * time.Millisecond)
			start := time.Now()
			_ = cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s %v: exit %v, want 0", eng, sig, err)
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("%s %v: stopped after %s", eng, sig, d)
				}
			case <-time.After(3 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("%s %v: still running 3 s after the signal", eng, sig)
			}
		}
	}
}
