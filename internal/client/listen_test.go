package client_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// A server started in the background a moment ago is waited for.
func TestAwaitListenStarting(t *testing.T) {
	addr := wiretest.FreeAddr(t)
	said := 0
	done := make(chan error, 1)
	go func() { done <- client.AwaitListen(context.Background(), addr, client.StartWait, func() { said++ }) }()
	time.Sleep(300 * time.Millisecond)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the freed port was taken meanwhile: %v", err)
	}
	defer l.Close()
	if err := <-done; err != nil {
		t.Fatalf("listening after 300ms: %v", err)
	}
	if said != 1 {
		t.Errorf("waiting said %d times, want once", said)
	}
}

// Nothing listening: refused once the wait is over, as the dial said it.
func TestAwaitListenNobody(t *testing.T) {
	addr := wiretest.FreeAddr(t)
	start := time.Now()
	err := client.AwaitListen(context.Background(), addr, 300*time.Millisecond, func() {})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want connection refused", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %v, before the 300ms wait", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := client.AwaitListen(ctx, addr, client.StartWait, func() {}); err == nil {
		t.Error("a cancelled wait returned no error")
	}
}

// A listening server is not waited for, and waiting is not said.
func TestAwaitListenListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := client.AwaitListen(context.Background(), l.Addr().String(), client.StartWait, func() { t.Error("said waiting") }); err != nil {
		t.Fatal(err)
	}
}
