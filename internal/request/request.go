// Package request is what a user's request is: the REQUEST that --load and
// --bystander take, parsed and checked once, and its bytes on the wire,
// rendered once so that a load generator pays nothing per request for it.
//
// A REQUEST is one of two forms:
//
//	'METHOD PATH'   one request, such as 'GET /health' or 'POST /login'
//	@FILE           a file in vegeta's HTTP targets format: one or more requests, sent round robin
//
// The targets format, as vegeta reads it (lib/targets.go), with the kit's
// choices where vegeta leaves things open or wrong:
//
//	# a comment: a line whose first non-blank character is '#', anywhere
//	GET http://127.0.0.1:8080/path?q=1      METHOD URL: a path, or an http:// URL on the target's host:port
//	X-Account-ID: 99                        header lines, Name: value, sent in order, names as written
//	@body.json                              the body, read from this file (relative to the targets file's directory)
//	                                        a blank line ends a target; so does the next METHOD URL line
//	POST /login
//	Content-Type: application/json
//	@login.json
//
// Every request is checked as a whole before anything is sent: a bad line
// is one error naming the file and the line (Error). The kit speaks plain
// HTTP/1.1 on loopback: an https:// URL is refused, saying what to give
// instead; an http:// URL naming another host than the target's is refused
// (the kit would have sent it to the target all the same); credentials in
// a URL (user:password@) are refused and never repeated. A Host line is
// kept: it is sent as the request's Host instead of the target's host:port
// (a service that routes by name), while the connection still goes to the
// target. The headers that frame the request or the connection are the
// kit's (Content-Length from the body, Transfer-Encoding, Connection other
// than keep-alive, Upgrade, Expect) and refused, each saying why.
//
// The bytes: the request line, Host, the kit's User-Agent (unless the
// request has its own), the headers in order, Content-Length when there is
// a body (and for POST, PUT and PATCH always: some servers answer 411
// without it), a blank line and the body. A GET without headers renders
// exactly as internal/client renders its requests today.
//
// Nothing here touches the network.
package request

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bystander-kit/bystander/internal/files"
)

// Bounds on what a REQUEST may hold.
const (
	// MaxFile bounds a targets file.
	MaxFile = 1 << 20
	// MaxRequests bounds the requests in one targets file.
	MaxRequests = 10000
	// MaxBody bounds one body file. A request need not go into a
	// socket's buffers whole: the pollers write what is left of it as the
	// socket takes more (a server that does not read: a fresh loopback
	// socket took 3.9 MB in one write, one whose server set a small
	// receive buffer and segment 48 KB).
	MaxBody = 1 << 20
	// MaxBytes bounds the bytes of all of a file's requests together, as
	// rendered: what the kit holds in memory for them.
	MaxBytes = 16 << 20
	// MaxHead bounds a request's line and headers as sent: the default of
	// many servers (Tomcat's maxHttpHeaderSize, the kit's own servers).
	MaxHead = 8 << 10
	// MaxHeaders bounds a request's own header lines.
	MaxHeaders = 64
	// MaxMethod bounds a method's length.
	MaxMethod = 16
)

// userAgent is what the kit sends as User-Agent unless a request has its own.
const userAgent = "bystander"

// Header is one header line as the user wrote it.
type Header struct{ Name, Value string }

// Request is one request, checked: New and Parse make them.
type Request struct {
	Method string
	// Target is the path and query as sent (origin form: /path?query).
	Target string
	// Host is sent as the Host header: the target's host:port, or the
	// request's own Host line.
	Host string
	// Header holds the request's own header lines in order, Host left out.
	Header []Header
	Body   []byte
	// Line is where the request starts in its targets file; 0 for the
	// 'METHOD PATH' form.
	Line int
}

// String says the request in one line, its body by size only and a
// query's credentials by name only: "POST /login (+body 43 B)",
// "GET /x?api_key=REDACTED".
func (r *Request) String() string {
	s := r.Method + " " + redactQuery(r.Target)
	if len(r.Body) > 0 {
		s += " (+body " + strconv.Itoa(len(r.Body)) + " B)"
	}
	return s
}

