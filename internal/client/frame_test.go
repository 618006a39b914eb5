package client

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/request"
)

// framedServer answers every request on every connection with ans, written
// in pieces of piece bytes (0: at once) a millisecond apart; with closeAfter
// it closes the connection after each answer. It counts the connections.
func framedServer(t *testing.T, ans string, closeAfter bool, piece int) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepts atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					for rest := ans; rest != ""; {
						n := len(rest)
						if piece > 0 && piece < n {
							n = piece
						}
						if _, err := c.Write([]byte(rest[:n])); err != nil {
							return
						}
						rest = rest[n:]
						if rest != "" {
							time.Sleep(time.Millisecond)
						}
					}
					if closeAfter {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &accepts
}

// framings are answers as services send them, and as they must not: what
// each reader makes of each, asked twice on one connection (a server that
// keeps it), or on two (one that closes it, or an answer that cannot be
// read).
var framings = []struct {
	name, ans string
	closes    bool   // the server closes the connection after each answer
	status    int    // the answer's status, 0 for none read
	kind      Kind   // "" for an answer
	said      string // in the error
	dials     int    // for two requests
	chunked   bool
}{
	{name: "chunked", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", status: 200, dials: 1, chunked: true},
	{name: "chunked, extensions and trailers", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Loop: 2\r\n\r\n5;name=\"a;b\"\r\nhello\r\n6 ; x\r\n world\r\nA\r\n0123456789\r\n0\r\nX-Checksum: 1\r\nX-More: 2\r\n\r\n",
		status: 200, dials: 1, chunked: true},
	{name: "chunked, large", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("2000\r\n"+strings.Repeat("c", 0x2000)+"\r\n", 12) + "0\r\n\r\n",
		status: 200, dials: 1, chunked: true},
	{name: "gzip, chunked", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", status: 200, dials: 1, chunked: true},
	{name: "until close", ans: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthe body, until the server closes\n", closes: true, status: 200, dials: 2},
	{name: "until close, no Connection", ans: "HTTP/1.1 200 OK\r\n\r\nthe body, until the server closes\n", closes: true, status: 200, dials: 2},
	{name: "HTTP/1.0 until close", ans: "HTTP/1.0 200 OK\r\nServer: old\r\n\r\nold body\n", closes: true, status: 200, dials: 2},
	{name: "302", ans: "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 7\r\n\r\nmoved\r\n", status: 302, dials: 1},
	{name: "304 with a length", ans: "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n", status: 304, dials: 1},
	{name: "204 without one", ans: "HTTP/1.1 204 No Content\r\n\r\n", status: 204, dials: 1},
	{name: "103 then 200", ans: "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, dials: 1},
	{name: "chunked beside a length", ans: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", status: 200, dials: 2, chunked: true},
	{name: "503, its body said", ans: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 19\r\n\r\noffload queue full\n", status: 503, kind: BadStatus,
		said: `status 503: "offload queue full"`, dials: 1},
	{name: "500 chunked, its first line said", ans: "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nboom\r\n4\r\n!!\r\n\r\n7\r\nsecond\n\r\n0\r\n\r\n",
		status: 500, kind: BadStatus, said: `status 500: "boom!!"`, dials: 1, chunked: true},
	{name: "404 until close, its first line said", ans: "HTTP/1.1 404 Not Found\r\n\r\nno such page\nsecond line\n", closes: true, status: 404, kind: BadStatus,
		said: `status 404: "no such page"`, dials: 2},
	{name: "a long first line, cut", ans: "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 300\r\n\r\n" + strings.Repeat("a", 300), status: 502, kind: BadStatus,
		said: `status 502: "` + strings.Repeat("a", FirstLineMax) + `"`, dials: 1},
	{name: "chunk size not hex", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", kind: Malformed, said: "chunk size", dials: 2},
	{name: "chunk size too large", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\nhello\r\n0\r\n\r\n", kind: Malformed, said: "chunk size", dials: 2},
	{name: "chunk line too long", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + strings.Repeat("x", 5000) + "\r\nhello\r\n0\r\n\r\n", kind: Malformed, said: "chunk", dials: 2},
	{name: "chunk data too long", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX\r\n0\r\n\r\n", kind: Malformed, said: "chunk", dials: 2},
	{name: "trailers too long", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 20) + "\r\n", kind: Malformed, said: "trailer", dials: 2},
	{name: "chunks cut by a close", ans: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", closes: true, kind: Closed, dials: 2},
	{name: "two lengths", ans: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!", kind: Malformed, said: "Content-Length", dials: 2},
	{name: "101", ans: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", kind: Malformed, said: "101", dials: 2},
	{name: "status of 4 digits", ans: "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", kind: Malformed, said: "status line", dials: 2},
}

// TestFraming: the connection and the poller read each answer of
// framings alike, whole or in pieces of 7 bytes: its status, whether it is
// an answer or what failed and why, and whether the connection was kept.
func TestFraming(t *testing.T) {
	for _, tc := range framings {
		for _, piece := range []int{0, 7} {
			if piece > 0 && len(tc.ans) > 2000 {
				continue // the large ones are read in pieces anyway
			}
			t.Run(tc.name+"/piece "+itoa(piece), func(t *testing.T) {
				t.Parallel()
				check := func(reader string, i int, r Response, err error) {
					t.Helper()
					switch {
					case KindOf(err) != tc.kind:
						t.Errorf("%s, request %d: kind %q (%v), want %q", reader, i, KindOf(err), err, tc.kind)
					case tc.said != "" && !strings.Contains(err.Error(), tc.said):
						t.Errorf("%s, request %d: %v, want it to say %s", reader, i, err, tc.said)
					case tc.status != 0 && r.Status != tc.status:
						t.Errorf("%s, request %d: status %d, want %d", reader, i, r.Status, tc.status)
					case tc.kind == "" && r.Chunked != tc.chunked:
						t.Errorf("%s, request %d: chunked %v, want %v", reader, i, r.Chunked, tc.chunked)
					}
				}
				addr, accepts := framedServer(t, tc.ans, tc.closes, piece)
				c := New(addr, "/fast", 2*time.Second)
				defer c.Close()
				for i := range 2 {
					var r Response
					check("conn", i, r, c.Do(&r))
				}
				if n := accepts.Load(); int(n) != tc.dials {
					t.Errorf("conn: %d connections for 2 requests, want %d", n, tc.dials)
				}

				addr, accepts = framedServer(t, tc.ans, tc.closes, piece)
				p := newPoller(t)
				p.Add(addr, "/fast", 2*time.Second)
				b := drive(t, p, 2)
				for i, e := range b.ends {
					check("poller", i, e.r, e.err)
				}
				if n := accepts.Load(); int(n) != tc.dials {
					t.Errorf("poller: %d connections for 2 requests, want %d", n, tc.dials)
				}
			})
		}
	}
}

// pieces is a connection whose bytes come in reads of the sizes cuts says
// (each byte a read of that many plus one, in turn; none: as many as asked
// for), then the server's close. Only Read is used.
type pieces struct {
	net.Conn
	b    []byte
	cuts []byte
	i    int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := len(b)
	if len(p.cuts) > 0 {
		n = min(n, int(p.cuts[p.i%len(p.cuts)])+1)
		p.i++
	}
	n = copy(b[:n], p.b)
	p.b = p.b[n:]
	return n, nil
}

// read is what one reader made of an answer: its head, its error, the
// first line it kept, and how many bytes of the stream it took.
type read struct {
	r     Response
	err   string
	first string
	used  int
}

// connRead reads one answer from b, come in reads as cuts says, with the
// connection's code (Conn.read).
func connRead(b, cuts []byte) read {
	src := &pieces{b: b, cuts: cuts}
	c := &Conn{c: src, buf: make([]byte, 4096)}
	var out read
	if err := c.read(&out.r); err != nil {
		out.err = err.Error()
	} else if failed(out.r.Status) {
		out.err = c.body.badStatus(out.r.Status).Error()
	}
	out.first = string(c.body.first)
	out.used = len(b) - len(src.b) - (c.w - c.r)
	return out
}

// oneEnd is a driver for one request already in flight.
type oneEnd struct {
	done bool
	r    Response
	err  error
}

func (o *oneEnd) Next(*PConn, time.Time) (time.Time, bool) { return time.Time{}, false }
func (o *oneEnd) Send(*PConn, time.Time)                   {}
func (o *oneEnd) Done(_ *PConn, _, _, _ time.Time, r *Response, err error) {
	o.done, o.r, o.err = true, *r, err
}

// pollerRead reads one answer from b, come in reads as cuts says, with the
// poller's code (readable's steps, parse, and the close).
func pollerRead(b, cuts []byte) read {
	src := &pieces{b: b, cuts: cuts}
	p := &Poller{sockfd: -1, inFlight: 1, active: 1}
	c := &PConn{fd: -1, busy: true, buf: make([]byte, 4096)}
	d := &oneEnd{}
	for !d.done {
		c.makeRoom()
		n, _ := src.Read(c.buf[c.w:])
		if n == 0 {
			p.hungUp(c, d)
			break
		}
		c.w += n
		p.parse(c, d)
	}
	out := read{r: d.r, first: string(c.body.first), used: len(b) - len(src.b) - (c.w - c.r)}
	if d.err != nil {
		out.err = d.err.Error()
	}
	return out
}

// FuzzAnswer: whatever bytes come, in reads of whatever sizes, the
// connection and the poller read the same answer (head, error and why,
// the failed answer's first line, and where the next answer starts) as
// each does when the bytes come in reads as large as its buffer; neither
// takes more than came, nor keeps more than FirstLineMax bytes of a line.
func FuzzAnswer(f *testing.F) {
	for _, tc := range framings {
		f.Add([]byte(tc.ans), []byte{6})
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n"), []byte{0, 1, 2})
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\nA: b\n\n"), []byte{})
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot\rhere\n"), []byte{3, 250})
	f.Fuzz(func(t *testing.T, b, cuts []byte) {
		if len(b) > 1<<16 {
			return
		}
		whole := connRead(b, nil)
		for name, got := range map[string]read{"conn in pieces": connRead(b, cuts), "poller": pollerRead(b, nil), "poller in pieces": pollerRead(b, cuts)} {
			// The head and where the next answer starts, of an answer
			// read whole (a failure's head is the poller's to forget).
			answer := whole.err == "" || whole.r.Status != 0 && failed(whole.r.Status) && strings.Contains(whole.err, "bad_status")
			if got.err != whole.err || got.first != whole.first || answer && (got.r != whole.r || got.used != whole.used) {
				t.Fatalf("%s read\n%+v\nwhere the connection, whole, read\n%+v", name, got, whole)
			}
			if got.used < 0 || got.used > len(b) || len(got.first) > FirstLineMax {
				t.Fatalf("%s: %+v from %d bytes", name, got, len(b))
			}
		}
		if whole.err == "" && whole.r.Close && whole.r.ContentLength < 0 && !whole.r.Chunked && whole.used != len(b) {
			t.Fatalf("an answer delimited by the close took %d of %d bytes", whole.used, len(b))
		}
	})
}

// TestHeadAnswer: the answer to a HEAD has no body whatever its head says
// (its Content-Length is the GET's): both readers take the next answer
// on the same connection.
func TestHeadAnswer(t *testing.T) {
	addr, accepts := framedServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", false, 0)
	head, err := request.Parse("HEAD /fast", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := New(addr, "/fast", time.Second)
	defer c.Close()
	c.Use(head.Mix())
	p := newPoller(t)
	pc := p.Add(addr, "/fast", time.Second)
	pc.Use(head.Mix())
	for range 2 {
		var r Response
		if err := c.Do(&r); err != nil || r.ContentLength != 100 {
			t.Fatalf("conn: %v %+v", err, r)
		}
	}
	b := &book{n: 2}
	if err := p.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.ends {
		if e.err != nil {
			t.Fatalf("poller: %v", e.err)
		}
	}
	if n := accepts.Load(); n != 2 {
		t.Fatalf("%d connections for one each", n)
	}
}
