package wiretest

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// closedWithin reports whether the server closed c within d: a read
// returns EOF or a reset, not a timeout.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue // an answer to an earlier request, or a 408
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// CheckTimeouts: a server started (by start, with the given flags) with
// 300 ms idle, header and body timeouts closes an idle keep-alive
// connection, a client that sends its headers a byte at a time, and one
// whose promised body never comes, each within seconds; and still answers
// an /async that takes longer than all three.
func CheckTimeouts(t *testing.T, start func(args ...string) string) {
	addr := start("--idle-timeout", "300ms", "--header-timeout", "300ms", "--body-timeout", "300ms")
	dial := func(t *testing.T) net.Conn {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("idle", func(t *testing.T) {
		c := Dial(t, addr)
		c.MustGet("/fast")
		if !closedWithin(c.C, 10*time.Second) {
			t.Fatal("an idle keep-alive connection was still open after 10 s")
		}
	})
	t.Run("slow headers", func(t *testing.T) {
		c := dial(t)
		stop := make(chan struct{})
		defer close(stop)
		go func() { // slowloris: a byte every 50 ms, for as long as it is let
			_, _ = io.WriteString(c, "GET /fast HTTP/1.1\r\n")
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := io.WriteString(c, string("X-Slow: "[i%8])); err != nil {
					return
				}
			}
		}()
		if !closedWithin(c, 10*time.Second) {
			t.Fatal("a client sending its headers a byte at a time was still connected after 10 s")
		}
	})
	t.Run("promised body", func(t *testing.T) {
		c := dial(t)
		if _, err := io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc"); err != nil {
			t.Fatal(err)
		}
		if !closedWithin(c, 10*time.Second) {
			t.Fatal("a request whose promised body never came was still held after 10 s")
		}
	})
	// Each timeout is its own: a slow header is closed at the header
	// timeout, not at the header and body timeouts added up (fasthttp's one
	// ReadTimeout for both gave a slow header 20 s where the flag said 10 s),
	// and a promised body at the body timeout.
	for _, tc := range []struct {
		name, sent, why string
		flags           []string
	}{
		{"header timeout alone", "GET /fast HTTP/1.1\r\n", "half a request's headers were held 4 s with a 300 ms header timeout (an 8 s body timeout beside it)",
			[]string{"--header-timeout", "300ms", "--body-timeout", "8s"}},
		{"body timeout alone", "GET /fast HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc", "a promised body was waited for 4 s with a 300 ms body timeout (an 8 s header timeout beside it)",
			[]string{"--header-timeout", "8s", "--body-timeout", "300ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", start(tc.flags...), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = io.WriteString(c, tc.sent)
			if !closedWithin(c, 4*time.Second) {
				t.Fatal(tc.why)
			}
		})
	}
	t.Run("owed answer", func(t *testing.T) {
		c := Dial(t, addr)
		a, err := c.Get("/async?delay=1s")
		if err != nil || a.Status != 200 {
			t.Fatalf("an /async longer than every timeout: %v %v", a.Status, err)
		}
		if strings.TrimSpace(a.Body) == "" {
			t.Fatal("empty answer")
		}
	})
}
