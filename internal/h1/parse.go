// Package h1 is an incremental HTTP/1.1 request decoder and response encoder
// for event-loop servers.
//
// The contract: Parse looks at whatever bytes a connection has buffered so far
// and either returns one whole request (and how many bytes it used, body
// included), ErrIncomplete when more bytes are needed, or an *Error carrying
// the status the server must answer before closing the connection. It never
// consumes a partial request, so a caller can Peek, Parse and Discard only
// whole frames, and a request split across reads at any byte decodes the same
// as one that arrived whole. Parse does not allocate: a Request's fields are
// slices of the caller's buffer, valid until the caller discards those bytes.
package h1

import (
	"bytes"
	"errors"
)

// Limits a request must respect.
const (
	// MaxHeaderBytes bounds the request line plus all header lines.
	MaxHeaderBytes = 8 << 10
	// MaxHeaders bounds the number of header lines.
	MaxHeaders = 100
	// MaxBodyBytes bounds a Content-Length request body; the kit's endpoints
	// take no body, so this only lets a small one be read and ignored.
	MaxBodyBytes = 4 << 10
	// MaxMethod bounds the method token.
	MaxMethod = 16
)

// ErrIncomplete means the buffer holds no whole request yet: read more.
var ErrIncomplete = errors.New("h1: incomplete request")

// Error is a request the server must refuse: answer Status with Reason as
// the body, then close the connection (the stream cannot be trusted after it).
type Error struct {
	Status int
	Reason string
}

func (e *Error) Error() string { return "h1: " + e.Reason }

// The errors Parse returns. They are values so that Parse never allocates.
var (
	ErrRequestLine        = &Error{400, "malformed request line"}
	ErrMethod             = &Error{400, "malformed method"}
	ErrTarget             = &Error{400, "malformed request target (want an absolute path such as /fast)"}
	ErrVersion            = &Error{400, "malformed HTTP version"}
	ErrVersionUnsupported = &Error{505, "HTTP version not supported (want HTTP/1.0 or HTTP/1.1)"}
	ErrHeaderLine         = &Error{400, "malformed header line"}
	ErrHeaderName         = &Error{400, "malformed header name"}
	ErrHeaderValue        = &Error{400, "malformed header value"}
	ErrObsFold            = &Error{400, "obsolete header line folding"}
	ErrHeaderTooLarge     = &Error{431, "request header block over 8 KiB"}
	ErrTooManyHeaders     = &Error{431, "more than 100 header lines"}
	ErrContentLength      = &Error{400, "malformed Content-Length"}
	ErrBodyTooLarge       = &Error{413, "request body over 4 KiB"}
	ErrChunked            = &Error{501, "chunked request bodies are not supported: send Content-Length"}
	ErrTransferEncoding   = &Error{501, "Transfer-Encoding is not supported: send Content-Length"}
	ErrNoHost             = &Error{400, "HTTP/1.1 request without a Host header"}
	ErrManyHosts          = &Error{400, "more than one Host header"}
)

// Request is one decoded request. Byte slices point into the parsed buffer.
type Request struct {
	Method []byte
	Path   []byte // the target up to '?'
	Query  []byte // the raw query after '?', without it; empty if none
	Minor  int    // HTTP/1.Minor
	// KeepAlive is whether the connection stays open after the answer:
	// HTTP/1.1 unless "Connection: close", HTTP/1.0 only with "Connection: keep-alive".
	KeepAlive     bool
	ContentLength int
}

// IsGet reports whether the method is GET.
func (r *Request) IsGet() bool { return string(r.Method) == "GET" }

// IsHead reports whether the method is HEAD.
func (r *Request) IsHead() bool { return string(r.Method) == "HEAD" }

