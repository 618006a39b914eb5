package h1

import (
	"bytes"
	"errors"
	"testing"
)

// pipeline is three requests back to back, with a body, an HTTP/1.0 request
// and a query, as a client may pipeline them.
const pipeline = "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n" +
	"GET /slow?block=1ms HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" +
	"HEAD /async?delay=2ms HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" +
	"GET /offload HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"

type parsed struct {
	method, path, query string
	minor               int
	keepAlive           bool
	contentLength       int
}

var wantPipeline = []parsed{
	{"GET", "/fast", "", 1, true, 0},
	{"GET", "/slow", "block=1ms", 1, true, 5},
	{"HEAD", "/async", "delay=2ms", 0, true, 0},
	{"GET", "/offload", "", 1, false, 0},
}

// feed decodes stream as a server would: bytes arrive in the given chunks,
// whole requests are consumed as soon as they are buffered.
func feed(t *testing.T, chunks [][]byte) []parsed {
	t.Helper()
	var buf []byte
	var got []parsed
	var r Request
	for _, c := range chunks {
		buf = append(buf, c...)
		for {
			n, err := Parse(buf, &r)
			if errors.Is(err, ErrIncomplete) {
				if n != 0 {
					t.Fatalf("incomplete request consumed %d bytes", n)
				}
				break
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", buf, err)
			}
			got = append(got, parsed{string(r.Method), string(r.Path), string(r.Query), r.Minor, r.KeepAlive, r.ContentLength})
			buf = buf[n:]
		}
	}
	if len(buf) != 0 {
		t.Fatalf("left over: %q", buf)
	}
	return got
}

func equal(a, b []parsed) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseWhole(t *testing.T) {
	got := feed(t, [][]byte{[]byte(pipeline)})
	if !equal(got, wantPipeline) {
		t.Fatalf("got %+v\nwant %+v", got, wantPipeline)
	}
}

// TestParseSplitEveryByte splits the pipelined stream once at every byte
// offset, and also twice at every pair of offsets a few bytes apart.
func TestParseSplitEveryByte(t *testing.T) {
	s := []byte(pipeline)
	for i := 0; i <= len(s); i++ {
		got := feed(t, [][]byte{s[:i], s[i:]})
		if !equal(got, wantPipeline) {
			t.Fatalf("split at %d: got %+v", i, got)
		}
		for _, gap := range []int{1, 3, 17} {
			j := min(i+gap, len(s))
			got := feed(t, [][]byte{s[:i], s[i:j], s[j:]})
			if !equal(got, wantPipeline) {
				t.Fatalf("split at %d and %d: got %+v", i, j, got)
			}
		}
	}
}

func TestParseByteAtATime(t *testing.T) {
	s := []byte(pipeline)
	chunks := make([][]byte, len(s))
	for i := range s {
		chunks[i] = s[i : i+1]
	}
	if got := feed(t, chunks); !equal(got, wantPipeline) {
		t.Fatalf("got %+v", got)
	}
}

func TestParseLeadingEmptyLines(t *testing.T) {
	got := feed(t, [][]byte{[]byte("\r\n\r\n" + pipeline)})
	if !equal(got, wantPipeline) {
		t.Fatalf("got %+v", got)
	}
}

func TestParseAbsoluteForm(t *testing.T) {
	for _, tc := range []struct{ req, path, query string }{
		{"GET http://127.0.0.1:8081/slow?block=1ms HTTP/1.1\r\nHost: a\r\n\r\n", "/slow", "block=1ms"},
		{"GET HTTPS://a/fast HTTP/1.1\r\nHost: a\r\n\r\n", "/fast", ""},
	} {
		var r Request
		if _, err := Parse([]byte(tc.req), &r); err != nil || string(r.Path) != tc.path || string(r.Query) != tc.query {
			t.Errorf("%q: path %q query %q err %v", tc.req, r.Path, r.Query, err)
		}
	}
}

