// Package wiretest is the test client of the kit's servers: one raw TCP
// connection on which tests write exact bytes (pipelines, malformed
// requests) and read answers with net/http's response parser, a decoder
// independent of the servers' own.
package wiretest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Conn is one client connection.
type Conn struct {
	t  testing.TB
	C  net.Conn
	br *bufio.Reader
}

// Dial connects to addr and closes the connection when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &Conn{t: t, C: c, br: bufio.NewReader(c)}
}

// Answer is one response as read.
type Answer struct {
	Status  int
	Header  http.Header
	Body    string
	Elapsed time.Duration // from the write of the request to the end of the answer
	Closed  bool          // the server said it closes the connection
}

// Int reads a numeric header, -1 when absent or not a number.
func (a Answer) Int(name string) int64 {
	v, err := strconv.ParseInt(a.Header.Get(name), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// Get sends one GET and reads its answer.
func (c *Conn) Get(target string) (Answer, error) {
	return c.Raw("GET "+target+" HTTP/1.1\r\nHost: t\r\n\r\n", "GET")
}

// MustGet is Get that fails the test on error.
func (c *Conn) MustGet(target string) Answer {
	c.t.Helper()
	a, err := c.Get(target)
	if err != nil {
		c.t.Fatalf("GET %s: %v", target, err)
	}
	return a
}

// Raw writes req as is and reads one answer to a request of method.
func (c *Conn) Raw(req, method string) (Answer, error) {
	start := time.Now()
	_ = c.C.SetDeadline(start.Add(10 * time.Second))
	if _, err := io.WriteString(c.C, req); err != nil {
		return Answer{}, err
	}
	return c.Read(method, start)
}

// Read reads one answer to a request of method sent at start.
func (c *Conn) Read(method string, start time.Time) (Answer, error) {
	_ = c.C.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		return Answer{}, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return Answer{}, err
	}
	return Answer{resp.StatusCode, resp.Header, string(body), time.Since(start), resp.Close}, nil
}

// EOF reports whether the server closed the connection (within 2 s).
func (c *Conn) EOF() bool {
	_ = c.C.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.br.ReadByte()
	return errors.Is(err, io.EOF) || (err != nil && strings.Contains(err.Error(), "connection reset"))
}

// Buffer is a strings.Builder safe for concurrent writes: a child's or a
// run's output that a test reads while it is written.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
