package h1

import (
	"errors"
	"math"
	"testing"
)

// FuzzParse checks the decoder's invariants on any bytes: it never panics,
// never consumes more than it was given nor a partial request, refusals carry
// a 4xx/5xx status, every strict prefix of a
// request is incomplete, and the request alone decodes the same.
func FuzzParse(f *testing.F) {
	f.Add([]byte(pipeline), 7)
	f.Add([]byte("GET / HTTP/1.0\r\n\r\n"), math.MinInt) // -split overflows: the target itself must not crash
	for _, c := range BadRequests() {
		if len(c.Req) < 2000 {
			f.Add([]byte(c.Req), len(c.Req)/2)
		}
	}
	f.Add([]byte("GET /slow?block=5ms HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET"), 40)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		var whole Request
		n, err := Parse(data, &whole)
		if n < 0 || n > len(data) {
			t.Fatalf("consumed %d of %d", n, len(data))
		}
		var e *Error
		switch {
		case err == nil:
			if n == 0 {
				t.Fatal("a request of 0 bytes")
			}
		case errors.Is(err, ErrIncomplete):
			if n != 0 {
				t.Fatalf("incomplete but consumed %d", n)
			}
			return
		case errors.As(err, &e):
			if e.Status < 400 || e.Status > 599 {
				t.Fatalf("refusal with status %d", e.Status)
			}
			return
		default:
			t.Fatalf("unexpected error %v", err)
		}
		// A whole request: a prefix must be incomplete or the same request.
		split = int(uint(split) % uint(n+1)) // any int, math.MinInt included, to 0..n
		var part Request
		m, perr := Parse(data[:split], &part)
		if split < n && !errors.Is(perr, ErrIncomplete) {
			t.Fatalf("a %d-byte prefix of a %d-byte request: %d, %v; want incomplete", split, n, m, perr)
		}
		if split == n && (perr != nil || m != n || string(part.Path) != string(whole.Path) ||
			part.KeepAlive != whole.KeepAlive || string(part.Query) != string(whole.Query)) {
			t.Fatalf("the same bytes decoded differently: %v", perr)
		}
	})
}
