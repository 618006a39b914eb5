package request_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/request"
)

// TestSameBytesAsClient: 'GET PATH' is sent byte for byte as
// internal/client sends its GET today, so the client can take its bytes
// from here and keep one way of making a request (an external test: the
// client may import this package).
func TestSameBytesAsClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var b []byte
		buf := make([]byte, 4096)
		for !bytes.HasSuffix(b, []byte("\r\n\r\n")) {
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			b = append(b, buf[:n]...)
		}
		got <- b
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	}()
	addr := ln.Addr().String()
	var r client.Response
	if err := client.New(addr, "/health?x=1", 10*time.Second).Do(&r); err != nil {
		t.Fatal(err)
	}
	s, err := request.Parse("GET /health?x=1", addr)
	if err != nil {
		t.Fatal(err)
	}
	if sent, want := <-got, s.Mix().Next().Bytes; !bytes.Equal(sent, want) {
		t.Errorf("internal/client sent %q, this package renders %q", sent, want)
	}
}