// Parse decodes the first request in buf into r. It returns the number of
// bytes the request used (request line, headers and body), ErrIncomplete, or
// an *Error. On error r is partly filled: Minor and KeepAlive may be unset.
func Parse(buf []byte, r *Request) (int, error) {
	*r = Request{}
	// RFC 9112 2.2: ignore empty lines before a request line.
	skip := 0
	for skip < len(buf) && (buf[skip] == '\r' || buf[skip] == '\n') {
		if skip++; skip >= MaxHeaderBytes {
			return 0, ErrHeaderTooLarge
		}
	}
	if skip > 0 {
		n, err := Parse(buf[skip:], r)
		if err != nil {
			return 0, err
		}
		return skip + n, nil
	}
	// Find the end of the header block, bounded by MaxHeaderBytes.
	limit := buf
	if len(limit) > MaxHeaderBytes {
		limit = limit[:MaxHeaderBytes]
	}
	// Request line.
	eol := bytes.IndexByte(limit, '\n')
	if eol < 0 {
		if err := checkPrefix(limit); err != nil {
			return 0, err
		}
		if len(buf) >= MaxHeaderBytes {
			return 0, ErrHeaderTooLarge
		}
		return 0, ErrIncomplete
	}
	if err := parseRequestLine(trimCR(limit[:eol]), r); err != nil {
		return 0, err
	}
	pos := eol + 1
	r.KeepAlive = r.Minor == 1
	var (
		haveCL, haveHost    bool
		connClose, connKeep bool
		headers             int
	)
	for {
		rest := limit[pos:]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			if len(buf) >= MaxHeaderBytes {
				return 0, ErrHeaderTooLarge
			}
			if err := checkHeaderPrefix(rest); err != nil {
				return 0, err
			}
			return 0, ErrIncomplete
		}
		line := rest[:nl]
		pos += nl + 1
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			break // end of the header block
		}
		headers++
		if headers > MaxHeaders {
			return 0, ErrTooManyHeaders
		}
		if line[0] == ' ' || line[0] == '\t' {
			return 0, ErrObsFold
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return 0, ErrHeaderLine
		}
		name := line[:colon]
		if len(name) == 0 || !isToken(name) {
			return 0, ErrHeaderName
		}
		value := trimOWS(line[colon+1:])
		if !isFieldValue(value) {
			return 0, ErrHeaderValue
		}
		switch {
		case equalFold(name, "content-length"):
			n, ok := parseDigits(value)
			if !ok {
				return 0, ErrContentLength
			}
			if haveCL && n != r.ContentLength {
				return 0, ErrContentLength
			}
			haveCL, r.ContentLength = true, n
		case equalFold(name, "transfer-encoding"):
			if containsTokenFold(value, "chunked") {
				return 0, ErrChunked
			}
			return 0, ErrTransferEncoding
		case equalFold(name, "host"):
			if haveHost {
				return 0, ErrManyHosts
			}
			haveHost = true
		case equalFold(name, "connection"):
			if containsTokenFold(value, "close") {
				connClose = true
			}
			if containsTokenFold(value, "keep-alive") {
				connKeep = true
			}
		}
	}
	if r.Minor == 1 && !haveHost {
		return 0, ErrNoHost
	}
	switch {
	case connClose:
		r.KeepAlive = false
	case connKeep:
		r.KeepAlive = true
	}
	if r.ContentLength > MaxBodyBytes {
		return 0, ErrBodyTooLarge
	}
	if len(buf)-pos < r.ContentLength {
		return 0, ErrIncomplete
	}
	return pos + r.ContentLength, nil
}

// parseRequestLine splits "METHOD SP target SP HTTP/1.x".
func parseRequestLine(line []byte, r *Request) error {
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 < 0 {
		return ErrRequestLine
	}
	r.Method = line[:sp1]
	if len(r.Method) == 0 || len(r.Method) > MaxMethod || !isToken(r.Method) {
		return ErrMethod
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 < 0 {
		return ErrRequestLine
	}
	target, version := rest[:sp2], rest[sp2+1:]
	target = originForm(target)
	if len(target) == 0 || target[0] != '/' {
		return ErrTarget
	}
	for _, c := range target {
		if c <= ' ' || c >= 0x7f {
			return ErrTarget
		}
	}
	if q := bytes.IndexByte(target, '?'); q >= 0 {
		r.Path, r.Query = target[:q], target[q+1:]
	} else {
		r.Path = target
	}
	if len(version) != 8 || string(version[:5]) != "HTTP/" || version[6] != '.' ||
		!isDigit(version[5]) || !isDigit(version[7]) {
		return ErrVersion
	}
	if version[5] != '1' || version[7] > '1' {
		return ErrVersionUnsupported
	}
	r.Minor = int(version[7] - '0')
	return nil
}

// originForm reduces an absolute-form target ("http://host/path?q"), which a
// server must accept (RFC 9112 3.2.2), to its path and query.
func originForm(t []byte) []byte {
	var rest []byte
	switch {
	case len(t) > 7 && equalFold(t[:7], "http://"):
		rest = t[7:]
	case len(t) > 8 && equalFold(t[:8], "https://"):
		rest = t[8:]
	default:
		return t
	}
	if i := bytes.IndexAny(rest, "/?"); i >= 0 {
		if rest[i] == '?' {
			return nil // no path before the query: malformed here
		}
		return rest[i:]
	}
	return slash // authority only: the empty path is "/"
}

var slash = []byte("/")

// checkPrefix rejects an unfinished request line early when what has arrived
// can never become a valid one, so a client cannot hold a buffer with garbage.
func checkPrefix(b []byte) error {
	for i, c := range b {
		if c == ' ' {
			if i == 0 {
				return ErrMethod
			}
			return nil
		}
		if i >= MaxMethod || !isTokenChar(c) {
			if c == '\r' {
				return ErrRequestLine
			}
			return ErrMethod
		}
	}
	return nil
}

// checkHeaderPrefix rejects an unfinished header line holding bytes that no
// header line may hold.
func checkHeaderPrefix(b []byte) error {
	for _, c := range b {
		if c == 0 || c == 0x7f {
			return ErrHeaderValue
		}
	}
	return nil
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseDigits parses a non-negative decimal, refusing signs, spaces and
// anything that would overflow far past MaxBodyBytes.
func parseDigits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// isTokenChar reports whether c is a tchar of RFC 9110.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func isToken(b []byte) bool {
	for _, c := range b {
		if !isTokenChar(c) {
			return false
		}
	}
	return true
}

// isFieldValue refuses control characters other than HTAB.
func isFieldValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// equalFold compares b with a lower-case ASCII string, ignoring case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// containsTokenFold reports whether a comma-separated list holds tok.
func containsTokenFold(list []byte, tok string) bool {
	for len(list) > 0 {
		var item []byte
		if i := bytes.IndexByte(list, ','); i >= 0 {
			item, list = list[:i], list[i+1:]
		} else {
			item, list = list, nil
		}
		if equalFold(trimOWS(item), tok) {
			return true
		}
	}
	return false
}
