package conform

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The raw connections the checks speak through, and what they read of an
// answer (a stranger's bytes, capped).

// What the check reads of one answer, which is a stranger's bytes: the
// protocol's answers are a few headers and a one-line body.
const (
	maxHeaderBytes = 16 << 10
	maxHeaderLines = 100
	maxBodyBytes   = 64 << 10
)

// errTooBig is what the capped reader says past its budget.
var errTooBig = errors.New("over what the check reads of one answer")

// capped reads at most n more bytes from r, then says errTooBig.
type capped struct {
	r io.Reader
	n int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errTooBig
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// conn is one raw client connection.
type conn struct {
	c       *checker
	nc      net.Conn
	lim     *capped // between the connection and br: each answer's budget
	br      *bufio.Reader
	timeout time.Duration
	closed  bool
}

// answer is one response as read.
type answer struct {
	status        int
	header        http.Header
	body          string
	contentLength int64
	closed        bool // the server said it closes, or closed
	sent, done    time.Time
	elapsed       time.Duration // from the write to the end of the answer
	sinceStart    time.Duration // set by together
}

func (a answer) int(name string) int64 {
	v, err := strconv.ParseInt(a.header.Get(name), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

func (c *checker) dial() (*conn, error) {
	d := net.Dialer{Timeout: c.o.Timeout}
	nc, err := d.DialContext(c.ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", c.addr, err)
	}
	lim := &capped{r: nc}
	k := &conn{c: c, nc: nc, lim: lim, br: bufio.NewReader(lim), timeout: c.o.Timeout}
	c.conns = append(c.conns, k)
	return k, nil
}

func (c *checker) closeAll() {
	for _, k := range c.conns {
		k.nc.Close()
	}
}

func (k *conn) get(target string) (answer, error) {
	return k.raw("GET " + target + " HTTP/1.1\r\nHost: " + k.c.addr + "\r\nUser-Agent: bystander-check\r\n\r\n")
}

// open says whether the server has not closed the connection: a read
// finds neither data nor an end within a short wait.
func (k *conn) open() bool {
	if k.closed {
		return false
	}
	_ = k.nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	k.lim.n = 1
	_, err := k.br.Peek(1)
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (k *conn) raw(req string) (answer, error) {
	a := answer{sent: time.Now()}
	if k.closed {
		return a, errors.New("the server closed the connection earlier")
	}
	_ = k.nc.SetDeadline(time.Now().Add(k.timeout))
	method, _, _ := strings.Cut(req, " ")
	if _, err := io.WriteString(k.nc, req); err != nil {
		return a, fmt.Errorf("sending: %w", err)
	}
	// The status line and headers get their budget (and the bufio's
	// read-ahead); the body its own once its length is known and allowed.
	k.lim.n = maxHeaderBytes + 4096
	resp, err := http.ReadResponse(k.br, &http.Request{Method: method})
	if err != nil {
		k.closed = true
		switch {
		case errors.Is(err, errTooBig):
			return a, fmt.Errorf("the status line and headers run over %d KiB, %s", maxHeaderBytes>>10, errTooBig)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return a, errors.New("the server closed the connection without answering")
		}
		return a, fmt.Errorf("reading the answer: %w", err)
	}
	lines := 0
	for _, v := range resp.Header {
		lines += len(v)
	}
	switch {
	case lines > maxHeaderLines:
		k.closed = true
		return a, fmt.Errorf("%d header lines, over the %d the check reads (%s)", lines, maxHeaderLines, errTooBig)
	case resp.ContentLength > maxBodyBytes:
		k.closed = true // its body is not read
		return a, fmt.Errorf("a body of %d bytes, over the %d KiB the check reads: the protocol's bodies are one line", resp.ContentLength, maxBodyBytes>>10)
	}
	k.lim.n += maxBodyBytes
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err == nil && len(b) > maxBodyBytes {
		err = fmt.Errorf("the body runs over %d KiB", maxBodyBytes>>10)
	}
	resp.Body.Close()
	a.done = time.Now()
	a.elapsed = a.done.Sub(a.sent)
	if err != nil {
		k.closed = true
		return a, fmt.Errorf("reading the body: %w", err)
	}
	a.status, a.header, a.body, a.contentLength = resp.StatusCode, resp.Header, string(b), resp.ContentLength
	if len(resp.TransferEncoding) > 0 {
		a.contentLength = -1
	}
	a.closed = resp.Close
	if a.closed {
		k.closed = true
	}
	return a, nil
}
