package main

import (
	"io"
	"testing"

	"github.com/bystander-kit/bystander/internal/wiretest"
)

// TestPortInUse: a taken port is one clear line on stderr and exit status 1.
func TestPortInUse(t *testing.T) {
	wiretest.CheckPortInUse(t, wiretest.Build(t, "."))
}

// TestSignalStops: SIGINT and SIGTERM stop the server within 1 s while a
// handler is inside a 5 s block.
func TestSignalStops(t *testing.T) {
	wiretest.CheckSignalStops(t, wiretest.Build(t, "."))
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
		{[]string{"--block-mode=postgres"}, false},
		{[]string{"--block-mode=postgres", "--db-url=postgres://u@127.0.0.1:5432/db"}, true},
		{[]string{"--block-mode=postgres", "--db-url=postgres://u@127.0.0.1:5432/db", "--db-pool=0"}, false},
		{[]string{"--block-mode=postgres", "--db-url=postgres://u@127.0.0.1:5432/db", "--db-pool=100000"}, false},
		{[]string{"--offload-workers=1000000"}, false},
		{[]string{"--offload-queue=4000000000"}, false},
		{[]string{"--max-block=87600h"}, false},
		{[]string{"--addr=127.0.0.1:9999", "--admin=127.0.0.1:9999"}, false},
		{[]string{"--addr=127.0.0.1:http"}, true},
		{[]string{"extra"}, false},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%v: err %v, want ok=%v", tc.args, err, tc.ok)
		}
	}
}

// TestTimeouts: the pool server closes what the loop server closes, with
// the same flags.
func TestTimeouts(t *testing.T) {
	wiretest.CheckTimeouts(t, func(args ...string) string {
		addr, _ := wiretest.StartServer(t, ".", args...)
		return addr
	})
}

// The hardening every server the kit starts passes (internal/wiretest).

func TestClientNeverReads(t *testing.T) {
	addr, cmd := wiretest.StartServer(t, ".")
	wiretest.CheckClientNeverReads(t, addr, cmd.Process.Pid)
}

func TestPartialRequest(t *testing.T) {
	addr, cmd := wiretest.StartServer(t, ".", "--header-timeout", "1s")
	wiretest.CheckPartialRequest(t, addr, cmd.Process.Pid)
}

func TestOutOfDescriptors(t *testing.T) {
	addr, cmd := wiretest.StartLimited(t, wiretest.Build(t, "."), 1024)
	wiretest.CheckOutOfDescriptors(t, addr, cmd)
}
