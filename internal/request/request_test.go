package request

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/h1"
)

const addr = "127.0.0.1:8080"

// TestFlagForm: 'METHOD PATH' (or METHOD and an http:// URL on the
// target) is one request, rendered as the kit sends it.
func TestFlagForm(t *testing.T) {
	for _, c := range []struct {
		spec, addr, wire, str string
		head                  bool
	}{
		// A GET renders byte for byte as internal/client renders its requests
		// today ("GET " + target + " HTTP/1.1\r\nHost: " + addr +
		// "\r\nUser-Agent: bystander\r\n\r\n"): one way of doing it.
		{"GET /health", addr, "GET /health HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n", "GET /health", false},
		{"  GET \t /x?a=1&b=%20  ", addr, "GET /x?a=1&b=%20 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n", "GET /x?a=1&b=%20", false},
		// POST, PUT and PATCH say their empty body's length (nginx answers 411 without it).
		{"POST /login", addr, "POST /login HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\nContent-Length: 0\r\n\r\n", "POST /login", false},
		{"DELETE /x", addr, "DELETE /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n", "DELETE /x", false},
		{"HEAD /x", addr, "HEAD /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n", "HEAD /x", true},
		{"GET http://127.0.0.1:8080/x?q", addr, "GET /x?q HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n", "GET /x?q", false},
		{"GET http://127.0.0.1:8080", addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n", "GET /", false},
		{"GET HTTP://127.0.0.1:8080?a=b", addr, "GET /?a=b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n", "GET /?a=b", false},
		{"GET http://LOCALHOST/x", "localhost:80", "GET /x HTTP/1.1\r\nHost: localhost:80\r\nUser-Agent: bystander\r\n\r\n", "GET /x", false},
		{"GET http://[::1]:9000/x", "[::1]:9000", "GET /x HTTP/1.1\r\nHost: [::1]:9000\r\nUser-Agent: bystander\r\n\r\n", "GET /x", false},
	} {
		s, err := Parse(c.spec, c.addr)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		m := s.Mix()
		w := m.Next()
		if string(w.Bytes) != c.wire || s.String() != c.str || w.Head != c.head || m.Len() != 1 || s.File != "" {
			t.Errorf("%q: %q %q head=%v len=%d; want %q %q head=%v", c.spec, w.Bytes, s.String(), w.Head, m.Len(), c.wire, c.str, c.head)
		}
	}
}

// TestFlagFormRefused: each bad 'METHOD PATH' is one line saying what to
// give instead; none repeats a credential.
func TestFlagFormRefused(t *testing.T) {
	long := "/" + strings.Repeat("a", MaxHead)
	for spec, want := range map[string]string{
		"":                                       "empty request",
		"   ":                                    "empty request",
		"@":                                      "'@' without a file",
		"get /x":                                 "methods are upper case (GET)",
		"Get /x":                                 "methods are upper case (GET)",
		"G3T /x":                                 "want upper-case letters",
		"GET":                                    `"GET" without a path`,
		"GET /x HTTP/1.1":                        "leave the HTTP version out",
		"GET /a b":                               "a space in the URL",
		"GET x":                                  `"x": want a path starting with '/'`,
		"GET https://127.0.0.1:8080/":            "the kit speaks plain HTTP/1.1 on loopback; give the service's plain http:// port",
		"GET HTTPS://127.0.0.1:8080/":            "https://",
		"GET ftp://127.0.0.1/x":                  "a ftp:// URL",
		"GET http://us3r:s3cret@127.0.0.1:8080/": "credentials in the URL (user:password@) are refused",
		"GET http://s3cret@127.0.0.1:8080/":      "credentials",
		// A URL where the method or the path should be is not repeated
		// with its credentials either.
		"http://us3r:s3cret@127.0.0.1:8080/": "want METHOD PATH",
		"http://s3cret@h/ /x":                "want upper-case letters",
		"GET us3r:s3cret@127.0.0.1:8080/x":   "want a path starting with '/'",
		"GET http://other:8080/x":            "names other:8080, not the target 127.0.0.1:8080",
		"GET http://127.0.0.1:9999/x":        "names 127.0.0.1:9999, not the target",
		"GET http://127.0.0.1/x":             "names 127.0.0.1:80, not the target",
		"GET http://127.0.0.1:0/x":           "a bad port",
		"GET http://127.0.0.1:x/x":           "a bad port",
		"GET http://:8080/x":                 "no host",
		"GET http:///x":                      "no host",
		"GET http://[::1/x":                  "without its ']'",
		"GET /x#top":                         "fragment",
		"GET /caf\u00e9":                     "outside ASCII: percent-encode it",
		"GET /a%zz":                          "not a percent-escape",
		"GET /a%2":                           "not a percent-escape",
		"GET /a\x01":                         "control character",
		"CONNECT /x":                         "tunnel",
		"VERYLONGMETHODNAME /x":              "over 16",
		"GET /x\nHost: y":                    "a line break",
		"GET " + long:                        "over the 8192 many servers take",
	} {
		_, err := Parse(spec, addr)
		var e *Error
		switch {
		case err == nil:
			t.Errorf("%q: accepted; want an error saying %q", spec, want)
		case !strings.Contains(err.Error(), want):
			t.Errorf("%q: %v; want it to say %q", spec, err, want)
		case !errors.As(err, &e) || e.File != "" || e.Line != 0:
			t.Errorf("%q: %#v: want an *Error without a file", spec, err)
		case !strings.HasPrefix(err.Error(), "request: "), strings.ContainsAny(err.Error(), "\r\n"):
			t.Errorf("%q: %q: want one line starting request:", spec, err)
		case strings.Contains(err.Error(), "s3cret"), strings.Contains(err.Error(), "us3r"):
			t.Errorf("%q: %v repeats the credentials", spec, err)
		}
	}
}

// writeTargets writes a targets file (and the body files it names) in a
// new directory and returns its path.
func writeTargets(t testing.TB, text string, bodies map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range bodies {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "targets.txt")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVegetaExamples: the targets files of vegeta's README, as written
// (their host is goku:9090), read against a target at goku:9090: each
// reads as vegeta reads it, but for what the kit refuses on purpose
// (credentials in a URL, a body file that is not there), each at its line.
func TestVegetaExamples(t *testing.T) {
	const goku = "goku:9090"
	type want struct {
		method, target string
		header         []Header
		body           string
	}
	bodies := map[string]string{"newthing.json": `{"name":"new"}`, "thing-71988591.json": `{"id":71988591}`}
	for _, c := range []struct {
		name, text string
		want       []want
		errLine    int
		err        string
	}{
		{name: "simple targets", text: "GET http://goku:9090/path/to/dragon?item=ball\nGET http://user:password@goku:9090/path/to\nHEAD http://goku:9090/path/to/success\n",
			errLine: 2, err: "credentials in the URL"},
		{name: "simple targets, no credentials", text: "GET http://goku:9090/path/to/dragon?item=ball\nGET http://goku:9090/path/to\nHEAD http://goku:9090/path/to/success\n",
			want: []want{{"GET", "/path/to/dragon?item=ball", nil, ""}, {"GET", "/path/to", nil, ""}, {"HEAD", "/path/to/success", nil, ""}}},
		{name: "custom headers", text: "GET http://user:password@goku:9090/path/to\nX-Account-ID: 8675309\n\nDELETE http://goku:9090/path/to/remove\nConfirmation-Token: 90215\nAuthorization: Token DEADBEEF\n",
			errLine: 1, err: "credentials in the URL"},
		{name: "custom headers, no credentials", text: "GET http://goku:9090/path/to\nX-Account-ID: 8675309\n\nDELETE http://goku:9090/path/to/remove\nConfirmation-Token: 90215\nAuthorization: Token DEADBEEF\n",
			want: []want{{"GET", "/path/to", []Header{{"X-Account-ID", "8675309"}}, ""},
				{"DELETE", "/path/to/remove", []Header{{"Confirmation-Token", "90215"}, {"Authorization", "Token DEADBEEF"}}, ""}}},
		{name: "custom bodies", text: "POST http://goku:9090/things\n@/path/to/newthing.json\n\nPATCH http://goku:9090/thing/71988591\n@/path/to/thing-71988591.json\n",
			errLine: 2, err: `body file "/path/to/newthing.json" cannot be read`},
		{name: "custom bodies, beside the file", text: "POST http://goku:9090/things\n@newthing.json\n\nPATCH http://goku:9090/thing/71988591\n@thing-71988591.json\n",
			want: []want{{"POST", "/things", nil, `{"name":"new"}`}, {"PATCH", "/thing/71988591", nil, `{"id":71988591}`}}},
		{name: "custom bodies and headers", text: "POST http://goku:9090/things\nX-Account-ID: 99\n@newthing.json\n",
			want: []want{{"POST", "/things", []Header{{"X-Account-ID", "99"}}, `{"name":"new"}`}}},
		{name: "comments", text: "# get a dragon ball\nGET http://goku:9090/path/to/dragon?item=ball\n# specify a test account\nX-Account-ID: 99\n",
			want: []want{{"GET", "/path/to/dragon?item=ball", []Header{{"X-Account-ID", "99"}}, ""}}},
	} {
		p := writeTargets(t, c.text, bodies)
		s, err := Parse("@"+p, goku)
		if c.err != "" {
			var e *Error
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &e) || e.Line != c.errLine || e.File != p {
				t.Errorf("%s: %v; want line %d saying %q", c.name, err, c.errLine, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "password") && !strings.Contains(err.Error(), "user:password@)") {
				t.Errorf("%s: %v repeats the credentials", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(s.Requests) != len(c.want) {
			t.Errorf("%s: %d requests, want %d", c.name, len(s.Requests), len(c.want))
			continue
		}
		for i, w := range c.want {
			r := s.Requests[i]
			if r.Method != w.method || r.Target != w.target || string(r.Body) != w.body || r.Host != goku || !equalHeaders(r.Header, w.header) {
				t.Errorf("%s: request %d is %+v; want %+v", c.name, i, r, w)
			}
		}
	}
}

func equalHeaders(a, b []Header) bool {
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

// TestTargetsFile: what the kit reads beyond vegeta's examples: where a
// target ends, Host and User-Agent lines, CRLF files, a byte-order mark,
// the body's directory, and the bytes each request is sent as.
func TestTargetsFile(t *testing.T) {
	text := "\uFEFF# a mix\r\n" +
		"GET /a\r\n" + // 2
		"GET /b\r\n" + // 3: the next METHOD line ends a target
		"X-One: 1\r\n" +
		"GET /c\r\n" + // 5: also after headers (vegeta took it for a header)
		"\r\n\r\n" +
		"   POST   http://127.0.0.1:8080/login?next=%2F  \r\n" + // 8
		"  # a comment inside\r\n" +
		"Content-Type:application/json  \r\n" +
		"User-Agent: mine/1.0\r\n" +
		"Host: api.example:8080\r\n" +
		"X-Empty:\r\n" +
		"Connection: keep-alive\r\n" +
		"@ bodies/login.json \r\n" +
		"SUBSCRIBE /events\n" + // 16
		"@bodies/login.json\n" // the same file, read once
	p := writeTargets(t, text, map[string]string{"bodies/login.json": `{"user":"a","password":"b"}` + "\n"})
	s, err := Parse(" @"+p+" ", addr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "@"+p+": 5 requests"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
	body := `{"user":"a","password":"b"}` + "\n"
	wires := []string{
		"GET /a HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n",
		"GET /b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\nX-One: 1\r\n\r\n",
		"GET /c HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\n\r\n",
		"POST /login?next=%2F HTTP/1.1\r\nHost: api.example:8080\r\nContent-Type: application/json\r\nUser-Agent: mine/1.0\r\nX-Empty: \r\nConnection: keep-alive\r\nContent-Length: 28\r\n\r\n" + body,
		"SUBSCRIBE /events HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bystander\r\nContent-Length: 28\r\n\r\n" + body,
	}
	lines := []int{2, 3, 5, 8, 16}
	labels := []string{"GET /a", "GET /b", "GET /c", "POST /login?next=%2F (+body 28 B)", "SUBSCRIBE /events (+body 28 B)"}
	m := s.Mix()
	for i, want := range wires {
		w := m.Next()
		if string(w.Bytes) != want || w.Index != i || w.Label != labels[i] || s.Requests[i].Line != lines[i] {
			t.Errorf("request %d: %q %d %q line %d; want %q %d %q line %d", i, w.Bytes, w.Index, w.Label, s.Requests[i].Line, want, i, labels[i], lines[i])
		}
	}
	if s.Requests[3].Host != "api.example:8080" {
		t.Errorf("Host %q: a Host line is the request's Host", s.Requests[3].Host)
	}
	if &s.Requests[3].Body[0] != &s.Requests[4].Body[0] {
		t.Error("one body file named twice was read twice")
	}
}

// TestTargetsRefused: each bad targets file is one error line naming the
// file and the bad line, never repeating a header's value.
func TestTargetsRefused(t *testing.T) {
	dir := filepath.Dir(writeTargets(t, "", map[string]string{"body": "b", "sub/x": "", "big": strings.Repeat("b", MaxBody+1)}))
	for i, c := range []struct {
		text string
		line int
		want string
	}{
		{"", 0, "no request in it"},
		{"# only a comment\n\n", 0, "no request in it"},
		{"X-Header: 1\nGET /x\n", 1, "want a target's first line, METHOD URL"},
		{"get /x\n", 1, "upper case"},
		{"GET /x\n\nX-Late: 1\n", 3, "want a target's first line"},
		{"GET /x\nHEAD\n", 2, `"HEAD" without a path`},
		{"GET /x\nAuthorization Bearer t0ken\n", 2, "want a header line, Name: value"},
		{"GET /x\n: t0ken\n", 2, "without a name"},
		{"GET /x\nBad Name: t0ken\n", 2, `header name "Bad", then " "`},
		{"GET /x\nAuthorization Bearer t0k:en\n", 2, `header name "Authorization", then " "`},
		{"GET /x\nX-A: t0k\x01en\n", 2, "header X-A: its value holds a control character"},
		{"GET /x\nContent-Length: 5\n", 2, "a Content-Length line: the kit sends it"},
		{"GET /x\ntransfer-encoding: chunked\n", 2, "a Transfer-Encoding line is refused"},
		{"GET /x\nConnection: close\n", 2, "a Connection line other than keep-alive"},
		{"GET /x\nUpgrade: h2c\n", 2, "an Upgrade line is refused"},
		{"POST /x\nExpect: 100-continue\n", 2, "an Expect line is refused"},
		{"GET /x\nHost: a:1\nhost: b:2\n", 3, "a second Host line (the first is line 2)"},
		{"GET /x\nHost: user@b:2\n", 2, "a Host line: want a host name and port"},
		{"GET /x\nHost:\n", 2, "a Host line: want a host name and port"},
		{"GET /x\n@\n", 2, "'@' without a file"},
		{"GET /x\n@missing.json\n", 2, `body file "missing.json" cannot be read`},
		{"GET /x\n@body\n@body\n", 3, "a second body line: the target's body is already named on line 2"},
		{"GET /x\n@body\nX-After: 1\n", 3, "a line after the body line (line 2)"},
		{"GET /x\n@sub\n", 2, "not a regular file (a directory)"},
		{"GET /x\n@/dev/zero\n", 2, "not a regular file (a device)"},
		{"GET /x\n@big\n", 2, "over the 1048576 it may hold"},
		{"\n\n# c\nGET https://127.0.0.1:8080/x\n", 4, "https:// URL: the kit speaks plain HTTP/1.1"},
		{"GET /ok\n\nGET http://10.0.0.1:8080/x\n", 3, "names 10.0.0.1:8080, not the target 127.0.0.1:8080"},
		{"GET /ok\nPUT http://u:t0ken@127.0.0.1:8080/x\n", 2, "credentials"},
		{"GET /x\nX-Big: " + strings.Repeat("v", MaxHead) + "\n", 1, "over the 8192 many servers take"},
		{"GET /x\n" + strings.Repeat("X-H: 1\n", MaxHeaders+1), MaxHeaders + 2, "more than 64 header lines"},
	} {
		p := filepath.Join(dir, "targets-"+strconv.Itoa(i)+".txt")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := Parse("@"+p, addr)
		var e *Error
		switch {
		case err == nil:
			t.Errorf("%q: accepted; want line %d saying %q", c.text, c.line, c.want)
		case !errors.As(err, &e) || e.File != p || e.Line != c.line || !strings.Contains(e.Msg, c.want):
			t.Errorf("%q: %v; want line %d saying %q", c.text, err, c.line, c.want)
		case c.line > 0 && !strings.HasPrefix(err.Error(), "request: "+p+":"+strconv.Itoa(c.line)+": "):
			t.Errorf("%q: %q: want it to start request: FILE:LINE:", c.text, err)
		case strings.ContainsAny(err.Error(), "\r\n"):
			t.Errorf("%q: %q is not one line", c.text, err)
		case strings.Contains(err.Error(), "t0k"):
			t.Errorf("%q: %v repeats a header's value or a credential", c.text, err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("%q took %s: a refusal is at once", c.text, time.Since(start))
		}
	}
}

// TestTargetsFileItself: the targets file must be a regular file of at
// most MaxFile bytes: a FIFO is refused without waiting for a writer, a
// missing file or a directory is named.
func TestTargetsFileItself(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("GET /x\n"), MaxFile/7+1), 0o644); err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(dir, "many.txt")
	if err := os.WriteFile(many, bytes.Repeat([]byte("GET /\n"), MaxRequests+1), 0o644); err != nil {
		t.Fatal(err)
	}
	fat := filepath.Join(dir, "fat.txt")
	if err := os.WriteFile(filepath.Join(dir, "mb"), bytes.Repeat([]byte("b"), MaxBody-1024), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fat, bytes.Repeat([]byte("POST /x\n@mb\n"), MaxBytes/MaxBody+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for spec, c := range map[string]struct {
		line int
		want string
	}{
		"@" + fifo:                       {0, "not a regular file (a FIFO)"},
		"@" + dir:                        {0, "not a regular file (a directory)"},
		"@" + filepath.Join(dir, "none"): {0, "the targets file cannot be read: files: stat " + filepath.Join(dir, "none") + ": no such file"},
		"@" + big:                        {0, "over the 1048576 it may hold"},
		"@" + many:                       {MaxRequests + 1, "more than 10000 requests in one file"},
		"@" + fat:                        {2*(MaxBytes/MaxBody) + 1, "over 16 MiB as sent"},
	} {
		start := time.Now()
		_, err := Parse(spec, addr)
		var e *Error
		if err == nil || !errors.As(err, &e) || e.Line != c.line || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want line %d saying %q", spec, err, c.line, c.want)
		}
		if time.Since(start) > 2*time.Second {
			t.Errorf("%s took %s: a refusal is at once", spec, time.Since(start))
		}
	}
	// At the caps, not over them: read.
	ok := filepath.Join(dir, "ok.txt")
	if err := os.WriteFile(ok, bytes.Repeat([]byte("GET /\n"), MaxRequests), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Parse("@"+ok, addr); err != nil || len(s.Requests) != MaxRequests || s.String() != "@"+ok+": 10000 requests" {
		t.Errorf("%d requests: %v", MaxRequests, err)
	}
}

// TestNew: the kit's own requests are made the same way, and checked.
func TestNew(t *testing.T) {
	r, err := New(addr, "PUT", "/k", []Header{{"Host", "h:1"}, {"X", "y"}}, []byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.Wire()), "PUT /k HTTP/1.1\r\nHost: h:1\r\nUser-Agent: bystander\r\nX: y\r\nContent-Length: 3\r\n\r\nabc"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := r.String(); got != "PUT /k (+body 3 B)" {
		t.Errorf("String %q", got)
	}
	for _, c := range []struct {
		addr, method, target string
		header               []Header
		body                 []byte
		want                 string
	}{
		{"", "GET", "/", nil, nil, "no target host:port"},
		{addr, "", "/", nil, nil, "no method"},
		{addr, "GET", "", nil, nil, "want a path"},
		{addr, "GET", "/", []Header{{"Host", "a"}, {"HOST", "b"}}, nil, "a second Host line"},
		{addr, "GET", "/", make([]Header, MaxHeaders+1), nil, "65 header lines, over the 64"},
		{addr, "POST", "/", nil, make([]byte, MaxBody+1), "over the 1048576 a request may carry"},
	} {
		if _, err := New(c.addr, c.method, c.target, c.header, c.body); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c, err, c.want)
		}
	}
}

// TestWireH1: every request as sent is one whole request to the kit's own
// request parser (internal/h1), with its method, path, query and body.
func TestWireH1(t *testing.T) {
	p := writeTargets(t, "GET /a?x=1\nX: 1\n\nPOST /b\n@b\n\nHEAD /c\nHost: api:1\n\nPOST /d\n@big\n",
		map[string]string{"b": "hello", "big": strings.Repeat("z", h1.MaxBodyBytes+1)})
	s, err := Parse("@"+p, addr)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Requests {
		checkH1(t, &s.Requests[i], s.Mix().At(i).Bytes)
	}
}

// checkH1 fails t unless wire is r as one whole request to internal/h1
// (or, with a body over h1's cap, refused as too large and for nothing
// else).
func checkH1(t *testing.T, r *Request, wire []byte) {
	t.Helper()
	var q h1.Request
	n, err := h1.Parse(wire, &q)
	if len(r.Body) > h1.MaxBodyBytes {
		if err != h1.ErrBodyTooLarge {
			t.Fatalf("%s with a %d-byte body: %v; want h1's body too large", r, len(r.Body), err)
		}
		return
	}
	path, query, _ := strings.Cut(r.Target, "?")
	if err != nil || n != len(wire) || string(q.Method) != r.Method || string(q.Path) != path || string(q.Query) != query ||
		!q.KeepAlive || q.ContentLength != len(r.Body) || !bytes.Equal(wire[n-q.ContentLength:], r.Body) {
		t.Fatalf("%s as %q: h1 read %d of %d bytes, %v: %s %s ? %s keep-alive=%v body %d; want the same request",
			r, wire, n, len(wire), err, q.Method, q.Path, q.Query, q.KeepAlive, q.ContentLength)
	}
}

// TestMix: round robin over the requests, each fork its own turn over the
// same bytes, nothing allocated per request, and forks used from several
// goroutines at once share nothing they write (go test -race).
func TestMix(t *testing.T) {
	p := writeTargets(t, "GET /0\nGET /1\nGET /2\n", nil)
	s, err := Parse("@"+p, addr)
	if err != nil {
		t.Fatal(err)
	}
	m := s.Mix()
	for i := range 7 {
		if w := m.Next(); w.Index != i%3 || w.Label != "GET /"+string(rune('0'+i%3)) {
			t.Fatalf("turn %d: %d %s", i, w.Index, w.Label)
		}
	}
	for start, first := range map[int]int{0: 0, 1: 1, 5: 2, -1: 2, 3000: 0} {
		if w := m.Fork(start).Next(); w.Index != first {
			t.Errorf("Fork(%d) starts at %d, want %d", start, w.Index, first)
		}
	}
	if m.At(1) != s.Mix().At(1) || &m.Fork(2).Next().Bytes[0] != &m.At(2).Bytes[0] {
		t.Error("forks and mixes of one spec do not share its bytes")
	}
	if a := testing.AllocsPerRun(1000, func() { _ = m.Next() }); a != 0 {
		t.Errorf("Next allocates %v times", a)
	}
	var wg sync.WaitGroup
	counts := make([][3]int, 4)
	for g := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := m.Fork(g)
			for range 3000 {
				w := f.Next()
				if w.Bytes[0] != 'G' {
					t.Error("bytes changed")
					return
				}
				counts[g][w.Index]++
			}
		}()
	}
	wg.Wait()
	for g, c := range counts {
		if c != [3]int{1000, 1000, 1000} {
			t.Errorf("goroutine %d sent %v: want each request a third of the time", g, c)
		}
	}
}

// BenchmarkMixNext: what a load generator pays per request for a mix.
func BenchmarkMixNext(b *testing.B) {
	p := writeTargets(b, "GET /a\nPOST /b\n@b\n", map[string]string{"b": "{}"})
	s, err := Parse("@"+p, addr)
	if err != nil {
		b.Fatal(err)
	}
	m := s.Mix()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += len(m.Next().Bytes)
	}
	if n == 0 {
		b.Fatal("nothing sent")
	}
}

// TestStringRedactsQuerySecrets: what a run writes of a request (run.json,
// the report, the check's line) says a query's credentials by name only:
// `--load 'GET /x?api_key=SECRET'` put SECRET in run.json and the report.
func TestStringRedactsQuerySecrets(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"/x?api_key=SECRET", "GET /x?api_key=REDACTED"},
		{"/accounts/42/balance?account=7&token=abc&x=1", "GET /accounts/42/balance?account=7&token=REDACTED&x=1"},
		{"/s?Password=p&sig=q&AccessToken=r&session_id=s", "GET /s?Password=REDACTED&sig=REDACTED&AccessToken=REDACTED&session_id=REDACTED"},
		{"/report?account=42", "GET /report?account=42"},
		{"/a?flag&secret", "GET /a?flag&secret"},
	} {
		r, err := New("127.0.0.1:8080", "GET", tc.target, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		if got := r.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.target, got, tc.want)
		}
		if !bytes.Contains(r.Wire(), []byte(tc.target)) {
			t.Errorf("%s: the request sent is not the one asked: %q", tc.target, r.Wire())
		}
	}
}
