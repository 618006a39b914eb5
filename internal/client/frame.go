package client

import (
	"bytes"
	"fmt"
)

// How an answer's body ends (RFC 9112, 6.3): at no body (a 1xx, 204 or
// 304, or the answer to a HEAD), after Content-Length bytes, at the last
// of its chunks (Transfer-Encoding: chunked, which Go's net/http, Tomcat and
// Netty send whenever the length is not known in advance), or when the
// server closes the connection (neither given: HTTP/1.0, or a stream).
const (
	bodyNone = iota
	bodyLength
	bodyChunked
	bodyClose
)

// The chunked body's parts.
const (
	chunkSize = iota // the size line (hex, then extensions)
	chunkData
	chunkEnd // the CRLF after the data
	chunkTrailer
)

// MaxChunkLine is the longest chunk size line (the size and its
// extensions) the client reads, as Go's net/http; a longer one is
// malformed. The trailers after the last chunk are read within MaxHead.
const MaxChunkLine = 4096

// frame reads one answer's body as it comes, the connection's and the
// poller's alike: the body is dropped, but for the first line of a failed
// answer's (kept, up to FirstLineMax bytes, for its error).
type frame struct {
	mode, state int
	left        int // bodyLength: bytes to come; chunkData: the chunk's bytes to come
	trailer     int // bytes of trailers read
	keep        bool
	first       []byte // the first line of the body, with keep
	kept        bool   // it is whole (its end, or FirstLineMax bytes, came)
}

// start sets the frame for the body of the answer whose head is r (the
// answer to a HEAD request when headOnly), a final answer (not a 1xx
// other than 101, see interim). A body delimited by the close makes the
// connection one the server closes (r.Close).
func (f *frame) start(r *Response, headOnly bool) {
	f.state, f.trailer = chunkSize, 0
	switch {
	case headOnly, r.Status < 200, r.Status == 204, r.Status == 304:
		f.mode = bodyNone
	case r.Chunked:
		f.mode = bodyChunked
	case r.ContentLength >= 0:
		f.mode, f.left = bodyLength, r.ContentLength
	default:
		f.mode = bodyClose
		r.Close = true
	}
	f.keep = failed(r.Status)
	if f.keep {
		f.first, f.kept = f.first[:0], false
	}
}

// interim says whether status is a 1xx that another answer follows
// (100 Continue, 103 Early Hints): its head is read, then the next one.
// 101 (Switching Protocols) ends HTTP on the connection: parseHead refuses
// it, since this client asks for no other protocol.
func interim(status int) bool { return status < 200 }

// failed says whether status is a failed answer: 2xx and 3xx are answers
// (a redirect is the service's answer; the client does not follow it).
func failed(status int) bool { return status < 200 || status > 399 }

// step reads what b holds of the body and returns how many of its bytes
// it used and whether the body is whole. Bytes left unused are the start
// of a line still to come whole (a chunk's size line, the CRLF after its
// data, a trailer): the caller keeps them and reads more. A body
// delimited by the close is never whole here: its end is the close
// (see closes).
func (f *frame) step(b []byte) (int, bool, error) {
	switch f.mode {
	case bodyNone:
		return 0, true, nil
	case bodyLength:
		n := min(f.left, len(b))
		f.keepFrom(b[:n])
		f.left -= n
		return n, f.left == 0, nil
	case bodyClose:
		f.keepFrom(b)
		return len(b), false, nil
	}
	pos := 0
	for {
		switch f.state {
		case chunkData:
			n := min(f.left, len(b)-pos)
			f.keepFrom(b[pos : pos+n])
			pos += n
			f.left -= n
			if f.left > 0 {
				return pos, false, nil
			}
			f.state = chunkEnd
		case chunkEnd:
			switch {
			case pos == len(b), b[pos] == '\r' && pos+1 == len(b):
				return pos, false, nil
			case b[pos] == '\n':
				pos++
			case b[pos] == '\r' && b[pos+1] == '\n':
				pos += 2
			default:
				return pos, false, &Error{Malformed, fmt.Errorf("%w: chunk data longer than its size", errMalformed)}
			}
			f.state = chunkSize
		case chunkSize:
			i := bytes.IndexByte(b[pos:], '\n')
			if i < 0 || i > MaxChunkLine {
				if len(b)-pos > MaxChunkLine {
					return pos, false, &Error{Malformed, fmt.Errorf("%w: chunk size line over %d bytes", errMalformed, MaxChunkLine)}
				}
				return pos, false, nil
			}
			size, ok := chunkSizeOf(trim(b[pos : pos+i+1]))
			if !ok {
				return pos, false, &Error{Malformed, fmt.Errorf("%w: chunk size line %q", errMalformed, cut(trim(b[pos:pos+i+1]), 40))}
			}
			pos += i + 1
			f.left, f.state = size, chunkData
			if size == 0 {
				f.state = chunkTrailer
			}
		case chunkTrailer:
			i := bytes.IndexByte(b[pos:], '\n')
			if i < 0 {
				if f.trailer+len(b)-pos > MaxHead {
					return pos, false, &Error{Malformed, fmt.Errorf("%w: trailers over %d KiB", errMalformed, MaxHead>>10)}
				}
				return pos, false, nil
			}
			line := trim(b[pos : pos+i+1])
			pos += i + 1
			// Counted with the empty line that ends them, as a line
			// still to come whole is above: the same bytes are refused
			// however they came.
			if f.trailer += i + 1; f.trailer > MaxHead {
				return pos, false, &Error{Malformed, fmt.Errorf("%w: trailers over %d KiB", errMalformed, MaxHead>>10)}
			}
			if len(line) == 0 {
				return pos, true, nil
			}
		}
	}
}

// closes says whether the server's close ends the body whole (a body
// delimited by the close) rather than cutting it short.
func (f *frame) closes() bool { return f.mode == bodyClose }

// keepFrom keeps what b adds to the body's first line, with keep.
func (f *frame) keepFrom(b []byte) {
	if !f.keep || f.kept {
		return
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b, f.kept = b[:i], true
	}
	if room := FirstLineMax - len(f.first); len(b) >= room {
		b, f.kept = b[:room], true
	}
	f.first = append(f.first, b...)
}

// badStatus is the error of a failed answer: its status, and the first
// line of its body when it had one.
func (f *frame) badStatus(status int) error {
	line := bytes.TrimRight(f.first, "\r")
	if !f.keep || len(line) == 0 {
		return &Error{BadStatus, fmt.Errorf("status %d", status)}
	}
	return &Error{BadStatus, fmt.Errorf("status %d: %q", status, line)}
}

// chunkSizeOf reads a chunk size line: hex digits (at most 15: a size
// under 2^60), then optional spaces or tabs and extensions after a ';'.
func chunkSizeOf(line []byte) (int, bool) {
	n, i := 0, 0
	for ; i < len(line); i++ {
		d, ok := unhex(line[i])
		if !ok {
			break
		}
		if i == 15 {
			return 0, false
		}
		n = n<<4 | d
	}
	if i == 0 {
		return 0, false
	}
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return n, i == len(line) || line[i] == ';'
}

func unhex(c byte) (int, bool) {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0'), true
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// cut is b's first n bytes at most, for an error.
func cut(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
