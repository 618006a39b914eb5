package request

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/h1"
)

// FuzzParseTargets reads any bytes as a targets file (and, when they are
// one line, as the 'METHOD PATH' form) and checks what is read against
// what is sent: every request parsed renders to bytes that internal/h1's
// request parser takes as exactly one whole request, with the same method,
// path, query and body, kept alive, whose head holds exactly the lines the
// request has (no header smuggled in through a value); a body over h1's
// cap is refused by h1 for that alone. Anything refused is one *Error
// line, "request: FILE:LINE: ...", at a line the file has.
//
//	go test -run '^$' -fuzz FuzzParseTargets -fuzztime 60s ./internal/request
func FuzzParseTargets(f *testing.F) {
	dir := f.TempDir()
	for name, size := range map[string]int{"b": 43, "e": 0, "big": h1.MaxBodyBytes + 1} {
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte("x"), size), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	file := filepath.Join(dir, "targets.txt")
	for _, seed := range []string{
		"GET /health",
		"POST /login",
		"GET http://127.0.0.1:8080/path/to/dragon?item=ball\nGET http://user:password@127.0.0.1:8080/path/to\nHEAD http://127.0.0.1:8080/path/to/success\n",
		"GET http://127.0.0.1:8080/path/to\nX-Account-ID: 8675309\n\nDELETE http://127.0.0.1:8080/path/to/remove\nConfirmation-Token: 90215\nAuthorization: Token DEADBEEF\n",
		"POST http://127.0.0.1:8080/things\n@b\n\nPATCH http://127.0.0.1:8080/thing/71988591\n@big\n",
		"POST http://goku:9090/things\nX-Account-ID: 99\n@e\n",
		"# get a dragon ball\nGET http://127.0.0.1:8080/path/to/dragon?item=ball\n# specify a test account\nX-Account-ID: 99\n",
		"\uFEFFGET /a\r\nGET /b\r\nX-One: 1\r\nGET /c\r\n\r\n  POST  /login?next=%2F \r\nHost: api:1\r\nUser-Agent: me\r\nConnection: keep-alive\r\n@ b\r\n",
		"GET https://127.0.0.1:8080/\n",
		"GET /x\nHost: a:1\nhost: b:2\n",
		"GET http://[::1]:8080/x\n",
		"SUBSCRIBE /events\n@b\n\nOPTIONS /\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, err := parseTargets(file, data, addr)
		checkParsed(t, data, file, reqs, err)
		if line := strings.TrimSpace(string(data)); !strings.ContainsAny(line, "\r\n") && !strings.HasPrefix(line, "@") {
			// The flag form (not a file: the fuzzer names none to read).
			s, err := Parse(line, addr)
			if err == nil {
				reqs = s.Requests
			}
			checkParsed(t, data, "", reqs, err)
		}
	})
}

// checkParsed checks one parse's outcome as FuzzParseTargets says.
func checkParsed(t *testing.T, data []byte, file string, reqs []Request, err error) {
	t.Helper()
	if err != nil {
		var e *Error
		lines := bytes.Count(data, []byte("\n")) + 1
		switch {
		case !errors.As(err, &e) || e.File != file || e.Line < 0 || e.Line > lines:
			t.Fatalf("%#v: want an *Error of %q at one of its %d lines", err, file, lines)
		case !strings.HasPrefix(err.Error(), "request: "), strings.ContainsAny(err.Error(), "\r\n"):
			t.Fatalf("%q: want one line starting request:", err)
		}
		return
	}
	if len(reqs) == 0 || len(reqs) > MaxRequests {
		t.Fatalf("%d requests", len(reqs))
	}
	s := newSpec(file, reqs)
	m := s.Mix()
	for i := range reqs {
		r, w := &reqs[i], m.Next()
		if w.Index != i || w.Head != (r.Method == "HEAD") || w.Label != r.String() || strings.ContainsAny(w.Label, "\r\n") {
			t.Fatalf("request %d: wire %d head=%v %q for %s", i, w.Index, w.Head, w.Label, r)
		}
		if file != "" && (r.Line < 1 || i > 0 && r.Line <= reqs[i-1].Line) {
			t.Fatalf("request %d at line %d, after line %d", i, r.Line, reqs[max(i-1, 0)].Line)
		}
		head, _, ok := bytes.Cut(w.Bytes, []byte("\r\n\r\n"))
		want := 2 + len(r.Header) // request line, Host, own headers
		if !r.hasOwn("user-agent") {
			want++
		}
		if r.sendsLength() {
			want++
		}
		crlf := bytes.Count(head, []byte("\r\n"))
		if got := crlf + 1; !ok || got != want || len(head)+4 > MaxHead || bytes.Count(head, []byte("\n")) != crlf || bytes.Count(head, []byte("\r")) != crlf {
			t.Fatalf("%s: head %q has %d lines, want %d within %d bytes", r, head, got, want, MaxHead)
		}
		checkH1(t, r, w.Bytes)
	}
}
