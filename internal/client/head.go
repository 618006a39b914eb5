package client

import (
	"bytes"
	"fmt"

	"github.com/bystander-kit/bystander/internal/protocol"
)

// Reading a response's head.

// parseHead reads a response head from the front of b into r and returns
// its length, or 0 when b does not hold a whole head yet. The body is the
// caller's to read (frame): r.ContentLength long (-1: not given), in
// chunks (r.Chunked), or else until the server closes.
func parseHead(b []byte, r *Response) (int, error) {
	*r = Response{Loop: -1, ContinuationLoop: -1, HandlerStart: -1, ContinuationStart: -1, BlockedNs: -1, QueuedNs: -1, ContentLength: -1}
	pos := 0
	next := func() ([]byte, bool) {
		i := bytes.IndexByte(b[pos:], '\n')
		if i < 0 {
			return nil, false
		}
		line := b[pos : pos+i+1]
		pos += i + 1
		return line, true
	}
	more := func() (int, error) {
		if len(b) >= MaxHead {
			return 0, &Error{Malformed, fmt.Errorf("%w: head over %d KiB", errMalformed, MaxHead>>10)}
		}
		return 0, nil
	}
	line, ok := next()
	if !ok {
		return more()
	}
	st, http10, err := statusLine(line)
	if err != nil {
		return 0, err
	}
	r.Status, r.Close = st, http10
	te := false
	for {
		line, ok = next()
		if !ok {
			return more()
		}
		line = trim(line)
		if len(line) == 0 {
			break
		}
		isTE, err := r.header(line)
		if err != nil {
			return 0, err
		}
		te = te || isTE
	}
	if te {
		// Transfer-Encoding overrides Content-Length; beside one, or in
		// an HTTP/1.0 answer, it is framing to close after (RFC 9112, 6.1
		// and 6.3).
		if r.ContentLength >= 0 || http10 {
			r.Close = true
		}
		r.ContentLength = -1
	}
	return pos, nil
}

// statusLine reads "HTTP/1.1 200 OK": the status, and whether the answer
// is HTTP/1.0's.
func statusLine(line []byte) (status int, http10 bool, err error) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' ||
		len(line) > 12 && line[12] != ' ' && line[12] != '\r' && line[12] != '\n' {
		return 0, false, &Error{Malformed, fmt.Errorf("%w: status line %q", errMalformed, cut(trim(line), 100))}
	}
	st, ok := atoi(line[9:12])
	if !ok || st < 100 {
		return 0, false, &Error{Malformed, fmt.Errorf("%w: status line %q", errMalformed, cut(trim(line), 100))}
	}
	if st == 101 {
		return 0, false, &Error{Malformed, fmt.Errorf("%w: 101 Switching Protocols, and this client asked for no other protocol", errMalformed)}
	}
	return int(st), line[7] == '0', nil
}

// header reads one header line (trimmed, not empty) into r: the framing
// and the protocol's timing headers; the others are skipped. It says
// whether the line was a Transfer-Encoding.
func (r *Response) header(line []byte) (te bool, err error) {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return false, &Error{Malformed, fmt.Errorf("%w: header line %q", errMalformed, cut(line, 100))}
	}
	name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
	var dst *int64
	switch {
	case fold(name, "content-length"):
		n, ok := atoi(value)
		if !ok || n < 0 || r.ContentLength >= 0 && int(n) != r.ContentLength {
			return false, &Error{Malformed, fmt.Errorf("%w: Content-Length %q", errMalformed, cut(value, 40))}
		}
		r.ContentLength = int(n)
		return false, nil
	case fold(name, "transfer-encoding"):
		// The last coding of the last such header says how the body
		// ends: chunked, or else at the close.
		r.Chunked = fold(lastToken(value), "chunked")
		return true, nil
	case fold(name, "connection"):
		r.Close = fold(value, "close")
		return false, nil
	case fold(name, protocol.HeaderLoop):
		dst = &r.Loop
	case fold(name, protocol.HeaderHandlerStart):
		dst = &r.HandlerStart
	case fold(name, protocol.HeaderContinuationStart):
		dst = &r.ContinuationStart
	case fold(name, protocol.HeaderContinuationLoop):
		dst = &r.ContinuationLoop
	case fold(name, protocol.HeaderBlockedNs):
		dst = &r.BlockedNs
	case fold(name, protocol.HeaderQueuedNs):
		dst = &r.QueuedNs
	default:
		return false, nil
	}
	n, ok := atoi(value)
	if !ok {
		return false, &Error{Malformed, fmt.Errorf("%w: %s %q", errMalformed, name, cut(value, 40))}
	}
	*dst = n
	return false, nil
}

// lastToken is the last of a comma-separated list's items, trimmed.
func lastToken(b []byte) []byte {
	if i := bytes.LastIndexByte(b, ','); i >= 0 {
		b = b[i+1:]
	}
	return bytes.TrimSpace(b)
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// fold compares ASCII case-insensitively.
func fold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
