package wiretest

import (
	"net"
	"sync/atomic"
	"testing"
)

// Answering is a loopback server that answers every request with the same
// bytes and counts the connections it accepted: a server whose answers a
// client cannot read, or one that frames them as the kit's own servers do
// not (no length, chunks), written as it is on the wire.
type Answering struct {
	Addr    string
	accepts atomic.Int64
}

// Accepts is how many connections the server has accepted so far.
func (a *Answering) Accepts() int64 { return a.accepts.Load() }

// AnswerWith starts an Answering server: each read of a request (the kit's
// clients send one small request at a time) gets answer; with closeAfter
// the server then closes the connection, otherwise it keeps it for the
// next request. It stops when the test ends.
func AnswerWith(t testing.TB, answer string, closeAfter bool) *Answering {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	a := &Answering{Addr: ln.Addr().String()}
	b := []byte(answer)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.accepts.Add(1)
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write(b); err != nil || closeAfter {
						return
					}
				}
			}()
		}
	}()
	return a
}