// Spec is a REQUEST flag's value, parsed: its requests in order.
type Spec struct {
	// File is the targets file as named (after the '@'); "" for the
	// 'METHOD PATH' form.
	File     string
	Requests []Request
	wires    []Wire
}

// String says the spec in one line, for run.json and the report:
// "GET /health", "POST /login (+body 43 B)" or "@targets.txt: 3 requests".
// It holds no header and no body: a request's credentials, if any, are in
// its headers or body, never in what a run writes.
func (s *Spec) String() string {
	if s.File == "" {
		return s.Requests[0].String()
	}
	n := len(s.Requests)
	return fmt.Sprintf("@%s: %d %s", quoteIfOdd(s.File), n, plural(n, "request", "requests"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Error is a REQUEST that cannot be used: where (the targets file and its
// line, when it is about one) and why, in one line.
type Error struct {
	File string // "" for the 'METHOD PATH' form
	Line int    // 0 when the error is not about one line
	Msg  string
}

func (e *Error) Error() string {
	switch {
	case e.File == "":
		return "request: " + e.Msg
	case e.Line == 0:
		return "request: " + quoteIfOdd(e.File) + ": " + e.Msg
	default:
		return "request: " + quoteIfOdd(e.File) + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
	}
}

// quoteIfOdd quotes a file name that holds anything an error line should
// not (a control character, a space at either end).
func quoteIfOdd(s string) string {
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}

// usage is what a REQUEST may be, for errors.
const usage = "want 'METHOD PATH' (such as 'GET /health') or @FILE (vegeta's HTTP targets format)"

// Parse reads a REQUEST flag's value for the target at addr (host:port, as
// the kit dials it): 'METHOD PATH' (the path may be an http:// URL on addr)
// or @FILE, a targets file. Every request is checked and rendered here, once.
func Parse(spec, addr string) (*Spec, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, &Error{Msg: "an empty request: " + usage}
	}
	if file, ok := strings.CutPrefix(spec, "@"); ok {
		file = strings.TrimSpace(file)
		if file == "" {
			return nil, &Error{Msg: "'@' without a file: " + usage}
		}
		data, err := files.ReadRegular(file, MaxFile)
		if err != nil {
			return nil, &Error{File: file, Msg: "the targets file cannot be read: " + err.Error()}
		}
		reqs, err := parseTargets(file, data, addr)
		if err != nil {
			return nil, err
		}
		return newSpec(file, reqs), nil
	}
	if strings.ContainsAny(spec, "\r\n") {
		return nil, &Error{Msg: "a line break in the request: " + usage + "; headers and bodies go in a targets file"}
	}
	method, target, err := requestLine(spec, addr)
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	r, err := New(addr, method, target, nil, nil)
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	return newSpec("", []Request{r}), nil
}

func newSpec(file string, reqs []Request) *Spec {
	s := &Spec{File: file, Requests: reqs, wires: make([]Wire, len(reqs))}
	for i := range reqs {
		s.wires[i] = Wire{Bytes: reqs[i].Wire(), Head: reqs[i].Method == "HEAD", Index: i, Label: reqs[i].String()}
	}
	return s
}

// New checks one request for the target at addr (host:port): its method,
// its target (a path and query), its header lines (a Host line among them
// becomes its Host) and its body, and the size of all of it. It is the one
// way the kit makes a request, from a flag or a file or its own endpoints.
func New(addr, method, target string, header []Header, body []byte) (Request, error) {
	if err := checkMethod(method); err != nil {
		return Request{}, err
	}
	if err := checkTarget(target); err != nil {
		return Request{}, err
	}
	if addr == "" {
		return Request{}, errors.New("no target host:port to send the request to")
	}
	r := Request{Method: method, Target: target, Host: addr, Body: body}
	if len(header) > MaxHeaders {
		return Request{}, fmt.Errorf("%d header lines, over the %d a request may have", len(header), MaxHeaders)
	}
	host := false
	for _, h := range header {
		if err := checkHeader(h.Name, h.Value); err != nil {
			return Request{}, err
		}
		if strings.EqualFold(h.Name, "host") {
			if host {
				return Request{}, errors.New("a second Host line: a request has one Host")
			}
			host, r.Host = true, h.Value
			continue
		}
		r.Header = append(r.Header, h)
	}
	if len(body) > MaxBody {
		return Request{}, fmt.Errorf("a body of %d bytes, over the %d a request may carry", len(body), MaxBody)
	}
	if n := r.headLen(); n > MaxHead {
		return Request{}, fmt.Errorf("the request's line and headers come to %d bytes as sent, over the %d many servers take (8 KiB)", n, MaxHead)
	}
	return r, nil
}

// Wire renders the request as HTTP/1.1 bytes: the request line, Host, the
// kit's User-Agent unless the request has one, its headers in order,
// Content-Length when it has a body (or is a POST, PUT or PATCH), a blank
// line and the body. The connection is kept alive (HTTP/1.1's default).
func (r *Request) Wire() []byte {
	b := make([]byte, 0, r.headLen()+len(r.Body))
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, r.Target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, r.Host...)
	b = append(b, "\r\n"...)
	if !r.hasOwn("user-agent") {
		b = append(b, "User-Agent: "+userAgent+"\r\n"...)
	}
	for _, h := range r.Header {
		b = append(b, h.Name...)
		b = append(b, ": "...)
		b = append(b, h.Value...)
		b = append(b, "\r\n"...)
	}
	if r.sendsLength() {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(r.Body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, r.Body...)
}

// headLen is the length of the request's line and headers as Wire renders
// them, the blank line included.
func (r *Request) headLen() int {
	n := len(r.Method) + 1 + len(r.Target) + len(" HTTP/1.1\r\nHost: ") + len(r.Host) + 2
	if !r.hasOwn("user-agent") {
		n += len("User-Agent: " + userAgent + "\r\n")
	}
	for _, h := range r.Header {
		n += len(h.Name) + 2 + len(h.Value) + 2
	}
	if r.sendsLength() {
		n += len("Content-Length: ") + len(strconv.Itoa(len(r.Body))) + 2
	}
	return n + 2
}

func (r *Request) hasOwn(name string) bool {
	for _, h := range r.Header {
		if strings.EqualFold(h.Name, name) {
			return true
		}
	}
	return false
}

// sendsLength says whether the request carries Content-Length: with a
// body, and for the methods whose requests are meant to have one even when
// it is empty (nginx answers such a request without it 411).
func (r *Request) sendsLength() bool {
	switch r.Method {
	case "POST", "PUT", "PATCH":
		return true
	}
	return len(r.Body) > 0
}

// short cuts what an error quotes to a length that keeps it one line's.
func short(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// requestLine reads "METHOD URL" (a targets file's first line of a target,
// or the 'METHOD PATH' form): the method and the origin-form target. The
// URL is a path, or an http:// URL whose host:port is addr.
func requestLine(line, addr string) (method, target string, err error) {
	f := strings.Fields(line)
	switch {
	case len(f) == 1 && isUpperWord(f[0]):
		return "", "", fmt.Errorf("%q without a path: want METHOD PATH, such as GET /health", f[0])
	case len(f) == 1:
		return "", "", errors.New("want METHOD PATH, such as GET /health: a method first, upper case")
	case len(f) > 2 && strings.HasPrefix(f[2], "HTTP/"):
		return "", "", errors.New("leave the HTTP version out: want METHOD URL (the kit sends HTTP/1.1)")
	case len(f) > 2:
		return "", "", errors.New("a space in the URL: percent-encode it (%20)")
	}
	method = f[0]
	if err := checkMethod(method); err != nil {
		return "", "", err
	}
	target, err = originForm(f[1], addr)
	return method, target, err
}

// originForm turns a targets line's URL into what the request line sends:
// a path as it is; an http:// URL on addr to its path and query. Its
// errors never repeat a URL's user:password@.
func originForm(u, addr string) (string, error) {
	lower := strings.ToLower(u)
	switch {
	case strings.HasPrefix(u, "/"):
		return u, nil
	case strings.HasPrefix(lower, "https://"):
		return "", errors.New("an https:// URL: the kit speaks plain HTTP/1.1 on loopback; give the service's plain http:// port (or a path such as /health), with TLS ended in front of it if it has to be")
	case !strings.HasPrefix(lower, "http://"):
		if i := strings.Index(u, "://"); i > 0 {
			return "", fmt.Errorf("a %s:// URL: want a path such as /health, or an http:// URL on the target", short(lower[:i]))
		}
		return "", fmt.Errorf("%q: want a path starting with '/', such as /health, or an http:// URL on the target", short(redact(u)))
	}
	rest := u[len("http://"):]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, path := rest[:end], rest[end:]
	if strings.Contains(authority, "@") {
		return "", errors.New("credentials in the URL (user:password@) are refused: the kit sends none, and a run's files are made to be shared; give the URL without them")
	}
	host, port, err := splitAuthority(authority)
	if err != nil {
		return "", fmt.Errorf("%q: %v", short(u), err)
	}
	if !strings.EqualFold(joinHostPort(host, port), addr) {
		return "", fmt.Errorf("%q names %s, not the target %s: give a path such as /health, or the target's own host:port (the kit sends every request to the target)", short(u), joinHostPort(host, port), addr)
	}
	switch {
	case path == "":
		path = "/"
	case path[0] == '?':
		path = "/" + path
	}
	return path, nil
}

// redact hides what comes before an '@' in a URL's authority (its
// user:password@), scheme or not, so that an error never repeats it.
func redact(u string) string {
	scheme, rest := "", u
	if i := strings.Index(u, "://"); i >= 0 {
		scheme, rest = u[:i+3], u[i+3:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = "xxxxx@" + rest[at+1:]
	}
	return scheme + rest
}

// splitAuthority splits host[:port] (an IPv6 address in brackets); the
// port is 80 when not given.
func splitAuthority(a string) (host, port string, err error) {
	if a == "" {
		return "", "", errors.New("no host")
	}
	if a[0] == '[' {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", errors.New("an IPv6 address without its ']'")
		}
		host, rest := a[1:end], a[end+1:]
		switch {
		case rest == "":
			return host, "80", nil
		case rest[0] == ':' && isPort(rest[1:]):
			return host, rest[1:], nil
		}
		return "", "", errors.New("a bad port")
	}
	host, port, ok := strings.Cut(a, ":")
	switch {
	case host == "":
		return "", "", errors.New("no host")
	case !ok:
		return host, "80", nil
	case !isPort(port):
		return "", "", errors.New("a bad port")
	}
	return host, port, nil
}

func isPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 1<<16 && p[0] != '0' && p[0] != '+'
}

// joinHostPort is net.JoinHostPort: brackets around an address with a ':'.
func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// bodyPath resolves a body file named in file: relative to file's directory.
func bodyPath(file, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(filepath.Dir(file), name)
}

// secretKeys are the parts of a query key that name a credential: its
// value is not written where a run is shared.
var secretKeys = []string{"key", "token", "secret", "password", "passwd", "pwd", "auth", "sig", "session", "credential", "cookie"}

// redactQuery is target with the values of a query's credentials (a key
// holding one of secretKeys, in any case) said as REDACTED.
func redactQuery(target string) string {
	path, query, ok := strings.Cut(target, "?")
	if !ok {
		return target
	}
	pairs := strings.Split(query, "&")
	for i, p := range pairs {
		k, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		lk := strings.ToLower(k)
		for _, w := range secretKeys {
			if strings.Contains(lk, w) {
				pairs[i] = k + "=REDACTED"
				break
			}
		}
	}
	return path + "?" + strings.Join(pairs, "&")
}