func TestParseKeepAlive(t *testing.T) {
	cases := []struct {
		req  string
		want bool
	}{
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", true},
		{"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false},
		{"GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, Close\r\n\r\n", false},
		{"GET / HTTP/1.1\r\nHost: a\r\nconnection: upgrade\r\n\r\n", true},
		{"GET / HTTP/1.0\r\n\r\n", false},
		{"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
		{"GET / HTTP/1.0\nConnection: KEEP-ALIVE\n\n", true},
	}
	for _, c := range cases {
		var r Request
		if _, err := Parse([]byte(c.req), &r); err != nil {
			t.Fatalf("%q: %v", c.req, err)
		}
		if r.KeepAlive != c.want {
			t.Errorf("%q: keep-alive %v, want %v", c.req, r.KeepAlive, c.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range BadRequests() {
		t.Run(c.Name, func(t *testing.T) {
			var r Request
			_, err := Parse([]byte(c.Req), &r)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse: %v, want a %d", err, c.Status)
			}
			if e.Status != c.Status {
				t.Fatalf("status %d (%s), want %d", e.Status, e.Reason, c.Status)
			}
		})
	}
}

// A refusal must not wait for more bytes when the bytes so far already rule
// the request out: garbage is refused before its line ends.
func TestParseRejectsEarly(t *testing.T) {
	for _, s := range []string{"\x16\x03\x01", "G@T", "GET\r"} {
		var r Request
		if _, err := Parse([]byte(s), &r); err == nil || errors.Is(err, ErrIncomplete) {
			t.Errorf("Parse(%q) = %v, want an early refusal", s, err)
		}
	}
	var r Request
	if _, err := Parse([]byte("GET /fa"), &r); !errors.Is(err, ErrIncomplete) {
		t.Errorf("a valid prefix: %v, want ErrIncomplete", err)
	}
}

func TestAppendResponse(t *testing.T) {
	var r Request
	if _, err := Parse([]byte("HEAD /fast HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), &r); err != nil {
		t.Fatal(err)
	}
	out := AppendStatusLine(nil, 200)
	out = AppendHeaderInt(out, "X-Loop", 3)
	out = AppendBody(out, "fast\n", &r, true)
	want := "HTTP/1.1 200 OK\r\nX-Loop: 3\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n"
	if string(out) != want {
		t.Fatalf("got %q\nwant %q", out, want)
	}
	out = AppendError(nil, ErrChunked)
	if !bytes.HasPrefix(out, []byte("HTTP/1.1 501 Not Implemented\r\n")) || !bytes.Contains(out, []byte("Connection: close\r\n")) {
		t.Fatalf("error answer %q", out)
	}
}

var sink int

// BenchmarkParse measures the hot path: one keep-alive request as wrk sends it.
// It must report 0 allocs/op.
func BenchmarkParse(b *testing.B) {
	req := []byte("GET /fast HTTP/1.1\r\nHost: 127.0.0.1:8081\r\nUser-Agent: bystander\r\nAccept: */*\r\n\r\n")
	var r Request
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		n, err := Parse(req, &r)
		if err != nil {
			b.Fatal(err)
		}
		sink += n
	}
}

// BenchmarkParseAndAnswer adds the answer a loop server writes for /fast.
func BenchmarkParseAndAnswer(b *testing.B) {
	req := []byte("GET /fast HTTP/1.1\r\nHost: 127.0.0.1:8081\r\n\r\n")
	out := make([]byte, 0, 512)
	var r Request
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(req, &r); err != nil {
			b.Fatal(err)
		}
		out = AppendStatusLine(out[:0], 200)
		out = AppendHeaderInt(out, "X-Loop", 1)
		out = AppendHeaderInt(out, "X-Handler-Start", 1796025321050679074)
		out = AppendBody(out, "fast\n", &r, r.KeepAlive)
		sink += len(out)
	}
}

func TestParseAllocs(t *testing.T) {
	req := []byte(pipeline)
	var r Request
	allocs := testing.AllocsPerRun(100, func() {
		buf := req
		for len(buf) > 0 {
			n, err := Parse(buf, &r)
			if err != nil {
				panic(err)
			}
			buf = buf[n:]
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per pipeline, want 0", allocs)
	}
}
