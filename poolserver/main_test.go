package main

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/wiretest"
)

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(wiretest.Build(t, "."), "--addr", ln.Addr().String(), "--admin", "")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1", err)
	}
	if msg := strings.TrimSpace(stderr.String()); strings.Contains(msg, "\n") || !strings.Contains(msg, "already in use") {
		t.Fatalf("stderr %q, want one line saying the address is in use", msg)
	}
}

// TestSignalStops: SIGINT and SIGTERM stop the server within 1 s while a
// handler is inside a 5 s block.
func TestSignalStops(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		addr := wiretest.FreeAddr(t)
		cmd := wiretest.Start(t, wiretest.Build(t, "."), "--addr", addr, "--admin", "127.0.0.1:0")
		c := wiretest.Dial(t, addr)
		c.MustGet("/fast")
		_, _ = io.WriteString(c.C, "GET /slow?block=5s HTTP/1.1\r\nHost: t\r\n\r\n")
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		_ = cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: exit %v, want 0", sig, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%v: stopped after %s", sig, d)
			}
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%v: still running 3 s after the signal", sig)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--slots=4", "--block=20ms", "--block-mode=spin"}, true},
		{[]string{"--slots=0"}, true},
		{[]string{"--slots=-1"}, false},
		{[]string{"--delay=-1ms"}, false},
		{[]string{"--block-mode=nap"}, false},
		{[]string{"--admin=nope"}, false},
		{[]string{"extra"}, false},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%v: err %v, want ok=%v", tc.args, err, tc.ok)
		}
	}
}
