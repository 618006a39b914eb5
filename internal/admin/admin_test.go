package admin

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestIdleClosed: a keep-alive admin connection that goes quiet is closed
// by the server, while /stats answers.
func TestIdleClosed(t *testing.T) {
	idleTimeout = 200 * time.Millisecond
	defer func() { idleTimeout = 30 * time.Second }()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, func() any { return map[string]int{"loops": 4} }) }()
	defer func() { cancel(); <-done }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /stats HTTP/1.1\r\nHost: a\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/stats: %v %v", resp, err)
	}
	_, _ = br.Discard(int(resp.ContentLength))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the server sent more bytes on an idle connection")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("an idle admin connection was still open after %s", time.Since(start).Round(time.Millisecond))
	}
}
