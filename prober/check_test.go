package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/wiretest"
)

// A server started in the background just before the check (the
// walk-throughs' `server & bin/prober --mode check ...`) is waited for,
// saying so, and then checked: not failed as if it had refused for good.
func TestCheckWaitsForAStartingServer(t *testing.T) {
	addr := wiretest.FreeAddr(t)
	go func() {
		time.Sleep(500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return // the check below fails, saying what it saw
		}
		srv := &http.Server{Handler: http.NotFoundHandler()}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}()
	var stdout, stderr bytes.Buffer
	o := options{mode: "check", target: "http://" + addr, timeout: 2 * time.Second}
	runCheck(context.Background(), o, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if !strings.Contains(out, "waiting for "+addr+" to listen") || strings.Contains(out, "connection refused") {
		t.Errorf("a server listening 0.5 s after the check started:\n%s", out)
	}
}
